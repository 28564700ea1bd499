// Running, as a pipeline: each step decides, or hands on to the next.
//   1. exits that need no observation: suspend, the active deadline, the grace period after the Ray job
//      ended, a missing submission id;
//   2. the RayCluster gone or going;
//   3. the submitter lost (its Job deleted; SidecarMode's head pod gone);
//   4. what the dashboard said (found / not found / no usable answer), read with what the submitter said,
//      with the RayJob's own head Service made or moved beside it (KubeRay's reconcileServices runs
//      once the cluster is there, before the submitter and the dashboard are read).
// Then the status-check clock follows the outcome. Every way KubeRay's users saw "Running for ever"
// (kuberay #1233, #2154, #3553, #3903) has an exit here.
import { formatTime, parseTime } from '../../time.ts';
import { isDeleting } from '../../../kube/finalizer-patches.ts';
import type { RayJobStatus } from '../../types.ts';
import { EVENT_FAILED_TO_CREATE_SERVICE } from '../../event-reasons.ts';
import { chooseHeadService, rayJobHeadServiceName } from '../head-service.ts';
import { usesClusterSelector } from '../ids.ts';
import { buildSubmitRequest } from '../builders.ts';
import {
  REASON_APP_FAILED,
  REASON_GRACE_PERIOD_EXCEEDED,
  REASON_STATUS_CHECK_TIMEOUT_EXCEEDED,
  REASON_SUBMISSION_FAILED,
  isRayJobTerminal,
} from '../constants.ts';
import { activeDeadlinePassed, complete, deadlineAt, fail, fullName, requeueFor, stay, type Ctx, type Outcome } from './outcome.ts';
import {
  clusterGoneMessage,
  GRACE_PERIOD_MESSAGE,
  JOB_NOT_FOUND_AFTER_SUBMITTER_MESSAGE,
  NO_JOB_ID_MESSAGE,
  statusCheckTimeoutMessage,
  submitterFinishedTimeoutMessage,
} from './messages.ts';
import { clusterStatusSummary, statusCheckFailingSince } from './status.ts';
import { readSubmitter, type SubmitterReport } from './submitter.ts';
import type { RayJobAction, RayJobInfo } from './vocabulary.ts';

export function decideRunning(ctx: Ctx): Outcome {
  const outcome = exitsWithoutObservation(ctx) ?? clusterGone(ctx) ?? withHeadService(ctx, followTheJob(ctx));
  return withStatusCheckClock(ctx, outcome);
}

/** A submitter that is still there to be read (not lost). */
type Present = Exclude<SubmitterReport, { kind: 'lost' }>;

/** Step 1: suspend, the active deadline, the grace period after a terminal Ray job, a missing submission id. */
function exitsWithoutObservation(ctx: Ctx): Outcome | undefined {
  const { job, status, config, now } = ctx;
  if (job.spec?.suspend === true) return { next: 'Suspending', note: 'spec.suspend is true' };
  const deadline = activeDeadlinePassed(ctx);
  if (deadline) return deadline;
  // The Ray job ended but the deployment did not follow (the submitter never finished: #3553).
  const rayEnd = parseTime((status['rayJobInfo'] as { endTime?: string } | undefined)?.endTime);
  if (isRayJobTerminal(status.jobStatus) && rayEnd !== undefined && now >= rayEnd + config.gracePeriodSeconds * 1000) {
    const reason = REASON_GRACE_PERIOD_EXCEEDED;
    const message = GRACE_PERIOD_MESSAGE;
    const note = 'grace period after the Ray job ended passed';
    return status.jobStatus === 'FAILED' ? fail(ctx, reason, message, note) : complete(ctx, note, { changes: { reason, message } });
  }
  // Nothing to follow: without this exit such a RayJob would stay Running for ever.
  if ((status.jobId ?? '') === '') return fail(ctx, REASON_SUBMISSION_FAILED, NO_JOB_ID_MESSAGE, 'no submission id');
  return undefined;
}

/** Step 2: the head is gone with its cluster (#1233): nothing will ever report the job again. */
function clusterGone(ctx: Ctx): Outcome | undefined {
  const cluster = ctx.observed.cluster;
  if (cluster !== null && !isDeleting(cluster)) return undefined;
  const namespace = ctx.job.metadata.namespace ?? 'default';
  return fail(ctx, REASON_APP_FAILED, clusterGoneMessage(namespace, ctx.status.rayClusterName ?? '', cluster !== null), 'cluster gone');
}

/**
 * The RayJob's head Service beside whatever step 4 decided: created when absent, its selector moved to
 * this attempt's cluster when it selects another (src/rayjob/head-service.ts). Only when observed (never
 * with a clusterSelector: observe.ts). One not owned by this RayJob is left as it is, with a Warning.
 */
