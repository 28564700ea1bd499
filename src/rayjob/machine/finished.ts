// The states a RayJob ends in: Complete and Failed (the deletion rules, legacy onSuccess/onFailure or
// shutdownAfterJobFinishes, one action a pass) and ValidationFailed (left once the spec is valid again).
import { formatTime, parseTime } from '../../time.ts';
import type { DeletionPolicyType } from '../../types.ts';
import { EVENT_DELETION_RULES_UNMATCHED, type EventSpec } from '../../event-reasons.ts';
import {
  deletionRules,
  extendDeletionRecord,
  finishedNeedsCluster,
  formatDeletionRecord,
  planFinished,
  readDeletionRecord,
  sameDeletionRecord,
} from '../deletion.ts';
import { validateRayJob } from '../validation.ts';
import { stay, type Ctx, type Outcome } from './outcome.ts';
import type { RayJobAction } from './vocabulary.ts';

/**
 * Complete / Failed: what the RayJob's deletion mechanism does now (deletion.ts planFinished: deletion
 * rules, legacy onSuccess/onFailure, or shutdownAfterJobFinishes), one action a pass, the rules done
 * recorded in the deletion record (an annotation) after the action.
 */
export function decideFinished(ctx: Ctx): Outcome {
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
      const action = policyAction(ctx, plan.policy);
      // DeleteSelf needs no record: the RayJob goes.
      const actions = plan.policy === 'DeleteSelf' ? [action] : [action, ...recordActions];
      return stay(ctx, plan.note, { actions, ...(plan.more ? { requeueAfterMs: config.requeueMs } : {}) });
    }
  }
  const _: never = plan;
  throw new Error(`unhandled finished plan ${JSON.stringify(_)}`);
}

/** The action that carries out a deletion policy on the RayJob's cluster, or on the RayJob itself. */
function policyAction(ctx: Ctx, policy: Exclude<DeletionPolicyType, 'DeleteNone'>): RayJobAction {
  const name = ctx.status.rayClusterName ?? '';
  switch (policy) {
    case 'DeleteSelf':
      return { type: 'deleteRayJob' };
    case 'DeleteCluster':
      return { type: 'deleteCluster', name };
    case 'DeleteWorkers': {
      const cluster = ctx.observed.cluster;
      return {
        type: 'suspendWorkerGroups',
        name,
        resourceVersion: cluster?.metadata.resourceVersion ?? '',
        groups: (cluster?.spec?.workerGroupSpecs ?? []).length,
      };
    }
  }
  const _: never = policy;
  throw new Error(`unhandled deletion policy ${String(_)}`);
}

/** ValidationFailed: no retry storm; the state is left once the spec is valid again (a new start). */
export function decideValidationFailed(ctx: Ctx): Outcome {
  if (validateRayJob(ctx.job) !== undefined) return stay(ctx, 'spec still invalid');
  return { next: 'New', changes: { reason: '', message: '' }, requeueAfterMs: ctx.config.requeueMs, note: 'spec valid again' };
}
