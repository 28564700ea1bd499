// The RayJob deployment state machine (KubeRay's rayjob_controller.go Reconcile, shaped like
// spark-operator's syncSparkApplication): ONE switch over the deployment status, one small named
// function a state. Pure: (RayJob, observed world, clock, config) -> Decision. The reconciler in
// controller/rayjob/ observes the world, executes the decision's actions, then writes its status.
import { RAYJOB_FINALIZER } from '../names.ts';
import type { JobDeploymentStatus, RayCluster, RayJob, RayJobStatus } from '../types.ts';
import { buildRayCluster, buildSubmitRequest, buildSubmitterJob, finishedCondition, type BatchJob, type JobSubmitRequest, type SubmitterOptions } from './builders.ts';
import {
  DEFAULT_GRACE_PERIOD_SECONDS,
  DEFAULT_REQUEUE_MS,
  DEFAULT_STATUS_CHECK_TIMEOUT_SECONDS,
  DEFAULT_SUBMITTER_FINISHED_TIMEOUT_SECONDS,
  EVENT_RAYCLUSTER_NOT_FOUND,
  EVENT_RAYJOB_FAILED,
  REASON_APP_FAILED,
  REASON_DEADLINE_EXCEEDED,
  REASON_GRACE_PERIOD_EXCEEDED,
  REASON_PRE_RUNNING_DEADLINE_EXCEEDED,
  REASON_STATUS_CHECK_TIMEOUT_EXCEEDED,
  REASON_SUBMISSION_FAILED,
  REASON_VALIDATION_FAILED,
  isRayJobTerminal,
} from './constants.ts';
import {
  DEFAULT_SUBMITTER_DASHBOARD_TEMPLATE,
  generateClusterName,
  generateJobId,
  renderDashboardUrl,
  selectedClusterName,
  submitterJobName,
  toStatusDashboardUrl,
  usesClusterSelector,
  type DashboardTarget,
  type RandomSource,
} from './ids.ts';
import { submissionMode, validateRayJob } from './validation.ts';

// ---------------------------------------------------------------------------------------------
// Inputs

/** Ray's JobDetails as GET /api/jobs/<submission_id> returns it (the fields we read). */
export interface RayJobInfo {
  job_id?: string | null;
  submission_id?: string | null;
  status: string;
  message?: string | null;
  start_time?: number | null;
  end_time?: number | null;
  [key: string]: unknown;
}

export type DashboardObservation =
  | { kind: 'found'; info: RayJobInfo }
  /** The dashboard answered 404: it does not know the submission id. */
  | { kind: 'notFound' }
  /** No usable answer: connection refused, timeout, 5xx, garbage. */
  | { kind: 'error'; message: string };

/** What the reconciler saw. `null` = looked and it does not exist; `undefined` = not looked at. */
export interface Observed {
  cluster?: RayCluster | null;
  submitter?: BatchJob | null;
  dashboard?: DashboardObservation;
  /** When (ms) the dashboard started failing to answer for this RayJob; kept by the reconciler. */
  statusCheckFailingSince?: number;
}

export interface MachineConfig {
  /** RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS (300). */
  gracePeriodSeconds: number;
  /** RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS (300): how long the dashboard may fail to answer in Running. */
  statusCheckTimeoutSeconds: number;
  /** Submitter finished but the Ray job is not terminal: give up after this long (KubeRay: 30 s). */
  submitterFinishedTimeoutSeconds: number;
  /** KubeRay's RayJobDefaultRequeueDuration (3 s). */
  requeueMs: number;
  /** DELETE_RAYJOB_CR_AFTER_JOB_FINISHES: delete the RayJob itself instead of only its RayCluster. */
  deleteRayJobAfterJobFinishes: boolean;
  /** The dashboard address the submitter uses and status.dashboardURL records (in-cluster by default). */
  submitterDashboardUrl: (target: DashboardTarget) => string;
  submitter: SubmitterOptions;
  random: RandomSource;
}

