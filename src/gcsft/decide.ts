// The GCS fault-tolerance finalizer of a RayCluster as ONE pure decision:
//   decideRayClusterCleanup({ cluster, pods, job, now, gateEnabled }) -> what to do next.
// The reconciler (controller/raycluster) reads the world, calls this, performs the one action and
// requeues. Each reconcile re-decides from scratch (level-triggered), so a restart between any two
// steps simply decides again from what is there.
//
// Order of the checks when the cluster is being deleted and carries our finalizer:
//   1. feature gate off            -> release (Warning RedisCleanupDisabled: namespace + command)
//   2. no Redis (FT off / rocksdb) -> release (nothing to clean)
//   3. unusable namespace/address  -> release (Warning RedisCleanupSkipped)
//   4. a Job of that name owned by an OLDER cluster of the same name -> delete it, wait
//   5. our Job finished and no head pod exists:
//                        Complete  -> release (Normal RedisCleanupSucceeded)
//                        Failed    -> release (Warning RedisCleanupFailed: reason, namespace, command)
//   6. timeout passed              -> force release (Warning ForceDeletedStuckCluster)
//      (before waiting on pods: KubeRay waits for the head pod first, so a head pod that never goes
//      away, e.g. on a lost node, blocks the deletion for ever; we give up at the timeout instead)
//   7. our Job being deleted (its namespace going, or a deletion with finalizers) -> wait for it to go
//   8. our Job finished but a head pod exists -> delete the Job (Warning RedisCleanupRerun), so the
//      next decisions delete the pods, wait for the head to go and clean again. The Job is created
//      only when no head pod exists, so this head appeared later (an operator acting on a stale
//      cache, e.g. KubeRay's beside us): its GCS may have written after the cleanup.
//   9. head / worker pods not yet deleting -> delete them
//  10. a head pod still exists     -> wait (10 s, as KubeRay): GCS must stop writing before cleanup
//  11. our Job running             -> wait (woken by the Job watch; 10 s safety net)
//  12. no Job, and another LIVE cluster claims the same storage namespace on the same Redis (or may: its
//      address is not known here; ./claims.ts) -> release WITHOUT cleaning (Warning
//      RedisCleanupSkippedSharedNamespace naming it): deleting the namespace would delete its GCS data.
//      Checked last, on the reconciler's freshest view of the other clusters (issue 45).
//  13. no Job                      -> create it
// The reconciler passes the pods from its cache, and lists them from the API before the Job is created
// (check 12 must never see a stale "no head pod").
// Every wait is capped so the next reconcile happens no later than the timeout.
import { deletionTimeoutSeconds, gcsFtFinalizerRule, usesRedisBackend } from './rules.ts';
import {
  ENV_REDIS_ADDRESS,
  GCS_FT_REDIS_CLEANUP_FINALIZER,
  NODE_TYPE_HEAD,
  NODE_TYPE_WORKER,
  RAY_CLUSTER_LABEL,
  RAY_NODE_TYPE_LABEL,
} from '../names.ts';
import type { RayClusterFtView } from '../types.ts';
import type { BatchJob } from '../../kube/model.ts';
import { redactAddress } from '../redis/address.ts';
import { hasFinalizer, isDeleting } from '../../kube/finalizer-patches.ts';
import { describeClaimants, type Claimant } from './claims.ts';
import { cleanupJobName, clusterLabelValue, jobOutcome, manualCleanupCommand } from './cleanup-job.ts';
import { cleanupEnv, describeStorageNamespace, headContainer, storageNamespaceSourceProblem } from './redis-env.ts';
import {
  EVENT_FORCE_DELETED_STUCK_CLUSTER,
  EVENT_REDIS_CLEANUP_DISABLED,
  EVENT_REDIS_CLEANUP_FAILED,
  EVENT_REDIS_CLEANUP_RERUN,
  EVENT_REDIS_CLEANUP_SKIPPED,
  EVENT_REDIS_CLEANUP_SKIPPED_SHARED_NAMESPACE,
  EVENT_REDIS_CLEANUP_SUCCEEDED,
  type EventSpec,
} from '../event-reasons.ts';

export const HEAD_POD_WAIT_MS = 10_000;
/**
 * KubeRay polls a running cleanup Job every 2 s. The controller watches the cleanup Jobs (and head
 * pods), so a change wakes the cluster's reconcile at once; the timed requeue is only a safety net.
 * Polling 500 deleting clusters every 2 s was what limited deletion throughput (bench/controller.ts).
 */
