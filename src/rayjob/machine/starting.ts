// The states before the Ray job runs: New (the finalizer and the names), Initializing (the RayCluster,
// its readiness, the dashboard, the submitter), Waiting (InteractiveMode: the user submits, then sets
// spec.jobId). Each case decides only the exits of its own state.
import { formatTime } from '../../time.ts';
import { RAYJOB_FINALIZER } from '../../names.ts';
import { isDeleting } from '../../../kube/finalizer-patches.ts';
import type { RayJob, RayJobStatus } from '../../types.ts';
import { EVENT_RAYCLUSTER_NOT_FOUND, type EventSpec } from '../../event-reasons.ts';
import { selectedClusterNotFoundMessage } from './messages.ts';
import { buildRayCluster, buildSubmitterJob } from '../builders.ts';
import { generateClusterName, generateJobId, selectedClusterName, toStatusDashboardUrl, usesClusterSelector } from '../ids.ts';
import { submissionMode } from '../validation.ts';
import { activeDeadlinePassed, deadlineAt, preRunningDeadlinePassed, requeueFor, stay, target, type Ctx, type Outcome } from './outcome.ts';
import { clusterStatusSummary, currentState, statusCheckFailingSince } from './status.ts';
import { sidecarSubmitterFinished } from './submitter.ts';
import type { Observed, RayJobAction } from './vocabulary.ts';

/**
 * New: finalizer and names first, stored WITH the state New (so `kubectl get rayjob -w` shows New,
 * and jobId / rayClusterName are written before anything is created: a repeated reconcile can never
 * create a second cluster or submit twice); the next pass stamps startTime and moves to Initializing.
 */
export function decideNew(ctx: Ctx): Outcome {
  const { job, status, config } = ctx;
  const actions: RayJobAction[] = [];
  if (!(job.metadata.finalizers ?? []).includes(RAYJOB_FINALIZER)) actions.push({ type: 'addFinalizer' });
  // A clock left by an earlier Running stretch does not carry into a new start.
  if (statusCheckFailingSince(job) !== undefined) actions.push({ type: 'setStatusCheckClock', since: null });
  const names: Partial<RayJobStatus> = {};
  if (ctx.mode !== 'InteractiveMode' && (status.jobId ?? '') === '') {
    names.jobId = (job.spec?.jobId ?? '') !== '' ? job.spec?.jobId : generateJobId(job.metadata.name ?? '', config.random);
  }
  if ((status.rayClusterName ?? '') === '') {
    names.rayClusterName = selectedClusterName(job) ?? generateClusterName(job.metadata.name ?? '', config.random);
  }
  const recorded = job.status?.jobDeploymentStatus === 'New' && Object.keys(names).length === 0 && actions.length === 0;
  if (!recorded) {
    return stay(ctx, 'New recorded with its names', {
      changes: { ...names, jobStatus: status.jobStatus ?? '' },
      actions,
      requeueAfterMs: config.requeueMs,
      decideAgain: true,
    });
  }
  return {
    next: 'Initializing',
    changes: { startTime: formatTime(ctx.now) },
    requeueAfterMs: config.requeueMs,
    decideAgain: true,
    note: 'start time stamped',
  };
}

/**
 * K8sJobMode, the cluster ready and no submitter yet: the dashboard must have answered (found or 404)
 * before the submitter Job is created. A RayCluster's `ready` says its pods were once all Running and
 * Ready, never that its head answers now (a slow dashboard, a head pod being replaced after the cluster
 * was ready: the state never goes back, as in KubeRay), and a submitter started against a silent head
 * spends its attempts at once (`ray job submit` does not retry) and fails the RayJob for no reason a
 * user set or Ray reported. Returns why it waits, or undefined when the submitter may go.
 */
function submitterWaitsForDashboard(ctx: Ctx): string | undefined {
  if (ctx.mode !== 'K8sJobMode' || ctx.observed.submitter !== null) return undefined;
  const dashboard = ctx.observed.dashboard;
  if (dashboard === undefined) return 'not asked yet';
  return dashboard.kind === 'error' ? dashboard.message : undefined;
}

/** Whether Initializing needs the dashboard now (the reconciler asks it only then): see submitterWaitsForDashboard. */
export function initializingNeedsDashboard(job: RayJob, observed: Observed): boolean {
  const cluster = observed.cluster;
  return (
    currentState(job) === 'Initializing' &&
    submissionMode(job) === 'K8sJobMode' &&
    observed.submitter === null &&
    cluster !== null &&
    cluster !== undefined &&
    !isDeleting(cluster) &&
    ((job.status?.dashboardURL ?? '') !== '' || cluster.status?.state === 'ready')
  );
}

