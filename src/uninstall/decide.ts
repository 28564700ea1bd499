// What `raykeeper uninstall` (controller/uninstall/) does with each RayCluster, as pure decisions:
//   decideUninstall(cluster, releasedUids) -> none | release | finish | readded
//   uninstallExitCode(report)               -> 0 | 1 | 3
// and the words of its Events. The I/O (stopping the webhook and the controller, the passes, the
// controller's own cleanup reconciler for clusters being deleted) is in controller/uninstall/run.ts.
//
// Per RayCluster that carries ray.io/gcs-ft-redis-cleanup-finalizer, in this order:
//   1. being deleted                 -> finish: the controller's cleanup reconciler runs it to the release
//      (the pods go, the cleanup Job runs, or the in-process cleanup, or the cluster's own deletion
//      timeout; each with the controller's Event); at the command's --timeout still not released ->
//      released with Warning FinalizerReleasedForUninstall (deadlineReleaseEvent) naming what may remain;
//   2. live, and released by this run before (same UID) -> readded: something adds the finalizer back
//      (another operator: KubeRay with its cleanup on, or raykeeper's controller still running); not
//      removed twice: the command reports it and exits 3;
//   3. live                          -> release: removed at once, its GCS data stays in Redis (the cluster
//      is running and its data is live: it is never cleaned here), Warning FinalizerReleasedForUninstall
//      (liveReleaseEvent) naming the storage namespace, the Redis and the command to delete it by hand.
// A RayCluster without the finalizer: none.
//
// Per RayJob whose status raykeeper's RayJob reconciler stored as jobDeploymentStatus `New` (it writes the
// state New with the jobId and rayClusterName it chose, before creating anything): `New` becomes "" (the
// JSON patch `test`s it first), the rest of the status is kept. KubeRay's operator knows New only as "" and
// logs "Unknown JobDeploymentStatus" for ever on "New"; raykeeper reads both as New. So whichever operator
// runs next starts the RayJob, with the names raykeeper chose (KubeRay keeps a jobId / rayClusterName it
// finds). Normal Event RayJobStatusNewCleared.
//
// Per RayJob carrying ray.io/rayjob-finalizer (KubeRay's name, which raykeeper's RayJob reconciler adds too)
// that raykeeper's controller wrote (managedFields; another manager's, e.g. KubeRay's operator, is left to
// it): removed, else nothing would ever release it and deleting the RayJob would hang. Warning
// FinalizerReleasedForUninstall saying what deleting the RayJob no longer does (stop its Ray job on a
// selected cluster). Nothing else of a RayJob is touched.
import { GCS_FT_REDIS_CLEANUP_FINALIZER, RAYJOB_FINALIZER } from '../names.ts';
import type { RayCluster, RayJob } from '../types.ts';
import { hasFinalizer, isDeleting, removeFinalizerPatch } from '../../kube/finalizer-patches.ts';
import { describeTarget } from '../gcsft/decide.ts';
import { manualCleanupCommand } from '../gcsft/cleanup-job.ts';
import { usesRedisBackend } from '../gcsft/rules.ts';
import { EVENT_FINALIZER_RELEASED_FOR_UNINSTALL, EVENT_RAYJOB_STATUS_NEW_CLEARED, type EventSpec } from '../event-reasons.ts';
import type { JsonPatchOp } from '../../kube/json-patch.ts';

export type UninstallDecision = { action: 'none' } | { action: 'finish' } | { action: 'readded' } | { action: 'release'; event: EventSpec };

export function decideUninstall(cluster: RayCluster, releasedUids: ReadonlySet<string>): UninstallDecision {
  if (!hasFinalizer(cluster.metadata, GCS_FT_REDIS_CLEANUP_FINALIZER)) return { action: 'none' };
  if (isDeleting(cluster)) return { action: 'finish' };
  if (releasedUids.has(cluster.metadata.uid ?? '')) return { action: 'readded' };
  return { action: 'release', event: liveReleaseEvent(cluster) };
}

