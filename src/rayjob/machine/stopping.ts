// The states that release what an attempt made: Suspending (spec.suspend) and Retrying (a failed attempt
// with retries left) delete the RayCluster and the submitter Job and wait until both are gone, then reset
// the status (KubeRay resets the same fields) to Suspended or New; Suspended waits for spec.suspend=false.
import { isDeleting } from '../../../kube/finalizer-patches.ts';
import { submitterJobName, usesClusterSelector } from '../ids.ts';
import { stay, type Ctx, type Outcome } from './outcome.ts';
import type { RayJobAction } from './vocabulary.ts';

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

export function decideSuspending(ctx: Ctx): Outcome {
  const { actions, done } = releaseResources(ctx);
  if (!done) return stay(ctx, 'deleting the RayCluster and the submitter', { actions, requeueAfterMs: ctx.config.requeueMs });
  return { next: 'Suspended', remove: RESET_KEYS, note: 'resources released' };
}

export function decideRetrying(ctx: Ctx): Outcome {
  const { actions, done } = releaseResources(ctx);
  if (!done)
    return stay(ctx, 'deleting the RayCluster and the submitter before the retry', { actions, requeueAfterMs: ctx.config.requeueMs });
  return { next: 'New', remove: RESET_KEYS, requeueAfterMs: ctx.config.requeueMs, note: 'resources released; retrying' };
}

export function decideSuspended(ctx: Ctx): Outcome {
  if (ctx.job.spec?.suspend === true) return stay(ctx, 'suspended');
  return { next: 'New', remove: ['jobStatus'], requeueAfterMs: ctx.config.requeueMs, note: 'resumed' };
}
