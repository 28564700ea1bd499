// The RayCluster reconciler as a module of `raykeeper controller` (flags + factory).
import { MODULE } from '../module-names.ts';
import { redisCleanupEnabled } from '../../src/gcsft/rules.ts';
import {
  CLEANUP_SWEEP_POLICIES,
  DEFAULT_CLEANUP_CPU,
  DEFAULT_CLEANUP_IMAGE,
  DEFAULT_CLEANUP_MEMORY,
  isQuantity,
  type CleanupSweepPolicy,
} from '../../src/gcsft/cleanup-job.ts';
import { RAY_RELEASE } from '../../src/ray-release.ts';
import { CLEANUP_COMMAND_BUDGET_ANNOTATION, DEFAULT_COMMAND_BUDGET_MS, parseCommandBudget } from '../../src/redis/budget.ts';
import type { ReconcilerModule } from '../../kube/reconciler.ts';

/** Env var holding the operator's own image (set it in the Deployment to the image it runs). */
export const IMAGE_ENV = 'RAYKEEPER_IMAGE';

function str(v: string | boolean | undefined): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** --cleanup-command-budget-ms (undefined: the cleanup's default); the orphan finder's GC reads it too. */
export function operatorCommandBudget(flags: Record<string, string | boolean | undefined>): number | undefined {
  const raw = str(flags['cleanup-command-budget-ms']);
  if (raw === undefined) return undefined;
  const parsed = parseCommandBudget(raw);
  if ('problem' in parsed) throw new Error(`--cleanup-command-budget-ms ${parsed.problem}`);
  return parsed.ms;
}

export const gcsFtCleanupModule: ReconcilerModule = {
  name: MODULE.gcsFtCleanup,
  summary: 'GCS fault-tolerance finalizer and Redis cleanup Job of RayClusters (ENABLE_GCS_FT_REDIS_CLEANUP)',
  flags: {
    'cleanup-image': { type: 'string', help: `image of the Redis cleanup Job (default: env ${IMAGE_ENV}, else ${DEFAULT_CLEANUP_IMAGE})` },
    'cleanup-image-pull-policy': { type: 'string', help: 'imagePullPolicy of the cleanup Job (default: Kubernetes default)' },
    'cleanup-image-pull-secrets': {
      type: 'string',
      help: 'comma-separated imagePullSecrets for the cleanup Job (Secrets in the cluster namespace)',
    },
    'cleanup-cpu': {
      type: 'string',
      help: `CPU request = limit of the cleanup Job (default ${DEFAULT_CLEANUP_CPU}; annotation raykeeper.io/redis-cleanup-cpu overrides)`,
    },
    'cleanup-memory': {
      type: 'string',
      help: `memory request = limit (default ${DEFAULT_CLEANUP_MEMORY}; annotation raykeeper.io/redis-cleanup-memory overrides)`,
    },
    'cleanup-sweep': {
      type: 'string',
      help: `auto (default): the cleanup walks the Redis keyspace (SCAN) only for a Ray newer than ${RAY_RELEASE}, or of unknown version (spec.rayVersion, head image tag) when its head recorded none in Redis; always: for every cluster`,
    },
    'cleanup-command-budget-ms': {
      type: 'string',
      help: `the most Redis server time one command of a cleanup may take, for every cluster (default ${DEFAULT_COMMAND_BUDGET_MS}; annotation ${CLEANUP_COMMAND_BUDGET_ANNOTATION} overrides); the orphan GC uses it too`,
    },
    'disable-in-process-cleanup': {
      type: 'boolean',
      help: 'never run the cleanup in the controller when the namespace is terminating (default: do, when the Secrets are readable)',
    },
  },
  // The reconciler (and @kubernetes/client-node behind it) loads only when the controller starts, so
  // `raykeeper controller --help` and flag errors stay fast.
  async create(ctx, flags) {
    const { createGcsFtCleanupController } = await import('./reconciler.ts');
    const cpu = str(flags['cleanup-cpu']) ?? DEFAULT_CLEANUP_CPU;
    const memory = str(flags['cleanup-memory']) ?? DEFAULT_CLEANUP_MEMORY;
    if (!isQuantity(cpu)) throw new Error(`--cleanup-cpu: ${JSON.stringify(cpu)} is not a positive quantity`);
    if (!isQuantity(memory)) throw new Error(`--cleanup-memory: ${JSON.stringify(memory)} is not a positive quantity`);
    const sweep = (str(flags['cleanup-sweep']) ?? 'auto') as CleanupSweepPolicy;
    if (!CLEANUP_SWEEP_POLICIES.includes(sweep))
      throw new Error(`--cleanup-sweep: ${JSON.stringify(sweep)} is not one of ${CLEANUP_SWEEP_POLICIES.join(', ')}`);
    const commandBudgetMs = operatorCommandBudget(flags);
    const image = str(flags['cleanup-image']) ?? str(ctx.env[IMAGE_ENV]) ?? DEFAULT_CLEANUP_IMAGE;
    const gateEnabled = redisCleanupEnabled(ctx.env.ENABLE_GCS_FT_REDIS_CLEANUP);
    ctx.logger.info({ image, cpu, memory, sweep, commandBudgetMs, gateEnabled }, 'raycluster reconciler configured');
    return createGcsFtCleanupController(ctx, {
      gateEnabled,
      inProcessCleanup: flags['disable-in-process-cleanup'] !== true,
      job: {
        image,
        cpu,
        memory,
        sweep,
        commandBudgetMs,
        imagePullPolicy: str(flags['cleanup-image-pull-policy']),
        imagePullSecrets: str(flags['cleanup-image-pull-secrets'])
          ?.split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      },
    });
  },
};
