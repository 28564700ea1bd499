// How much work one command (or one pipeline) of the cleanup may carry so that Redis never spends more
// than the budget on it: a shared GCS-FT Redis serves the live clusters' GCS between our commands, never
// during one. Pure: the caller measures the server time each reply took and hands it to observe().
//
// One rule for every size the cleanup adapts (SCAN COUNT, keys per TYPE pipeline, keys per UNLINK
// pipeline), each with its own state per node:
//   - over the budget: at least halve at once, and in proportion when far over (a call 4x over the
//     budget lands at half the budget in one step, not after three);
//   - well under (below GROW_BELOW of the budget): grow towards AIM of the budget, at most doubling;
//   - in between: keep. AIM is half the budget because calls of one size vary (key sizes, rehashing,
//     bucket chains): aiming at the budget itself would put every other call over it.

export { DEFAULT_COMMAND_BUDGET_MS } from './budget.ts';

/** Where a growing size aims, as a fraction of the budget. */
export const AIM = 0.5;
/** Below this fraction of the budget a size grows; between it and the budget it stays. */
export const GROW_BELOW = 0.35;

export interface PaceLimits {
  start: number;
  min: number;
  max: number;
}

/**
 * SCAN COUNT. Redis 7.0 visits about COUNT keys per call (MATCH filters afterwards), ~0.3-2 us each
 * depending on the machine: 500 stays far under 5 ms on a slow server; the pace finds the rest.
 */
export const SCAN_PACE: PaceLimits = { start: 500, min: 10, max: 200_000 };
/** Keys per pipeline of TYPE or of UNLINK commands: the pipeline's commands run back to back. */
export const BATCH_PACE: PaceLimits = { start: 200, min: 1, max: 20_000 };

export function nextSize(size: number, serverMs: number, budgetMs: number, limits: PaceLimits): number {
  const clamp = (n: number) => Math.max(limits.min, Math.min(limits.max, Math.floor(n)));
  const aim = AIM * budgetMs;
  if (serverMs > budgetMs) return clamp(size * Math.min(0.5, aim / serverMs));
  if (serverMs < GROW_BELOW * budgetMs) return clamp(size * (serverMs <= 0 ? 2 : Math.min(2, aim / serverMs)));
  return clamp(size);
}

/** One adapted size and what it has seen: its current value, and the longest server time measured. */
export class Pace {
  size: number;
  longestMs = 0;
  readonly budgetMs: number;
  readonly limits: PaceLimits;
  /** A fixed size (--scan-count): measured, never adapted. */
  readonly fixed: number | undefined;
  constructor(budgetMs: number, limits: PaceLimits, fixed?: number | undefined) {
    this.budgetMs = budgetMs;
    this.limits = limits;
    this.fixed = fixed;
    this.size = fixed ?? limits.start;
  }

  observe(serverMs: number): void {
    this.longestMs = Math.max(this.longestMs, serverMs);
    if (this.fixed === undefined) this.size = nextSize(this.size, serverMs, this.budgetMs, this.limits);
  }
}
