// What a RayCronJob needs now: ONE pure decision, (RayCronJob, the RayJobs it owns, now) ->
// RayCronJobDecision. The reconciler in controller/raycronjob/ reads the RayCronJob and its children,
// carries out the decision (one create or a batch of deletes), writes the status through /status when it
// changed, and decides again until the decision is `wait` or `nothing`.
//
// The steps, in this order (and nothing else decides):
//   1. being deleted -> nothing (the children go with it: they carry its ownerReference);
//   2. invalid spec (schedule, timeZone, the RayJob template, as KubeRay's ValidateRayCronJobSpec) ->
//      nothing, Warning InvalidRayCronJobSpec; a spec edit brings it back;
//   3. the due tick (CronJob's rule): the LATEST tick in (lastScheduleTime or creation, now], so a
//      controller that was down for several ticks starts at most one catch-up run; with
//      startingDeadlineSeconds only a tick within that many seconds counts (older ones are skipped,
//      Warning MissSchedule);
//   4. a due tick and not suspended:
//      - its RayJob already exists (a stale cache, a status write lost) -> record lastScheduleTime;
//      - Replace and children still active -> delete them (then, next pass, create);
//      - Forbid and a child still active (not Complete/Failed) -> no run, Normal JobAlreadyActive (the
//        tick stays due: it runs when the child finishes, if still within the starting deadline);
//      - else create `<cronjob>-<tick unix minutes>` (KubeRay v1.7; AlreadyExists counts as created);
//   5. finished children beyond the history limits -> delete the oldest (also while suspended);
//   6. wait until the next tick (suspended: nothing, Normal SuspendedRayCronJob, as KubeRay).
// Children are the RayJobs whose controller ownerReference is this RayCronJob's uid; those being deleted
// are already gone for every rule.
import { formatTime, parseTime } from '../time.ts';
import { RAY_API_VERSION, RAYCRONJOB_NAME_LABEL, RAYCRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION } from '../names.ts';
import { isDeleting } from '../../kube/finalizer-patches.ts';
import { controllerReference } from '../../kube/owner.ts';
import type { ConcurrencyPolicy, RayCronJob, RayCronJobStatus, RayJob } from '../types.ts';
import {
  EVENT_INVALID_RAYCRONJOB_SPEC,
  EVENT_JOB_ALREADY_ACTIVE,
  EVENT_MISS_SCHEDULE,
  EVENT_SUSPENDED_RAYCRONJOB,
  type EventSpec,
} from '../event-reasons.ts';
import { MAX_RAYJOB_NAME_LENGTH } from '../rayjob/constants.ts';
import { validateRayJobMetadata, validateRayJobSpec } from '../rayjob/validation.ts';
import { parseSchedule, type Schedule } from './schedule.ts';

/** batch/v1 CronJob's defaults; KubeRay's RayCronJob has none of these fields. */
export const DEFAULT_CONCURRENCY_POLICY: ConcurrencyPolicy = 'Allow';
export const DEFAULT_SUCCESSFUL_JOBS_HISTORY_LIMIT = 3;
export const DEFAULT_FAILED_JOBS_HISTORY_LIMIT = 1;
/** CronJob's nextScheduleDelta: wake a little after the tick, never just before it. */
export const TICK_PADDING_MS = 100;
/** The ray.io/cronjob-name label value must be a valid label value. */
const MAX_LABEL_VALUE_LENGTH = 63;

export interface ChildRef {
  name: string;
  uid: string;
}

interface Common {
  /** The complete next status; the reconciler writes it through /status only if it differs. */
  status: RayCronJobStatus;
  /** Emitted after the decision was carried out. */
  events: EventSpec[];
  /** For logs: why. */
  note: string;
}

export type RayCronJobDecision =
  /** Create the RayJob of tick `scheduledAt`; status.lastScheduleTime records it once created (or found). */
  | (Common & { kind: 'create'; rayJob: RayJob; scheduledAt: number; requeueAfterMs: number })
  /** Delete these children (Replace: active ones; history: the oldest finished), then decide again. */
  | (Common & { kind: 'delete'; children: ChildRef[]; why: 'Replace' | 'history' })
  /** Nothing to do before `until` (the next tick), unless something changes. */
  | (Common & { kind: 'wait'; until: number; requeueAfterMs: number })
  /** Nothing to do until the RayCronJob changes (deleted, invalid, suspended with no next tick). */
  | (Common & { kind: 'nothing' });

export type ChildPhase = 'active' | 'succeeded' | 'failed';

/**
 * Complete -> succeeded; Failed -> failed; ValidationFailed -> failed too (it never moves on unless the
 * RayJob is edited, and Forbid would otherwise stop the schedule for good); anything else is active.
 */
export function childPhase(job: RayJob): ChildPhase {
  const state = job.status?.jobDeploymentStatus;
  if (state === 'Complete') return 'succeeded';
  if (state === 'Failed' || state === 'ValidationFailed') return 'failed';
  return 'active';
}