export function defaultMachineConfig(overrides: Partial<MachineConfig> = {}): MachineConfig {
  return {
    gracePeriodSeconds: DEFAULT_GRACE_PERIOD_SECONDS,
    statusCheckTimeoutSeconds: DEFAULT_STATUS_CHECK_TIMEOUT_SECONDS,
    submitterFinishedTimeoutSeconds: DEFAULT_SUBMITTER_FINISHED_TIMEOUT_SECONDS,
    requeueMs: DEFAULT_REQUEUE_MS,
    deleteRayJobAfterJobFinishes: false,
    submitterDashboardUrl: (target) => renderDashboardUrl(DEFAULT_SUBMITTER_DASHBOARD_TEMPLATE, target),
    submitter: {},
    random: Math.random,
    ...overrides,
  };
}

// ---------------------------------------------------------------------------------------------
// Outputs

export type Action =
  | { type: 'addFinalizer' }
  | { type: 'removeFinalizer' }
  | { type: 'createCluster'; cluster: RayCluster }
  | { type: 'deleteCluster'; name: string }
  | { type: 'createSubmitter'; job: BatchJob }
  | { type: 'deleteSubmitter'; name: string }
  | { type: 'submitRayJob'; cluster: string; request: JobSubmitRequest }
  | { type: 'stopRayJob'; cluster: string; jobId: string }
  | { type: 'deleteRayJob' };

