// Reading and comparing a RayJob's status: the stored state (absent or "" is New), whether a new status
// differs from the stored one, the cluster status KubeRay mirrors into it, the status-check clock.
import { parseTime } from '../../time.ts';
import { JOB_DEPLOYMENT_STATUSES, type JobDeploymentStatus, type RayCluster, type RayJob, type RayJobStatus } from '../../types.ts';
import { STATUS_CHECK_FAILING_SINCE_ANNOTATION } from '../constants.ts';

/** status.jobDeploymentStatus as stored; absent or "" reads as New (KubeRay encodes New as ""). */
export function storedState(job: RayJob): string {
  const value = job.status?.jobDeploymentStatus;
  return value === undefined || value === null || value === '' ? 'New' : String(value);
}

function isDeploymentStatus(value: string): value is JobDeploymentStatus {
  return (JOB_DEPLOYMENT_STATUSES as readonly string[]).includes(value);
}

/** The state the switch runs on, or undefined for a state this version does not know. */
export function currentState(job: RayJob): JobDeploymentStatus | undefined {
  const state = storedState(job);
  return isDeploymentStatus(state) ? state : undefined;
}

/** Drops keys whose value is undefined, so two statuses compare by what would be stored. */
export function clean<T extends object>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** Whether writing `next` would change the stored status (key order and undefined keys ignored). */
export function rayJobStatusChanged(stored: RayJobStatus | undefined, next: RayJobStatus): boolean {
  return stableStringify(clean(stored ?? {})) !== stableStringify(clean(next));
}

/** The cluster status KubeRay mirrors into status.rayClusterStatus, minus its heartbeat timestamp. */
export function clusterStatusSummary(cluster: RayCluster): Record<string, unknown> | undefined {
  const status = cluster.status;
  if (status === undefined || status === null) return undefined;
  const { lastUpdateTime: _ignored, ...rest } = status as Record<string, unknown>;
  return Object.keys(rest).length > 0 ? rest : undefined;
}

/** When the dashboard began failing for this Running attempt (the annotation), in ms. */
export function statusCheckFailingSince(job: RayJob): number | undefined {
  return parseTime(job.metadata.annotations?.[STATUS_CHECK_FAILING_SINCE_ANNOTATION]);
}