/**
 * KubeRay v1.7's child name `<cronjob>-<tick unix time / 60>`, the RayCronJob's name cut so the whole
 * fits KubeRay's RayJob name limit (47: `<rayjob>-<5>-head-svc` must fit 63), without a trailing '-'.
 * One name a tick: a second create of the same tick is AlreadyExists (kuberay #4849).
 */
export function childName(cronJobName: string, scheduledAt: number): string {
  const suffix = `-${Math.floor(scheduledAt / 60_000)}`;
  const base = cronJobName.slice(0, Math.max(0, MAX_RAYJOB_NAME_LENGTH - suffix.length)).replace(/-+$/, '');
  return `${base}${suffix}`;
}

/** The RayJob of one tick, labelled, annotated and owned (controller) as KubeRay's constructRayJob does. */
export function buildChild(cronJob: RayCronJob, scheduledAt: number): RayJob {
  const name = cronJob.metadata.name ?? '';
  const metadata: RayJob['metadata'] = {
    name: childName(name, scheduledAt),
    labels: { [RAYCRONJOB_NAME_LABEL]: name },
    annotations: { [RAYCRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION]: formatTime(scheduledAt) },
    ownerReferences: [
      controllerReference(cronJob.apiVersion ?? RAY_API_VERSION, cronJob.kind ?? 'RayCronJob', { name, uid: cronJob.metadata.uid }),
    ],
  };
  if (cronJob.metadata.namespace !== undefined) metadata.namespace = cronJob.metadata.namespace;
  return { apiVersion: RAY_API_VERSION, kind: 'RayJob', metadata, spec: structuredClone(cronJob.spec?.jobTemplate ?? {}) };
}

/** The children this RayCronJob controls (ownerReference with controller=true and its uid). */
export function ownedChildren(cronJob: RayCronJob, jobs: readonly RayJob[]): RayJob[] {
  const uid = cronJob.metadata.uid;
  return jobs.filter((j) => (j.metadata.ownerReferences ?? []).some((o) => o.controller === true && o.uid === uid));
}

/** When a child was scheduled: its annotation, else its creation time. */
export function scheduledTimeOf(job: RayJob): number {
  return parseTime(job.metadata.annotations?.[RAYCRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION]) ?? parseTime(job.metadata.creationTimestamp) ?? 0;
}

export function concurrencyPolicy(cronJob: RayCronJob): ConcurrencyPolicy {
  const value = cronJob.spec?.concurrencyPolicy;
  return value === 'Forbid' || value === 'Replace' ? value : DEFAULT_CONCURRENCY_POLICY;
}

function limit(value: number | null | undefined, fallback: number): number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : fallback;
}

/** KubeRay's ValidateRayCronJobSpec (schedule, the RayJob template) plus our fields; the Schedule when valid. */
export function validateRayCronJob(cronJob: RayCronJob): { ok: true; schedule: Schedule } | { ok: false; message: string } {
  const spec = cronJob.spec ?? {};
  const name = cronJob.metadata.name ?? '';
  if (name.length > MAX_LABEL_VALUE_LENGTH) {
    return { ok: false, message: `RayCronJob name should be no more than ${MAX_LABEL_VALUE_LENGTH} characters (it labels every RayJob)` };
  }
  const parsed = parseSchedule(spec.schedule ?? '', spec.timeZone);
  if (!parsed.ok) return { ok: false, message: parsed.message };
  const policy = spec.concurrencyPolicy;
  if (policy !== undefined && policy !== null && policy !== 'Allow' && policy !== 'Forbid' && policy !== 'Replace') {
    return { ok: false, message: `concurrencyPolicy must be Allow, Forbid or Replace, got ${JSON.stringify(policy)}` };
  }
  for (const field of ['startingDeadlineSeconds', 'successfulJobsHistoryLimit', 'failedJobsHistoryLimit'] as const) {
    const v = spec[field];
    if (v !== undefined && v !== null && !(typeof v === 'number' && Number.isInteger(v) && v >= 0)) {
      return { ok: false, message: `${field} must be a non-negative integer` };
    }
  }
  if (spec.jobTemplate === undefined || spec.jobTemplate === null) return { ok: false, message: 'jobTemplate is required' };
  // Validated as the RayJob it becomes, with a name like its children's.
  const sample = buildChild(cronJob, 0);
  const problem = validateRayJobMetadata(sample) ?? validateRayJobSpec(sample);
  if (problem !== undefined) return { ok: false, message: `invalid RayJob template: ${problem}` };
  return { ok: true, schedule: parsed.schedule };
}

interface Due {
  /** The tick to run now, if any. */
  tick?: number;
  /** The latest tick passed over because it is older than startingDeadlineSeconds. */
  missed?: number;
}

/** Step 3: CronJob's mostRecentScheduleTime over (earliest, now], clipped by startingDeadlineSeconds. */
/** Where the schedule's series starts: the last run, else the creation (KubeRay's and CronJob's earliest time). */
function anchorOf(cronJob: RayCronJob, now: number): number {
  return parseTime(cronJob.status?.lastScheduleTime) ?? parseTime(cronJob.metadata.creationTimestamp) ?? now;
}

