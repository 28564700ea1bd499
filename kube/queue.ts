// A work queue of object keys with the semantics of client-go's workqueue:
// - deduplicated: a key waiting in the queue is stored once, however often it is added;
// - one in flight per key: a key added while it is being processed is parked ("dirty") and queued
//   again when `done(key)` is called, so the same key is never handed to two workers at once;
// - delayed adds (`addAfter`, earliest deadline wins) and per-key exponential, capped, jittered
//   retries (`addRateLimited`, reset by `forget`);
// - shutdown: no new keys, waiting `get()` calls resolve undefined, `drain()` waits for in-flight work.
import { backoffDelay, REAL_TIMERS, type BackoffOptions, type Timers } from './backoff.ts';

export interface WorkQueueHooks {
  /** A key entered the ready queue (after dedup). */
  onAdd?(key: string): void;
  /** A retry was scheduled after a failure. */
  onRetry?(key: string, delayMs: number, failures: number): void;
  /** A key was handed to a worker; `waitedMs` since it became ready. */
  onGet?(key: string, waitedMs: number): void;
}

export interface WorkQueueOptions {
  retry?: BackoffOptions;
  hooks?: WorkQueueHooks;
  random?: () => number;
  now?: () => number;
  /** What delayed adds and drain timeouts are scheduled with. */
  timers?: Timers;
}

export const DEFAULT_RETRY: BackoffOptions = { baseMs: 500, maxMs: 300_000, factor: 2, jitter: 0.2 };

export class WorkQueue {
  private readonly ready = new Map<string, number>(); // key -> time it became ready (insertion-ordered)
  private readonly processing = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly delayed = new Map<string, { at: number; timer: unknown }>();
  private readonly failures = new Map<string, number>();
  private readonly waiters: Array<(key: string | undefined) => void> = [];
  private readonly idleWaiters: Array<() => void> = [];
  private closed = false;
  private readonly retry: BackoffOptions;
  private readonly hooks: WorkQueueHooks;
  private readonly random: () => number;
  private readonly now: () => number;
  private readonly timers: Timers;

  constructor(options: WorkQueueOptions = {}) {
    this.retry = options.retry ?? DEFAULT_RETRY;
    this.hooks = options.hooks ?? {};
    this.random = options.random ?? Math.random;
    this.now = options.now ?? Date.now;
    this.timers = options.timers ?? REAL_TIMERS;
  }

  /** Keys ready to be handed out (not counting in-flight or delayed ones). */
  get length(): number {
    return this.ready.size;
  }
  get inFlight(): number {
    return this.processing.size;
  }
  get delayedCount(): number {
    return this.delayed.size;
  }
  get shuttingDown(): boolean {
    return this.closed;
  }

  add(key: string): void {
    if (this.closed) return;
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.ready.has(key)) return;
    const waiter = this.waiters.shift();
    if (waiter) {
      // Hand it straight to an idle worker.
      this.processing.add(key);
      this.hooks.onAdd?.(key);
      this.hooks.onGet?.(key, 0);
      waiter(key);
      return;
    }
    this.ready.set(key, this.now());
    this.hooks.onAdd?.(key);
  }

  /** Adds the key after `ms`; if it is already scheduled sooner, the earlier time wins. */
  addAfter(key: string, ms: number): void {
    if (this.closed) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const at = this.now() + ms;
    const existing = this.delayed.get(key);
    if (existing && existing.at <= at) return;
    if (existing) this.timers.clearTimer(existing.timer);
    const timer = this.timers.setTimer(() => {
      this.delayed.delete(key);
      this.add(key);
    }, ms);
    this.delayed.set(key, { at, timer });
  }

  /** Schedules a retry after a failure: exponential per key, capped, jittered. */
  addRateLimited(key: string): number {
    const n = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, n);
    const delay = backoffDelay(n, this.retry, this.random);
    this.hooks.onRetry?.(key, delay, n);
    this.addAfter(key, delay);
    return delay;
  }

  /** Clears the failure count of a key (after a successful reconcile). */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** When a delayed add of `key` fires (ms epoch), if one is scheduled. */
  scheduledAt(key: string): number | undefined {
    return this.delayed.get(key)?.at;
  }

  failuresOf(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** Next key to process, or undefined once the queue is shut down. Call `done(key)` afterwards. */
  get(): Promise<string | undefined> {
    const first = this.ready.entries().next();
    if (!first.done) {
      const [key, since] = first.value;
      this.ready.delete(key);
      this.processing.add(key);
      this.hooks.onGet?.(key, this.now() - since);
      return Promise.resolve(key);
    }
    if (this.closed) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Marks the key finished; if it was added meanwhile, it becomes ready again. */
  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.delete(key) && !this.closed) this.add(key);
    if (this.processing.size === 0) for (const w of this.idleWaiters.splice(0)) w();
  }

  /** Stops accepting keys, cancels delayed adds and releases idle workers. */
  shutdown(): void {
    this.closed = true;
    for (const { timer } of this.delayed.values()) this.timers.clearTimer(timer);
    this.delayed.clear();
    this.ready.clear();
    this.dirty.clear();
    for (const w of this.waiters.splice(0)) w(undefined);
  }

  /** Resolves when no key is in flight, or after `timeoutMs` (returns false then). */
  drain(timeoutMs: number): Promise<boolean> {
    if (this.processing.size === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = this.timers.setTimer(() => resolve(false), timeoutMs);
      this.idleWaiters.push(() => {
        this.timers.clearTimer(timer);
        resolve(true);
      });
    });
  }
}

/**
 * Runs `workers` loops that hand the queue's keys to `handle` until the queue shuts down: a key that
 * throws is retried with its per-key backoff (`onError` hears of it), one that returns is forgotten.
 * Resolves when every loop has ended. (The controller manager runs its own loops: metrics, requeues.)
 */
export function runWorkers(
  queue: WorkQueue,
  workers: number,
  handle: (key: string) => Promise<void>,
  onError: (key: string, err: unknown, retryInMs: number) => void,
): Promise<void> {
  const loop = async (): Promise<void> => {
    for (let key = await queue.get(); key !== undefined; key = await queue.get()) {
      try {
        await handle(key);
        queue.forget(key);
      } catch (err) {
        if (!queue.shuttingDown) onError(key, err, queue.addRateLimited(key));
      } finally {
        queue.done(key);
      }
    }
  };
  return Promise.all(Array.from({ length: workers }, loop)).then(() => undefined);
}
