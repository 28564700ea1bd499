// A byte budget for request bodies in flight: what bounds the webhook's memory. A parsed body costs many
// times its size on the heap (~20x for JSON made of empty objects; see MAX_JSON_CONTAINERS below and
// bench/webhook-memory.ts), so the sum of the bodies being read, parsed and answered at once is capped,
// not their number: hundreds of ordinary 4 KB reviews run side by side, a maximum-size one runs alone.
//
// Pure bookkeeping, no I/O: acquire(weight) resolves true when the weight fits (FIFO, so a large request is
// not starved by small ones), false when it waited maxWaitMs or maxWaiters were already queued.

export interface ByteBudgetOptions {
  /** Bytes that may be in flight at once. A single request's weight is capped at this. */
  capacity: number;
  /** Longest wait for room before giving up (the API server's webhook timeout is 5-10 s). */
  maxWaitMs: number;
  /** Requests that may wait at once; more are refused at once. */
  maxWaiters: number;
}

interface Waiter {
  weight: number;
  resolve: (ok: boolean) => void;
  timer: NodeJS.Timeout;
}

export class ByteBudget {
  readonly capacity: number;
  #options: ByteBudgetOptions;
  #used = 0;
  #waiters: Waiter[] = [];

  constructor(options: ByteBudgetOptions) {
    if (!(options.capacity > 0)) throw new Error('the byte budget needs a positive capacity');
    this.#options = options;
    this.capacity = options.capacity;
  }

  /** Bytes currently held. */
  get used(): number {
    return this.#used;
  }

  get waiting(): number {
    return this.#waiters.length;
  }

  /** Takes `weight` bytes now if they fit and nobody waits before; the caller must release() them. */
  tryAcquire(weight: number): boolean {
    const w = this.#clamp(weight);
    if (this.#waiters.length > 0 || this.#used + w > this.capacity) return false;
    this.#used += w;
    return true;
  }

  /** Resolves true once `weight` bytes are held (release them), false when refused or timed out. */
  acquire(weight: number): Promise<boolean> {
    if (this.tryAcquire(weight)) return Promise.resolve(true);
    if (this.#waiters.length >= this.#options.maxWaiters) return Promise.resolve(false);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        weight: this.#clamp(weight),
        resolve,
        timer: setTimeout(() => {
          this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
          resolve(false);
          this.#drain(); // the head may have been the one that did not fit
        }, this.#options.maxWaitMs),
      };
      this.#waiters.push(waiter);
    });
  }

  release(weight: number): void {
    this.#used -= this.#clamp(weight);
    if (this.#used < 0) throw new Error('byte budget released more than it held');
    this.#drain();
  }

  #clamp(weight: number): number {
    return Math.min(Math.max(0, weight), this.capacity);
  }

  #drain(): void {
    while (this.#waiters.length > 0) {
      const head = this.#waiters[0]!;
      if (this.#used + head.weight > this.capacity) return;
      this.#waiters.shift();
      clearTimeout(head.timer);
      this.#used += head.weight;
      head.resolve(true);
    }
  }
}

/**
 * At most this many JSON objects and arrays in one body. They are what makes a parsed body cost many times
 * its size (an empty object: 3 bytes of JSON, ~64 bytes of heap, twice that while JSON.parse builds it).
 * The densest JSON a RayCluster really holds is managedFields (`"f:name":{}`, one container per ~14
 * bytes); even a body at the limit made of nothing else (~245,000) fits. Real reviews hold one per ~35
 * bytes (the KubeRay sample: 62 in 2.3 KB), ~100,000 at the limit.
 */
export const MAX_JSON_CONTAINERS = 250_000;

/** Bodies shorter than this cannot hold MAX_JSON_CONTAINERS and are not scanned. */
export const CONTAINER_SCAN_THRESHOLD = 2 * MAX_JSON_CONTAINERS;

/** Counts `{` and `[` (inside strings too: an over-estimate, never an under-estimate). */
export function jsonContainerCount(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x7b || c === 0x5b) n++;
  }
  return n;
}
