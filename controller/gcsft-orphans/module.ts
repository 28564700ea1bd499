// The orphan finder as a module of `raykeeper controller` (flags + factory); the work is in ./finder.ts.
import { MODULE } from '../module-names.ts';
import { parseDuration } from '../../src/time.ts';
import { operatorCommandBudget } from '../gcsft-cleanup/module.ts';
import type { ReconcilerModule } from '../../kube/reconciler.ts';

/** Standalone default; beside KubeRay (companion mode) the default is 0 (off). */
export const DEFAULT_ORPHAN_SCAN_INTERVAL = '10m';

function duration(raw: string | boolean | undefined, flag: string, fallback: string): number {
  const text = typeof raw === 'string' && raw !== '' ? raw : fallback;
  const ms = parseDuration(text);
  if (ms === undefined) throw new Error(`--${flag}: ${JSON.stringify(text)} is not a duration (e.g. 0, 90s, 10m, 1h, 7d)`);
  return ms;
}

export const gcsOrphansModule: ReconcilerModule = {
  name: MODULE.gcsOrphans,
  summary: 'reports Ray storage namespaces in Redis that no RayCluster names (gauge, log, Event on the leader Lease); opt-in deletion',
  flags: {
    'orphan-scan-interval': {
      type: 'string',
      help: `list every Redis a GCS-FT RayCluster points at this often (default ${DEFAULT_ORPHAN_SCAN_INTERVAL}; 0 in companion mode: off)`,
    },
    'orphan-gc-after': {
      type: 'string',
      help: 'delete an orphan seen orphaned continuously this long, re-checked against the API first (default 0: never)',
    },
  },
  async create(ctx, flags) {
    const { createOrphanFinder } = await import('./finder.ts');
    const intervalMs = duration(flags['orphan-scan-interval'], 'orphan-scan-interval', ctx.companion ? '0' : DEFAULT_ORPHAN_SCAN_INTERVAL);
    const gcAfterMs = duration(flags['orphan-gc-after'], 'orphan-gc-after', '0');
    if (gcAfterMs > 0 && intervalMs === 0) throw new Error('--orphan-gc-after needs --orphan-scan-interval (the scans are off)');
    const commandBudgetMs = operatorCommandBudget(flags);
    ctx.logger.info({ intervalMs, gcAfterMs, commandBudgetMs, companion: ctx.companion === true }, 'orphan finder configured');
    return createOrphanFinder(ctx, { intervalMs, gcAfterMs, commandBudgetMs }).registration;
  },
};
