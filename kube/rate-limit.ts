// The client side cap on API requests: `--qps` and `--burst`, KubeRay's flags (client-go's token bucket:
// `burst` requests at once, then `qps` a second). Off by default here (KubeRay's defaults are 100 and
// 200): the API server's Priority and Fairness already queues a client that asks too much, and at 1,000
// RayClusters created 20 a second the controller needs ~250 requests a second, which a cap of 100 would
// turn into minutes of waiting (bench/scale.ts). A cluster admin who wants the cap sets it.
//
// Pure arithmetic, reservation style (golang.org/x/time/rate's Reserve): every request takes a token at
// once, the balance may go negative, and the caller waits for the debt to be repaid; first come, first
// served without a queue; a request aborted while it waits gives its token back.

export class TokenBucket {
  readonly qps: number;
  readonly burst: number;
  private tokens: number;
  private last: number;
  private readonly now: () => number;

  constructor(qps: number, burst: number, now: () => number = () => performance.now()) {
    if (!(qps > 0) || !Number.isFinite(qps)) throw new Error(`qps must be a number > 0, got ${qps}`);
    this.qps = qps;
    this.burst = Math.max(1, Math.floor(burst));
    this.tokens = this.burst;
    this.now = now;
    this.last = now();
  }

  /** Takes one token; the milliseconds to wait before sending (0: at once). */
  reserve(): number {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) * this.qps) / 1000);
    this.last = t;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens * 1000) / this.qps;
  }

  /** Gives back a token reserved by a request that was not sent (aborted while it waited). */
  cancel(): void {
    this.tokens = Math.min(this.burst, this.tokens + 1);
  }
}

/** `--qps` / `--burst` as given: qps 0 (the default) means no cap; burst defaults to twice qps, as KubeRay's 100/200. */
export function clientRateLimit(qps: number, burst: number | undefined): { qps: number; burst: number } | undefined {
  if (qps === 0) return undefined;
  return { qps, burst: burst ?? Math.max(1, Math.ceil(qps * 2)) };
}