/** "storage namespace "x" in Redis at host:port", or that there is none (rocksdb, FT off). */
function whatStays(cluster: RayCluster): string | undefined {
  return usesRedisBackend(cluster) ? describeTarget(cluster) : undefined;
}

/** The Warning on a live cluster whose finalizer the uninstall removed. */
export function liveReleaseEvent(cluster: RayCluster): EventSpec {
  const target = whatStays(cluster);
  return {
    type: 'Warning',
    reason: EVENT_FINALIZER_RELEASED_FOR_UNINSTALL,
    message: target
      ? `raykeeper was uninstalled: removed the finalizer ${GCS_FT_REDIS_CLEANUP_FINALIZER}. Nothing was cleaned: the cluster is live, and its GCS data (${target}) stays, also after this RayCluster is deleted. To delete it by hand once the cluster is gone run: ${manualCleanupCommand(cluster)}`
      : `raykeeper was uninstalled: removed the finalizer ${GCS_FT_REDIS_CLEANUP_FINALIZER}; this cluster keeps no GCS data in Redis, so nothing is left behind.`,
  };
}

/** The Warning on a deleting cluster whose cleanup had not ended when the uninstall's --timeout came. */
export function deadlineReleaseEvent(cluster: RayCluster, timeoutSeconds: number): EventSpec {
  const target = whatStays(cluster) ?? 'its GCS data';
  return {
    type: 'Warning',
    reason: EVENT_FINALIZER_RELEASED_FOR_UNINSTALL,
    message: `raykeeper was uninstalled before the Redis cleanup of this deleting cluster ended (raykeeper uninstall --timeout ${timeoutSeconds} s): removed the finalizer ${GCS_FT_REDIS_CLEANUP_FINALIZER}, so ${target} may remain. To delete it by hand run: ${manualCleanupCommand(cluster)}`,
  };
}

interface ManagedFieldsEntry {
  manager?: string;
  time?: string;
  fieldsV1?: unknown;
}

/**
 * Who last wrote `finalizer` into metadata.finalizers, from managedFields (the set entry `v:"<finalizer>"`),
 * or undefined. (A finalizer that came with a CREATE, the webhook's, is attributed to the creator.)
 */
export function finalizerWriter(managedFields: ManagedFieldsEntry[] | null | undefined, finalizer: string): string | undefined {
  const entry = `v:${JSON.stringify(finalizer)}`;
  const writers = (managedFields ?? []).filter((m) => {
    const finalizers = (m.fieldsV1 as { 'f:metadata'?: { 'f:finalizers'?: Record<string, unknown> } } | undefined)?.['f:metadata']?.[
      'f:finalizers'
    ];
    return finalizers !== undefined && entry in finalizers;
  });
  writers.sort((a, b) => (a.time ?? '').localeCompare(b.time ?? ''));
  return writers.at(-1)?.manager;
}

/** The Normal Event on a live cluster whose finalizer came back after the uninstall removed it. */
export function readdedEvent(writer: string | undefined): EventSpec {
  return {
    type: 'Normal',
    reason: EVENT_FINALIZER_RELEASED_FOR_UNINSTALL,
    message: `After raykeeper removed it, the finalizer ${GCS_FT_REDIS_CLEANUP_FINALIZER} was added back${writer ? ` by ${writer}` : ''} (another operator, e.g. KubeRay's with its Redis cleanup on), which holds it now and removes it when this cluster is deleted: the Warning that the data stays does not apply while it does.`,
  };
}

/** The /status JSON patch that turns raykeeper's `New` into KubeRay's "", or undefined for any other status. */
export function newStatusReset(job: { status?: { jobDeploymentStatus?: unknown } | null | undefined }): JsonPatchOp[] | undefined {
  if (job.status?.jobDeploymentStatus !== 'New') return undefined;
  return [
    { op: 'test', path: '/status/jobDeploymentStatus', value: 'New' },
    { op: 'replace', path: '/status/jobDeploymentStatus', value: '' },
  ];
}

