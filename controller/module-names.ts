// The names of `raykeeper controller`'s reconciler modules: what `--reconcilers` takes, the `controller`
// label of their metrics and log lines. A module that depends on whether another runs asks
// runsModule(ctx, MODULE.x) (kube/reconciler.ts) with these, never a string of its own.
export const MODULE = {
  /** GCS-FT Redis cleanup on RayCluster deletion (controller/gcsft-cleanup/). */
  gcsFtCleanup: 'raycluster',
  /** The pod operator: head/worker Pods, head Service, status (controller/raycluster/). */
  rayClusterPods: 'raycluster-pods',
  /** The RayJob state machine (controller/rayjob/). */
  rayJob: 'rayjob',
  /** RayCronJob: a RayJob a tick (controller/raycronjob/). */
  rayCronJob: 'raycronjob',
  /** Reports (and with --orphan-gc-after deletes) Ray storage namespaces no RayCluster names (controller/gcsft-orphans/). */
  gcsOrphans: 'gcs-orphans',
} as const;