export function dueTick(cronJob: RayCronJob, schedule: Schedule, now: number): Due {
  const latest = schedule.latest(anchorOf(cronJob, now), now);
  if (latest === undefined) return {};
  const deadline = cronJob.spec?.startingDeadlineSeconds;
  if (typeof deadline === 'number' && latest < now - deadline * 1000) return { missed: latest };
  return { tick: latest };
}

/** Step 5: the oldest finished children beyond the limits (CronJob's cleanupFinishedJobs). */
export function overHistoryLimits(cronJob: RayCronJob, children: readonly RayJob[]): RayJob[] {
  const spec = cronJob.spec ?? {};
  const excess = (phase: ChildPhase, keep: number) => {
    const finished = children.filter((c) => childPhase(c) === phase).sort((a, b) => scheduledTimeOf(a) - scheduledTimeOf(b));
    return finished.slice(0, Math.max(0, finished.length - keep));
  };
  return [
    ...excess('succeeded', limit(spec.successfulJobsHistoryLimit, DEFAULT_SUCCESSFUL_JOBS_HISTORY_LIMIT)),
    ...excess('failed', limit(spec.failedJobsHistoryLimit, DEFAULT_FAILED_JOBS_HISTORY_LIMIT)),
  ];
}

function ref(job: RayJob): ChildRef {
  return { name: job.metadata.name ?? '', uid: job.metadata.uid ?? '' };
}

export function decideRayCronJob(cronJob: RayCronJob, jobs: readonly RayJob[], now: number): RayCronJobDecision {
  const status: RayCronJobStatus = structuredClone(cronJob.status ?? {});
  const name = `${cronJob.metadata.namespace ?? 'default'}/${cronJob.metadata.name ?? ''}`;
  // 1.
  if (isDeleting(cronJob)) return { kind: 'nothing', status, events: [], note: 'being deleted' };
  // 2.
  const valid = validateRayCronJob(cronJob);
  if (!valid.ok) {
    const events: EventSpec[] = [{ type: 'Warning', reason: EVENT_INVALID_RAYCRONJOB_SPEC, message: `${name}: ${valid.message}` }];
    return { kind: 'nothing', status, events, note: `invalid spec: ${valid.message}` };
  }
  const schedule = valid.schedule;
  const children = ownedChildren(cronJob, jobs).filter((c) => !isDeleting(c));
  const active = children.filter((c) => childPhase(c) === 'active');
  const suspended = cronJob.spec?.suspend === true;
  const events: EventSpec[] = [];
  // 3.
  const due = dueTick(cronJob, schedule, now);
  if (due.missed !== undefined && !suspended) {
    events.push({
      type: 'Warning',
      reason: EVENT_MISS_SCHEDULE,
      message: `Missed scheduled time to start a RayJob: ${formatTime(due.missed)}`,
    });
  }
  const next = schedule.next(anchorOf(cronJob, now), now);
  const wait = (note: string, changes: Partial<RayCronJobStatus> = {}): RayCronJobDecision =>
    next === undefined
      ? { kind: 'nothing', status: { ...status, ...changes }, events, note }
      : { kind: 'wait', until: next, requeueAfterMs: next - now + TICK_PADDING_MS, status: { ...status, ...changes }, events, note };
  // 4.
  if (due.tick !== undefined && !suspended) {
    const tick = due.tick;
    const child = buildChild(cronJob, tick);
    const lastScheduleTime = formatTime(tick);
    if (children.some((c) => c.metadata.name === child.metadata.name)) {
      return wait(`the RayJob of ${lastScheduleTime} exists; recorded`, { lastScheduleTime });
    }
    const policy = concurrencyPolicy(cronJob);
    if (policy === 'Replace' && active.length > 0) {
      return {
        kind: 'delete',
        children: active.map(ref),
        why: 'Replace',
        status,
        events,
        note: 'Replace: deleting the active children first',
      };
    }
    if (policy !== 'Forbid' || active.length === 0) {
      return {
        kind: 'create',
        rayJob: child,
        scheduledAt: tick,
        requeueAfterMs: (next ?? now) - now + TICK_PADDING_MS,
        status: { ...status, lastScheduleTime },
        events,
        note: `tick ${lastScheduleTime} is due`,
      };
    }
    // Forbid with a child still running: the tick stays due (no lastScheduleTime), history still kept.
    events.push({
      type: 'Normal',
      reason: EVENT_JOB_ALREADY_ACTIVE,
      message: `Not starting a RayJob for ${lastScheduleTime}: ${active.map((c) => c.metadata.name).join(', ')} still running and concurrencyPolicy is Forbid`,
    });
  }
  // 5.
  const excess = overHistoryLimits(cronJob, children);
  if (excess.length > 0)
    return { kind: 'delete', children: excess.map(ref), why: 'history', status, events, note: 'over the history limits' };
  // 6.
  if (suspended) {
    events.push({ type: 'Normal', reason: EVENT_SUSPENDED_RAYCRONJOB, message: 'RayCronJob suspended, no new RayJobs will be created' });
    return { kind: 'nothing', status, events, note: 'suspended' };
  }
  return wait(due.tick !== undefined ? 'Forbid: a child is still active' : 'waiting for the next tick');
}
