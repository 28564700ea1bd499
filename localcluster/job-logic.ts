// The job runner's decisions, apart from its I/O: which Jobs to start, the status a real Kubernetes
// 1.35 job controller would write, $(VAR) expansion and env resolution as the kubelet does it, and the
// mapping of a container command to a local program. See job-runner.ts.

import type { Container, JobCondition, JobStatus } from '../kube/model.ts';
import { expand, type LocalPod } from '../kube/env.ts';

export interface RunnerJob {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace: string;
    uid?: string;
    resourceVersion?: string;
    deletionTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [key: string]: unknown;
  };
  spec: {
    suspend?: boolean;
    backoffLimit?: number;
    activeDeadlineSeconds?: number;
    parallelism?: number;
    completions?: number;
    template: {
      metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
      spec: { containers: Container[]; restartPolicy?: string; serviceAccountName?: string; [key: string]: unknown };
    };
    [key: string]: unknown;
  };
  status?: JobStatus;
}

/** Kubernetes timestamps have second precision (RFC 3339, UTC). */
export function k8sTime(date: Date): string {
  return date.toISOString().replace(/\.\d+Z$/, 'Z');
}

export function jobConditionTrue(job: RunnerJob, type: string): boolean {
  return (job.status?.conditions ?? []).some((c) => c.type === type && c.status === 'True');
}

/** Complete or Failed: nothing more happens to this Job. */
export function isFinished(job: RunnerJob): boolean {
  return jobConditionTrue(job, 'Complete') || jobConditionTrue(job, 'Failed');
}

/** Backoff limit as the API server defaults it (6). */
export function backoffLimit(job: RunnerJob): number {
  return job.spec.backoffLimit ?? 6;
}

export type JobRunDecision =
  /** Already Complete or Failed. */
  | { kind: 'finished' }
  /** Being deleted: stop its process, write nothing. */
  | { kind: 'deleting' }
  /** SuccessCriteriaMet / FailureTarget without the final condition (we stopped between the two writes). */
  | { kind: 'finalize'; outcome: JobRunOutcome }
  /** spec.suspend: do not start; `stop` when we run it; `markSuspended` when the condition is missing. */
  | { kind: 'suspended'; markSuspended: boolean }
  /** No startTime: claim it (set startTime through /status) and run it. */
  | { kind: 'start' }
  /** startTime set and we do not run it (e.g. the runner restarted): never rerun; only its deadline can end it. */
  | { kind: 'orphaned'; deadlineAt: number | undefined }
  /** We run it: nothing to do. */
  | { kind: 'running' };

export type JobRunOutcome =
  | { kind: 'succeeded' }
  | { kind: 'failed'; reason: 'BackoffLimitExceeded' | 'DeadlineExceeded' | string; message: string };

export const BACKOFF_LIMIT_EXCEEDED: JobRunOutcome = {
  kind: 'failed',
  reason: 'BackoffLimitExceeded',
  message: 'Job has reached the specified backoff limit',
};
export const DEADLINE_EXCEEDED: JobRunOutcome = {
  kind: 'failed',
  reason: 'DeadlineExceeded',
  message: 'Job was active longer than specified deadline',
};

/** When the Job's activeDeadlineSeconds ends (ms since epoch), if it has one and has started. */
export function deadlineAt(job: RunnerJob): number | undefined {
  const ads = job.spec.activeDeadlineSeconds;
  const start = job.status?.startTime;
  if (ads === undefined || ads === null || !start) return undefined;
  return Date.parse(start) + ads * 1000;
}

/** What to do with a Job we were told about; `runningHere` = this runner has a process for its uid. */
export function decideJobRun(job: RunnerJob, runningHere: boolean): JobRunDecision {
  if (job.metadata.deletionTimestamp) return { kind: 'deleting' };
  if (isFinished(job)) return { kind: 'finished' };
  if (job.spec.suspend) return { kind: 'suspended', markSuspended: !jobConditionTrue(job, 'Suspended') };
  // Ours and running: our own interim write is on its way to the final one.
  if (runningHere) return { kind: 'running' };
  const interimFailure = (job.status?.conditions ?? []).find((c) => c.type === 'FailureTarget' && c.status === 'True');
  if (interimFailure)
    return { kind: 'finalize', outcome: { kind: 'failed', reason: interimFailure.reason ?? '', message: interimFailure.message ?? '' } };
  if (jobConditionTrue(job, 'SuccessCriteriaMet')) return { kind: 'finalize', outcome: { kind: 'succeeded' } };
  if (!job.status?.startTime) return { kind: 'start' };
  return { kind: 'orphaned', deadlineAt: deadlineAt(job) };
}

function withCondition(conditions: JobCondition[], next: JobCondition): JobCondition[] {
  return [...conditions.filter((c) => c.type !== next.type), next];
}

/** The job controller's pod failure backoff: 10 s before the attempt after the first failure, doubled each time, at most 6 min. */
export const POD_FAILURE_BACKOFF_MS = 10_000;
export const MAX_POD_FAILURE_BACKOFF_MS = 360_000;

