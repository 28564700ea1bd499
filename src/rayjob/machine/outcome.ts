// What a state's case works with and returns: the context (the RayJob, its status as read, what was
// observed, the clock, the settings) and an Outcome (the next state, status changes, actions, events),
// with the verbs every case uses: stay, fail (which decides Failed or Retrying), complete, and the
// deadline checks shared by Initializing, Waiting and Running.
import { formatTime, parseTime } from '../../time.ts';
import type { JobDeploymentStatus, RayJob, RayJobStatus } from '../../types.ts';
import { EVENT_RAYJOB_FAILED, type EventSpec } from '../../event-reasons.ts';
import { REASON_DEADLINE_EXCEEDED, REASON_PRE_RUNNING_DEADLINE_EXCEEDED } from '../constants.ts';
import type { DashboardTarget } from '../ids.ts';
import { activeDeadlineMessage, preRunningDeadlineMessage } from './messages.ts';
import type { MachineConfig, Observed, RayJobAction } from './vocabulary.ts';

export interface Ctx {
  job: RayJob;
  status: RayJobStatus;
  observed: Observed;
  now: number;
  config: MachineConfig;
  mode: string;
  from: JobDeploymentStatus;
}

export interface Outcome {
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

export type Extra = Omit<Outcome, 'next' | 'note'>;

export function stay(ctx: Ctx, note: string, extra: Extra = {}): Outcome {
  return { next: ctx.from, note, ...extra };
}

/**
 * The attempt failed: Failed, or Retrying while `failed` is below backoffLimit + 1 (KubeRay's
 * checkBackoffLimitAndUpdateStatusIfNeeded; DeadlineExceeded never retries). Counts the failure,
 * stamps endTime when final, and emits the Warning.
 */
export function fail(ctx: Ctx, reason: string, message: string, note: string, extra: Extra = {}): Outcome {
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
export function complete(ctx: Ctx, note: string, extra: Extra = {}): Outcome {
  const changes: Partial<RayJobStatus> = { ...(extra.changes ?? {}), endTime: formatTime(ctx.now) };
  const jobStatus = changes.jobStatus ?? ctx.status.jobStatus;
  changes.succeeded = (ctx.status.succeeded ?? 0) + (jobStatus === 'SUCCEEDED' ? 1 : 0);
  return { ...extra, next: 'Complete', changes, note };
}

export function activeDeadlinePassed(ctx: Ctx): Outcome | undefined {
  const seconds = ctx.job.spec?.activeDeadlineSeconds;
  const start = parseTime(ctx.status.startTime);
  if (typeof seconds !== 'number' || start === undefined || ctx.now < start + seconds * 1000) return undefined;
  return fail(ctx, REASON_DEADLINE_EXCEEDED, activeDeadlineMessage(ctx.status.startTime, seconds), 'activeDeadlineSeconds passed');
}

export function preRunningDeadlinePassed(ctx: Ctx): Outcome | undefined {
  const seconds = ctx.job.spec?.preRunningDeadlineSeconds;
  const start = parseTime(ctx.status.startTime);
  if (typeof seconds !== 'number' || start === undefined || ctx.now < start + seconds * 1000) return undefined;
  return fail(
    ctx,
    REASON_PRE_RUNNING_DEADLINE_EXCEEDED,
    preRunningDeadlineMessage(ctx.status.startTime, seconds),
    'preRunningDeadlineSeconds passed',
  );
}

/** Earliest deadline still ahead, so a waiting state wakes up for it even if nothing else happens. */
export function requeueFor(ctx: Ctx, deadlines: Array<number | undefined>): number {
  let wait = ctx.config.requeueMs;
  for (const at of deadlines) {
    if (at !== undefined && at > ctx.now) wait = Math.min(wait, at - ctx.now);
  }
  return Math.max(wait, 1);
}

export function deadlineAt(ctx: Ctx, seconds: unknown): number | undefined {
  const start = parseTime(ctx.status.startTime);
  return typeof seconds === 'number' && start !== undefined ? start + seconds * 1000 : undefined;
}

export function target(ctx: Ctx, cluster: string): DashboardTarget {
  return { namespace: ctx.job.metadata.namespace ?? 'default', cluster };
}

export function fullName(ctx: Ctx, name: string): string {
  return `${ctx.job.metadata.namespace ?? 'default'}/${name}`;
}
