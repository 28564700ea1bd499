// SCAN COUNT that adapts to the server: large enough that a walk of a big keyspace is not dominated by
// round trips, small enough that one SCAN call never blocks a shared Redis for long. Pure.
//
// Each call's round trip is measured; below half the target the COUNT doubles, above twice the target it
// halves, within [MIN, MAX]. On an idle server the walk settles at MAX (a call over 1M keys takes a
// few ms), on a loaded or slow one it backs off.

export const SCAN_COUNT_START = 2000;
export const SCAN_COUNT_MIN = 100;
export const SCAN_COUNT_MAX = 32_000;
/** Wanted duration of one SCAN round trip. */
export const SCAN_TARGET_MS = 15;

export function nextScanCount(count: number, elapsedMs: number, targetMs = SCAN_TARGET_MS): number {
  if (elapsedMs < targetMs / 2) return Math.min(SCAN_COUNT_MAX, count * 2);
  if (elapsedMs > targetMs * 2) return Math.max(SCAN_COUNT_MIN, Math.floor(count / 2));
  return count;
}