function withHeadService(ctx: Ctx, outcome: Outcome): Outcome {
  const { cluster, headService } = ctx.observed;
  if (headService === undefined || !cluster || usesClusterSelector(ctx.job)) return outcome;
  const choice = chooseHeadService(ctx.job, cluster, headService);
  switch (choice.kind) {
    case 'keep':
      return outcome;
    case 'create':
      return { ...outcome, actions: [{ type: 'createHeadService', service: choice.service }, ...(outcome.actions ?? [])] };
    case 'update':
      return { ...outcome, actions: [{ type: 'updateHeadService', service: choice.service }, ...(outcome.actions ?? [])] };
    case 'foreign': {
      const service = fullName(ctx, rayJobHeadServiceName(ctx.job));
      const message = `Service ${service} exists but is not owned by RayJob ${fullName(ctx, ctx.job.metadata.name ?? '')}; rename or delete it`;
      return { ...outcome, events: [...(outcome.events ?? []), { type: 'Warning', reason: EVENT_FAILED_TO_CREATE_SERVICE, message }] };
    }
  }
  const _: never = choice;
  throw new Error(`unhandled head Service choice ${JSON.stringify(_)}`);
}

/** Steps 3 and 4: the submitter, then the dashboard's answer read with it. */
function followTheJob(ctx: Ctx): Outcome {
  const cluster = ctx.observed.cluster;
  const base: Partial<RayJobStatus> = { rayClusterStatus: cluster ? clusterStatusSummary(cluster) : ctx.status.rayClusterStatus };
  const submitter = readSubmitter(ctx);
  if (submitter.kind === 'lost') return fail(ctx, submitter.reason, submitter.message, submitter.note, { changes: base });
  const dashboard = ctx.observed.dashboard;
  if (dashboard === undefined) return stay(ctx, 'dashboard not observed', { changes: base, requeueAfterMs: ctx.config.requeueMs });
  switch (dashboard.kind) {
    case 'found':
      return jobFound(ctx, dashboard.info, submitter, base);
    case 'notFound':
      return jobNotFound(ctx, submitter, base);
    case 'error':
      return dashboardSilent(ctx, submitter, base, dashboard.message);
  }
  const _: never = dashboard;
  throw new Error(`unhandled dashboard observation ${JSON.stringify(_)}`);
}

/** The dashboard knows the Ray job: follow it, and the submitter when it must finish too. */
function jobFound(ctx: Ctx, info: RayJobInfo, submitter: Present, base: Partial<RayJobStatus>): Outcome {
  const { job, config, now } = ctx;
  const rayJobInfo: Record<string, string> = {};
  if (typeof info.start_time === 'number' && info.start_time > 0) rayJobInfo['startTime'] = formatTime(info.start_time);
  if (typeof info.end_time === 'number' && info.end_time > 0) rayJobInfo['endTime'] = formatTime(info.end_time);
  const seen: Partial<RayJobStatus> = { ...base, jobStatus: info.status, message: info.message ?? '' };
  if (Object.keys(rayJobInfo).length > 0) seen['rayJobInfo'] = rayJobInfo;
  const ok = { changes: seen, statusCheck: 'ok' as const };
  if (isRayJobTerminal(info.status)) {
    // K8sJobMode and SidecarMode also wait for the submitter, so its logs are complete (kuberay #1919); the grace
    // period bounds that wait (#3553). A dead submitter does not hide a finished job (#2154).
    if (submitter.kind === 'running') {
      const end = typeof info.end_time === 'number' && info.end_time > 0 ? info.end_time : undefined;
      return stay(ctx, 'Ray job terminal; waiting for the submitter to finish', {
        ...ok,
        requeueAfterMs: requeueFor(ctx, [end === undefined ? undefined : end + config.gracePeriodSeconds * 1000]),
      });
    }
    if (info.status === 'FAILED') return fail(ctx, REASON_APP_FAILED, info.message ?? '', 'Ray job FAILED', ok);
    return complete(ctx, `Ray job ${info.status}`, { ...ok, changes: { ...seen, reason: '' } });
  }
  switch (submitter.kind) {
    case 'failed':
      return submissionFailed(ctx, submitter.failure, base, 'submitter failed; Ray job not terminal', {
        ...seen,
        message: submitter.failure,
      });
    case 'succeeded': {
      const limit = submitter.at + config.submitterFinishedTimeoutSeconds * 1000;
      if (now >= limit) {
        return fail(
          ctx,
          REASON_GRACE_PERIOD_EXCEEDED,
          submitterFinishedTimeoutMessage(submitter.at, config.submitterFinishedTimeoutSeconds),
          'submitter finished; Ray job stuck',
          ok,
        );
      }
      return stay(ctx, 'submitter finished; waiting for the Ray job to end', { ...ok, requeueAfterMs: requeueFor(ctx, [limit]) });
    }
    case 'running':
    case 'none':
      return stay(ctx, `Ray job ${info.status}`, {
        ...ok,
        requeueAfterMs: requeueFor(ctx, [deadlineAt(ctx, job.spec?.activeDeadlineSeconds)]),
      });
  }
  const _: never = submitter;
  throw new Error(`unhandled submitter report ${JSON.stringify(_)}`);
}

