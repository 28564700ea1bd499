// KubeRay's metric names on raykeeper's /metrics (src/kuberay-metrics.ts says what each sample is), read
// from the informer caches at scrape time: no API call per scrape, one series per object while it exists.
// Only for the objects this process drives: beside KubeRay (companion mode) KubeRay's operator exports
// these names itself, and two targets with the same series would double every sum on its dashboard.
import { runsModule, type ControllerContext } from '../kube/reconciler.ts';
import { rayClusterSamples, rayJobSamples } from '../src/kuberay-metrics.ts';
import { cachedGauge, type Registry, type Sample } from '../kube/metrics.ts';
import { RAYJOBS, type RayCluster, type RayJob } from '../src/types.ts';
import { MODULE } from './module-names.ts';
import { operatorRayClusterInformer } from './raycluster/informers.ts';

type SampleOf<T> = (obj: T) => Sample | undefined;

const CLUSTER = ['name', 'namespace', 'uid'];

/** Registers the kuberay_* gauges for what this process runs; returns their names (for the log line). */
export function registerKubeRayMetrics(ctx: ControllerContext, registry: Registry): string[] {
  const names: string[] = [];
  const clusters = runsModule(ctx, MODULE.rayClusterPods) ? operatorRayClusterInformer(ctx) : undefined;
  if (clusters) {
    const gauge = (name: string, help: string, labels: string[], pick: SampleOf<RayCluster>) => {
      cachedGauge(registry, { name, help, labelNames: labels }, clusters, pick, ctx.isLeader);
      names.push(name);
    };
    gauge(
      'kuberay_cluster_info',
      'Metadata information about RayCluster custom resources',
      [...CLUSTER, 'owner_kind'],
      (c) => rayClusterSamples(c).info,
    );
    gauge(
      'kuberay_cluster_condition_provisioned',
      'Indicates whether the RayCluster is provisioned',
      [...CLUSTER, 'condition'],
      (c) => rayClusterSamples(c).conditionProvisioned,
    );
    gauge(
      'kuberay_cluster_provisioned_duration_seconds',
      "The time, in seconds, when a RayCluster's `RayClusterProvisioned` status transitions from false (or unset) to true",
      CLUSTER,
      (c) => rayClusterSamples(c).provisionedDuration,
    );
  }
  if (runsModule(ctx, MODULE.rayJob)) {
    const jobs = ctx.informers.get({ ...RAYJOBS });
    const gauge = (name: string, help: string, labels: string[], pick: SampleOf<RayJob>) => {
      cachedGauge(registry, { name, help, labelNames: labels }, jobs, pick, ctx.isLeader);
      names.push(name);
    };
    gauge('kuberay_job_info', 'Metadata information about RayJob custom resources', CLUSTER, (j) => rayJobSamples(j).info);
    gauge(
      'kuberay_job_deployment_status',
      "The RayJob's current deployment status",
      [...CLUSTER, 'deployment_status'],
      (j) => rayJobSamples(j).deploymentStatus,
    );
    gauge(
      'kuberay_job_execution_duration_seconds',
      'Duration from when the RayJob CR’s JobDeploymentStatus transitions from Initializing to either the Retrying state or a terminal state, such as Complete or Failed. The Retrying state indicates that the CR previously failed and that spec.backoffLimit is enabled.',
      [...CLUSTER, 'job_deployment_status', 'retry_count'],
      (j) => rayJobSamples(j).executionDuration,
    );
  }
  return names;
}
