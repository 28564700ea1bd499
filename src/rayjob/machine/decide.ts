// The RayJob deployment state machine (KubeRay's rayjob_controller.go Reconcile, shaped like spark-operator's
// syncSparkApplication): ONE exhaustive switch over status.jobDeploymentStatus, one small named function a
// state, one file a group of states. Pure: (RayJob, observed world, clock, config) -> RayJobDecision. The
// reconciler (controller/rayjob/) reads what observe.ts asks for, executes the actions, then writes the status.
//
//                 +------------------------ spec.suspend ----------------------+
//                 |                                                            v
//   New ----> Initializing ----------------------> Running ----> Complete    Suspending ----> Suspended
//   ^ ^ ^        |   |   \   cluster ready and       ^  |  |                      ^  cluster and      |
//   | | |        |   |    \  dashboard answering     |  |  +--- spec.suspend ----+  submitter gone    |
//   | | |        |   |     +--> Waiting -------------+  |                                             |
//   | | |        |   |   InteractiveMode   spec.jobId   |  the Ray job FAILED; the submitter failed   |
//   | | |        |   |        |                         |  or gone; the cluster gone; a deadline or   |
//   | | |        |   | a deadline passed                |  timeout passed                             |
//   | | |        |   +--------+-------------------------+                                             |
//   | | |        |            v                                                                       |
//   | | |        |          Failed  (no retry left, or DeadlineExceeded)                              |
//   | | |        |            or                                                                      |
//   | | +--------|--------- Retrying  (failed < backoffLimit + 1): cluster and submitter gone          |
//   | |          | status.rayClusterName emptied                                                      |
//   | +----------+                                                                                    |
//   +------------------------------------------------- spec.suspend = false --------------------------+
//
//   any state but Complete and Failed --- an invalid spec ---> ValidationFailed --- the spec valid again ---> New
//
// New first stores the finalizer and the names (jobId, rayClusterName) WITH the state New, then moves on.
// Complete and Failed are final: their case carries out the deletion rules. Before the switch
// (before-switch.ts): managedBy another controller or an unknown state -> left alone; deletionTimestamp ->
// stop the Ray job, release the finalizer; an invalid spec -> ValidationFailed. Every other transition is
// decided inside the case of the state it leaves, including Failed -> Retrying (outcome.ts fail() decides
// it from backoffLimit) and the counters and endTime that go with Complete and Failed. finish() only merges
// the case's status changes and stamps the next state.
import { isDeleting } from '../../../kube/finalizer-patches.ts';
import type { JobDeploymentStatus, RayJob, RayJobStatus } from '../../types.ts';
import { submissionMode } from '../validation.ts';
import { decideDeletion, decideValidation, leftAlone } from './before-switch.ts';
import { decideFinished, decideValidationFailed } from './finished.ts';
import type { Ctx, Outcome } from './outcome.ts';
import { decideRunning } from './running.ts';
import { decideInitializing, decideNew, decideWaiting } from './starting.ts';
import { clean, currentState } from './status.ts';
import { decideRetrying, decideSuspended, decideSuspending } from './stopping.ts';
import type { MachineConfig, Observed, RayJobDecision, RayJobStep } from './vocabulary.ts';

export function decideRayJob(job: RayJob, observed: Observed, now: number, config: MachineConfig): RayJobDecision {
  const alone = leftAlone(job);
  if (alone) return alone;
  const from = currentState(job) as JobDeploymentStatus; // leftAlone() refused the unknown ones
  const status: RayJobStatus = structuredClone(job.status ?? {});
  const ctx: Ctx = { job, status, observed, now, config, mode: submissionMode(job), from };
  const outcome = isDeleting(job) ? decideDeletion(ctx) : (decideValidation(ctx) ?? decideState(ctx));
  return finish(ctx, outcome);
}

/** The switch: one case a state, each in the file of its group. */
function decideState(ctx: Ctx): Outcome {
  const state = ctx.from;
  switch (state) {
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
  }
  const _: never = state;
  throw new Error(`unhandled jobDeploymentStatus ${String(_)}`);
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
