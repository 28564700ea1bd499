// The RayJob machine's vocabulary: what a decision reads (the observed world, the settings) and what it
// returns (a step: the next status, the actions before its write, the events after it; or "left alone").
// Types and their defaults only; the decisions are in decide.ts and the state files beside it.
import type { RayPodView } from '../../raycluster/pod-view.ts';
import type { JobDeploymentStatus, RayCluster, RayJobStatus } from '../../types.ts';
import type { BatchJob, Service } from '../../../kube/model.ts';
import type { EventSpec } from '../../event-reasons.ts';
import type { JobSubmitRequest, SubmitterOptions } from '../builders.ts';
import {
  DEFAULT_GRACE_PERIOD_SECONDS,
  DEFAULT_REQUEUE_MS,
  DEFAULT_STATUS_CHECK_TIMEOUT_SECONDS,
  DEFAULT_SUBMITTER_FINISHED_TIMEOUT_SECONDS,
} from '../constants.ts';
import { DEFAULT_SUBMITTER_DASHBOARD_TEMPLATE, renderDashboardUrl, type DashboardTarget, type RandomSource } from '../ids.ts';

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
  headPod?: RayPodView | null;
  /** K8sJobMode, its submitter Job failed: how its last attempt's container ended, as its pod says (null: no pod). */
  submitterAttempt?: SubmitterAttempt | null;
  dashboard?: DashboardObservation;
  /** Running without a clusterSelector: the RayJob's own head Service, `<rayjob>-head-svc` (src/rayjob/head-service.ts). */
  headService?: Service | null;
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
  /** The RayJob's head Service (KubeRay reconcileServices): created when absent... */
  | { type: 'createHeadService'; service: Service }
  /** ...and moved to this attempt's cluster: the stored Service with the new spec, at the resourceVersion read. */
  | { type: 'updateHeadService'; service: Service }
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
  return (
    action.type === 'createCluster' ||
    action.type === 'createSubmitter' ||
    action.type === 'submitRayJob' ||
    action.type === 'createHeadService'
  );
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
