// KubeRay's own metrics (v1.6.2 controllers/ray/metrics), same names and labels, so KubeRay's Grafana
// dashboard and a user's queries work unchanged against raykeeper standalone. Pure: one object -> its
// samples. The controller computes them from its informer caches at scrape time (controller/kuberay-metrics.ts),
// so a series exists exactly while its object does (KubeRay #3923) and a restart loses nothing.
//
// Where KubeRay observes at a transition, we read the transition from the stored status, which records it:
// - kuberay_cluster_provisioned_duration_seconds: RayClusterProvisioned turns True once ("for the first
//   time") and never back, so its lastTransitionTime - creationTimestamp is KubeRay's time.Since(creation)
//   at that transition (to the second).
// - kuberay_job_execution_duration_seconds: KubeRay observes when Initializing/Running ends in Complete,
//   Failed or Retrying. The stored status keeps the terminal one (endTime - startTime); a try that ended in
//   Retrying leaves no end time behind, so there is no Retrying sample (KubeRay keeps one per retry).
import { COND_PROVISIONED } from './raycluster/status.ts';
import { ORIGINATED_FROM_CRD_LABEL } from './rayjob/constants.ts';
import type { RayCluster, RayJob } from './types.ts';
import type { Sample } from '../kube/metrics.ts';
import { parseTime } from './time.ts';

export type ClusterLabel = 'name' | 'namespace' | 'uid';

export interface RayClusterSamples {
  info: Sample<ClusterLabel | 'owner_kind'>;
  conditionProvisioned: Sample<ClusterLabel | 'condition'>;
  provisionedDuration?: Sample<ClusterLabel>;
}

export interface RayJobSamples {
  info: Sample<ClusterLabel>;
  deploymentStatus: Sample<ClusterLabel | 'deployment_status'>;
  executionDuration?: Sample<ClusterLabel | 'job_deployment_status' | 'retry_count'>;
}

function ids(obj: { metadata: { name?: string; namespace?: string; uid?: string } }): Record<ClusterLabel, string> {
  return { name: obj.metadata.name ?? '', namespace: obj.metadata.namespace ?? '', uid: obj.metadata.uid ?? '' };
}

function seconds(from: string | undefined, to: string | undefined): number | undefined {
  const a = parseTime(from);
  const b = parseTime(to);
  return a !== undefined && b !== undefined && b >= a ? (b - a) / 1000 : undefined;
}

interface Condition {
  type?: string;
  status?: string;
  lastTransitionTime?: string;
}

export function rayClusterSamples(cluster: RayCluster): RayClusterSamples {
  const id = ids(cluster);
  const conditions = (cluster.status?.conditions ?? []) as Condition[];
  const provisioned = conditions.find((c) => c?.type === COND_PROVISIONED && c.status === 'True');
  const out: RayClusterSamples = {
    info: { labels: { ...id, owner_kind: cluster.metadata.labels?.[ORIGINATED_FROM_CRD_LABEL] ?? 'None' }, value: 1 },
    conditionProvisioned: { labels: { ...id, condition: String(provisioned !== undefined) }, value: 1 },
  };
  const duration = seconds(cluster.metadata.creationTimestamp, provisioned?.lastTransitionTime);
  if (duration !== undefined) out.provisionedDuration = { labels: id, value: duration };
  return out;
}

/** KubeRay writes New as "" (its switch knows New only so); the label carries what the status says. */
export function rayJobSamples(job: RayJob): RayJobSamples {
  const id = ids(job);
  const status = job.status ?? {};
  const deployment = status.jobDeploymentStatus ?? '';
  const out: RayJobSamples = {
    info: { labels: id, value: 1 },
    deploymentStatus: { labels: { ...id, deployment_status: deployment }, value: 1 },
  };
  const failed = typeof status.failed === 'number' ? status.failed : 0;
  const ended = deployment === 'Complete' || deployment === 'Failed' ? seconds(status.startTime, status.endTime) : undefined;
  if (ended !== undefined) {
    // KubeRay labels the sample with the failures counted before this try ended.
    const before = deployment === 'Complete' ? failed : Math.max(0, failed - 1);
    out.executionDuration = {
      labels: { ...id, job_deployment_status: deployment, retry_count: String(before) },
      value: ended,
    };
  }
  return out;
}