export const JOB_WAIT_MS = 10_000;
export const POD_DELETE_WAIT_MS = 1_000;
export const STALE_JOB_WAIT_MS = 1_000;
/** Never requeue sooner than this (the deadline cap must not spin). */
export const MIN_REQUEUE_MS = 100;

/** The parts of a Pod the decision reads. */
export interface PodLite {
  metadata?:
    | {
        name?: string;
        labels?: Record<string, string> | null;
        deletionTimestamp?: string | null;
        uid?: string;
        ownerReferences?: Array<{ kind?: string; uid?: string }> | null;
      }
    | undefined;
  /** nodeName: a pod never scheduled is gone as soon as it is deleted (no kubelet has to stop it). */
  spec?: { nodeName?: string } | undefined;
}

/** Whether a head pod among `pods` runs on a node: deleting it takes the kubelet's grace period, so there is no use looking again at once. */
export function headOnNode(pods: PodLite[]): boolean {
  return pods.some((p) => nodeType(p) === NODE_TYPE_HEAD && (p.spec?.nodeName ?? '') !== '');
}

/**
 * The pods of cluster `name` (its ray.io/cluster label) that cluster `uid` owns or no RayCluster owns: a
 * cached copy of a cluster since replaced by another of the same name never reaches the new one's pods.
 */
export function clusterPods<P extends PodLite>(pods: P[], name: string, uid: string | undefined): P[] {
  const label = clusterLabelValue(name);
  return pods.filter((p) => {
    if (p.metadata?.labels?.[RAY_CLUSTER_LABEL] !== label) return false;
    const owners = (p.metadata?.ownerReferences ?? []).filter((o) => o.kind === 'RayCluster');
    return owners.length === 0 || owners.some((o) => o.uid === uid);
  });
}

export interface RayClusterCleanupInput {
  cluster: RayClusterFtView;
  /** The cluster's pods (head and workers): cached, or read fresh before the Job is created. Read only while deleting; pass [] otherwise. */
  pods: PodLite[];
  /** The Job named cleanupJobName(cluster), if it exists. */
  job: BatchJob | undefined;
  /** ms since epoch. */
  now: number;
  /** ENABLE_GCS_FT_REDIS_CLEANUP (src/gcsft/rules.ts redisCleanupEnabled). */
  gateEnabled: boolean;
  /**
   * Other clusters claiming this cluster's storage namespace on its Redis (./claims.ts). Read only at check 12:
   * the reconciler gathers them when the decision without them is createJob.
   */
  claimants?: readonly Claimant[] | undefined;
}

/**
 * Every reason a GCS-FT finalizer is released for (the `reason` of raykeeper_raycluster_finalizer_releases_total):
 * the decisions below, the deletion timeout, and the controller's own cleanup in a terminating namespace.
 */
export const FINALIZER_RELEASE_REASONS = [
  'gate-off',
  'no-redis',
  'unusable-config',
  'job-complete',
  'job-failed',
  'timeout',
  'inprocess-complete',
  'inprocess-failed',
  'shared-namespace',
] as const;
export type FinalizerReleaseReason = (typeof FINALIZER_RELEASE_REASONS)[number];
/** The release reasons decide() gives (the others are the reconciler's). */
export type ReleaseReason = Exclude<FinalizerReleaseReason, 'timeout' | 'inprocess-complete' | 'inprocess-failed'>;

export type RayClusterCleanupDecision =
  | { action: 'nothing'; reason: string }
  | { action: 'addFinalizer' }
  | { action: 'deletePods'; pods: string[]; requeueAfterMs: number }
  | { action: 'waitForHeadGone'; requeueAfterMs: number }
  | { action: 'deleteStaleJob'; jobName: string; jobUid: string | undefined; requeueAfterMs: number }
  | { action: 'rerunCleanup'; jobName: string; jobUid: string | undefined; event: EventSpec; requeueAfterMs: number }
  | { action: 'createJob'; jobName: string; deadlineMs: number; requeueAfterMs: number }
  | { action: 'waitForJob'; jobName: string; requeueAfterMs: number }
  | { action: 'releaseFinalizer'; reason: ReleaseReason; event: EventSpec | undefined }
  | { action: 'forceRelease'; event: EventSpec };