export const NEW_STATUS_CLEARED_EVENT: EventSpec = {
  type: 'Normal',
  reason: EVENT_RAYJOB_STATUS_NEW_CLEARED,
  message:
    'raykeeper was uninstalled: its status jobDeploymentStatus "New" was set to "" (KubeRay\'s operator reads only "" as new; raykeeper reads both), so whichever operator runs next starts this RayJob; jobId and rayClusterName are kept.',
};

/**
 * The JSON patch removing ray.io/rayjob-finalizer and its Warning, when `ourManager` (raykeeper's
 * controller's field manager) wrote it; undefined when absent or another manager's.
 */
export function rayJobFinalizerRelease(job: RayJob, ourManager: string): { patch: JsonPatchOp[]; event: EventSpec } | undefined {
  if (!hasFinalizer(job.metadata, RAYJOB_FINALIZER)) return undefined;
  const writer = finalizerWriter(job.metadata.managedFields as ManagedFieldsEntry[] | undefined, RAYJOB_FINALIZER);
  if (writer !== ourManager) return undefined;
  const patch = removeFinalizerPatch(job.metadata, RAYJOB_FINALIZER);
  if (!patch) return undefined;
  const selected = job.spec?.clusterSelector && Object.keys(job.spec.clusterSelector).length > 0;
  const message = isDeleting(job)
    ? `raykeeper was uninstalled while this RayJob was being deleted: removed the finalizer ${RAYJOB_FINALIZER} without stopping its Ray job${
        selected
          ? ', which keeps running on the RayCluster the RayJob selected (stop it with ray job stop)'
          : '; the RayCluster it made is deleted with it'
      }.`
    : `raykeeper was uninstalled: removed the finalizer ${RAYJOB_FINALIZER}, so deleting this RayJob is not held by it. ${
        selected
          ? 'Deleting it no longer stops its Ray job on the RayCluster it selected (stop it with ray job stop).'
          : 'Deleting it still deletes the RayCluster it made, and its Ray job with it.'
      } KubeRay's operator, if it runs next, adds the finalizer back.`;
  return { patch, event: { type: 'Warning', reason: EVENT_FINALIZER_RELEASED_FOR_UNINSTALL, message } };
}

/** How one cluster ended in this run (the report's rows). */
export type ClusterOutcome =
  /** Deleting: the controller's cleanup released the finalizer (its Event says how: cleaned, failed, skipped, timed out). */
  | 'finished'
  /** Deleting: released at the command's deadline, the cleanup unfinished. */
  | 'released-at-deadline'
  /** Live: released, data kept. */
  | 'released'
  /** Live: the finalizer came back after this run released it. */
  | 'readded'
  /** Still carries the finalizer, though this run tried (an error, the controller still adding it, the deadline). */
  | 'stuck'
  /** --dry-run: what would be done. */
  | 'would-release'
  | 'would-finish';

export interface UninstallReport {
  clusters: Array<{ key: string; outcome: ClusterOutcome; detail: string }>;
  /** RayJobs whose `New` was cleared (or would be, in a dry run), as namespace/name. */
  rayJobsReset: string[];
  /** RayJobs whose ray.io/rayjob-finalizer (raykeeper's) was removed (or would be, in a dry run). */
  rayJobsReleased: string[];
  /** Errors that kept a step from running (stopping the webhook or controller, a list, a release). */
  errors: string[];
}

/**
 * 0: no RayCluster in scope carries the finalizer any more (each one cleaned, or released with an Event
 * saying what stays), or a dry run that could look at everything; 1: something is left stuck or a step
 * failed (the report names them; running the command again is safe); 3: every finalizer this run
 * removed is gone, but some came back (another operator holds them: not stuck by raykeeper), unless
 * `addedBackOk` (--added-back-ok, what Helm's hook passes: then 0).
 */
export function uninstallExitCode(report: UninstallReport, options: { addedBackOk?: boolean } = {}): 0 | 1 | 3 {
  if (report.errors.length > 0 || report.clusters.some((c) => c.outcome === 'stuck')) return 1;
  if (!options.addedBackOk && report.clusters.some((c) => c.outcome === 'readded')) return 3;
  return 0;
}
