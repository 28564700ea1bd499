// The RayJob deployment state machine (KubeRay's rayjob_controller.go Reconcile, shaped like
// spark-operator's syncSparkApplication): ONE exhaustive switch over the deployment status, one small
// named function a state. Pure: (RayJob, observed world, clock, config) -> RayJobDecision. The
// reconciler in controller/rayjob/ observes the world, executes the decision's actions, then writes
// its status.
//
// What runs BEFORE the switch, in this order (and nothing else does):
//   1. spec.managedBy names a controller we do not stand in for -> left alone (no decision at all);
//   2. the stored state is one this version does not know (a newer KubeRay's) -> left alone;
//   3. deletionTimestamp set (any state) -> decideDeletion: stop the Ray job, release the finalizer;
//   4. the spec is invalid, in any state but Complete, Failed, ValidationFailed -> ValidationFailed.
// Every other transition is decided inside the case of the state it leaves, including
// Failed -> Retrying (fail() decides it from backoffLimit) and the counters and endTime that go with
// Complete and Failed. finish() only merges the case's status changes and stamps the next state.
import { formatTime, parseTime } from '../time.ts';
import { RAYJOB_FINALIZER } from '../names.ts';
import { isManagedExternally } from '../gcsft/rules.ts';
import { isDeleting } from '../../kube/finalizer-patches.ts';
import { JOB_DEPLOYMENT_STATUSES, type JobDeploymentStatus, type RayCluster, type RayJob, type RayJobStatus } from '../types.ts';
import type { BatchJob, Pod } from '../../kube/model.ts';
import {
  buildRayCluster,
  buildSubmitRequest,
  buildSubmitterJob,
  finishedCondition,
  type JobSubmitRequest,
  type SubmitterOptions,
} from './builders.ts';
import {
  DEFAULT_GRACE_PERIOD_SECONDS,
  DEFAULT_REQUEUE_MS,
  DEFAULT_STATUS_CHECK_TIMEOUT_SECONDS,
  DEFAULT_SUBMITTER_FINISHED_TIMEOUT_SECONDS,
  REASON_APP_FAILED,
  REASON_DEADLINE_EXCEEDED,
  REASON_GRACE_PERIOD_EXCEEDED,
  REASON_PRE_RUNNING_DEADLINE_EXCEEDED,
  REASON_STATUS_CHECK_TIMEOUT_EXCEEDED,
  REASON_SUBMISSION_FAILED,
  REASON_VALIDATION_FAILED,
  STATUS_CHECK_FAILING_SINCE_ANNOTATION,
  SUBMITTER_CONTAINER_NAME,
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
import {
  deletionRules,
  extendDeletionRecord,
  finishedNeedsCluster,
  formatDeletionRecord,
  planFinished,
  readDeletionRecord,
  sameDeletionRecord,
} from './deletion.ts';
import { EVENT_DELETION_RULES_UNMATCHED, EVENT_RAYCLUSTER_NOT_FOUND, EVENT_RAYJOB_FAILED, type EventSpec } from '../event-reasons.ts';

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
  /** SidecarMode: the cluster's head pod, whose container statuses say how the submitter container is. */
  headPod?: Pod | null;
  /** K8sJobMode, its submitter Job failed: how its last attempt's container ended, as its pod says (null: no pod). */
  submitterAttempt?: SubmitterAttempt | null;
  dashboard?: DashboardObservation;
}

