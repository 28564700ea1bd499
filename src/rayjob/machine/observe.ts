// What the reconciler reads before a decision, per state: only what that state's case looks at, so a
// steady RayJob costs no reads it does not need. Every state says what it observes (no default): a new
// state does not compile until someone chooses.
import { isDeleting } from '../../../kube/finalizer-patches.ts';
import type { RayJob } from '../../types.ts';
import { finishedNeedsCluster } from '../deletion.ts';
import { usesClusterSelector } from '../ids.ts';
import { submissionMode } from '../validation.ts';
import { leftAlone } from './before-switch.ts';
import { currentState } from './status.ts';

export interface ObservationPlan {
  cluster: boolean;
  submitter: boolean;
  headPod: boolean;
  dashboard: boolean;
  /** The RayJob's own head Service (KubeRay reads it in Running, never with a clusterSelector). */
  headService: boolean;
}

const NOTHING: ObservationPlan = { cluster: false, submitter: false, headPod: false, dashboard: false, headService: false };

/** The observations a decision for this RayJob needs (the reconciler reads only these). */
export function observationPlan(job: RayJob): ObservationPlan {
  const state = currentState(job);
  if (state === undefined || leftAlone(job) !== undefined || isDeleting(job)) return { ...NOTHING };
  const mode = submissionMode(job);
  const k8sJob = mode === 'K8sJobMode';
  switch (state) {
    case 'New':
    case 'Waiting':
    case 'Suspended':
    case 'ValidationFailed':
      return { ...NOTHING };
    case 'Initializing':
      return { ...NOTHING, cluster: true, submitter: k8sJob, headPod: mode === 'SidecarMode' };
    case 'Running': {
      const observing = job.spec?.suspend !== true;
      return {
        cluster: true,
        submitter: k8sJob,
        headPod: observing && mode === 'SidecarMode',
        dashboard: observing,
        headService: observing && !usesClusterSelector(job),
      };
    }
    case 'Suspending':
    case 'Retrying':
      return { ...NOTHING, cluster: true, submitter: k8sJob };
    case 'Complete':
    case 'Failed':
      return { ...NOTHING, cluster: finishedNeedsCluster(job) };
  }
  const _: never = state;
  throw new Error(`unhandled jobDeploymentStatus ${String(_)}`);
}

/** Whether a decision for this RayJob looks at its head Service (Running, not suspending, no clusterSelector). */
export function observesHeadService(job: RayJob): boolean {
  return observationPlan(job).headService;
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
