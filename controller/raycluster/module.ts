// The RayCluster operator as a module of `raykeeper controller`: head and worker Pods, Services and
// status for clusters without KubeRay. Beside KubeRay (companion mode) leave it out:
// `--reconcilers raycluster,rayjob`.
import { MODULE } from '../module-names.ts';
import { redisCleanupEnabled } from '../../src/gcsft/rules.ts';
import { ENABLE_RANDOM_POD_DELETE_ENV } from '../../src/raycluster/autoscaler.ts';
import { runsModule, type ReconcilerModule } from '../../kube/reconciler.ts';

function off(v: string | undefined): boolean {
  return v?.toLowerCase() === 'false';
}

export const rayClusterOperatorModule: ReconcilerModule = {
  name: MODULE.rayClusterPods,
  summary: "RayCluster operator: head/worker Pods, head Service, status, as KubeRay's (leave out beside KubeRay)",
  flags: {
    'cluster-domain': {
      type: 'string',
      help: 'DNS suffix of the head Service FQDN workers join (default: env CLUSTER_DOMAIN, else cluster.local)',
    },
  },
  async create(ctx, flags) {
    const { createRayClusterOperator } = await import('./reconciler.ts');
    // The GCS-FT cleanup reconciler adds the finalizer the first pod waits for; when it is not run
    // (--reconcilers without it) or the cleanup is off, nothing would ever add it.
    const cleanupRuns = runsModule(ctx, MODULE.gcsFtCleanup);
    const clusterDomain =
      (typeof flags['cluster-domain'] === 'string' && flags['cluster-domain']) || ctx.env.CLUSTER_DOMAIN || 'cluster.local';
    const config = {
      waitForCleanupFinalizer: cleanupRuns && redisCleanupEnabled(ctx.env.ENABLE_GCS_FT_REDIS_CLEANUP),
      randomPodDelete: ctx.env[ENABLE_RANDOM_POD_DELETE_ENV]?.toLowerCase() === 'true',
      build: { clusterDomain, probes: !off(ctx.env.ENABLE_PROBES_INJECTION), initContainer: !off(ctx.env.ENABLE_INIT_CONTAINER_INJECTION) },
    };
    ctx.logger.info(config, 'raycluster operator configured');
    return createRayClusterOperator(ctx, config);
  },
};