/** deletionTimestamp + timeout, in ms epoch (NaN-safe: an unparsable timestamp counts as now). */
export function deletionDeadlineMs(cluster: RayClusterFtView, now: number): number {
  const parsed = Date.parse(cluster.metadata?.deletionTimestamp ?? '');
  const start = Number.isFinite(parsed) ? parsed : now;
  return start + deletionTimeoutSeconds(cluster) * 1000;
}

function capped(ms: number, deadline: number, now: number): number {
  return Math.max(MIN_REQUEUE_MS, Math.min(ms, deadline - now + 50));
}

function ownedBy(job: BatchJob, cluster: RayClusterFtView): boolean {
  const uid = cluster.metadata?.uid;
  return (job.metadata.ownerReferences ?? []).some((o) => o.kind === 'RayCluster' && o.uid === uid);
}

function nodeType(pod: PodLite): string | undefined {
  return pod.metadata?.labels?.[RAY_NODE_TYPE_LABEL] ?? undefined;
}

/** Where the data is, in words, for events: `storage namespace "x" in Redis at host:port`. */
export function describeTarget(cluster: RayClusterFtView): string {
  const addr = cleanupEnv(cluster).find((e) => e.name === ENV_REDIS_ADDRESS);
  const where = addr?.valueFrom === undefined && addr?.value ? ` at ${redactAddress(addr.value)}` : '';
  return `storage namespace ${describeStorageNamespace(cluster)} in Redis${where}`;
}

function byHand(cluster: RayClusterFtView): string {
  return `To delete it by hand run: ${manualCleanupCommand(cluster)}`;
}

/** Why the cleanup cannot work with this cluster's configuration, if it cannot. */
export function unusableConfig(cluster: RayClusterFtView): string | undefined {
  const problem = storageNamespaceSourceProblem(cluster);
  if (problem) return problem;
  const env = cleanupEnv(cluster);
  const hasEnvFrom = Array.isArray(headContainer(cluster)?.envFrom) && (headContainer(cluster)?.envFrom as unknown[]).length > 0;
  if (!env.some((e) => e.name === ENV_REDIS_ADDRESS) && !hasEnvFrom)
    return 'no Redis address (gcsFaultToleranceOptions.redisAddress or head env RAY_REDIS_ADDRESS)';
  return undefined;
}

