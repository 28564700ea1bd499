// The reasons of every Kubernetes Event the controller writes: KubeRay's names where KubeRay has the
// event (so `kubectl get events` reads the same under either operator), ours where it has none.

import type { EventType } from '../kube/events.ts';

/** An Event a pure decision asks for; the reconciler writes it on the object it decided about. */
export interface EventSpec {
  type: EventType;
  reason: string;
  message: string;
}

/** Ours, on a RayCluster or RayJob: the API server refused our finalizer patch itself (not a failed `test`). */
export const EVENT_FINALIZER_PATCH_REJECTED = 'FinalizerPatchRejected';

// RayCluster GCS fault tolerance: KubeRay's.
export const EVENT_CREATED_REDIS_CLEANUP_JOB = 'CreatedRedisCleanupJob';
export const EVENT_FAILED_TO_CREATE_REDIS_CLEANUP_JOB = 'FailedToCreateRedisCleanupJob';
export const EVENT_FORCE_DELETED_STUCK_CLUSTER = 'ForceDeletedStuckCluster';
// RayCluster GCS fault tolerance: ours.
export const EVENT_REDIS_CLEANUP_SUCCEEDED = 'RedisCleanupSucceeded';
export const EVENT_REDIS_CLEANUP_FAILED = 'RedisCleanupFailed';
export const EVENT_REDIS_CLEANUP_DISABLED = 'RedisCleanupDisabled';
export const EVENT_REDIS_CLEANUP_SKIPPED = 'RedisCleanupSkipped';
/** Another live RayCluster claims the same storage namespace on the same Redis: released without cleaning (src/gcsft/claims.ts). */
export const EVENT_REDIS_CLEANUP_SKIPPED_SHARED_NAMESPACE = 'RedisCleanupSkippedSharedNamespace';
/** A head pod appeared after the cleanup Job was created: the Job is deleted and the cleanup runs again. */
export const EVENT_REDIS_CLEANUP_RERUN = 'RedisCleanupRerun';
export const EVENT_REDIS_CLEANED_IN_PROCESS = 'RedisCleanedByController';
export const EVENT_REDIS_CLEANUP_BLOCKED = 'RedisCleanupBlocked';
/** ray.io/gcs-ft-deletion-timeout unusable (src/gcsft/rules.ts deletionTimeoutProblem): the default applies. */
export const EVENT_INVALID_DELETION_TIMEOUT = 'InvalidGcsFtDeletionTimeout';
/** --cleanup-cpu / --cleanup-memory not usable as the cleanup Job's resources. */
export const EVENT_INVALID_REDIS_CLEANUP_RESOURCES = 'InvalidRedisCleanupResources';
/** Companion mode: KubeRay's own cleanup Job appeared for a cluster we clean. */
export const EVENT_KUBERAY_CLEANUP_ENABLED = 'KubeRayRedisCleanupEnabled';
/** Ours, from `raykeeper uninstall`: the GCS-FT finalizer removed because raykeeper is going; the message says what stays. */
export const EVENT_FINALIZER_RELEASED_FOR_UNINSTALL = 'FinalizerReleasedForUninstall';
/** Ours, from `raykeeper uninstall`: a RayJob's jobDeploymentStatus "New" (raykeeper's) set to "" (KubeRay's New). */
export const EVENT_RAYJOB_STATUS_NEW_CLEARED = 'RayJobStatusNewCleared';
/** Ours, on the controller's leader Lease: a Ray storage namespace no live RayCluster names (the orphan finder). */
export const EVENT_ORPHANED_GCS_NAMESPACE = 'OrphanedGcsNamespace';
/** Ours, on the leader Lease: --orphan-gc-after deleted such a namespace. */
export const EVENT_DELETED_ORPHANED_GCS_NAMESPACE = 'DeletedOrphanedGcsNamespace';
/** Ours: an embedded-GCS-storage claim kept (deletionPolicy Retain) after its RayCluster was deleted. */
export const EVENT_RETAINED_GCS_STORAGE_CLAIM = 'RetainedGcsStorageClaim';