/** The pause before the next attempt after `failed` failed ones (`baseMs` after the first), as the job controller waits. */
export function retryDelay(failed: number, baseMs = POD_FAILURE_BACKOFF_MS, maxMs = MAX_POD_FAILURE_BACKOFF_MS): number {
  return Math.min(baseMs * 2 ** Math.max(failed - 1, 0), maxMs);
}

/** The status patch that claims a Job: what the job controller writes when it creates the pod. */
export function startStatus(job: RunnerJob, now: Date): Record<string, unknown> {
  const status: Record<string, unknown> = { startTime: k8sTime(now), active: 1, ready: 0 };
  if (jobConditionTrue(job, 'Suspended')) {
    status.conditions = withCondition(job.status?.conditions ?? [], {
      type: 'Suspended',
      status: 'False',
      reason: 'JobResumed',
      message: 'Job resumed',
      lastProbeTime: k8sTime(now),
      lastTransitionTime: k8sTime(now),
    });
  }
  return status;
}

/** The status after a failed attempt that will be retried (backoffLimit not reached). */
export function retryStatus(failed: number): Record<string, unknown> {
  return { failed, active: 1, ready: 0 };
}

/** What the job controller writes when a Job is suspended: no active pod, no startTime, Suspended=True. */
export function suspendedStatus(job: RunnerJob, now: Date): Record<string, unknown> {
  return {
    startTime: null,
    active: 0,
    ready: 0,
    conditions: withCondition(job.status?.conditions ?? [], {
      type: 'Suspended',
      status: 'True',
      reason: 'JobSuspended',
      message: 'Job suspended',
      lastProbeTime: k8sTime(now),
      lastTransitionTime: k8sTime(now),
    }),
  };
}

/**
 * The two status writes that end a Job, as the 1.35 job controller makes them: first the interim
 * condition (SuccessCriteriaMet, or FailureTarget) with no active pod, then the final one (Complete with
 * completionTime, or Failed) with the same reason and message. `failed`/`succeeded` are the totals.
 */
export function finishStatuses(
  job: RunnerJob,
  outcome: JobRunOutcome,
  counts: { succeeded: number; failed: number },
  now: Date,
): [Record<string, unknown>, Record<string, unknown>] {
  const t = k8sTime(now);
  const base = job.status?.conditions ?? [];
  const reason = outcome.kind === 'succeeded' ? 'CompletionsReached' : outcome.reason;
  const message = outcome.kind === 'succeeded' ? 'Reached expected number of succeeded pods' : outcome.message;
  const interimType = outcome.kind === 'succeeded' ? 'SuccessCriteriaMet' : 'FailureTarget';
  const finalType = outcome.kind === 'succeeded' ? 'Complete' : 'Failed';
  const existingInterim = base.find((c) => c.type === interimType && c.status === 'True');
  const interim = existingInterim ?? { type: interimType, status: 'True', reason, message, lastProbeTime: t, lastTransitionTime: t };
  const interimConditions = withCondition(base, interim);
  const first: Record<string, unknown> = {
    active: 0,
    ready: 0,
    succeeded: counts.succeeded,
    failed: counts.failed,
    conditions: interimConditions,
  };
  const finalConditions = withCondition(interimConditions, {
    type: finalType,
    status: 'True',
    reason: interim.reason ?? reason,
    message: interim.message ?? message,
    lastProbeTime: t,
    lastTransitionTime: t,
  });
  const second: Record<string, unknown> = { ...first, conditions: finalConditions };
  if (outcome.kind === 'succeeded') second.completionTime = t;
  return [first, second];
}

export function localPod(job: RunnerJob, suffix: string, uid: string): LocalPod {
  const jobUid = job.metadata.uid ?? '';
  return {
    name: `${job.metadata.name}-${suffix}`.slice(0, 63),
    namespace: job.metadata.namespace,
    uid,
    labels: {
      ...(job.spec.template.metadata?.labels ?? {}),
      'batch.kubernetes.io/job-name': job.metadata.name,
      'job-name': job.metadata.name,
      ...(jobUid ? { 'batch.kubernetes.io/controller-uid': jobUid, 'controller-uid': jobUid } : {}),
    },
    annotations: { ...(job.spec.template.metadata?.annotations ?? {}) },
    serviceAccountName: (job.spec.template.spec.serviceAccountName as string | undefined) ?? 'default',
  };
}

/** Maps a container command's first word to a local program: exact match first, then the basename. */
export type CommandTable = Record<string, string[]>;

export function localCommand(container: Container, table: CommandTable, env: Record<string, string>): { file: string; args: string[] } {
  const words = [...(container.command ?? []), ...(container.args ?? [])].map((w) => expand(w, (n) => env[n]));
  if (!container.command || container.command.length === 0) {
    throw new Error(`container ${container.name} has no command: the job runner cannot run an image's entrypoint`);
  }
  const [first, ...rest] = words as [string, ...string[]];
  const base = first.split('/').pop() ?? first;
  const mapped = table[first] ?? table[base];
  if (mapped && mapped.length > 0) return { file: mapped[0]!, args: [...mapped.slice(1), ...rest] };
  return { file: first, args: rest };
}