export function decideRayClusterCleanup(input: RayClusterCleanupInput): RayClusterCleanupDecision {
  const { cluster, pods, job, now, gateEnabled } = input;
  const meta = cluster.metadata ?? {};
  const ours = hasFinalizer(meta, GCS_FT_REDIS_CLEANUP_FINALIZER);

  if (!isDeleting(cluster)) {
    if (ours) return { action: 'nothing', reason: 'finalizer present' };
    if (!gateEnabled) return { action: 'nothing', reason: 'redis cleanup disabled (ENABLE_GCS_FT_REDIS_CLEANUP=false)' };
    const rule = gcsFtFinalizerRule(cluster);
    return rule.wanted ? { action: 'addFinalizer' } : { action: 'nothing', reason: rule.reason };
  }

  if (!ours) return { action: 'nothing', reason: 'deleting without our finalizer' };

  if (!gateEnabled) {
    return {
      action: 'releaseFinalizer',
      reason: 'gate-off',
      event: {
        type: 'Warning',
        reason: EVENT_REDIS_CLEANUP_DISABLED,
        message: `Redis cleanup is disabled in the operator (ENABLE_GCS_FT_REDIS_CLEANUP=false); released the finalizer without cleaning ${describeTarget(cluster)}. ${byHand(cluster)}`,
      },
    };
  }
  if (!usesRedisBackend(cluster)) return { action: 'releaseFinalizer', reason: 'no-redis', event: undefined };
  const unusable = unusableConfig(cluster);
  if (unusable) {
    return {
      action: 'releaseFinalizer',
      reason: 'unusable-config',
      event: { type: 'Warning', reason: EVENT_REDIS_CLEANUP_SKIPPED, message: `Redis cleanup skipped: ${unusable}.` },
    };
  }

  const jobName = cleanupJobName(meta.name ?? '');
  if (job && !ownedBy(job, cluster)) {
    // Left by an earlier RayCluster of the same name (garbage collection has not removed it yet):
    // its result says nothing about THIS cluster's data.
    if (job.metadata.deletionTimestamp) return { action: 'waitForJob', jobName, requeueAfterMs: STALE_JOB_WAIT_MS };
    return { action: 'deleteStaleJob', jobName, jobUid: job.metadata.uid, requeueAfterMs: STALE_JOB_WAIT_MS };
  }

  const rayPods = pods.filter((p) => {
    const t = nodeType(p);
    return t === NODE_TYPE_HEAD || t === NODE_TYPE_WORKER;
  });
  const heads = rayPods.filter((p) => nodeType(p) === NODE_TYPE_HEAD).map((p) => p.metadata?.name ?? '');
  const result = job ? jobOutcome(job) : undefined;

  if (result && heads.length === 0) {
    if (result.outcome === 'complete') {
      return {
        action: 'releaseFinalizer',
        reason: 'job-complete',
        event: {
          type: 'Normal',
          reason: EVENT_REDIS_CLEANUP_SUCCEEDED,
          message: `Redis cleanup Job ${jobName} completed: deleted ${describeTarget(cluster)}.`,
        },
      };
    }
    const why = [result.reason, result.message].filter(Boolean).join(': ');
    return {
      action: 'releaseFinalizer',
      reason: 'job-failed',
      event: {
        type: 'Warning',
        reason: EVENT_REDIS_CLEANUP_FAILED,
        message: `Redis cleanup Job ${jobName} failed (${why}); released the finalizer anyway (best effort), so ${describeTarget(cluster)} may remain. ${byHand(cluster)}`,
      },
    };
  }

  const deadline = deletionDeadlineMs(cluster, now);
  if (now >= deadline) {
    return {
      action: 'forceRelease',
      event: {
        type: 'Warning',
        reason: EVENT_FORCE_DELETED_STUCK_CLUSTER,
        message: `Redis cleanup did not finish within ${deletionTimeoutSeconds(cluster)} s of the deletion request (annotation ray.io/gcs-ft-deletion-timeout); released the finalizer, so ${describeTarget(cluster)} may remain. ${byHand(cluster)}`,
      },
    };
  }

  if (job?.metadata.deletionTimestamp) return { action: 'waitForJob', jobName, requeueAfterMs: capped(STALE_JOB_WAIT_MS, deadline, now) };
  if (job && result) {
    return {
      action: 'rerunCleanup',
      jobName,
      jobUid: job.metadata.uid,
      requeueAfterMs: capped(STALE_JOB_WAIT_MS, deadline, now),
      event: {
        type: 'Warning',
        reason: EVENT_REDIS_CLEANUP_RERUN,
        message: `Head pod ${heads.sort().join(', ')} appeared after Redis cleanup Job ${jobName} was created, so its GCS may have written after the cleanup: deleting the Job, then the pods, and cleaning ${describeTarget(cluster)} again.`,
      },
    };
  }

  const live = rayPods
    .filter((p) => !p.metadata?.deletionTimestamp)
    .map((p) => p.metadata?.name ?? '')
    .filter(Boolean);
  if (live.length > 0) return { action: 'deletePods', pods: live.sort(), requeueAfterMs: capped(POD_DELETE_WAIT_MS, deadline, now) };
  if (heads.length > 0) return { action: 'waitForHeadGone', requeueAfterMs: capped(HEAD_POD_WAIT_MS, deadline, now) };

  if (job) return { action: 'waitForJob', jobName, requeueAfterMs: capped(JOB_WAIT_MS, deadline, now) };
  const holders = (input.claimants ?? []).filter((c) => !c.deleting);
  if (holders.length > 0) {
    return {
      action: 'releaseFinalizer',
      reason: 'shared-namespace',
      event: {
        type: 'Warning',
        reason: EVENT_REDIS_CLEANUP_SKIPPED_SHARED_NAMESPACE,
        message: `Redis cleanup skipped: ${describeTarget(cluster)} is also the storage namespace of ${describeClaimants(holders)}; deleting it would delete that cluster's GCS data. Released the finalizer and kept the data (it is deleted with the last cluster that uses it). Give each RayCluster its own storage namespace.`,
      },
    };
  }
  return { action: 'createJob', jobName, deadlineMs: deadline, requeueAfterMs: capped(JOB_WAIT_MS, deadline, now) };
}
