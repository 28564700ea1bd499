// RayJob names and defaults shared with KubeRay (ray-operator/controllers/ray/utils/constant.go,
// apis/ray/v1/rayjob_types.go). Changing one breaks compatibility. Names used by both resources
// (finalizers, ray.io/cluster) live in ../names.ts.

/**
 * KubeRay's IsJobTerminal, kept in step with Ray's JobStatus.is_terminal(). Ray's job statuses are
 * PENDING, RUNNING, STOPPED, SUCCEEDED, FAILED; "" is KubeRay's JobStatusNew.
 */
export function isRayJobTerminal(status: string | undefined): boolean {
  return status === 'STOPPED' || status === 'SUCCEEDED' || status === 'FAILED';
}

/** KubeRay's JobFailedReason values written to status.reason. */
export const REASON_SUBMISSION_FAILED = 'SubmissionFailed';
export const REASON_DEADLINE_EXCEEDED = 'DeadlineExceeded';
export const REASON_PRE_RUNNING_DEADLINE_EXCEEDED = 'PreRunningDeadlineExceeded';
export const REASON_APP_FAILED = 'AppFailed';
export const REASON_GRACE_PERIOD_EXCEEDED = 'JobDeploymentStatusTransitionGracePeriodExceeded';
export const REASON_STATUS_CHECK_TIMEOUT_EXCEEDED = 'JobStatusCheckTimeoutExceeded';
export const REASON_VALIDATION_FAILED = 'ValidationFailed';

/** Labels KubeRay puts on what a RayJob creates. */
export const ORIGINATED_FROM_CR_NAME_LABEL = 'ray.io/originated-from-cr-name';
export const ORIGINATED_FROM_CRD_LABEL = 'ray.io/originated-from-crd';
export const ORIGINATED_FROM_CRD_RAYJOB = 'RayJob';
/** The RayJob's submissionMode, on the RayCluster it creates (KubeRay RayJobSubmissionModeLabelKey). */
export const SUBMISSION_MODE_LABEL = 'ray.io/job-submission-mode';
export const CREATED_BY_LABEL = 'app.kubernetes.io/created-by';
export const CREATED_BY_VALUE = 'raykeeper';

/**
 * Ours: when the Ray dashboard began failing to answer for this Running attempt (RFC 3339). An
 * annotation, not a status field, because KubeRay's CRD (which many clusters install instead of ours)
 * prunes status fields it does not know; a new leader reads it, so the status-check timeout does not
 * restart at every failover. Cleared when the dashboard answers again, when Running ends, and in New.
 */
export const STATUS_CHECK_FAILING_SINCE_ANNOTATION = 'raykeeper.io/status-check-failing-since';

/**
 * Ours: a finished RayJob's deletion record, JSON `{"done":["<ruleKey>",...],"unmatched":true}`: the
 * deletion rules (or legacy policy) carried out, and whether the Warning that no rule matches went out.
 * An annotation for the same reason as the clock above: on KubeRay's CRD a status field would be pruned,
 * and a restarted controller would repeat a rule (DeleteWorkers after workers were resumed by hand) and
 * the Warning on every resync.
 */
// `{"uid":"<the RayJob's uid>","done":[...]}`: the uid tells a copied annotation from the RayJob's own.
export const DELETION_RECORD_ANNOTATION = 'raykeeper.io/deletion-rules';

/** spec.clusterSelector key naming an existing RayCluster. */
export const CLUSTER_SELECTOR_KEY = 'ray.io/cluster';

/** RayJob names longer than this make `<name>-<5>-head-svc` exceed 63 characters (KubeRay MaxRayJobNameLength). */
export const MAX_RAYJOB_NAME_LENGTH = 47;

/** The submitter container and the env KubeRay gives it. */
export const SUBMITTER_CONTAINER_NAME = 'ray-job-submitter';
export const ENV_RAY_DASHBOARD_ADDRESS = 'RAY_DASHBOARD_ADDRESS';
export const ENV_RAY_JOB_SUBMISSION_ID = 'RAY_JOB_SUBMISSION_ID';
export const ENV_PYTHONUNBUFFERED = 'PYTHONUNBUFFERED';
export const DEFAULT_SUBMITTER_BACKOFF_LIMIT = 2;
/** SidecarMode: the submitter polls this dashboard path until it says "success" (KubeRay RayDashboardGCSHealthPath). */
export const DASHBOARD_GCS_HEALTH_PATH = 'api/gcs_healthz';

/** Operator env KubeRay reads (same names here). */
export const ENV_GRACE_PERIOD_SECONDS = 'RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS';
export const ENV_STATUS_CHECK_TIMEOUT_SECONDS = 'RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS';
export const ENV_DELETE_RAYJOB_AFTER_JOB_FINISHES = 'DELETE_RAYJOB_CR_AFTER_JOB_FINISHES';

export const DEFAULT_GRACE_PERIOD_SECONDS = 300;
export const DEFAULT_STATUS_CHECK_TIMEOUT_SECONDS = 300;
/** KubeRay's DefaultSubmitterFinishedTimeout: submitter finished, Ray job still not terminal. */
export const DEFAULT_SUBMITTER_FINISHED_TIMEOUT_SECONDS = 30;
/** KubeRay's RayJobDefaultRequeueDuration. */
export const DEFAULT_REQUEUE_MS = 3000;
export const DASHBOARD_PORT = 8265;
