// The parts of KubeRay's ray.io/v1 API that raykeeper reads or writes, and their resources (RAYCLUSTERS,
// RAYJOBS, RAYCRONJOBS: kube/resources.ts says how a descriptor types the calls and caches that name it).
// Everything else is kept as-is (index signatures), because the webhook must never drop fields it does
// not know. The Kubernetes kinds they are built from, and their one base ApiObject, are in kube/model.ts.
import type { ApiObject, EnvVarSource, PodTemplateSpec } from '../kube/model.ts';
import { Resource } from '../kube/resources.ts';

/** KubeRay's RedisCredential: `{value}` or `{valueFrom}` (a core/v1 EnvVarSource). */
export interface RedisCredential {
  value?: string;
  valueFrom?: EnvVarSource;
}

export type GcsFaultToleranceBackend = 'redis' | 'rocksdb';

export interface GcsFaultToleranceOptions {
  backend?: GcsFaultToleranceBackend | string;
  redisAddress?: string;
  redisUsername?: RedisCredential;
  redisPassword?: RedisCredential;
  externalStorageNamespace?: string;
  [key: string]: unknown;
}

export interface RayClusterSpec {
  gcsFaultToleranceOptions?: GcsFaultToleranceOptions | null;
  headGroupSpec?: { rayStartParams?: Record<string, string>; template?: PodTemplateSpec; [key: string]: unknown };
  workerGroupSpecs?: Array<{
    groupName?: string;
    suspend?: boolean;
    replicas?: number;
    minReplicas?: number;
    maxReplicas?: number;
    scaleStrategy?: { workersToDelete?: string[] };
    [key: string]: unknown;
  }>;
  enableInTreeAutoscaling?: boolean;
  suspend?: boolean;
  /** Which controller reconciles the cluster (KubeRay's ManagedBy; src/gcsft/rules.ts isManagedExternally). */
  managedBy?: string;
  [key: string]: unknown;
}

export interface RayCluster extends ApiObject {
  spec?: RayClusterSpec;
  status?: { state?: string; [key: string]: unknown };
  [key: string]: unknown;
}

export const RAYCLUSTERS = new Resource<RayCluster>({ group: 'ray.io', version: 'v1', plural: 'rayclusters' });

/**
 * A RayCluster as far as its GCS fault tolerance goes: its metadata, gcsFaultToleranceOptions, managedBy and
 * the head's Redis settings (rayStartParams' redis-password, the head container's Redis env, envFrom and TLS
 * mounts). What a cache that needs no more keeps (controller/raycluster/informers.ts FT_RAYCLUSTER), and
 * what the GCS-FT rules, the cleanup decision, the storage-namespace claims and the orphan finder read
 * (src/gcsft/): a whole RayCluster is one too.
 */
export interface RayClusterFtView extends ApiObject {
  spec?: Pick<RayClusterSpec, 'gcsFaultToleranceOptions' | 'headGroupSpec' | 'managedBy'> | undefined;
}

export type JobDeploymentStatus =
  | 'New'
  | 'Initializing'
  | 'Running'
  | 'Complete'
  | 'Failed'
  | 'ValidationFailed'
  | 'Suspending'
  | 'Suspended'
  | 'Retrying'
  | 'Waiting';

export const JOB_DEPLOYMENT_STATUSES: readonly JobDeploymentStatus[] = [
  'New',
  'Initializing',
  'Running',
  'Complete',
  'Failed',
  'ValidationFailed',
  'Suspending',
  'Suspended',
  'Retrying',
  'Waiting',
];

export type RayJobSubmissionMode = 'K8sJobMode' | 'HTTPMode' | 'InteractiveMode' | 'SidecarMode';

/** What a deletion rule does once its condition has held for ttlSeconds (KubeRay's DeletionPolicyType). */
export type DeletionPolicyType = 'DeleteCluster' | 'DeleteWorkers' | 'DeleteSelf' | 'DeleteNone';
export const DELETION_POLICIES: readonly DeletionPolicyType[] = ['DeleteCluster', 'DeleteWorkers', 'DeleteSelf', 'DeleteNone'];

/** Exactly one of jobStatus (SUCCEEDED | FAILED) and jobDeploymentStatus (Failed), after ttlSeconds (default 0). */
export interface DeletionCondition {
  jobStatus?: string | null;
  jobDeploymentStatus?: string | null;
  ttlSeconds?: number | null;
}

export interface DeletionRule {
  policy: DeletionPolicyType | string;
  condition: DeletionCondition;
}

/** spec.deletionStrategy: legacy onSuccess + onFailure (both), or deletionRules; never both. */
export interface DeletionStrategy {
  onSuccess?: { policy?: DeletionPolicyType | string | null } | null;
  onFailure?: { policy?: DeletionPolicyType | string | null } | null;
  deletionRules?: DeletionRule[] | null;
}

export interface RayJobSpec {
  entrypoint?: string;
  jobId?: string;
  submissionMode?: RayJobSubmissionMode | string;
  rayClusterSpec?: RayClusterSpec;
  clusterSelector?: Record<string, string>;
  shutdownAfterJobFinishes?: boolean;
  ttlSecondsAfterFinished?: number;
  activeDeadlineSeconds?: number;
  preRunningDeadlineSeconds?: number;
  backoffLimit?: number;
  suspend?: boolean;
  submitterConfig?: { backoffLimit?: number; [key: string]: unknown };
  deletionStrategy?: DeletionStrategy | null;
  [key: string]: unknown;
}

export interface RayJobStatus {
  jobDeploymentStatus?: JobDeploymentStatus | '' | string;
  jobStatus?: string;
  jobId?: string;
  rayClusterName?: string;
  dashboardURL?: string;
  startTime?: string;
  endTime?: string;
  succeeded?: number;
  failed?: number;
  reason?: string;
  message?: string;
  [key: string]: unknown;
}

export interface RayJob extends ApiObject {
  spec?: RayJobSpec;
  status?: RayJobStatus;
  [key: string]: unknown;
}

export const RAYJOBS = new Resource<RayJob>({ group: 'ray.io', version: 'v1', plural: 'rayjobs' });

/** batch/v1 CronJob's concurrencyPolicy, which raykeeper adds to RayCronJob (KubeRay has no such field). */
export type ConcurrencyPolicy = 'Allow' | 'Forbid' | 'Replace';
export const CONCURRENCY_POLICIES: readonly ConcurrencyPolicy[] = ['Allow', 'Forbid', 'Replace'];

/**
 * ray.io/v1 RayCronJob (KubeRay v1.6 alpha, v1.7 `timeZone`). `concurrencyPolicy`, `startingDeadlineSeconds`
 * and the two history limits are batch/v1 CronJob's, raykeeper's additions.
 */
export interface RayCronJobSpec {
  schedule?: string;
  timeZone?: string | null;
  jobTemplate?: RayJobSpec;
  suspend?: boolean;
  concurrencyPolicy?: ConcurrencyPolicy | string;
  startingDeadlineSeconds?: number | null;
  successfulJobsHistoryLimit?: number | null;
  failedJobsHistoryLimit?: number | null;
  [key: string]: unknown;
}

export interface RayCronJobStatus {
  /** The scheduled time of the last RayJob created (RFC 3339). */
  lastScheduleTime?: string;
  [key: string]: unknown;
}

export interface RayCronJob extends ApiObject {
  spec?: RayCronJobSpec;
  status?: RayCronJobStatus;
  [key: string]: unknown;
}

export const RAYCRONJOBS = new Resource<RayCronJob>({ group: 'ray.io', version: 'v1', plural: 'raycronjobs' });