/** Initializing: suspend, deadlines, get or create the RayCluster, wait until ready and its dashboard answers, then submit. */
export function decideInitializing(ctx: Ctx): Outcome {
  const { job, status, observed, config } = ctx;
  if (job.spec?.suspend === true) return { next: 'Suspending', note: 'spec.suspend is true' };
  const deadline = activeDeadlinePassed(ctx) ?? preRunningDeadlinePassed(ctx);
  if (deadline) return deadline;
  const wake = requeueFor(ctx, [deadlineAt(ctx, job.spec?.activeDeadlineSeconds), deadlineAt(ctx, job.spec?.preRunningDeadlineSeconds)]);
  const clusterName = status.rayClusterName ?? '';
  // Only New names things; a status without a cluster name (edited by hand) goes back there.
  if (clusterName === '') return { next: 'New', requeueAfterMs: config.requeueMs, note: 'status.rayClusterName is empty; starting over' };
  const cluster = observed.cluster;
  if (cluster === null || cluster === undefined) {
    if (usesClusterSelector(job)) {
      const message = selectedClusterNotFoundMessage(job.metadata.namespace ?? 'default', clusterName);
      const events: EventSpec[] = status.message === message ? [] : [{ type: 'Warning', reason: EVENT_RAYCLUSTER_NOT_FOUND, message }];
      return stay(ctx, 'selected cluster not found', { changes: { message }, events, requeueAfterMs: wake });
    }
    return stay(ctx, 'creating the RayCluster', {
      actions: [{ type: 'createCluster', cluster: buildRayCluster(job, clusterName) }],
      requeueAfterMs: wake,
    });
  }
  const clusterStatus = clusterStatusSummary(cluster);
  if (isDeleting(cluster)) {
    return stay(ctx, 'the RayCluster is being deleted; waiting', { changes: { rayClusterStatus: clusterStatus }, requeueAfterMs: wake });
  }
  let dashboardURL = status.dashboardURL ?? '';
  if (dashboardURL === '') {
    if (cluster.status?.state !== 'ready' && !sidecarSubmitterFinished(ctx)) {
      // Clear a "not found" message left by an earlier pass once the selected cluster exists.
      return stay(ctx, `waiting for the RayCluster to be ready (state ${JSON.stringify(cluster.status?.state ?? '')})`, {
        changes: { rayClusterStatus: clusterStatus, message: usesClusterSelector(job) ? '' : status.message },
        requeueAfterMs: wake,
      });
    }
    dashboardURL = toStatusDashboardUrl(config.submitterDashboardUrl(target(ctx, clusterName)));
  }
  const changes: Partial<RayJobStatus> = { dashboardURL, rayClusterStatus: clusterStatus, message: '' };
  if (ctx.mode === 'InteractiveMode') return { next: 'Waiting', changes, note: 'cluster ready; InteractiveMode waits for spec.jobId' };
  const silent = submitterWaitsForDashboard(ctx);
  if (silent !== undefined) {
    return stay(ctx, 'cluster ready; waiting for the dashboard to answer', {
      changes: { rayClusterStatus: clusterStatus, message: `Waiting for the Ray dashboard to answer before submitting: ${silent}` },
      requeueAfterMs: wake,
    });
  }
  const actions: RayJobAction[] = [];
  if (ctx.mode === 'K8sJobMode' && observed.submitter === null) {
    const next: RayJob = { ...job, status: { ...status, ...changes } };
    actions.push({ type: 'createSubmitter', job: buildSubmitterJob(next, cluster, config.submitter) });
  }
  return {
    next: 'Running',
    changes,
    actions,
    requeueAfterMs: config.requeueMs,
    // HTTPMode submits on its first Running pass (KubeRay's order): that pass needs only the write.
    ...(ctx.mode === 'HTTPMode' ? { decideAgain: true } : {}),
    note: `cluster ready; ${ctx.mode} submission`,
  };
}

/** Waiting (InteractiveMode): the user submits by hand, then sets spec.jobId. */
export function decideWaiting(ctx: Ctx): Outcome {
  const { job, config } = ctx;
  const deadline = preRunningDeadlinePassed(ctx);
  if (deadline) return deadline;
  const jobId = job.spec?.jobId ?? '';
  if (jobId !== '') return { next: 'Running', changes: { jobId }, requeueAfterMs: config.requeueMs, note: 'spec.jobId set' };
  return stay(ctx, 'waiting for spec.jobId', { requeueAfterMs: requeueFor(ctx, [deadlineAt(ctx, job.spec?.preRunningDeadlineSeconds)]) });
}
