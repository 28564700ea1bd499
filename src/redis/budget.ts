// The Redis cleanup's command budget: the most server time any one command (or pipeline) of its sweep may
// take, so a shared Redis keeps answering the live clusters' GCS (pace.ts).
// Here because the CLI (`--command-budget-ms`) and the controller (the RayCluster annotation, passed to
// the Job's args and to the in-process cleanup) read it the same way.

export const DEFAULT_COMMAND_BUDGET_MS = 5;
/** Per cluster: `raykeeper.io/redis-cleanup-command-budget-ms: "2"`. */
export const CLEANUP_COMMAND_BUDGET_ANNOTATION = 'raykeeper.io/redis-cleanup-command-budget-ms';

/** A budget in milliseconds as text: a number in (0, 1000], or why not. */
export function parseCommandBudget(raw: string): { ms: number } | { problem: string } {
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(n) || n <= 0 || n > 1000)
    return { problem: `must be a number of milliseconds in (0, 1000], got ${JSON.stringify(raw)}` };
  return { ms: n };
}