/** The dashboard answered 404: submit (HTTPMode), wait for the submitter, or judge a finished one. */
function jobNotFound(ctx: Ctx, submitter: Present, base: Partial<RayJobStatus>): Outcome {
  const { job, config, status } = ctx;
  switch (submitter.kind) {
    case 'none': {
      if (ctx.mode !== 'HTTPMode') return dashboardSilent(ctx, submitter, base, `Ray job ${status.jobId ?? ''} not found`); // InteractiveMode: an id the dashboard does not know.
      const submit: RayJobAction = { type: 'submitRayJob', cluster: status.rayClusterName ?? '', request: buildSubmitRequest(job) };
      return stay(ctx, 'Ray job not found; submitting over HTTP', {
        changes: base,
        actions: [submit],
        statusCheck: 'ok',
        requeueAfterMs: config.requeueMs,
      });
    }
    case 'failed':
      return submissionFailed(ctx, submitter.failure, base, 'submitter failed; Ray job unknown to the dashboard');
    case 'succeeded':
      // The head restarted and lost its jobs (kuberay #3903), or the submission never happened.
      return fail(ctx, REASON_APP_FAILED, JOB_NOT_FOUND_AFTER_SUBMITTER_MESSAGE, 'submitter done; job unknown', {
        changes: base,
        statusCheck: 'ok',
      });
    case 'running':
      return stay(ctx, 'submitter has not submitted yet', { changes: base, statusCheck: 'ok', requeueAfterMs: config.requeueMs });
  }
  const _: never = submitter;
  throw new Error(`unhandled submitter report ${JSON.stringify(_)}`);
}

/** No usable answer: the status-check clock (kept in an annotation, see below) runs to its timeout. */
function dashboardSilent(ctx: Ctx, submitter: Present, base: Partial<RayJobStatus>, why: string): Outcome {
  const { config, now } = ctx;
  if (submitter.kind === 'failed') return submissionFailed(ctx, submitter.failure, base, 'submitter failed; dashboard not answering');
  const since = statusCheckFailingSince(ctx.job) ?? now;
  const limit = since + config.statusCheckTimeoutSeconds * 1000;
  if (now >= limit) {
    return fail(
      ctx,
      REASON_STATUS_CHECK_TIMEOUT_EXCEEDED,
      statusCheckTimeoutMessage(config.statusCheckTimeoutSeconds, why),
      'status check timeout',
      { changes: base, statusCheck: 'failing' },
    );
  }
  return stay(ctx, `dashboard: ${why}`, { changes: base, statusCheck: 'failing', requeueAfterMs: requeueFor(ctx, [limit]) });
}

/** A failed submitter: AppFailed when the Ray job already reported FAILED (KubeRay), else SubmissionFailed. */
function submissionFailed(
  ctx: Ctx,
  failure: string,
  base: Partial<RayJobStatus>,
  note: string,
  changes: Partial<RayJobStatus> = {},
): Outcome {
  const extra = { changes: { ...base, ...changes } };
  return (changes.jobStatus ?? ctx.status.jobStatus) === 'FAILED'
    ? fail(ctx, REASON_APP_FAILED, (changes.message as string | undefined) ?? ctx.status.message ?? '', note, extra)
    : fail(ctx, REASON_SUBMISSION_FAILED, failure, note, extra);
}

/**
 * The dashboard-failure clock of a Running stretch lives in an annotation (see
 * STATUS_CHECK_FAILING_SINCE_ANNOTATION): started at the first failing answer, cleared at the first
 * good one and when Running is left.
 */
function withStatusCheckClock(ctx: Ctx, outcome: Outcome): Outcome {
  const since = statusCheckFailingSince(ctx.job);
  const failing = outcome.next === 'Running' && outcome.statusCheck === 'failing';
  let action: RayJobAction | undefined;
  if (failing && since === undefined) action = { type: 'setStatusCheckClock', since: new Date(ctx.now).toISOString() };
  if (!failing && since !== undefined && (outcome.statusCheck === 'ok' || outcome.next !== 'Running'))
    action = { type: 'setStatusCheckClock', since: null };
  return action ? { ...outcome, actions: [action, ...(outcome.actions ?? [])] } : outcome;
}
