// What the submitter says, read once per Running pass: K8sJobMode's submitter Job, SidecarMode's
// submitter container in the head pod (KubeRay's checkSubmitterAndUpdateStatusIfNeeded and
// checkSidecarContainerStatus). HTTPMode and InteractiveMode have none.
import { parseTime } from '../../time.ts';
import { REASON_APP_FAILED, REASON_SUBMISSION_FAILED, SUBMITTER_CONTAINER_NAME } from '../constants.ts';
import { finishedCondition } from '../builders.ts';
import { submitterJobName } from '../ids.ts';
import {
  HEAD_POD_NOT_FOUND_MESSAGE,
  sidecarSubmitterFailedMessage,
  submitterJobFailedMessage,
  submitterJobGoneMessage,
} from './messages.ts';
import type { Ctx } from './outcome.ts';
import type { SubmitterAttempt } from './vocabulary.ts';

export type SubmitterReport =
  /** HTTPMode, InteractiveMode: nothing submits and ends on the RayJob's behalf. */
  | { kind: 'none' }
  /** Not finished, or not observed this pass. */
  | { kind: 'running' }
  /** The Job completed; the container exited 0. `at`: when, in ms. */
  | { kind: 'succeeded'; at: number }
  /** The Job failed; the container exited non-zero. `failure`: the status message for a SubmissionFailed. */
  | { kind: 'failed'; at: number; failure: string }
  /** The submitter Job or the head pod is gone: the attempt fails with this reason and message. */
  | { kind: 'lost'; reason: string; message: string; note: string };

export function readSubmitter(ctx: Ctx): SubmitterReport {
  if (ctx.mode === 'K8sJobMode') return readSubmitterJob(ctx);
  if (ctx.mode === 'SidecarMode') return readSidecarSubmitter(ctx);
  return { kind: 'none' };
}

function readSubmitterJob(ctx: Ctx): SubmitterReport {
  const submitter = ctx.observed.submitter;
  if (submitter === undefined) return { kind: 'running' };
  if (submitter === null) {
    return {
      kind: 'lost',
      reason: REASON_SUBMISSION_FAILED,
      message: submitterJobGoneMessage(ctx.job.metadata.namespace ?? 'default', submitterJobName(ctx.job)),
      note: 'submitter gone',
    };
  }
  const finished = finishedCondition(submitter);
  if (!finished) return { kind: 'running' };
  const at = parseTime(finished.lastTransitionTime) ?? ctx.now;
  if (finished.type !== 'Failed') return { kind: 'succeeded', at };
  const failure = submitterJobFailedMessage(finished.reason, finished.message, attemptReport(ctx.observed.submitterAttempt));
  return { kind: 'failed', at, failure };
}

/** Characters of the submitter's log tail kept in status.message. */
const ATTEMPT_TAIL_CHARACTERS = 1000;

/** What the submitter's last attempt reported (its exit code and log tail), for a failed submitter's message. */
function attemptReport(attempt: SubmitterAttempt | null | undefined): string {
  if (attempt === undefined || attempt === null) return '';
  // `ray` colours its output; the kubelet keeps the tail of the log (FallbackToLogsOnError).
  const tail = (attempt.message ?? '')
    .replace(/\x1b\[[0-9;]*m/g, '')
    .trim()
    .slice(-ATTEMPT_TAIL_CHARACTERS);
  const code = attempt.exitCode === undefined ? '' : ` with exit code ${attempt.exitCode}`;
  const reason = attempt.reason ? ` (${attempt.reason})` : '';
  return `. The last attempt ended${code}${reason}${tail === '' ? '' : `: ${tail}`}`;
}

/**
 * SidecarMode: the submitter container in the head pod has already terminated. Its exit ends the head
 * pod's readiness for good (restartPolicy Never), so a cluster whose last pod became ready after it would
 * never read `ready` and the RayJob would wait in Initializing forever (KubeRay v1.6.2 does: a short job
 * on a slow worker). Running then decides from the exit code and the Ray job.
 */
export function sidecarSubmitterFinished(ctx: Ctx): boolean {
  if (ctx.mode !== 'SidecarMode') return false;
  const container = (ctx.observed.headPod?.status?.containerStatuses ?? []).find((c) => c.name === SUBMITTER_CONTAINER_NAME);
  return container?.state?.terminated !== undefined;
}

/**
 * SidecarMode (KubeRay's checkSidecarContainerStatus): the head pod gone fails the attempt (the
 * cluster never re-creates it: ray.io/disable-provisioned-head-restart); the submitter container
 * terminated non-zero is a failed submission; terminated at all is the submitter's finish time.
 */
function readSidecarSubmitter(ctx: Ctx): SubmitterReport {
  const pod = ctx.observed.headPod;
  if (pod === undefined) return { kind: 'running' };
  if (pod === null) return { kind: 'lost', reason: REASON_APP_FAILED, message: HEAD_POD_NOT_FOUND_MESSAGE, note: 'head pod gone' };
  const container = (pod.status?.containerStatuses ?? []).find((c) => c.name === SUBMITTER_CONTAINER_NAME);
  const terminated = container?.state?.terminated;
  if (!terminated) return { kind: 'running' };
  const code = terminated.exitCode ?? 0;
  const at = parseTime(terminated.finishedAt) ?? ctx.now;
  if (code === 0) return { kind: 'succeeded', at };
  return {
    kind: 'failed',
    at,
    failure: sidecarSubmitterFailedMessage(SUBMITTER_CONTAINER_NAME, code, terminated.reason),
  };
}
