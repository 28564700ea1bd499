// How far the GCS-FT cleanup trusts its caches for a DELETING cluster: given the decision ./decide.ts made on
// the cached cluster, pods and Job, which step the reconciler (controller/gcsft-cleanup/reconciler.ts,
// reconcileCached) takes on the caches and which decisions it makes again on fresh reads. Pure: the
// reconciler does the reads and writes.
//
// In order:
//   1. a finished cleanup Job this process did not create, or has deleted since -> fresh: after a rerun,
//      a restart or another replica's work, its cached copy may be of a Job already deleted.
//   2. by action:
//      waitForJob, waitForHeadGone -> wait (writes nothing; the Job and head pod watches wake the cluster)
//      deletePods                  -> deletePods (after closing the cluster's pod creation gate; each delete
//                                     carries the cached pod's UID, so a replaced pod conflicts: fresh)
//      createJob                   -> createJob, when the cache keeps whole specs (the operator runs here:
//                                     the Job is built from the cached spec) and the cluster has a UID; after
//                                     the storage-namespace claim check and closing the gate, the decision
//                                     must stand on the cluster's pods (decisionStands) from the pod cache
//                                     when the gate shows it holds every pod this process created
//                                     (createJobPods), else listed from the API. Otherwise fresh.
//      releaseFinalizer            -> release, after the cleanup Job (job-complete, job-failed); without
//                                     the operator here (another one makes the pods, KubeRay beside us) the
//                                     decision must first stand on pods listed from the API: a head it
//                                     made while the Job ran is seen before the release. Otherwise fresh.
//      forceRelease (the timeout annotation may have changed), deleteStaleJob, rerunCleanup, addFinalizer,
//      nothing                     -> fresh
import { clusterPods, decideRayClusterCleanup, type PodLite, type RayClusterCleanupDecision } from './decide.ts';
import type { RayClusterFtView } from '../types.ts';
import type { BatchJob } from '../../kube/model.ts';

export interface CacheTrustInput {
  /** What ./decide.ts decided on the cached cluster, pods and Job. */
  decision: RayClusterCleanupDecision;
  /** The cached cleanup Job has finished, and this process did not create it or has deleted it since. */
  finishedJobNotCreatedHere: boolean;
  /** The cluster cache keeps whole specs: the pod operator runs in this process and makes the pods. */
  wholeCluster: boolean;
  /** The cached cluster has a UID. */
  hasUid: boolean;
}

type Decision<A extends RayClusterCleanupDecision['action']> = Extract<RayClusterCleanupDecision, { action: A }>;

/** The step, with the decision it carries out. */
export type CachedStep =
  | { step: 'fresh' }
  | { step: 'wait'; decision: Decision<'waitForJob' | 'waitForHeadGone'> }
  | { step: 'deletePods'; decision: Decision<'deletePods'> }
  | { step: 'createJob'; decision: Decision<'createJob'> }
  | { step: 'release'; decision: Decision<'releaseFinalizer'>; confirmOnListedPods: boolean };

const FRESH: CachedStep = { step: 'fresh' };

/** The step the reconciler takes on its caches (the header's table). */
export function cachedStep(input: CacheTrustInput): CachedStep {
  const { decision, wholeCluster } = input;
  if (input.finishedJobNotCreatedHere) return FRESH;
  switch (decision.action) {
    case 'waitForJob':
    case 'waitForHeadGone':
      return { step: 'wait', decision };
    case 'deletePods':
      return { step: 'deletePods', decision };
    case 'createJob':
      return wholeCluster && input.hasUid ? { step: 'createJob', decision } : FRESH;
    case 'releaseFinalizer':
      return decision.reason === 'job-complete' || decision.reason === 'job-failed'
        ? { step: 'release', decision, confirmOnListedPods: !wholeCluster }
        : FRESH;
    case 'forceRelease':
    case 'deleteStaleJob':
    case 'rerunCleanup':
    case 'addFinalizer':
    case 'nothing':
      return FRESH;
  }
}

/** Where the pods a cached createJob must stand on come from, once the cluster's pod creation gate is closed. */
export function createJobPods(gateShowsCreates: boolean): 'cached' | 'listed' {
  return gateShowsCreates ? 'cached' : 'listed';
}

/**
 * Whether `decision` stands on `pods` (the cluster's, cached or listed): none of them belongs to another
 * RayCluster UID (a newer cluster of the same name: the cached copy is old), and the decision made again on
 * them is the same action.
 */
export function decisionStands(input: {
  decision: RayClusterCleanupDecision;
  cluster: RayClusterFtView;
  pods: PodLite[];
  job: BatchJob | undefined;
  now: number;
  gateEnabled: boolean;
}): boolean {
  const { cluster, pods } = input;
  if (clusterPods(pods, cluster.metadata.name ?? '', cluster.metadata.uid).length !== pods.length) return false;
  const again = decideRayClusterCleanup({ cluster, pods, job: input.job, now: input.now, gateEnabled: input.gateEnabled });
  return again.action === input.decision.action;
}