// RayCluster pods and Services (KubeRay's RayCluster controller).
export const EVENT_CREATED_SERVICE = 'CreatedService';
export const EVENT_FAILED_TO_CREATE_SERVICE = 'FailedToCreateService';
/** The RayJob's head Service moved to a new attempt's cluster (KubeRay's RayJob controller, reconcileServices). */
export const EVENT_UPDATED_SERVICE = 'UpdatedService';
export const EVENT_FAILED_TO_UPDATE_SERVICE = 'FailedToUpdateService';
export const EVENT_CREATED_HEAD_POD = 'CreatedHeadPod';
export const EVENT_CREATED_WORKER_POD = 'CreatedWorkerPod';
export const EVENT_FAILED_TO_CREATE_HEAD_POD = 'FailedToCreateHeadPod';
export const EVENT_FAILED_TO_CREATE_WORKER_POD = 'FailedToCreateWorkerPod';
export const EVENT_DELETED_HEAD_POD = 'DeletedHeadPod';
export const EVENT_DELETED_WORKER_POD = 'DeletedWorkerPod';
export const EVENT_DELETED_POD = 'DeletedPod';
export const EVENT_FAILED_TO_DELETE_HEAD_POD = 'FailedToDeleteHeadPod';
export const EVENT_FAILED_TO_DELETE_WORKER_POD = 'FailedToDeleteWorkerPod';
// The autoscaler's ServiceAccount / Role / RoleBinding (KubeRay's RayCluster controller).
export const EVENT_CREATED_SERVICE_ACCOUNT = 'CreatedServiceAccount';
export const EVENT_FAILED_TO_CREATE_SERVICE_ACCOUNT = 'FailedToCreateServiceAccount';
export const EVENT_AUTOSCALER_SERVICE_ACCOUNT_NOT_FOUND = 'AutoscalerServiceAccountNotFound';
export const EVENT_CREATED_ROLE = 'CreatedRole';
export const EVENT_FAILED_TO_CREATE_ROLE = 'FailedToCreateRole';
export const EVENT_CREATED_ROLE_BINDING = 'CreatedRoleBinding';
export const EVENT_FAILED_TO_CREATE_ROLE_BINDING = 'FailedToCreateRoleBinding';
/** Ours: fields our operator does not implement (RayCluster status condition of the same name). */
export const EVENT_UNSUPPORTED_FIELDS = 'UnsupportedRayClusterFields';
// RayCluster token auth (ours: KubeRay writes no event for its auth Secret).
export const EVENT_CREATED_AUTH_SECRET = 'CreatedAuthSecret';
export const EVENT_FAILED_TO_CREATE_AUTH_SECRET = 'FailedToCreateAuthSecret';
export const EVENT_FAILED_TO_GET_AUTH_SECRET = 'FailedToGetAuthSecret';
/** Also the ReplicaFailure condition's reason: no pod is created until the Secret is usable. */
export const EVENT_AUTH_SECRET_NOT_FOUND = 'AuthSecretNotFound';
export const EVENT_AUTH_SECRET_INVALID = 'AuthSecretInvalid';
/** Embedded GCS storage's operator-managed PVC (KubeRay v1.7: FailedToCreatePVC; CreatedPVC is our name for the success). */
export const EVENT_CREATED_PVC = 'CreatedPVC';
export const EVENT_FAILED_TO_CREATE_PVC = 'FailedToCreatePVC';

// RayCluster validation (KubeRay's RayCluster controller).
export const EVENT_INVALID_RAYCLUSTER_METADATA = 'InvalidRayClusterMetadata';
export const EVENT_INVALID_RAYCLUSTER_SPEC = 'InvalidRayClusterSpec';
export const EVENT_INVALID_RAYCLUSTER_STATUS = 'InvalidRayClusterStatus';

// RayJob: KubeRay's K8sEventType values.
export const EVENT_INVALID_RAYJOB_METADATA = 'InvalidRayJobMetadata';
export const EVENT_INVALID_RAYJOB_SPEC = 'InvalidRayJobSpec';
export const EVENT_INVALID_RAYJOB_STATUS = 'InvalidRayJobStatus';
export const EVENT_CREATED_RAYCLUSTER = 'CreatedRayCluster';
export const EVENT_FAILED_TO_CREATE_RAYCLUSTER = 'FailedToCreateRayCluster';
export const EVENT_DELETED_RAYCLUSTER = 'DeletedRayCluster';
export const EVENT_FAILED_TO_DELETE_RAYCLUSTER = 'FailedToDeleteRayCluster';
export const EVENT_CREATED_SUBMITTER = 'CreatedRayJobSubmitter';
export const EVENT_FAILED_TO_CREATE_SUBMITTER = 'FailedToCreateRayJobSubmitter';
export const EVENT_DELETED_SUBMITTER = 'DeletedRayJobSubmitter';
export const EVENT_FAILED_TO_DELETE_SUBMITTER = 'FailedToDeleteRayJobSubmitter';
export const EVENT_RAYCLUSTER_NOT_FOUND = 'RayClusterNotFound';
// RayJob: ours (KubeRay has no event for these): a RayJob reached Failed, a stop request on deletion.
export const EVENT_RAYJOB_FAILED = 'RayJobFailed';
export const EVENT_STOPPED_RAY_JOB = 'StoppedRayJob';
export const EVENT_FAILED_TO_STOP_RAY_JOB = 'FailedToStopRayJob';
export const EVENT_SUBMITTED_RAY_JOB = 'SubmittedRayJob';
// RayJob deletion rules: KubeRay's names for DeleteWorkers; ours for a finished RayJob no rule matches (kuberay #5184).
export const EVENT_UPDATED_RAYCLUSTER = 'UpdatedRayCluster';
export const EVENT_FAILED_TO_UPDATE_RAYCLUSTER = 'FailedToUpdateRayCluster';
export const EVENT_DELETION_RULES_UNMATCHED = 'DeletionRulesUnmatched';
// RayCronJob: KubeRay's two (InvalidRayCronJobSpec, SuspendedRayCronJob); KubeRay has no event for the
// RayJobs it creates, so those follow its RayJob naming (CreatedRayCluster -> CreatedRayJob); batch/v1
// CronJob's names for what only CronJob's rules do (JobAlreadyActive, MissSchedule).
export const EVENT_INVALID_RAYCRONJOB_SPEC = 'InvalidRayCronJobSpec';
export const EVENT_SUSPENDED_RAYCRONJOB = 'SuspendedRayCronJob';
export const EVENT_CREATED_RAYJOB = 'CreatedRayJob';
export const EVENT_FAILED_TO_CREATE_RAYJOB = 'FailedToCreateRayJob';
export const EVENT_DELETED_RAYJOB = 'DeletedRayJob';
export const EVENT_FAILED_TO_DELETE_RAYJOB = 'FailedToDeleteRayJob';
export const EVENT_JOB_ALREADY_ACTIVE = 'JobAlreadyActive';
export const EVENT_MISS_SCHEDULE = 'MissSchedule';