/** A submitter container's end as its pod reports it; `message` is the log tail (terminationMessagePolicy FallbackToLogsOnError). */
export interface SubmitterAttempt {
  exitCode?: number;
  reason?: string;
  message?: string;
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

export type RayJobAction =
  | { type: 'addFinalizer' }
  | { type: 'removeFinalizer' }
  /** Start (since: RFC 3339) or clear (since: null) the dashboard-failure clock, kept in an annotation. */
  | { type: 'setStatusCheckClock'; since: string | null }
  /** Write the deletion record (DELETION_RECORD_ANNOTATION, formatDeletionRecord's text) at the decided resourceVersion. */
  | { type: 'recordDeletion'; record: string }
  | { type: 'createCluster'; cluster: RayCluster }
  | { type: 'deleteCluster'; name: string }
  /** DeleteWorkers: set suspend on every worker group of the RayCluster read at resourceVersion (the head stays). */
  | { type: 'suspendWorkerGroups'; name: string; resourceVersion: string; groups: number }
  | { type: 'createSubmitter'; job: BatchJob }
  | { type: 'deleteSubmitter'; name: string }
  | { type: 'submitRayJob'; cluster: string; request: JobSubmitRequest }
  | { type: 'stopRayJob'; cluster: string; jobId: string }
  | { type: 'deleteRayJob' };

/** Actions that carry their own optimistic-concurrency guard (a JSON-patch `test` or a resourceVersion). */
export function isSelfGuarded(action: RayJobAction): boolean {
  return (
    action.type === 'addFinalizer' ||
    action.type === 'removeFinalizer' ||
    action.type === 'setStatusCheckClock' ||
    action.type === 'recordDeletion'
  );
}

/** Creations a repeat cannot duplicate (fixed names; the submission's fixed id): deciding one on a copy a moment old costs at most a pass that undoes it. */
export function isRepeatableCreate(action: RayJobAction): boolean {
  return action.type === 'createCluster' || action.type === 'createSubmitter' || action.type === 'submitRayJob';
}

/** What one pass decided for a RayJob this controller drives. */
export interface RayJobStep {
  kind: 'step';
  /** The state the case started from (status.jobDeploymentStatus as read; absent or "" is New). */
  from: JobDeploymentStatus;
  /** The state after this decision. */
  next: JobDeploymentStatus;
  /** The complete next status; the reconciler writes it through /status only if it differs. */
  status: RayJobStatus;
  /** Side effects, in order, BEFORE the status write (creations use deterministic names, so a repeat is harmless). */
  actions: RayJobAction[];
  /** Emitted only AFTER the status write succeeded, so a retried decision does not repeat them. */
  events: EventSpec[];
  requeueAfterMs?: number;
  /** Running: the dashboard answered ('ok') or did not ('failing'). */
  statusCheck?: 'ok' | 'failing';
  /** Finished, its cluster kept, and no deletion rule matches its terminal state (the Warning went out). */
  unmatchedDeletionRules?: boolean;
  /**
   * The next decision waits on nothing but this one's status write: make it at once on the written RayJob
   * (New with its names -> Initializing -> the cluster created; HTTPMode's Running -> the submission), not
   * after a trip through the work queue, which is long when many RayJobs share it.
   */
  decideAgain?: boolean;
  /** For logs: why the case decided what it did. */
  note: string;
}

/** A RayJob that is not ours to move: managed by another controller, or in a state we do not know. */
export interface RayJobLeftAlone {
  kind: 'leftAlone';
  /** status.jobDeploymentStatus as stored. */
  stored: string;
  note: string;
}

export type RayJobDecision = RayJobStep | RayJobLeftAlone;

// ---------------------------------------------------------------------------------------------
// Helpers

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
export function rayJobStatusChanged(stored: RayJobStatus | undefined, next: RayJobStatus): boolean {
  return stableStringify(clean(stored ?? {})) !== stableStringify(clean(next));
}

/** The cluster status KubeRay mirrors into status.rayClusterStatus, minus its heartbeat timestamp. */
function clusterStatusSummary(cluster: RayCluster): Record<string, unknown> | undefined {
  const status = cluster.status;
  if (status === undefined || status === null) return undefined;
  const { lastUpdateTime: _ignored, ...rest } = status as Record<string, unknown>;
  return Object.keys(rest).length > 0 ? rest : undefined;
}

/** When the dashboard began failing for this Running attempt (the annotation), in ms. */
export function statusCheckFailingSince(job: RayJob): number | undefined {
  return parseTime(job.metadata.annotations?.[STATUS_CHECK_FAILING_SINCE_ANNOTATION]);
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
  from: JobDeploymentStatus;
}

interface Outcome {
  next: JobDeploymentStatus;
  changes?: Partial<RayJobStatus>;
  /** Keys removed from the status (resets). */
  remove?: string[];
  actions?: RayJobAction[];
  events?: EventSpec[];
  requeueAfterMs?: number;
  statusCheck?: 'ok' | 'failing';
  unmatchedDeletionRules?: boolean;
  decideAgain?: boolean;
  note: string;
}

type Extra = Omit<Outcome, 'next' | 'note'>;

function stay(ctx: Ctx, note: string, extra: Extra = {}): Outcome {
  return { next: ctx.from, note, ...extra };
}

/**
 * The attempt failed: Failed, or Retrying while `failed` is below backoffLimit + 1 (KubeRay's
 * checkBackoffLimitAndUpdateStatusIfNeeded; DeadlineExceeded never retries). Counts the failure,
 * stamps endTime when final, and emits the Warning.
 */
function fail(ctx: Ctx, reason: string, message: string, note: string, extra: Extra = {}): Outcome {
  const failed = (ctx.status.failed ?? 0) + 1;
  const limit = ctx.job.spec?.backoffLimit;
  const retry = typeof limit === 'number' && failed < limit + 1 && reason !== REASON_DEADLINE_EXCEEDED;
  const event: EventSpec = {
    type: 'Warning',
    reason: EVENT_RAYJOB_FAILED,
    message: `${reason}: ${message}${retry ? ` (attempt ${failed} of ${(limit ?? 0) + 1}; retrying)` : ''}`,
  };
  const changes: Partial<RayJobStatus> = { ...(extra.changes ?? {}), reason, message, failed };
  if (!retry) changes.endTime = formatTime(ctx.now);
  return {
    ...extra,
    next: retry ? 'Retrying' : 'Failed',
    changes,
    events: [...(extra.events ?? []), event],
    note: retry ? `${note}; retrying` : note,
  };
}

/** The Ray job ended and the deployment follows: Complete, counting a SUCCEEDED run, with endTime. */
function complete(ctx: Ctx, note: string, extra: Extra = {}): Outcome {
  const changes: Partial<RayJobStatus> = { ...(extra.changes ?? {}), endTime: formatTime(ctx.now) };
  const jobStatus = changes.jobStatus ?? ctx.status.jobStatus;
  changes.succeeded = (ctx.status.succeeded ?? 0) + (jobStatus === 'SUCCEEDED' ? 1 : 0);
  return { ...extra, next: 'Complete', changes, note };
}

function activeDeadlinePassed(ctx: Ctx): Outcome | undefined {
  const seconds = ctx.job.spec?.activeDeadlineSeconds;
  const start = parseTime(ctx.status.startTime);
  if (typeof seconds !== 'number' || start === undefined || ctx.now < start + seconds * 1000) return undefined;
  return fail(
    ctx,
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
    ctx,
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

/**
 * New: finalizer and names first, stored WITH the state New (so `kubectl get rayjob -w` shows New,
 * and jobId / rayClusterName are written before anything is created: a repeated reconcile can never
 * create a second cluster or submit twice); the next pass stamps startTime and moves to Initializing.
 */
function decideNew(ctx: Ctx): Outcome {
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
function decideWaiting(ctx: Ctx): Outcome {
  const { job, config } = ctx;
  const deadline = preRunningDeadlinePassed(ctx);
  if (deadline) return deadline;
  const jobId = job.spec?.jobId ?? '';
  if (jobId !== '') return { next: 'Running', changes: { jobId }, requeueAfterMs: config.requeueMs, note: 'spec.jobId set' };
  return stay(ctx, 'waiting for spec.jobId', { requeueAfterMs: requeueFor(ctx, [deadlineAt(ctx, job.spec?.preRunningDeadlineSeconds)]) });
}

// Running, in named steps: exits that need no observation, the cluster, the submitter, then what the
// dashboard said (found / not found / no usable answer). Every way KubeRay's users saw "Running for
// ever" (kuberay #1233, #2154, #3553, #3903) has an exit here.

/** Suspend, the active deadline, the grace period after a terminal Ray job, a missing submission id. */
function runningExitsWithoutObservation(ctx: Ctx): Outcome | undefined {
  const { job, status, config, now } = ctx;
  if (job.spec?.suspend === true) return { next: 'Suspending', note: 'spec.suspend is true' };
  const deadline = activeDeadlinePassed(ctx);
  if (deadline) return deadline;
  // The Ray job ended but the deployment did not follow (the submitter never finished: #3553).
  const rayEnd = parseTime((status['rayJobInfo'] as { endTime?: string } | undefined)?.endTime);
  if (isRayJobTerminal(status.jobStatus) && rayEnd !== undefined && now >= rayEnd + config.gracePeriodSeconds * 1000) {
    const reason = REASON_GRACE_PERIOD_EXCEEDED;
    const message =
      'JobDeploymentStatus does not transition to Complete or Failed within the grace period after JobStatus reaches a terminal state.';
    const note = 'grace period after the Ray job ended passed';
    return status.jobStatus === 'FAILED' ? fail(ctx, reason, message, note) : complete(ctx, note, { changes: { reason, message } });
  }
  // Nothing to follow: without this exit such a RayJob would stay Running for ever.
  if ((status.jobId ?? '') === '')
    return fail(ctx, REASON_SUBMISSION_FAILED, 'status.jobId is empty: no Ray job to follow.', 'no submission id');
  return undefined;
}

/** The head is gone with its cluster (#1233): nothing will ever report the job again. */
function runningClusterGone(ctx: Ctx): Outcome | undefined {
  const cluster = ctx.observed.cluster;
  if (cluster !== null && !isDeleting(cluster)) return undefined;
  const name = fullName(ctx, ctx.status.rayClusterName ?? '');
  return fail(
    ctx,
    REASON_APP_FAILED,
    `RayCluster ${name} ${cluster === null ? 'no longer exists' : 'is being deleted'} while the Ray job was running.`,
    'cluster gone',
  );
}

/** What the submitter (K8sJobMode: its Job; SidecarMode: its container in the head pod) tells: failed, finished and when. */
interface SubmitterView {
  failed: boolean;
  finishedAt: number | undefined;
  failure: string;
}

/** The modes whose Ray job is submitted and followed by a submitter (KubeRay's HasSubmitter). */
function hasSubmitter(ctx: Ctx): boolean {
  return ctx.mode === 'K8sJobMode' || ctx.mode === 'SidecarMode';
}

function readSubmitter(ctx: Ctx, base: Partial<RayJobStatus>): SubmitterView | Outcome {
  if (ctx.mode === 'SidecarMode') return readSidecarSubmitter(ctx, base);
  const view: SubmitterView = { failed: false, finishedAt: undefined, failure: '' };
  const submitter = ctx.observed.submitter;
  if (ctx.mode !== 'K8sJobMode' || submitter === undefined) return view;
  if (submitter === null) {
    return fail(
      ctx,
      REASON_SUBMISSION_FAILED,
      `The submitter Job ${fullName(ctx, submitterJobName(ctx.job))} no longer exists.`,
      'submitter gone',
      { changes: base },
    );
  }
  const finished = finishedCondition(submitter);
  if (finished) {
    view.failed = finished.type === 'Failed';
    view.finishedAt = parseTime(finished.lastTransitionTime) ?? ctx.now;
    view.failure = `Job submission has failed. Reason: ${finished.reason ?? ''}. Message: ${finished.message ?? ''}${attemptReport(ctx.observed.submitterAttempt)}`;
  }
  return view;
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
function sidecarSubmitterFinished(ctx: Ctx): boolean {
  if (ctx.mode !== 'SidecarMode') return false;
  const container = (ctx.observed.headPod?.status?.containerStatuses ?? []).find((c) => c.name === SUBMITTER_CONTAINER_NAME);
  return container?.state?.terminated !== undefined;
}

/**
 * SidecarMode (KubeRay's checkSidecarContainerStatus): the head pod gone fails the attempt (the
 * cluster never re-creates it: ray.io/disable-provisioned-head-restart); the submitter container
 * terminated non-zero is a failed submission; terminated at all is the submitter's finish time.
 */
function readSidecarSubmitter(ctx: Ctx, base: Partial<RayJobStatus>): SubmitterView | Outcome {
  const view: SubmitterView = { failed: false, finishedAt: undefined, failure: '' };
  const pod = ctx.observed.headPod;
  if (pod === undefined) return view;
  if (pod === null) return fail(ctx, REASON_APP_FAILED, 'Ray head pod not found.', 'head pod gone', { changes: base });
  const container = (pod.status?.containerStatuses ?? []).find((c) => c.name === SUBMITTER_CONTAINER_NAME);
  const terminated = container?.state?.terminated;
  if (terminated) {
    const code = terminated.exitCode ?? 0;
    view.failed = code !== 0;
    view.finishedAt = parseTime(terminated.finishedAt) ?? ctx.now;
    view.failure = `Ray head pod container ${SUBMITTER_CONTAINER_NAME} terminated with exit code ${code}: ${terminated.reason ?? ''}`;
  }
  return view;
}

/** A failed submitter: AppFailed when the Ray job already reported FAILED (KubeRay), else SubmissionFailed. */
function submissionFailed(
  ctx: Ctx,
  submitter: SubmitterView,
  base: Partial<RayJobStatus>,
  note: string,
  changes: Partial<RayJobStatus> = {},
): Outcome {
  const extra = { changes: { ...base, ...changes } };
  return (changes.jobStatus ?? ctx.status.jobStatus) === 'FAILED'
    ? fail(ctx, REASON_APP_FAILED, (changes.message as string | undefined) ?? ctx.status.message ?? '', note, extra)
    : fail(ctx, REASON_SUBMISSION_FAILED, submitter.failure, note, extra);
}

/** The dashboard knows the Ray job: follow it, and the submitter when it must finish too. */
function runningJobFound(ctx: Ctx, info: RayJobInfo, submitter: SubmitterView, base: Partial<RayJobStatus>): Outcome {
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
    if (hasSubmitter(ctx) && submitter.finishedAt === undefined) {
      const end = typeof info.end_time === 'number' && info.end_time > 0 ? info.end_time : undefined;
      return stay(ctx, 'Ray job terminal; waiting for the submitter to finish', {
        ...ok,
        requeueAfterMs: requeueFor(ctx, [end === undefined ? undefined : end + config.gracePeriodSeconds * 1000]),
      });
    }
    if (info.status === 'FAILED') return fail(ctx, REASON_APP_FAILED, info.message ?? '', 'Ray job FAILED', ok);
    return complete(ctx, `Ray job ${info.status}`, { ...ok, changes: { ...seen, reason: '' } });
  }
  if (submitter.failed)
    return submissionFailed(ctx, submitter, base, 'submitter failed; Ray job not terminal', { ...seen, message: submitter.failure });
  if (submitter.finishedAt !== undefined) {
    const limit = submitter.finishedAt + config.submitterFinishedTimeoutSeconds * 1000;
    if (now >= limit) {
      return fail(
        ctx,
        REASON_GRACE_PERIOD_EXCEEDED,
        `The RayJob submitter finished at ${formatTime(submitter.finishedAt)} but the Ray job did not reach a terminal state within ${config.submitterFinishedTimeoutSeconds}s`,
        'submitter finished; Ray job stuck',
        ok,
      );
    }
    return stay(ctx, 'submitter finished; waiting for the Ray job to end', { ...ok, requeueAfterMs: requeueFor(ctx, [limit]) });
  }
  return stay(ctx, `Ray job ${info.status}`, {
    ...ok,
    requeueAfterMs: requeueFor(ctx, [deadlineAt(ctx, job.spec?.activeDeadlineSeconds)]),
  });
}

/** The dashboard answered 404: submit (HTTPMode), wait for the submitter, or judge a finished one. */
function runningJobNotFound(ctx: Ctx, submitter: SubmitterView, base: Partial<RayJobStatus>): Outcome | undefined {
  const { job, config, status } = ctx;
  if (ctx.mode === 'HTTPMode') {
    return stay(ctx, 'Ray job not found; submitting over HTTP', {
      changes: base,
      actions: [{ type: 'submitRayJob', cluster: status.rayClusterName ?? '', request: buildSubmitRequest(job) }],
      statusCheck: 'ok',
      requeueAfterMs: config.requeueMs,
    });
  }
  if (!hasSubmitter(ctx)) return undefined; // InteractiveMode: an id the dashboard does not know.
  if (submitter.failed) return submissionFailed(ctx, submitter, base, 'submitter failed; Ray job unknown to the dashboard');
  if (submitter.finishedAt !== undefined) {
    // The head restarted and lost its jobs (kuberay #3903), or the submission never happened.
    return fail(ctx, REASON_APP_FAILED, 'Submitter completed but Ray job not found in RayCluster.', 'submitter done; job unknown', {
      changes: base,
      statusCheck: 'ok',
    });
  }
  return stay(ctx, 'submitter has not submitted yet', { changes: base, statusCheck: 'ok', requeueAfterMs: config.requeueMs });
}

/** No usable answer: the status-check clock (kept in an annotation, see below) runs to its timeout. */
function runningDashboardSilent(ctx: Ctx, submitter: SubmitterView, base: Partial<RayJobStatus>, why: string): Outcome {
  const { config, now } = ctx;
  if (submitter.failed) return submissionFailed(ctx, submitter, base, 'submitter failed; dashboard not answering');
  const since = statusCheckFailingSince(ctx.job) ?? now;
  const limit = since + config.statusCheckTimeoutSeconds * 1000;
  if (now >= limit) {
    return fail(
      ctx,
      REASON_STATUS_CHECK_TIMEOUT_EXCEEDED,
      `Failed to get the Ray job status from the dashboard for ${config.statusCheckTimeoutSeconds}s: ${why}`,
      'status check timeout',
      { changes: base, statusCheck: 'failing' },
    );
  }
  return stay(ctx, `dashboard: ${why}`, { changes: base, statusCheck: 'failing', requeueAfterMs: requeueFor(ctx, [limit]) });
}

function decideRunning(ctx: Ctx): Outcome {
  const early = runningExitsWithoutObservation(ctx) ?? runningClusterGone(ctx);
  if (early) return early;
  const cluster = ctx.observed.cluster;
  const base: Partial<RayJobStatus> = { rayClusterStatus: cluster ? clusterStatusSummary(cluster) : ctx.status.rayClusterStatus };
  const submitter = readSubmitter(ctx, base);
  if ('next' in submitter) return submitter;
  const dashboard = ctx.observed.dashboard;
  if (dashboard === undefined) return stay(ctx, 'dashboard not observed', { changes: base, requeueAfterMs: ctx.config.requeueMs });
  if (dashboard.kind === 'found') return runningJobFound(ctx, dashboard.info, submitter, base);
  const notFound = dashboard.kind === 'notFound' ? runningJobNotFound(ctx, submitter, base) : undefined;
  if (notFound) return notFound;
  const why = dashboard.kind === 'error' ? dashboard.message : `Ray job ${ctx.status.jobId ?? ''} not found`;
  return runningDashboardSilent(ctx, submitter, base, why);
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

/** Suspending and Retrying release the cluster and the submitter and wait until both are gone. */
function releaseResources(ctx: Ctx): { actions: RayJobAction[]; done: boolean } {
  const { job, status, observed } = ctx;
  const actions: RayJobAction[] = [];
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
  if (!done)
    return stay(ctx, 'deleting the RayCluster and the submitter before the retry', { actions, requeueAfterMs: ctx.config.requeueMs });
  return { next: 'New', remove: RESET_KEYS, requeueAfterMs: ctx.config.requeueMs, note: 'resources released; retrying' };
}

function decideSuspended(ctx: Ctx): Outcome {
  if (ctx.job.spec?.suspend === true) return stay(ctx, 'suspended');
  return { next: 'New', remove: ['jobStatus'], requeueAfterMs: ctx.config.requeueMs, note: 'resumed' };
}

/**
 * Complete / Failed: what the RayJob's deletion mechanism does now (deletion.ts planFinished: deletion
 * rules, legacy onSuccess/onFailure, or shutdownAfterJobFinishes), one action a pass, the rules done
 * recorded in the deletion record (an annotation) after the action.
 */
function decideFinished(ctx: Ctx): Outcome {
  const { job, status, observed, config, now } = ctx;
  const endMs = parseTime(status.endTime);
  if (endMs === undefined) {
    if (!finishedNeedsCluster(job) && deletionRules(job).length === 0) return stay(ctx, 'finished');
    return stay(ctx, 'finished without endTime; recording it', { changes: { endTime: formatTime(now) }, requeueAfterMs: config.requeueMs });
  }
  const stored = readDeletionRecord(job);
  const plan = planFinished({
    job,
    status,
    done: stored.done,
    cluster: observed.cluster,
    endMs,
    now,
    deleteRayJobAfterJobFinishes: config.deleteRayJobAfterJobFinishes,
  });
  const unmatched = plan.kind === 'idle' && plan.unmatched !== undefined;
  const record = extendDeletionRecord(stored, plan.record, unmatched);
  const recordActions: RayJobAction[] = sameDeletionRecord(stored, record)
    ? []
    : [{ type: 'recordDeletion', record: formatDeletionRecord(record, job.metadata.uid) }];
  switch (plan.kind) {
    case 'idle': {
      if (plan.unmatched === undefined) return stay(ctx, plan.note, { actions: recordActions });
      // The Warning once (the record remembers it); the metric for as long as the cluster is kept.
      const events: EventSpec[] = stored.unmatched
        ? []
        : [{ type: 'Warning', reason: EVENT_DELETION_RULES_UNMATCHED, message: plan.unmatched }];
      return stay(ctx, plan.note, { actions: recordActions, events, unmatchedDeletionRules: true });
    }
    case 'wait':
      return stay(ctx, plan.note, { actions: recordActions, requeueAfterMs: Math.max(plan.at - now, 1) });
    case 'act': {
      const clusterName = status.rayClusterName ?? '';
      const cluster = observed.cluster;
      const action: RayJobAction =
        plan.policy === 'DeleteSelf'
          ? { type: 'deleteRayJob' }
          : plan.policy === 'DeleteCluster'
            ? { type: 'deleteCluster', name: clusterName }
            : {
                type: 'suspendWorkerGroups',
                name: clusterName,
                resourceVersion: cluster?.metadata.resourceVersion ?? '',
                groups: (cluster?.spec?.workerGroupSpecs ?? []).length,
              };
      // DeleteSelf needs no record: the RayJob goes.
      const actions = plan.policy === 'DeleteSelf' ? [action] : [action, ...recordActions];
      return stay(ctx, plan.note, { actions, ...(plan.more ? { requeueAfterMs: config.requeueMs } : {}) });
    }
  }
}

/** ValidationFailed: no retry storm; the state is left once the spec is valid again (a new start). */
function decideValidationFailed(ctx: Ctx): Outcome {
  if (validateRayJob(ctx.job) !== undefined) return stay(ctx, 'spec still invalid');
  return { next: 'New', changes: { reason: '', message: '' }, requeueAfterMs: ctx.config.requeueMs, note: 'spec valid again' };
}

// ---------------------------------------------------------------------------------------------
// Before the switch

/** Deletion (before the switch, as in KubeRay): stop a Ray job that may still run, release the finalizer. */
function decideDeletion(ctx: Ctx): Outcome {
  const { job, status } = ctx;
  if (!(job.metadata.finalizers ?? []).includes(RAYJOB_FINALIZER)) return stay(ctx, 'being deleted; no finalizer of ours');
  const actions: RayJobAction[] = [];
  const jobId = status.jobId ?? '';
  const cluster = status.rayClusterName ?? '';
  if (!isRayJobTerminal(status.jobStatus) && jobId !== '' && cluster !== '') actions.push({ type: 'stopRayJob', cluster, jobId });
  actions.push({ type: 'removeFinalizer' });
  return stay(ctx, 'being deleted: stop the Ray job, release the finalizer', { actions });
}

/** States where validation is not re-run before the switch: finished jobs stay finished. */
const NOT_REVALIDATED: ReadonlySet<JobDeploymentStatus> = new Set<JobDeploymentStatus>(['Complete', 'Failed', 'ValidationFailed']);

/** Validation (before the switch, as in KubeRay): an invalid spec ends in ValidationFailed. */
function decideValidation(ctx: Ctx): Outcome | undefined {
  if (NOT_REVALIDATED.has(ctx.from)) return undefined;
  const problem = validateRayJob(ctx.job);
  if (!problem) return undefined;
  const name = `${ctx.job.metadata.namespace ?? 'default'}/${ctx.job.metadata.name ?? ''}`;
  return {
    next: 'ValidationFailed',
    changes: { reason: REASON_VALIDATION_FAILED, message: problem.message },
    events: [{ type: 'Warning', reason: problem.eventReason, message: `${name}: ${problem.message}` }],
    note: 'validation failed',
  };
}

function runSwitch(ctx: Ctx): Outcome {
  const state = ctx.from;
  switch (state) {
    case 'New':
      return decideNew(ctx);
    case 'Initializing':
      return decideInitializing(ctx);
    case 'Waiting':
      return decideWaiting(ctx);
    case 'Running':
      return withStatusCheckClock(ctx, decideRunning(ctx));
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
    default: {
      const unreachable: never = state;
      throw new Error(`unhandled jobDeploymentStatus ${String(unreachable)}`);
    }
  }
}

/** Whether this controller moves the RayJob at all (see the top of this file, steps 1 and 2). */
function leftAlone(job: RayJob): RayJobLeftAlone | undefined {
  const stored = storedState(job);
  if (isManagedExternally(job))
    return { kind: 'leftAlone', stored, note: `spec.managedBy is ${JSON.stringify(job.spec?.managedBy)}: another controller's` };
  if (currentState(job) === undefined)
    return { kind: 'leftAlone', stored, note: `unknown jobDeploymentStatus ${JSON.stringify(stored)}; left alone` };
  return undefined;
}

export interface ObservationPlan {
  cluster: boolean;
  submitter: boolean;
  headPod: boolean;
  dashboard: boolean;
}

/**
 * Whether a RayCluster the caches do not hold may be taken as absent without a GET: only while
 * Initializing a RayJob that makes its own cluster, where absent means "create it" and a cluster the
 * cache has not seen yet answers that create with AlreadyExists (nothing done twice). Elsewhere a stale
 * miss would read as a deleted cluster (a failed job, a selector's "not found"): confirmed by a GET.
 */
export function clusterMissIsAbsent(job: RayJob): boolean {
  return currentState(job) === 'Initializing' && !usesClusterSelector(job) && !isDeleting(job);
}

/** The observations a decision for this RayJob needs (the reconciler reads only these). */
export function observationPlan(job: RayJob): ObservationPlan {
  const state = currentState(job);
  const k8sJob = submissionMode(job) === 'K8sJobMode';
  const none = { cluster: false, submitter: false, headPod: false, dashboard: false };
  if (leftAlone(job) !== undefined || isDeleting(job)) return none;
  switch (state) {
    case 'Initializing':
      return { ...none, cluster: true, submitter: k8sJob, headPod: submissionMode(job) === 'SidecarMode' };
    case 'Running': {
      const observing = job.spec?.suspend !== true;
      return { cluster: true, submitter: k8sJob, headPod: observing && submissionMode(job) === 'SidecarMode', dashboard: observing };
    }
    case 'Suspending':
    case 'Retrying':
      return { ...none, cluster: true, submitter: k8sJob };
    case 'Complete':
    case 'Failed':
      return { ...none, cluster: finishedNeedsCluster(job) };
    default:
      return none;
  }
}

// ---------------------------------------------------------------------------------------------
// The entry point

export function decideRayJob(job: RayJob, observed: Observed, now: number, config: MachineConfig): RayJobDecision {
  const alone = leftAlone(job);
  if (alone) return alone;
  const from = currentState(job) as JobDeploymentStatus; // leftAlone() refused the unknown ones
  const status: RayJobStatus = structuredClone(job.status ?? {});
  const ctx: Ctx = { job, status, observed, now, config, mode: submissionMode(job), from };
  const outcome = isDeleting(job) ? decideDeletion(ctx) : (decideValidation(ctx) ?? runSwitch(ctx));
  return finish(ctx, outcome);
}

/** Merges the case's status changes and stamps the next state (KubeRay: updateRayJobStatus). */
function finish(ctx: Ctx, outcome: Outcome): RayJobStep {
  const next: RayJobStatus = { ...ctx.status, ...(outcome.changes ?? {}) };
  for (const key of outcome.remove ?? []) delete (next as Record<string, unknown>)[key];
  if (outcome.next !== ctx.from) {
    next.failed = next.failed ?? 0;
    next.succeeded = next.succeeded ?? 0;
  }
  // New is written by its name; KubeRay's "" still reads as New (currentState).
  next.jobDeploymentStatus = outcome.next;
  const step: RayJobStep = {
    kind: 'step',
    from: ctx.from,
    next: outcome.next,
    status: clean(next),
    actions: outcome.actions ?? [],
    events: outcome.events ?? [],
    note: outcome.note,
  };
  if (outcome.requeueAfterMs !== undefined) step.requeueAfterMs = outcome.requeueAfterMs;
  if (outcome.statusCheck !== undefined) step.statusCheck = outcome.statusCheck;
  if (outcome.unmatchedDeletionRules === true) step.unmatchedDeletionRules = true;
  if (outcome.decideAgain === true) step.decideAgain = true;
  return step;
}