export interface EventSpec {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

export interface Decision {
  /** The state the case started from (status.jobDeploymentStatus as read; absent or "" is New). */
  from: string;
  /** The state after this decision. */
  next: string;
  /** The complete next status; the reconciler writes it through /status only if it differs. */
  status: RayJobStatus;
  /** Side effects, in order, BEFORE the status write (creations use deterministic names, so a repeat is harmless). */
  actions: Action[];
  /** Emitted only AFTER the status write succeeded, so a retried decision does not repeat them. */
  events: EventSpec[];
  requeueAfterMs?: number;
  /** Running: the dashboard answered ('ok') or did not ('failing'); the reconciler keeps the clock. */
  statusCheck?: 'ok' | 'failing';
  /** For logs: why the case decided what it did. */
  note: string;
}

// ---------------------------------------------------------------------------------------------
// Helpers

/** Absent or "" reads as New (KubeRay encodes New as ""). */
export function currentState(job: RayJob): string {
  const value = job.status?.jobDeploymentStatus;
  return value === undefined || value === null || value === '' ? 'New' : String(value);
}

/** Kubernetes metav1.Time: RFC 3339, second precision. */
export function formatTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

function parseTime(value: unknown): number | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

function isDeleting(obj: { metadata: { deletionTimestamp?: string | null } } | null | undefined): boolean {
  return obj !== null && obj !== undefined && typeof obj.metadata.deletionTimestamp === 'string' && obj.metadata.deletionTimestamp !== '';
}

/** Drops keys whose value is undefined, so two statuses compare by what would be stored. */
function clean<T extends object>(value: T): T {
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
export function statusChanged(stored: RayJobStatus | undefined, next: RayJobStatus): boolean {
  return stableStringify(clean(stored ?? {})) !== stableStringify(clean(next));
}

/** The cluster status KubeRay mirrors into status.rayClusterStatus, minus its heartbeat timestamp. */
function clusterStatusSummary(cluster: RayCluster): Record<string, unknown> | undefined {
  const status = cluster.status;
  if (status === undefined || status === null) return undefined;
  const { lastUpdateTime: _ignored, ...rest } = status as Record<string, unknown>;
  return Object.keys(rest).length > 0 ? rest : undefined;
}

// ---------------------------------------------------------------------------------------------
// Case context and results

interface Ctx {
  job: RayJob;
  status: RayJobStatus;
  observed: Observed;
  now: number;
  config: MachineConfig;
  mode: string;
  from: string;
}

interface Outcome {
  next: string;
  changes?: Partial<RayJobStatus>;
  /** Keys removed from the status (resets). */
  remove?: string[];
  actions?: Action[];
  events?: EventSpec[];
  requeueAfterMs?: number;
  statusCheck?: 'ok' | 'failing';
  note: string;
}

function stay(ctx: Ctx, note: string, extra: Omit<Outcome, 'next' | 'note'> = {}): Outcome {
  return { next: ctx.from, note, ...extra };
}

function fail(reason: string, message: string, note: string, extra: Omit<Outcome, 'next' | 'note'> = {}): Outcome {
  return { ...extra, next: 'Failed', changes: { ...(extra.changes ?? {}), reason, message }, note };
}

function activeDeadlinePassed(ctx: Ctx): Outcome | undefined {
  const seconds = ctx.job.spec?.activeDeadlineSeconds;
  const start = parseTime(ctx.status.startTime);
  if (typeof seconds !== 'number' || start === undefined || ctx.now < start + seconds * 1000) return undefined;
  return fail(
    REASON_DEADLINE_EXCEEDED,
    `The RayJob has passed the activeDeadlineSeconds. StartTime: ${ctx.status.startTime}. ActiveDeadlineSeconds: ${seconds}`,
    'activeDeadlineSeconds passed',
  );
}

function preRunningDeadlinePassed(ctx: Ctx): Outcome | undefined {
  const seconds = ctx.job.spec?.preRunningDeadlineSeconds;
  const start = parseTime(ctx.status.startTime);
  if (typeof seconds !== 'number' || start === undefined || ctx.now < start + seconds * 1000) return undefined;
  return fail(
    REASON_PRE_RUNNING_DEADLINE_EXCEEDED,
    `The RayJob did not reach Running within preRunningDeadlineSeconds. StartTime: ${ctx.status.startTime}. PreRunningDeadlineSeconds: ${seconds}`,
    'preRunningDeadlineSeconds passed',
  );
}

/** Earliest deadline still ahead, so a waiting state wakes up for it even if nothing else happens. */
function requeueFor(ctx: Ctx, deadlines: Array<number | undefined>): number {
  let wait = ctx.config.requeueMs;
  for (const at of deadlines) {
    if (at !== undefined && at > ctx.now) wait = Math.min(wait, at - ctx.now);
  }
  return Math.max(wait, 1);
}

function deadlineAt(ctx: Ctx, seconds: unknown): number | undefined {
  const start = parseTime(ctx.status.startTime);
  return typeof seconds === 'number' && start !== undefined ? start + seconds * 1000 : undefined;
}

function target(ctx: Ctx, cluster: string): DashboardTarget {
  return { namespace: ctx.job.metadata.namespace ?? 'default', cluster };
}

function fullName(ctx: Ctx, name: string): string {
  return `${ctx.job.metadata.namespace ?? 'default'}/${name}`;
}

// ---------------------------------------------------------------------------------------------
// The cases, one a state

/** New: finalizer, then jobId / rayClusterName / startTime, then Initializing. Names are written
 * BEFORE anything is created, so a repeated reconcile can never create a second cluster or submit twice. */
function decideNew(ctx: Ctx): Outcome {
  const { job, status, config } = ctx;
  const actions: Action[] = [];
  if (!(job.metadata.finalizers ?? []).includes(RAYJOB_FINALIZER)) actions.push({ type: 'addFinalizer' });
  const changes: Partial<RayJobStatus> = { startTime: formatTime(ctx.now), jobStatus: status.jobStatus ?? '' };
  if (ctx.mode !== 'InteractiveMode' && (status.jobId ?? '') === '') {
    changes.jobId = (job.spec?.jobId ?? '') !== '' ? job.spec?.jobId : generateJobId(job.metadata.name ?? '', config.random);
  }
  if ((status.rayClusterName ?? '') === '') {
    changes.rayClusterName = selectedClusterName(job) ?? generateClusterName(job.metadata.name ?? '', config.random);
  }
  return { next: 'Initializing', changes, actions, requeueAfterMs: config.requeueMs, note: 'initialized ids and start time' };
}

/** Initializing: suspend, deadlines, get or create the RayCluster, wait until ready, then submit. */
function decideInitializing(ctx: Ctx): Outcome {
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
      const message = `RayCluster ${fullName(ctx, clusterName)} set in the clusterSelector is not found. It must be created manually`;
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
    if (cluster.status?.state !== 'ready') {
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
  const actions: Action[] = [];
  if (ctx.mode === 'K8sJobMode' && observed.submitter === null) {
    const next: RayJob = { ...job, status: { ...status, ...changes } };
    actions.push({ type: 'createSubmitter', job: buildSubmitterJob(next, cluster, config.submitter) });
  }
  return { next: 'Running', changes, actions, requeueAfterMs: config.requeueMs, note: `cluster ready; ${ctx.mode} submission` };
}

/** Waiting (InteractiveMode): the user submits by hand, then sets spec.jobId. */
function decideWaiting(ctx: Ctx): Outcome {
  const { job, config } = ctx;
  const deadline = preRunningDeadlinePassed(ctx);
  if (deadline) return deadline;
  const jobId = job.spec?.jobId ?? '';
  if (jobId !== '') return { next: 'Running', changes: { jobId }, requeueAfterMs: config.requeueMs, note: 'spec.jobId set' };
  return stay(ctx, 'waiting for spec.jobId', { requeueAfterMs: requeueFor(ctx, [deadlineAt(ctx, job.spec?.preRunningDeadlineSeconds)]) });
}

/** Running: the Ray job as the dashboard reports it, the submitter, the cluster, the clocks. Every way
 * KubeRay's users saw "Running for ever" (kuberay #1233, #2154, #3553, #3903) has an exit here. */
function decideRunning(ctx: Ctx): Outcome {
  const { job, status, observed, config, now } = ctx;
  if (job.spec?.suspend === true) return { next: 'Suspending', note: 'spec.suspend is true' };
  const deadline = activeDeadlinePassed(ctx);
  if (deadline) return deadline;
  // The Ray job ended but the deployment did not follow (the submitter never finished: #3553).
  const rayEnd = parseTime((status['rayJobInfo'] as { endTime?: string } | undefined)?.endTime);
  if (isRayJobTerminal(status.jobStatus) && rayEnd !== undefined && now >= rayEnd + config.gracePeriodSeconds * 1000) {
    return {
      next: status.jobStatus === 'FAILED' ? 'Failed' : 'Complete',
      changes: {
        reason: REASON_GRACE_PERIOD_EXCEEDED,
        message: 'JobDeploymentStatus does not transition to Complete or Failed within the grace period after JobStatus reaches a terminal state.',
      },
      note: 'grace period after the Ray job ended passed',
    };
  }
  const clusterName = status.rayClusterName ?? '';
  if ((status.jobId ?? '') === '') {
    // Nothing to follow: without this exit such a RayJob would stay Running for ever.
    return fail(REASON_SUBMISSION_FAILED, 'status.jobId is empty: no Ray job to follow.', 'no submission id');
  }
  const cluster = observed.cluster;
  if (cluster === null || isDeleting(cluster)) {
    // The head is gone with its cluster (#1233): nothing will ever report the job again.
    return fail(REASON_APP_FAILED, `RayCluster ${fullName(ctx, clusterName)} ${cluster === null ? 'no longer exists' : 'is being deleted'} while the Ray job was running.`, 'cluster gone');
  }
  const clusterStatus = cluster ? clusterStatusSummary(cluster) : status.rayClusterStatus;
  const k8sJob = ctx.mode === 'K8sJobMode';
  let submitterFailed = false;
  let submitterFinishedAt: number | undefined;
  let submitterFailure = '';
  if (k8sJob && observed.submitter !== undefined) {
    if (observed.submitter === null) {
      return fail(REASON_SUBMISSION_FAILED, `The submitter Job ${fullName(ctx, submitterJobName(job))} no longer exists.`, 'submitter gone', {
        changes: { rayClusterStatus: clusterStatus },
      });
    }
    const finished = finishedCondition(observed.submitter);
    if (finished) {
      submitterFailed = finished.type === 'Failed';
      submitterFinishedAt = parseTime(finished.lastTransitionTime) ?? now;
      submitterFailure = `Job submission has failed. Reason: ${finished.reason ?? ''}. Message: ${finished.message ?? ''}`;
    }
  }
  const submitterFinished = submitterFinishedAt !== undefined;
  const failSubmission = (note: string, changes: Partial<RayJobStatus> = {}): Outcome =>
    // A failed submitter after the Ray job already reported FAILED is the app failing (KubeRay).
    (changes.jobStatus ?? status.jobStatus) === 'FAILED'
      ? fail(REASON_APP_FAILED, (changes.message as string | undefined) ?? status.message ?? '', note, { changes: { rayClusterStatus: clusterStatus, ...changes } })
      : fail(REASON_SUBMISSION_FAILED, submitterFailure, note, { changes: { rayClusterStatus: clusterStatus, ...changes } });

  const dashboard = observed.dashboard;
  const base = { rayClusterStatus: clusterStatus };
  if (dashboard === undefined) return stay(ctx, 'dashboard not observed', { changes: base, requeueAfterMs: config.requeueMs });

  if (dashboard.kind === 'found') {
    const info = dashboard.info;
    const rayJobInfo: Record<string, string> = {};
    if (typeof info.start_time === 'number' && info.start_time > 0) rayJobInfo['startTime'] = formatTime(info.start_time);
    if (typeof info.end_time === 'number' && info.end_time > 0) rayJobInfo['endTime'] = formatTime(info.end_time);
    const seen: Partial<RayJobStatus> = { ...base, jobStatus: info.status, message: info.message ?? '' };
    if (Object.keys(rayJobInfo).length > 0) seen['rayJobInfo'] = rayJobInfo;
    if (isRayJobTerminal(info.status)) {
      // K8sJobMode also waits for the submitter, so its logs are complete (kuberay #1919); the
      // grace period above bounds that wait (#3553). A dead submitter does not hide a finished job (#2154).
      if (k8sJob && !submitterFinished) {
        const end = typeof info.end_time === 'number' && info.end_time > 0 ? info.end_time : undefined;
        return stay(ctx, 'Ray job terminal; waiting for the submitter to finish', {
          changes: seen,
          statusCheck: 'ok',
          requeueAfterMs: requeueFor(ctx, [end === undefined ? undefined : end + config.gracePeriodSeconds * 1000]),
        });
      }
      if (info.status === 'FAILED') return fail(REASON_APP_FAILED, info.message ?? '', 'Ray job FAILED', { changes: seen, statusCheck: 'ok' });
      return { next: 'Complete', changes: { ...seen, reason: '' }, statusCheck: 'ok', note: `Ray job ${info.status}` };
    }
    if (submitterFailed) return failSubmission('submitter failed; Ray job not terminal', { ...seen, message: submitterFailure });
    if (submitterFinishedAt !== undefined) {
      const limit = submitterFinishedAt + config.submitterFinishedTimeoutSeconds * 1000;
      if (now >= limit) {
        return fail(
          REASON_GRACE_PERIOD_EXCEEDED,
          `The RayJob submitter finished at ${formatTime(submitterFinishedAt)} but the Ray job did not reach a terminal state within ${config.submitterFinishedTimeoutSeconds}s`,
          'submitter finished; Ray job stuck',
          { changes: seen, statusCheck: 'ok' },
        );
      }
      return stay(ctx, 'submitter finished; waiting for the Ray job to end', { changes: seen, statusCheck: 'ok', requeueAfterMs: requeueFor(ctx, [limit]) });
    }
    return stay(ctx, `Ray job ${info.status}`, {
      changes: seen,
      statusCheck: 'ok',
      requeueAfterMs: requeueFor(ctx, [deadlineAt(ctx, job.spec?.activeDeadlineSeconds)]),
    });
  }

  if (dashboard.kind === 'notFound') {
    if (ctx.mode === 'HTTPMode') {
      return stay(ctx, 'Ray job not found; submitting over HTTP', {
        changes: base,
        actions: [{ type: 'submitRayJob', cluster: clusterName, request: buildSubmitRequest(job) }],
        statusCheck: 'ok',
        requeueAfterMs: config.requeueMs,
      });
    }
    if (k8sJob) {
      if (submitterFailed) return failSubmission('submitter failed; Ray job unknown to the dashboard');
      if (submitterFinished) {
        // The head restarted and lost its jobs (kuberay #3903), or the submission never happened.
        return fail(REASON_APP_FAILED, 'Submitter completed but Ray job not found in RayCluster.', 'submitter done; job unknown', { changes: base, statusCheck: 'ok' });
      }
      return stay(ctx, 'submitter has not submitted yet', { changes: base, statusCheck: 'ok', requeueAfterMs: config.requeueMs });
    }
  }

  // No usable answer (or, InteractiveMode, an id the dashboard does not know): the status-check clock runs.
  if (submitterFailed) return failSubmission('submitter failed; dashboard not answering');
  const why = dashboard.kind === 'error' ? dashboard.message : `Ray job ${status.jobId ?? ''} not found`;
  const since = observed.statusCheckFailingSince ?? now;
  const limit = since + config.statusCheckTimeoutSeconds * 1000;
  if (now >= limit) {
    return fail(
      REASON_STATUS_CHECK_TIMEOUT_EXCEEDED,
      `Failed to get the Ray job status from the dashboard for ${config.statusCheckTimeoutSeconds}s: ${why}`,
      'status check timeout',
      { changes: base, statusCheck: 'failing' },
    );
  }
  return stay(ctx, `dashboard: ${why}`, { changes: base, statusCheck: 'failing', requeueAfterMs: requeueFor(ctx, [limit]) });
}

/** Suspending and Retrying release the cluster and the submitter and wait until both are gone. */
function releaseResources(ctx: Ctx): { actions: Action[]; done: boolean } {
  const { job, status, observed } = ctx;
  const actions: Action[] = [];
  let done = true;
  const clusterName = status.rayClusterName ?? '';
  // Never delete a cluster the RayJob did not create (clusterSelector).
  if (!usesClusterSelector(job) && clusterName !== '' && observed.cluster !== null && observed.cluster !== undefined) {
    done = false;
    if (!isDeleting(observed.cluster)) actions.push({ type: 'deleteCluster', name: clusterName });
  }
  if (ctx.mode === 'K8sJobMode' && observed.submitter !== null && observed.submitter !== undefined) {
    done = false;
    if (!isDeleting(observed.submitter)) actions.push({ type: 'deleteSubmitter', name: submitterJobName(job) });
  }
  if (observed.cluster === undefined && clusterName !== '' && !usesClusterSelector(job)) done = false;
  if (observed.submitter === undefined && ctx.mode === 'K8sJobMode') done = false;
  return { actions, done };
}

/** What Suspending and Retrying reset once the resources are gone (KubeRay resets the same). */
const RESET_KEYS = ['rayClusterName', 'dashboardURL', 'jobId', 'message', 'reason', 'rayJobInfo', 'rayClusterStatus', 'jobStatus'];

function decideSuspending(ctx: Ctx): Outcome {
  const { actions, done } = releaseResources(ctx);
  if (!done) return stay(ctx, 'deleting the RayCluster and the submitter', { actions, requeueAfterMs: ctx.config.requeueMs });
  return { next: 'Suspended', remove: RESET_KEYS, note: 'resources released' };
}

function decideRetrying(ctx: Ctx): Outcome {
  const { actions, done } = releaseResources(ctx);
  if (!done) return stay(ctx, 'deleting the RayCluster and the submitter before the retry', { actions, requeueAfterMs: ctx.config.requeueMs });
  return { next: 'New', remove: RESET_KEYS, requeueAfterMs: ctx.config.requeueMs, note: 'resources released; retrying' };
}

function decideSuspended(ctx: Ctx): Outcome {
  if (ctx.job.spec?.suspend === true) return stay(ctx, 'suspended');
  return { next: 'New', remove: ['jobStatus'], requeueAfterMs: ctx.config.requeueMs, note: 'resumed' };
}

/** Complete / Failed: with shutdownAfterJobFinishes, delete the RayCluster ttlSecondsAfterFinished after endTime. */
function decideFinished(ctx: Ctx): Outcome {
  const { job, status, observed, config, now } = ctx;
  if (usesClusterSelector(job)) return stay(ctx, 'finished; the selected cluster is not ours to delete');
  if (job.spec?.shutdownAfterJobFinishes !== true) return stay(ctx, 'finished; shutdownAfterJobFinishes is off');
  const end = parseTime(status.endTime);
  if (end === undefined) return stay(ctx, 'finished without endTime; recording it', { changes: { endTime: formatTime(now) }, requeueAfterMs: config.requeueMs });
  const shutdownAt = end + (job.spec?.ttlSecondsAfterFinished ?? 0) * 1000;
  if (now < shutdownAt) return stay(ctx, 'waiting for ttlSecondsAfterFinished', { requeueAfterMs: shutdownAt - now });
  if (config.deleteRayJobAfterJobFinishes) return stay(ctx, 'ttl passed; deleting the RayJob', { actions: [{ type: 'deleteRayJob' }] });
  const cluster = observed.cluster;
  if (cluster !== null && cluster !== undefined && !isDeleting(cluster) && (status.rayClusterName ?? '') !== '') {
    return stay(ctx, 'ttl passed; deleting the RayCluster', { actions: [{ type: 'deleteCluster', name: status.rayClusterName ?? '' }] });
  }
  return stay(ctx, 'ttl passed; the RayCluster is gone');
}

/** ValidationFailed: no retry storm; the state is left once the spec is valid again (a new start). */
function decideValidationFailed(ctx: Ctx): Outcome {
  if (validateRayJob(ctx.job) !== undefined) return stay(ctx, 'spec still invalid');
  return { next: 'New', changes: { reason: '', message: '' }, requeueAfterMs: ctx.config.requeueMs, note: 'spec valid again' };
}

/** Deletion (before the switch, as in KubeRay): stop a Ray job that may still run, release the finalizer. */
function decideDeletion(ctx: Ctx): Outcome {
  const { job, status } = ctx;
  if (!(job.metadata.finalizers ?? []).includes(RAYJOB_FINALIZER)) return stay(ctx, 'being deleted; no finalizer of ours');
  const actions: Action[] = [];
  const jobId = status.jobId ?? '';
  const cluster = status.rayClusterName ?? '';
  if (!isRayJobTerminal(status.jobStatus) && jobId !== '' && cluster !== '') actions.push({ type: 'stopRayJob', cluster, jobId });
  actions.push({ type: 'removeFinalizer' });
  return stay(ctx, 'being deleted: stop the Ray job, release the finalizer', { actions });
}

/** States where validation is not re-run before the switch: finished jobs stay finished. */
const NOT_REVALIDATED = new Set(['Complete', 'Failed', 'ValidationFailed']);

function runSwitch(ctx: Ctx): Outcome {
  switch (ctx.from as JobDeploymentStatus) {
    case 'New':
      return decideNew(ctx);
    case 'Initializing':
      return decideInitializing(ctx);
    case 'Waiting':
      return decideWaiting(ctx);
    case 'Running':
      return decideRunning(ctx);
    case 'Suspending':
      return decideSuspending(ctx);
    case 'Suspended':
      return decideSuspended(ctx);
    case 'Retrying':
      return decideRetrying(ctx);
    case 'Complete':
    case 'Failed':
      return decideFinished(ctx);
    case 'ValidationFailed':
      return decideValidationFailed(ctx);
    default:
      // A state this version does not know (e.g. a newer KubeRay's): touch nothing.
      return stay(ctx, `unknown jobDeploymentStatus ${JSON.stringify(ctx.from)}; left alone`);
  }
}

/** The observations a decision for this RayJob needs (the reconciler reads only these). */
export function observationPlan(job: RayJob): { cluster: boolean; submitter: boolean; dashboard: boolean } {
  const state = currentState(job);
  const k8sJob = submissionMode(job) === 'K8sJobMode';
  if (typeof job.metadata.deletionTimestamp === 'string' && job.metadata.deletionTimestamp !== '') {
    return { cluster: false, submitter: false, dashboard: false };
  }
  switch (state) {
    case 'Initializing':
      return { cluster: true, submitter: k8sJob, dashboard: false };
    case 'Running':
      return { cluster: true, submitter: k8sJob, dashboard: job.spec?.suspend !== true };
    case 'Suspending':
    case 'Retrying':
      return { cluster: true, submitter: k8sJob, dashboard: false };
    case 'Complete':
    case 'Failed':
      return { cluster: job.spec?.shutdownAfterJobFinishes === true && !usesClusterSelector(job), submitter: false, dashboard: false };
    default:
      return { cluster: false, submitter: false, dashboard: false };
  }
}

// ---------------------------------------------------------------------------------------------
// The entry point

export function decide(job: RayJob, observed: Observed, now: number, config: MachineConfig): Decision {
  const status: RayJobStatus = structuredClone(job.status ?? {});
  const from = currentState(job);
  const ctx: Ctx = { job, status, observed, now, config, mode: submissionMode(job), from };

  let outcome: Outcome;
  const deleting = typeof job.metadata.deletionTimestamp === 'string' && job.metadata.deletionTimestamp !== '';
  const problem = deleting || NOT_REVALIDATED.has(from) ? undefined : validateRayJob(job);
  if (deleting) {
    outcome = decideDeletion(ctx);
  } else if (problem) {
    const name = `${job.metadata.namespace ?? 'default'}/${job.metadata.name ?? ''}`;
    outcome = {
      next: 'ValidationFailed',
      changes: { reason: REASON_VALIDATION_FAILED, message: problem.message },
      events: [{ type: 'Warning', reason: problem.eventReason, message: `${name}: ${problem.message}` }],
      note: 'validation failed',
    };
  } else {
    outcome = runSwitch(ctx);
  }
  return finish(ctx, outcome);
}

/** After the switch (KubeRay: checkBackoffLimitAndUpdateStatusIfNeeded, updateRayJobStatus). */
function finish(ctx: Ctx, outcome: Outcome): Decision {
  const { job, now, from } = ctx;
  const next: RayJobStatus = { ...ctx.status, ...(outcome.changes ?? {}) };
  for (const key of outcome.remove ?? []) delete (next as Record<string, unknown>)[key];
  const events = [...(outcome.events ?? [])];
  let state = outcome.next;
  const transition = state !== from;
  if (transition) {
    next.failed = (next.failed ?? 0) + (state === 'Failed' ? 1 : 0);
    next.succeeded = (next.succeeded ?? 0) + (state === 'Complete' && next.jobStatus === 'SUCCEEDED' ? 1 : 0);
    if (state === 'Failed') {
      const limit = job.spec?.backoffLimit;
      const retry = typeof limit === 'number' && next.failed < limit + 1 && next.reason !== REASON_DEADLINE_EXCEEDED;
      events.push({
        type: 'Warning',
        reason: EVENT_RAYJOB_FAILED,
        message: `${next.reason ?? ''}: ${next.message ?? ''}${retry ? ` (attempt ${next.failed} of ${(limit ?? 0) + 1}; retrying)` : ''}`,
      });
      if (retry) state = 'Retrying';
    }
    if (state === 'Complete' || state === 'Failed') next.endTime = formatTime(now);
  }
  // New is written by its name; KubeRay's "" still reads as New (currentState).
  next.jobDeploymentStatus = state as JobDeploymentStatus;
  const decision: Decision = { from, next: state, status: clean(next), actions: outcome.actions ?? [], events, note: outcome.note };
  if (outcome.requeueAfterMs !== undefined) decision.requeueAfterMs = outcome.requeueAfterMs;
  if (outcome.statusCheck !== undefined) decision.statusCheck = outcome.statusCheck;
  return decision;
}
