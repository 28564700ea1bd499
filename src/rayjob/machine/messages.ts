// The status.message texts the machine writes. Where KubeRay v1.6.2 writes one for the same case, ours is
// its text word for word (controllers/ray/rayjob_controller.go; test/rayjob/messages.test.ts holds its
// format strings with their lines), times and durations rendered as Go renders them: a time.Time by %v
// ("2006-01-02 15:04:05 +0000 UTC"; KubeRay's times are in its process's zone, UTC in its image), a
// time.Duration by %v ("30s", "1m30s"). Our extra detail only follows KubeRay's text, never replaces it.
// Where KubeRay has no such case, the text is ours (marked so below).
import { parseTime } from '../../time.ts';

/** Go's time.Time.String() of an instant, in UTC: `2006-01-02 15:04:05[.fraction] +0000 UTC`. */
export function goTime(ms: number): string {
  const iso = new Date(ms).toISOString(); // 2006-01-02T15:04:05.000Z
  const fraction = iso.slice(20, 23).replace(/0+$/, '');
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${fraction === '' ? '' : `.${fraction}`} +0000 UTC`;
}

/** Go's time.DateTime layout (`2006-01-02 15:04:05`) of an instant, in UTC. */
export function goDateTime(ms: number): string {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}`;
}

/** Go's time.Duration.String() of a whole number of milliseconds: `0s`, `500ms`, `30s`, `1m30s`, `1h0m0s`. */
export function goDuration(ms: number): string {
  const total = Math.round(ms);
  if (total === 0) return '0s';
  if (Math.abs(total) < 1000) return `${total}ms`;
  const sign = total < 0 ? '-' : '';
  const abs = Math.abs(total);
  const hours = Math.floor(abs / 3_600_000);
  const minutes = Math.floor((abs % 3_600_000) / 60_000);
  const millis = abs % 60_000;
  const seconds = `${Math.floor(millis / 1000)}${
    millis % 1000 === 0
      ? ''
      : `.${String(millis % 1000)
          .padStart(3, '0')
          .replace(/0+$/, '')}`
  }s`;
  if (hours > 0) return `${sign}${hours}h${minutes}m${seconds}`;
  if (minutes > 0) return `${sign}${minutes}m${seconds}`;
  return `${sign}${seconds}`;
}

/** A stored RFC 3339 time as Go's %v of the *metav1.Time KubeRay read it into (the raw text if unreadable). */
function goStatusTime(value: string | undefined): string {
  const ms = parseTime(value);
  return ms === undefined ? String(value) : goTime(ms);
}

/** DeadlineExceeded (checkActiveDeadlineAndUpdateStatusIfNeeded). */
export function activeDeadlineMessage(startTime: string | undefined, seconds: number): string {
  return `The RayJob has passed the activeDeadlineSeconds. StartTime: ${goStatusTime(startTime)}. ActiveDeadlineSeconds: ${seconds}`;
}

/** PreRunningDeadlineExceeded (checkPreRunningDeadlineAndUpdateStatusIfNeeded). */
export function preRunningDeadlineMessage(startTime: string | undefined, seconds: number): string {
  return `The RayJob has passed the preRunningDeadlineSeconds. StartTime: ${goStatusTime(startTime)}. PreRunningDeadlineSeconds: ${seconds}`;
}

/** JobDeploymentStatusTransitionGracePeriodExceeded: the submitter finished, the Ray job did not (checkSubmitterFinishedTimeoutAndUpdateStatusIfNeeded). */
export function submitterFinishedTimeoutMessage(finishedAtMs: number, timeoutSeconds: number): string {
  return `The RayJob submitter finished at ${goDateTime(finishedAtMs)} but the ray job did not reach terminal state within ${goDuration(timeoutSeconds * 1000)}`;
}

/** JobDeploymentStatusTransitionGracePeriodExceeded: the Ray job ended, the deployment did not follow (checkTransitionGracePeriodAndUpdateStatusIfNeeded). */
export const GRACE_PERIOD_MESSAGE =
  'JobDeploymentStatus does not transition to Complete or Failed within the grace period after JobStatus reaches a terminal state.';

/** SubmissionFailed, K8sJobMode: the submitter Job's Failed condition; `detail` (ours: how its last attempt ended) follows. */
export function submitterJobFailedMessage(reason: string | undefined, message: string | undefined, detail = ''): string {
  return `Job submission has failed. Reason: ${reason ?? ''}. Message: ${message ?? ''}${detail}`;
}

/** SubmissionFailed, SidecarMode: the submitter container's non-zero exit (checkSubmitterAndUpdateStatusIfNeeded). */
export function sidecarSubmitterFailedMessage(container: string, exitCode: number, reason: string | undefined): string {
  return `Ray head pod container ${container} terminated with exit code ${exitCode}: ${reason ?? ''}`;
}

/** AppFailed, SidecarMode: the head pod is gone. */
export const HEAD_POD_NOT_FOUND_MESSAGE = 'Ray head pod not found.';

/** AppFailed: the submitter finished, the dashboard does not know the Ray job. */
export const JOB_NOT_FOUND_AFTER_SUBMITTER_MESSAGE = 'Submitter completed but Ray job not found in RayCluster.';

/** The Warning event (and, ours, status.message) when a clusterSelector's RayCluster does not exist (getOrCreateRayClusterInstance). */
export function selectedClusterNotFoundMessage(namespace: string, name: string): string {
  return `RayCluster ${namespace}/${name} set in the clusterSelector is not found. It must be created manually`;
}

// Ours: KubeRay v1.6.2 has no such case (it keeps such a RayJob Running, or has no status-check timeout).

/** Ours, JobStatusCheckTimeoutExceeded: KubeRay v1.6.2 has no status-check timeout (v1.7 added the reason). */
export function statusCheckTimeoutMessage(timeoutSeconds: number, why: string): string {
  return `Failed to get the Ray job status from the dashboard for ${timeoutSeconds}s: ${why}`;
}

/** Ours, SubmissionFailed: Running without a submission id (KubeRay would poll for ever). */
export const NO_JOB_ID_MESSAGE = 'status.jobId is empty: no Ray job to follow.';

/** Ours, SubmissionFailed: the submitter Job was deleted (KubeRay returns an error and retries for ever). */
export function submitterJobGoneMessage(namespace: string, name: string): string {
  return `The submitter Job ${namespace}/${name} no longer exists.`;
}

/** Ours, AppFailed: the RayCluster was deleted under a running job (KubeRay creates a new one, kuberay #1233). */
export function clusterGoneMessage(namespace: string, name: string, deleting: boolean): string {
  return `RayCluster ${namespace}/${name} ${deleting ? 'is being deleted' : 'no longer exists'} while the Ray job was running.`;
}
