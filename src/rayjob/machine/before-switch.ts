// What runs before the switch (decide.ts), in this order, and nothing else does:
//   1. spec.managedBy names a controller we do not stand in for -> left alone (no decision at all);
//   2. the stored state is one this version does not know (a newer KubeRay's) -> left alone;
//   3. deletionTimestamp set (any state) -> decideDeletion: stop the Ray job, release the finalizer;
//   4. the spec is invalid, in a state that is revalidated -> ValidationFailed.
import { RAYJOB_FINALIZER } from '../../names.ts';
import { isManagedExternally } from '../../gcsft/rules.ts';
import type { JobDeploymentStatus, RayJob } from '../../types.ts';
import { REASON_VALIDATION_FAILED, isRayJobTerminal } from '../constants.ts';
import { validateRayJob } from '../validation.ts';
import { stay, type Ctx, type Outcome } from './outcome.ts';
import { currentState, storedState } from './status.ts';
import type { RayJobAction, RayJobLeftAlone } from './vocabulary.ts';

/** Steps 1 and 2: whether this controller moves the RayJob at all. */
export function leftAlone(job: RayJob): RayJobLeftAlone | undefined {
  const stored = storedState(job);
  if (isManagedExternally(job))
    return { kind: 'leftAlone', stored, note: `spec.managedBy is ${JSON.stringify(job.spec?.managedBy)}: another controller's` };
  if (currentState(job) === undefined)
    return { kind: 'leftAlone', stored, note: `unknown jobDeploymentStatus ${JSON.stringify(stored)}; left alone` };
  return undefined;
}

/** Step 3, deletion (as in KubeRay): stop a Ray job that may still run, release the finalizer. */
export function decideDeletion(ctx: Ctx): Outcome {
  const { job, status } = ctx;
  if (!(job.metadata.finalizers ?? []).includes(RAYJOB_FINALIZER)) return stay(ctx, 'being deleted; no finalizer of ours');
  const actions: RayJobAction[] = [];
  const jobId = status.jobId ?? '';
  const cluster = status.rayClusterName ?? '';
  if (!isRayJobTerminal(status.jobStatus) && jobId !== '' && cluster !== '') actions.push({ type: 'stopRayJob', cluster, jobId });
  actions.push({ type: 'removeFinalizer' });
  return stay(ctx, 'being deleted: stop the Ray job, release the finalizer', { actions });
}

/** Whether validation runs again before the switch, per state: finished jobs stay finished. */
const REVALIDATED: Readonly<Record<JobDeploymentStatus, boolean>> = {
  New: true,
  Initializing: true,
  Waiting: true,
  Running: true,
  Suspending: true,
  Suspended: true,
  Retrying: true,
  Complete: false,
  Failed: false,
  ValidationFailed: false,
};

/** Step 4, validation (as in KubeRay): an invalid spec ends in ValidationFailed. */
export function decideValidation(ctx: Ctx): Outcome | undefined {
  if (!REVALIDATED[ctx.from]) return undefined;
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
