// Exponential backoff with jitter, shared by the work queue (per-key retries), the informers (watch
// restarts), leader election and the Redis cleanup's retries; and the one abortable sleep.
// The delays are pure: randomness is injected, and so are the timers (a test passes fake ones).

export interface BackoffOptions {
  /** First delay in ms. */
  baseMs: number;
  /** Cap in ms. */
  maxMs: number;
  /** Multiplier per failure (default 2). */
  factor?: number;
  /**
   * Jitter fraction in [0, 1]: the delay is drawn uniformly from [d * (1 - jitter), d] so retries
   * of many keys / replicas spread out instead of arriving together (default 0.2).
   */
  jitter?: number;
}

/** Delay before retry number `failures` (1 = first retry). */
export function backoffDelay(failures: number, options: BackoffOptions, random: () => number = Math.random): number {
  const factor = options.factor ?? 2;
  const jitter = Math.min(1, Math.max(0, options.jitter ?? 0.2));
  const n = Math.max(0, failures - 1);
  // Cap the exponent first: factor ** 1000 is Infinity.
  const raw = n > 64 ? options.maxMs : Math.min(options.maxMs, options.baseMs * factor ** n);
  return Math.round(raw * (1 - jitter * random()));
}

/** Stateful helper: counts failures, answers the next delay, resets on success. */
export class Backoff {
  private failures = 0;
  private readonly options: BackoffOptions;
  private readonly random: () => number;
  constructor(options: BackoffOptions, random: () => number = Math.random) {
    this.options = options;
    this.random = random;
  }
  next(): number {
    this.failures += 1;
    return backoffDelay(this.failures, this.options, this.random);
  }
  reset(): void {
    this.failures = 0;
  }
  get attempts(): number {
    return this.failures;
  }
}

/** The timers sleeps, delayed adds and deadlines are scheduled with; a test passes fake ones it advances. */
export interface Timers {
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(timer: unknown): void;
}

export const REAL_TIMERS: Timers = {
  setTimer: (fn, ms) => setTimeout(fn, ms),
  clearTimer: (timer) => clearTimeout(timer as NodeJS.Timeout),
};

/** A sleep that an AbortSignal cuts short (resolves, never rejects). */
export function sleep(ms: number, signal?: AbortSignal, timers: Timers = REAL_TIMERS): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    // Declared first: a Timers that calls back at once must find it (undefined) rather than throw.
    let timer: unknown;
    function done(): void {
      if (timer !== undefined) timers.clearTimer(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
    timer = timers.setTimer(done, ms);
  });
}
