// The GCS fault-tolerance cleanup reconciler (GcsFtCleanupReconciler; `--reconcilers raycluster`): reads the
// world, asks src/gcsft/decide.ts what to do, does that one thing, requeues. All decisions are in pure
// modules (what to do: src/gcsft/decide.ts; how far the caches are trusted for it: src/gcsft/cache-trust.ts);
// this file is I/O only.
//
// Reads (fresh reads only where a stale cache could do harm; every other step acts on the caches with
// writes that guard themselves):
// - not deleting: the informer cache (cheap; the finalizer patch's `test` op catches a stale cache,
//   and then the object is re-read from the API and the decision made again; a copy one of this
//   process's writes replaced is skipped, kube/superseded.ts: its watch event queues it again);
// - deleting: first the caches (the cluster; its pods; the cleanup Job), acting on them only where the
//   write itself guards against a stale copy:
//   - a wait (the cleanup Job running, the head pod going): acts on nothing; the Job and head pod
//     watches wake the cluster;
//   - deleting the cluster's pods: after closing the cluster's pod creation gate (ctx.creationGate,
//     kube/creation-gate.ts: the pod operator in this process starts no create after that), only pods
//     this cluster (its UID) owns or nobody does, each with a UID precondition; one the cache missed is
//     found before the Job is created (below);
//   - releasing the finalizer once the cached Job finished (a Job's finished condition never goes back)
//     and no head pod is cached, when this process created that Job and has not deleted it since (after
//     a rerun, a restart or a failover the cached copy may be of a Job already deleted: fresh reads);
//     without our operator in this process (KubeRay makes the pods) the pods are listed from the API
//     first. The removal patch `test`s the cluster's UID and finalizers as cached (a failed test decides
//     again on fresh reads);
//   - creating the cleanup Job, when the cluster cache keeps whole specs (the operator runs in this
//     process): after closing the gate, decided again on pods the cache shows complete, or else on pods
//     listed from the API (a stale "head gone" must never start a cleanup while GCS still writes). The
//     pod cache counts as complete when the gate says this process's operator created pods for the
//     cluster's UID and the informer has shown each one (none failed half-way: it may have been
//     committed). A cluster whose pods another process made (an earlier leader, another replica before a
//     shard moved, after a restart) has its pods listed. What the cache can still miss is a create
//     another process committed in the last moment (a lost leader's request in flight), as a list can
//     miss one committed just after it. Any pod of
//     another RayCluster UID there (this cached copy is of an older cluster of the same name) sends it to
//     fresh reads; the cluster as cached (a copy our own release replaced is skipped, kube/superseded.ts);
//   the Job's name is fixed, so a stale "absent" costs one AlreadyExists, never a second Job;
// - everything else on fresh reads: the cluster from the API, its pods from the API, the Job from the
//   watch cache (one left by an earlier cluster of the same name is recognised by its owner UID and
//   deleted first), re-read from the API when it finished.
// - the timeout release, too (the timeout annotation may have changed since the cache's copy).
// A head pod appearing after the Job was created (an operator acting on a stale cache) is seen at
// release (in the pod cache, or listed when another operator makes the pods), and the Job is deleted to
// clean again.
//
// Job creation refused because the namespace is terminating (kuberay #3388): the controller runs the
// cleanup itself (the same cleanup API the Job's `raykeeper redis-cleanup` calls, fed the same
// environment: controller/redis-cleanup/config.ts cleanupFromEnvironment, with a short Service name in the
// address qualified as the Job's pod in the cluster's namespace resolves it, src/gcsft/inprocess.ts
// asJobInNamespace) when it can resolve every input the Job would have had (plain values; Secrets / ConfigMaps it may read: a 403 means it may not;
// TLS files from Secret / ConfigMap volumes). Success or failure then releases the finalizer like a
// finished Job. When it cannot, it emits RedisCleanupBlocked (naming the storage namespace and the
// command to run by hand) and the timeout releases the finalizer (ForceDeletedStuckCluster).
//
// One live owner per storage namespace (issue 45): before the cleanup Job is created (and so before the
// in-process cleanup), the other clusters claiming the same storage namespace on the same Redis are looked
// up (src/gcsft/claims.ts): in an index of the RayCluster cache, kept from its events; under
// --watch-namespace, where that cache holds one namespace, in a fresh LIST of every namespace's RayClusters
// (403: the cache alone, said in a warning log). A live one makes decide() release without cleaning. Not for a
// namespace that is the cluster's UID by default: no manifest carries it. The namespace the mutating webhook
// pins is a random UUID written into the object, so it is looked up like any other: under --watch-namespace
// that is one LIST of every namespace's RayClusters per deletion.
//
// The reconcile's signal (aborted when this replica stops leading, or on SIGTERM) goes to every API
// request and to the in-process cleanup: an aborted reconcile writes nothing more, not even an Event,
// and never releases the finalizer of a cleanup it did not finish.
import { MODULE } from '../module-names.ts';
import type { Counter, Histogram } from 'prom-client';
import { cachedGauge, sharedCounter, sharedHistogram } from '../../kube/metrics.ts';
import {
  GCS_FT_REDIS_CLEANUP_FINALIZER,
  RAY_API_VERSION,
  RAY_CLUSTER_LABEL,
  RAY_NODE_TYPE_LABEL,
  NODE_TYPE_HEAD,
  NODE_TYPE_REDIS_CLEANUP,
} from '../../src/names.ts';
import { deletionTimeoutProblem, heldFinalizer, redisCleanupEnabled } from '../../src/gcsft/rules.ts';
import { RAYCLUSTERS, type RayCluster, type RayClusterFtView } from '../../src/types.ts';
import type { ApiObject, BatchJob, JobCondition, KubeObject, Pod, PodCondition } from '../../kube/model.ts';
import type { RayPodView } from '../../src/raycluster/pod-view.ts';
import {
  decideRayClusterCleanup,
  clusterPods,
  describeTarget,
  headOnNode,
  FINALIZER_RELEASE_REASONS,
  type FinalizerReleaseReason,
  type PodLite,
  type RayClusterCleanupDecision,
} from '../../src/gcsft/decide.ts';
import { isDeleting } from '../../kube/finalizer-patches.ts';
import { maskInlineSecrets } from '../../src/inline-secrets.ts';
import {
  buildCleanupJob,
  cleanupJobName,
  cleanupCommandBudget,
  cleanupResources,
  cleanupSweep,
  clusterLabelValue,
  jobOutcome,
  manualCleanupCommand,
  type CleanupJobConfig,
} from '../../src/gcsft/cleanup-job.ts';
import type { SweepDecision } from '../../src/redis/sweep.ts';
import { asJobInNamespace, planInProcessCleanup } from '../../src/gcsft/inprocess.ts';
import { cachedStep, createJobPods, decisionStands } from '../../src/gcsft/cache-trust.ts';
import {
  ClaimIndex,
  claimantsAmong,
  claimEntry,
  storageClaim,
  watchClaims,
  type Claimant,
  type ClaimEntry,
} from '../../src/gcsft/claims.ts';
import { listAllClusters } from '../gcsft-orphans/owners.ts';
import { resolveCleanupEnv } from './cleanup-env.ts';
import { slimMetadata, type Informer } from '../../kube/informer.ts';
import { isAlreadyExists, isConflict, isForbidden, isNamespaceTerminating, type KubeClient } from '../../kube/client.ts';
import { FinalizerPatcher } from '../../kube/finalizers.ts';
import { FINALIZER_REFUSAL } from '../../src/finalizer.ts';
import { operatorRayClusterInformer, rayClusterInformer, rayPodInformer } from '../raycluster/informers.ts';
import type { CreationGate } from '../../kube/creation-gate.ts';
export { slimRayCluster } from '../raycluster/informers.ts';
import {
  ownerKeys,
  RetryNoLaterError,
  splitKey,
  type ControllerContext,
  type ControllerRegistration,
  type ObjectKey,
  type ReconcileResult,
} from '../../kube/reconciler.ts';
import { JOBS, PODS, type Projection } from '../../kube/resources.ts';
import {
  EVENT_CREATED_REDIS_CLEANUP_JOB,
  EVENT_FAILED_TO_CREATE_REDIS_CLEANUP_JOB,
  EVENT_INVALID_DELETION_TIMEOUT,
  EVENT_INVALID_REDIS_CLEANUP_RESOURCES,
  EVENT_REDIS_CLEANED_IN_PROCESS,
  EVENT_REDIS_CLEANUP_BLOCKED,
  EVENT_REDIS_CLEANUP_FAILED,
  type EventSpec,
} from '../../src/event-reasons.ts';
import { errorMessage } from '../../src/errors.ts';

export interface GcsFtCleanupConfig {
  /** ENABLE_GCS_FT_REDIS_CLEANUP; default from ctx.env. */
  gateEnabled?: boolean;
  job: CleanupJobConfig;
  /** Run the cleanup in the controller when the namespace is terminating (default true). */
  inProcessCleanup?: boolean;
  /** The in-process cleanup (tests inject; default: cleanupFromEnvironment). */
  runCleanup?: InProcessRunner;
  workers?: number;
}

/** Runs the cleanup with a resolved environment within deadlineMs (stopping when `signal` aborts); resolves to success and one line. */
/** `message` is for a person (an Event); `detail` goes to the structured log. */
export type InProcessRunner = (
  env: Record<string, string>,
  options: { deadlineMs: number; sweep: SweepDecision; commandBudgetMs?: number | undefined; signal?: AbortSignal | undefined },
) => Promise<{ ok: boolean; message: string; detail?: Record<string, unknown> }>;

/** What the cleanup keeps of a Job or a pod: what maps it to its cluster (metadata) and tells its state (conditions). */
export interface SlimDependent<C> extends ApiObject {
  status?: { conditions?: C[] | null };
}
export type SlimJob = SlimDependent<JobCondition>;
export type SlimPod = SlimDependent<PodCondition>;

function slimDependent<C>(obj: ApiObject & { status?: { conditions?: C[] | null } | undefined }): SlimDependent<C> {
  const slim: SlimDependent<C> = { metadata: slimMetadata(obj) };
  const conditions = obj.status?.conditions;
  if (conditions) slim.status = { conditions };
  return slim;
}

/** The cleanup Jobs, and every pod labelled with a cluster when the operator (and its pod cache) does not run here. */
export const SLIM_JOB: Projection<BatchJob, SlimJob> = { id: 'slim', transform: slimDependent };
export const SLIM_POD: Projection<Pod, SlimPod> = { id: 'slim', transform: slimDependent };

/** Decide again on fresh reads (GcsFtCleanupReconciler.reconcileCached; src/gcsft/cache-trust.ts). */
const FRESH = Symbol('fresh');

/** Keys of the clusters a head pod belongs to (owner reference, else the ray.io/cluster label). */
function podKeys(obj: KubeObject): ObjectKey[] {
  const owners = ownerKeys('RayCluster', 'ray.io')(obj);
  if (owners.length > 0) return owners;
  const name = obj.metadata?.labels?.[RAY_CLUSTER_LABEL];
  return name && obj.metadata?.namespace ? [`${obj.metadata.namespace}/${name}`] : [];
}

export const defaultInProcessRunner: InProcessRunner = async (env, options) => {
  const [{ cleanupFromEnvironment }, { summarize, cleanupDetail }, { errorMessage, oneLine }] = await Promise.all([
    import('../redis-cleanup/config.ts'),
    import('../redis-cleanup/cleanup.ts'),
    import('../../src/errors.ts'),
  ]);
  try {
    const result = await cleanupFromEnvironment(env, options);
    return { ok: true, message: oneLine(summarize(result), [env.REDIS_PASSWORD]), detail: cleanupDetail(result) };
  } catch (err) {
    return { ok: false, message: oneLine(errorMessage(err), [env.REDIS_PASSWORD]) };
  }
};

export class GcsFtCleanupReconciler {
  private readonly ctx: ControllerContext;
  private readonly kube: KubeClient;
  private readonly config: Required<Omit<GcsFtCleanupConfig, 'workers'>>;
  /** The clusters as far as GCS fault tolerance goes (the operator's whole ones when it runs here). */
  private readonly clusters: Informer<RayClusterFtView>;
  /**
   * The operator's cache of whole clusters, when the operator runs in this process (the same informer as
   * `clusters`): a cleanup Job can be built from a cached copy, and the operator here makes the pods.
   */
  private readonly wholeClusters: Informer<RayCluster> | undefined;
  private readonly jobs: Informer<SlimJob>;
  /** The clusters' pods (head and workers). */
  private readonly pods: Informer<SlimPod | RayPodView>;
  /**
   * UIDs of the cleanup Jobs this process created and has not deleted since (oldest first): only their
   * cached copies are judged finished without a fresh read.
   */
  private readonly createdJobs = new Set<string>();
  private readonly finalizers: FinalizerPatcher;
  private readonly gate: CreationGate;
  /** The storage namespaces the cached clusters claim (src/gcsft/claims.ts). */
  private readonly claims = new ClaimIndex();
  /** A 403 on the LIST of every namespace's clusters was logged (once). */
  private listAllForbidden = false;
  private readonly metrics: {
    actions: Counter<'action'>;
    releases: Counter<'reason'>;
    releaseSeconds: Histogram<'reason'>;
    inProcess: Counter<'result'>;
  };

  constructor(ctx: ControllerContext, config: GcsFtCleanupConfig) {
    this.ctx = ctx;
    this.kube = ctx.kube;
    this.config = {
      gateEnabled: config.gateEnabled ?? redisCleanupEnabled(ctx.env.ENABLE_GCS_FT_REDIS_CLEANUP),
      job: config.job,
      inProcessCleanup: config.inProcessCleanup ?? true,
      runCleanup: config.runCleanup ?? defaultInProcessRunner,
    };
    this.clusters = rayClusterInformer(ctx);
    this.wholeClusters = operatorRayClusterInformer(ctx);
    this.jobs = ctx.informers.get({ ...JOBS, labelSelector: `${RAY_NODE_TYPE_LABEL}=${NODE_TYPE_REDIS_CLEANUP}` }, SLIM_JOB);
    // The operator's pod cache when it runs here (no second copy), else every pod labelled with a cluster, slim.
    this.pods =
      this.wholeClusters !== undefined
        ? rayPodInformer(ctx.informers)
        : ctx.informers.get({ ...PODS, labelSelector: RAY_CLUSTER_LABEL }, SLIM_POD);
    this.finalizers = new FinalizerPatcher({
      kube: ctx.kube,
      events: ctx.events,
      metrics: ctx.metrics,
      kind: 'RayCluster',
      apiVersion: RAY_API_VERSION,
      refusal: FINALIZER_REFUSAL,
    });
    this.gate = ctx.creationGate;
    watchClaims(this.clusters, this.claims, claimEntry);
    // The gate learns which of this process's pod creates the pod cache shows (Job creation may then trust it).
    if (this.wholeClusters) {
      this.gate.trackCreates();
      this.pods.on((type, pod) => {
        const uid = pod.metadata.uid;
        if (type === 'delete' || !uid) return;
        for (const o of pod.metadata.ownerReferences ?? []) if (o.kind === 'RayCluster' && o.uid) this.gate.observe(o.uid, uid);
      });
    }
    const held = (pick: (h: { heldSeconds: number; timeoutSeconds: number }) => number) => (c: RayClusterFtView) => {
      const h = heldFinalizer(c, ctx.now());
      const { namespace = '', name = '' } = c.metadata;
      return h && { labels: { namespace, name }, value: pick(h) };
    };
    cachedGauge(
      ctx.metrics,
      {
        name: 'raykeeper_gcsft_finalizer_held_seconds',
        help: 'Seconds since deletionTimestamp of each deleting RayCluster the GCS FT finalizer still holds.',
        labelNames: ['namespace', 'name'],
      },
      this.clusters,
      held((h) => h.heldSeconds),
      ctx.isLeader,
    );
    cachedGauge(
      ctx.metrics,
      {
        name: 'raykeeper_gcsft_deletion_timeout_seconds',
        help: 'The deletion timeout (ray.io/gcs-ft-deletion-timeout, default 300 s) of each deleting RayCluster the finalizer holds.',
        labelNames: ['namespace', 'name'],
      },
      this.clusters,
      held((h) => h.timeoutSeconds),
      ctx.isLeader,
    );
    this.metrics = {
      actions: sharedCounter(ctx.metrics, {
        name: 'raykeeper_raycluster_actions_total',
        help: 'RayCluster reconciler actions taken, by action.',
        labelNames: ['action'] as const,
      }),
      releases: sharedCounter(ctx.metrics, {
        name: 'raykeeper_raycluster_finalizer_releases_total',
        help: 'GCS FT finalizers released, by reason.',
        labelNames: ['reason'] as const,
      }),
      releaseSeconds: sharedHistogram(ctx.metrics, {
        name: 'raykeeper_raycluster_deletion_to_release_seconds',
        help: 'Seconds from a GCS-FT RayCluster deletionTimestamp to the release of its finalizer, by reason.',
        labelNames: ['reason'] as const,
        buckets: [1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800],
      }),
      inProcess: sharedCounter(ctx.metrics, {
        name: 'raykeeper_raycluster_inprocess_cleanups_total',
        help: 'Redis cleanups run by the controller itself (namespace terminating), by result.',
        labelNames: ['result'] as const,
      }),
    };
    // Every reason at 0 from the start: a series that first appears at 1 has no increase() in Prometheus, so
    // the first failed cleanup after a controller start would never fire RaykeeperRedisCleanupFailed.
    for (const reason of FINALIZER_RELEASE_REASONS) this.metrics.releases.inc({ reason }, 0);
  }

  registration(workers?: number): ControllerRegistration {
    const reg: ControllerRegistration = {
      name: MODULE.gcsFtCleanup,
      reconciler: { reconcile: (key, signal) => this.reconcile(key, signal) },
      watches: [
        { informer: this.clusters },
        // A cleanup Job matters when it finishes or disappears (not for its start-up updates).
        {
          informer: this.jobs,
          toKeys: ownerKeys('RayCluster', 'ray.io'),
          filter: (type, job: BatchJob) => type === 'delete' || jobOutcome(job) !== undefined,
          resync: false,
        },
        // A head pod matters when it is gone (the cleanup may start).
        {
          informer: this.pods,
          toKeys: podKeys,
          filter: (type, pod: Pod) => type === 'delete' && pod.metadata.labels?.[RAY_NODE_TYPE_LABEL] === NODE_TYPE_HEAD,
          resync: false,
        },
      ],
    };
    if (workers !== undefined) reg.workers = workers;
    return reg;
  }

  private ref(namespace: string | undefined, name: string) {
    return { ...RAYCLUSTERS, namespace, name };
  }

  async reconcile(key: ObjectKey, signal?: AbortSignal): Promise<ReconcileResult | void> {
    const { namespace, name } = splitKey(key);
    const cached = this.clusters.get(key);
    if (!cached) return this.kube.forgetVersions(this.ref(namespace, name)); // gone
    if (!isDeleting(cached)) {
      // A write of this process (the pod operator's status) replaced this copy: its watch event queues us again.
      if (this.kube.isStale(this.ref(namespace, name), cached.metadata.resourceVersion)) return;
      const d = decideRayClusterCleanup({
        cluster: cached,
        pods: [],
        job: undefined,
        now: this.ctx.now(),
        gateEnabled: this.config.gateEnabled,
      });
      if (d.action === 'nothing') return;
      if (d.action === 'addFinalizer') {
        const added = await this.addFinalizer(cached, signal);
        if (added !== 'changed') return added === 'gone' ? undefined : this.reconcileFresh(namespace, name, signal);
        return;
      }
      // The cache does not say deleting but the decision wants more: act on the API's copy.
    } else {
      const done = await this.reconcileCached(cached, namespace, name, signal);
      if (done !== FRESH) return done;
    }
    return this.reconcileFresh(namespace, name, signal);
  }

  /**
   * A deleting cluster decided on the caches, acted on where the write guards itself (the file's header):
   * a wait, deleting the pods, releasing after a finished Job or at the timeout. FRESH: decide again on
   * fresh reads.
   */
  private async reconcileCached(
    cached: RayClusterFtView,
    namespace: string | undefined,
    name: string,
    signal: AbortSignal | undefined,
  ): Promise<ReconcileResult | void | typeof FRESH> {
    // A copy our own finalizer removal replaced: the watch brings the cluster's end (or its newer copy) next.
    if (this.kube.isStale(this.ref(namespace, name), cached.metadata.resourceVersion)) return;
    const uid = cached.metadata.uid;
    const job = this.jobs.getByName(namespace, cleanupJobName(name)) as BatchJob | undefined;
    const now = this.ctx.now();
    const pods = clusterPods(this.pods.list(namespace), name, uid);
    const decision = decideRayClusterCleanup({ cluster: cached, pods, job, now, gateEnabled: this.config.gateEnabled });
    // How far the caches are trusted: src/gcsft/cache-trust.ts.
    const s = cachedStep({
      decision,
      finishedJobNotCreatedHere: job !== undefined && jobOutcome(job) !== undefined && !this.createdJobs.has(job.metadata.uid ?? ''),
      wholeCluster: this.wholeClusters !== undefined,
      hasUid: !!uid,
    });
    const stands = (on: PodLite[], cluster: RayClusterFtView) =>
      decisionStands({ decision, cluster, pods: on, job, now, gateEnabled: this.config.gateEnabled });
    switch (s.step) {
      case 'fresh':
        return FRESH;
      case 'wait':
        this.metrics.actions.inc({ action: s.decision.action });
        return { requeueAfterMs: s.decision.requeueAfterMs };
      case 'deletePods': {
        if (uid) await this.gate.close(uid);
        this.metrics.actions.inc({ action: s.decision.action });
        const uids = new Map(pods.map((p) => [p.metadata.name ?? '', p.metadata.uid]));
        try {
          return await this.deletePods(cached, s.decision, signal, uids);
        } catch (err) {
          if (isConflict(err)) return FRESH; // a pod was replaced since cached (its UID precondition failed)
          throw err;
        }
      }
      case 'createJob': {
        // Built from the operator's whole copy: the same object as `cached` (one informer).
        const whole = this.wholeClusters?.getByName(namespace, name);
        if (whole !== cached || !whole || !uid) return FRESH;
        // Another live cluster holds the namespace: decided (and released) on fresh reads. A deleting one
        // does not hold it (the last of them cleans), so the cached decision stands.
        if ((await this.claimants(whole, signal)).some((c) => !c.deleting)) return FRESH;
        await this.gate.close(uid);
        const on =
          createJobPods(this.gate.cacheShowsCreates(uid)) === 'cached'
            ? this.cachedPodsOf(whole)
            : await this.listPods(namespace, name, signal);
        if (!stands(on, whole)) return FRESH;
        this.metrics.actions.inc({ action: s.decision.action });
        return this.act(whole, s.decision, now, signal);
      }
      case 'release': {
        // Without our operator in this process another one makes the pods (KubeRay beside us): a head it
        // made while the Job ran must be seen before the release, not only once its watch event arrives.
        if (s.confirmOnListedPods && !stands(await this.listPods(namespace, name, signal), cached)) return FRESH;
        const r = await this.removeFinalizer(cached, s.decision.reason, signal);
        if (r === 'conflict') return FRESH;
        this.metrics.actions.inc({ action: s.decision.action });
        if (r === 'patched' && s.decision.event) this.event(cached, s.decision.event);
        return;
      }
    }
  }

  /** The pod cache's pods labelled with the cluster's name (the gate showed it holds every pod this process created). */
  private cachedPodsOf(cluster: RayClusterFtView): PodLite[] {
    const name = cluster.metadata.name ?? '';
    return this.pods.list(cluster.metadata.namespace).filter((p) => p.metadata.labels?.[RAY_CLUSTER_LABEL] === clusterLabelValue(name));
  }

  /** Reconcile from a fresh read of everything (the deletion path). */
  private async reconcileFresh(
    namespace: string | undefined,
    name: string,
    signal: AbortSignal | undefined,
  ): Promise<ReconcileResult | void> {
    const cluster = await this.kube.getOrUndefined(this.ref(namespace, name), { signal });
    if (!cluster) return;
    // Two passes at most: pods that were never scheduled vanish as soon as they are deleted, so
    // the cleanup can start in the same reconcile instead of one requeue later (not when a head pod
    // runs on a node: it goes after its grace period, and its delete event wakes the cluster).
    for (let pass = 0; ; pass++) {
      const now = this.ctx.now();
      let pods: PodLite[] = [];
      let job: BatchJob | undefined;
      if (isDeleting(cluster) && cluster.metadata.finalizers?.includes(GCS_FT_REDIS_CLEANUP_FINALIZER)) {
        const jobName = cleanupJobName(name);
        job = this.jobs.getByName(namespace, jobName) as BatchJob | undefined;
        // A finished Job may release the finalizer, and a rerun deletes one: never decide that on a cached copy.
        if (job && jobOutcome(job) !== undefined) job = await this.kube.getOrUndefined({ ...JOBS, namespace, name: jobName }, { signal });
        const ours = job?.metadata.ownerReferences?.some((o) => o.kind === 'RayCluster' && o.uid === cluster.metadata.uid);
        const finished = job !== undefined && jobOutcome(job) !== undefined;
        // Pods matter until our Job exists (it is created once no head pod is left) and once it has
        // finished (a head that appeared meanwhile means cleaning again), not while it runs.
        if (!ours || finished) {
          // The pod operator in this process starts no create for this cluster after this point, and
          // those under way have ended: the list below sees every pod it made.
          if (cluster.metadata.uid) await this.gate.close(cluster.metadata.uid);
          pods = await this.listPods(namespace, name, signal);
        }
      }
      let d = decideRayClusterCleanup({ cluster, pods, job, now, gateEnabled: this.config.gateEnabled });
      if (d.action === 'createJob') {
        const claimants = await this.claimants(cluster, signal);
        if (claimants.length > 0) d = decideRayClusterCleanup({ cluster, pods, job, now, gateEnabled: this.config.gateEnabled, claimants });
      }
      this.metrics.actions.inc({ action: d.action });
      this.ctx.logger.debug({ cluster: `${namespace}/${name}`, decision: d.action }, 'decided');
      const result = await this.act(cluster, d, now, signal);
      if (d.action !== 'deletePods' || pass >= 1 || headOnNode(pods)) return result;
    }
  }

  /**
   * The other clusters claiming `cluster`'s storage namespace on its Redis (src/gcsft/claims.ts): the cache's
   * index; under --watch-namespace a fresh LIST of every namespace (clusters elsewhere may share the Redis).
   */
  private async claimants(cluster: RayClusterFtView, signal: AbortSignal | undefined): Promise<Claimant[]> {
    const claim = storageClaim(cluster);
    // A UID namespace is in no manifest, so no copy shares it: no lookup (and no LIST) for the default case.
    if (claim === undefined || claim.byDefault) return [];
    const self = `${cluster.metadata.namespace ?? ''}/${cluster.metadata.name ?? ''}`;
    const cached = this.claims.claimants(claim, self);
    if (this.ctx.watchNamespace === undefined) return cached;
    try {
      const entries = (await listAllClusters(this.kube, signal)).map(claimEntry).filter((e): e is ClaimEntry => e !== undefined);
      return claimantsAmong(claim, entries, self);
    } catch (err) {
      signal?.throwIfAborted();
      if (!isForbidden(err)) throw err;
      if (!this.listAllForbidden) {
        this.listAllForbidden = true;
        this.ctx.logger.warn(
          { watchNamespace: this.ctx.watchNamespace },
          'may not list RayClusters in every namespace (403): a storage namespace shared with a cluster in another namespace is not seen before the Redis cleanup',
        );
      }
      return cached;
    }
  }

  /** The pods labelled with cluster `name`, from the API. */
  private async listPods(namespace: string | undefined, name: string, signal: AbortSignal | undefined): Promise<PodLite[]> {
    const selector = `${RAY_CLUSTER_LABEL}=${clusterLabelValue(name)}`;
    return (await this.kube.list({ ...PODS, namespace }, { labelSelector: selector, signal })).items;
  }

  /** `podUids`: the deleted pods' UIDs as cached, sent as preconditions (the fresh path lists them just before). */
  private async act(
    cluster: RayCluster,
    d: RayClusterCleanupDecision,
    now: number,
    signal: AbortSignal | undefined,
    podUids?: Map<string, string | undefined>,
  ): Promise<ReconcileResult | void> {
    const meta = cluster.metadata;
    const namespace = meta.namespace;
    const log = this.ctx.logger.child({ cluster: `${namespace}/${meta.name}` });
    switch (d.action) {
      case 'nothing':
        return;
      case 'addFinalizer': {
        const r = await this.addFinalizer(cluster, signal);
        if (r === 'conflict') throw new Error('finalizers changed while adding ours; retrying');
        return;
      }
      case 'deletePods':
        return this.deletePods(cluster, d, signal, podUids);
      case 'waitForHeadGone':
      case 'waitForJob':
        return { requeueAfterMs: d.requeueAfterMs };
      case 'deleteStaleJob': {
        await this.deleteJob(namespace, d.jobName, d.jobUid, signal);
        log.info({ job: d.jobName }, 'deleted a cleanup Job left by an earlier cluster of the same name');
        return { requeueAfterMs: d.requeueAfterMs };
      }
      case 'rerunCleanup': {
        this.event(cluster, d.event);
        await this.deleteJob(namespace, d.jobName, d.jobUid, signal);
        log.warn({ job: d.jobName }, 'a head pod appeared after the cleanup Job was created: deleted the Job to clean again');
        return { requeueAfterMs: d.requeueAfterMs };
      }
      case 'createJob':
        return this.createJob(cluster, d.deadlineMs, d.requeueAfterMs, now, signal);
      case 'releaseFinalizer':
        if (d.event) this.event(cluster, d.event);
        if (d.reason === 'shared-namespace') log.warn({ reason: d.reason, message: d.event?.message }, 'Redis cleanup skipped');
        await this.release(cluster, d.reason, signal);
        return;
      case 'forceRelease':
        this.event(cluster, d.event);
        await this.release(cluster, 'timeout', signal);
        return;
    }
  }

  /** `podUids`: the pods' UIDs as cached, sent as preconditions (the fresh path lists them just before). */
  private async deletePods(
    cluster: RayClusterFtView,
    d: Extract<RayClusterCleanupDecision, { action: 'deletePods' }>,
    signal: AbortSignal | undefined,
    podUids?: Map<string, string | undefined>,
  ): Promise<ReconcileResult> {
    const namespace = cluster.metadata.namespace;
    for (const pod of d.pods) {
      const uid = podUids?.get(pod);
      await this.kube.delete({ ...PODS, namespace, name: pod }, { preconditions: uid ? { uid } : undefined, signal });
    }
    this.ctx.logger
      .child({ cluster: `${namespace}/${cluster.metadata.name}` })
      .info({ pods: d.pods }, 'deleted the cluster pods before the Redis cleanup');
    return { requeueAfterMs: d.requeueAfterMs };
  }

  /** Deletes a cleanup Job (this UID only; already gone is fine, as for every kube.delete), its pods in the background. */
  private async deleteJob(
    namespace: string | undefined,
    name: string,
    uid: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    if (uid) this.createdJobs.delete(uid);
    await this.kube.delete(
      { ...JOBS, namespace, name },
      { propagationPolicy: 'Background', preconditions: uid ? { uid } : undefined, signal },
    );
  }

  private event(cluster: RayClusterFtView, e: EventSpec): void {
    this.ctx.events.event(cluster, e.type, e.reason, e.message);
  }

  /**
   * 'changed' | 'unchanged' (already there) | 'conflict' (object changed: re-read) | 'gone'.
   * A refusal by the API (validation, admission policy) throws after a Warning: the queue backs off.
   */
  private async addFinalizer(
    cluster: RayClusterFtView,
    signal: AbortSignal | undefined,
  ): Promise<'changed' | 'unchanged' | 'conflict' | 'gone'> {
    const r = await this.finalizers.patch(
      this.ref(cluster.metadata.namespace, cluster.metadata.name ?? ''),
      cluster,
      'add',
      GCS_FT_REDIS_CLEANUP_FINALIZER,
      signal,
    );
    if (r.result !== 'patched') return r.result;
    this.metrics.actions.inc({ action: 'addFinalizer' });
    this.ctx.logger.info({ cluster: `${cluster.metadata.namespace}/${cluster.metadata.name}` }, 'added the GCS FT Redis cleanup finalizer');
    return 'changed';
  }

  /**
   * Removes our finalizer from the FRESH object, guarded by `test`; a conflict is retried within 200 ms
   * (re-read). A refusal by the API throws after a Warning: the queue backs off.
   */
  private async release(cluster: RayClusterFtView, reason: FinalizerReleaseReason, signal: AbortSignal | undefined): Promise<void> {
    if ((await this.removeFinalizer(cluster, reason, signal)) === 'conflict')
      throw new RetryNoLaterError('finalizers changed while removing ours; re-reading', 200);
  }

  /** Removes our finalizer from `cluster` as read (the patch tests its UID and finalizers); a removal is counted and logged. */
  private async removeFinalizer(
    cluster: RayClusterFtView,
    reason: FinalizerReleaseReason,
    signal: AbortSignal | undefined,
  ): Promise<'patched' | 'unchanged' | 'gone' | 'conflict'> {
    const { result } = await this.finalizers.patch(
      this.ref(cluster.metadata.namespace, cluster.metadata.name ?? ''),
      cluster,
      'remove',
      GCS_FT_REDIS_CLEANUP_FINALIZER,
      signal,
    );
    if (result !== 'patched') return result;
    this.metrics.releases.inc({ reason });
    const held = heldFinalizer(cluster, this.ctx.now());
    if (held) this.metrics.releaseSeconds.observe({ reason }, held.heldSeconds);
    this.ctx.logger.info(
      { cluster: `${cluster.metadata.namespace}/${cluster.metadata.name}`, reason },
      'released the GCS FT Redis cleanup finalizer',
    );
    return result;
  }

  private async createJob(
    cluster: RayCluster,
    deadlineMs: number,
    requeueAfterMs: number,
    now: number,
    signal: AbortSignal | undefined,
  ): Promise<ReconcileResult | void> {
    const namespace = cluster.metadata.namespace;
    const job = buildCleanupJob(cluster, this.config.job, deadlineMs, now);
    const sweep = cleanupSweep(cluster, this.config.job);
    const problems = [...cleanupResources(cluster, this.config.job).problems, ...cleanupCommandBudget(cluster, this.config.job).problems];
    for (const p of problems) this.event(cluster, { type: 'Warning', reason: EVENT_INVALID_REDIS_CLEANUP_RESOURCES, message: p });
    const timeoutProblem = deletionTimeoutProblem(cluster);
    if (timeoutProblem) this.event(cluster, { type: 'Warning', reason: EVENT_INVALID_DELETION_TIMEOUT, message: timeoutProblem });
    try {
      const created = await this.kube.create({ ...JOBS, namespace }, job, { signal });
      const uid = created?.metadata?.uid;
      if (uid) {
        // Oldest first: past 10,000 the oldest is judged on a fresh read again (one GET), never wrongly.
        if (this.createdJobs.size >= 10_000) this.createdJobs.delete(this.createdJobs.values().next().value!);
        this.createdJobs.add(uid);
      }
    } catch (err) {
      signal?.throwIfAborted();
      if (isAlreadyExists(err)) return { requeueAfterMs: 200 }; // created by a previous attempt: look at it
      if (isNamespaceTerminating(err)) return this.cleanupInProcess(cluster, deadlineMs, signal);
      // The API's message may quote the Job (its env may carry the cluster's inline REDIS_PASSWORD).
      const reason = maskInlineSecrets(errorMessage(err), [cluster, job]);
      this.event(cluster, {
        type: 'Warning',
        reason: EVENT_FAILED_TO_CREATE_REDIS_CLEANUP_JOB,
        message: `Failed to create Redis cleanup Job ${namespace}/${job.metadata.name}: ${reason}`,
      });
      throw new RetryNoLaterError(`creating Job ${job.metadata.name}: ${reason}`, Math.max(100, deadlineMs - this.ctx.now() + 50), {
        cause: err,
      });
    }
    this.ctx.logger.info(
      { cluster: `${namespace}/${cluster.metadata.name}`, job: job.metadata.name, sweep: sweep.mode, sweepReason: sweep.reason },
      'created the Redis cleanup Job',
    );
    this.event(cluster, {
      type: 'Normal',
      reason: EVENT_CREATED_REDIS_CLEANUP_JOB,
      message: `Created Redis cleanup Job ${namespace}/${job.metadata.name} to delete ${describeTarget(cluster)}`,
    });
    return { requeueAfterMs };
  }

  /** The Job cannot be created (namespace terminating): clean up from here if we can. */
  private async cleanupInProcess(
    cluster: RayCluster,
    deadlineMs: number,
    signal: AbortSignal | undefined,
  ): Promise<ReconcileResult | void> {
    const log = this.ctx.logger.child({ cluster: `${cluster.metadata.namespace}/${cluster.metadata.name}` });
    const untilDeadline = Math.max(100, deadlineMs - this.ctx.now() + 50);
    const blocked = (why: string): ReconcileResult => {
      this.metrics.inProcess.inc({ result: 'blocked' });
      this.event(cluster, {
        type: 'Warning',
        reason: EVENT_REDIS_CLEANUP_BLOCKED,
        message: `Cannot create the Redis cleanup Job: namespace ${cluster.metadata.namespace} is being deleted, and the controller cannot clean up itself (${why}). The finalizer is released at the deletion timeout; ${describeTarget(cluster)} will then remain. To delete it by hand run: ${manualCleanupCommand(cluster)}`,
      });
      return { requeueAfterMs: Math.min(30_000, untilDeadline) };
    };
    if (!this.config.inProcessCleanup) return blocked('in-process cleanup is disabled (--disable-in-process-cleanup)');
    const plan = planInProcessCleanup(cluster);
    if (plan.unresolvable.length > 0) return blocked(`cannot resolve ${plan.unresolvable.join(', ')}`);
    let env: Record<string, string>;
    try {
      // As the Job's pod in the cluster's namespace would resolve the address (not this controller's namespace).
      env = asJobInNamespace(await resolveCleanupEnv(this.kube, cluster, plan, signal), cluster.metadata.namespace ?? '');
    } catch (err) {
      signal?.throwIfAborted();
      return blocked(errorMessage(err));
    }
    const secondsLeft = Math.floor((deadlineMs - this.ctx.now()) / 1000);
    if (secondsLeft < 1) return { requeueAfterMs: untilDeadline };
    const sweep = cleanupSweep(cluster, this.config.job);
    log.warn({ sweep: sweep.mode, sweepReason: sweep.reason }, 'namespace is terminating: running the Redis cleanup in the controller');
    const { ok, message, detail } = await this.config.runCleanup(env, {
      deadlineMs: Math.min(secondsLeft, 240) * 1000,
      sweep,
      commandBudgetMs: cleanupCommandBudget(cluster, this.config.job).ms,
      signal,
    });
    log.info({ ok, ...detail }, 'in-process Redis cleanup ended');
    if (signal?.aborted) {
      // Not leading any more (or shutting down): the next leader runs the cleanup again from the start.
      this.metrics.inProcess.inc({ result: 'aborted' });
      log.warn({ result: message }, 'in-process Redis cleanup aborted: the finalizer stays');
      signal.throwIfAborted();
    }
    if (ok) {
      this.metrics.inProcess.inc({ result: 'succeeded' });
      this.event(cluster, {
        type: 'Normal',
        reason: EVENT_REDIS_CLEANED_IN_PROCESS,
        message:
          `Namespace ${cluster.metadata.namespace} is being deleted, so the controller cleaned up itself: deleted ${describeTarget(cluster)}. ${message}`.trim(),
      });
      await this.releaseFresh(cluster, 'inprocess-complete', signal);
      return;
    }
    this.metrics.inProcess.inc({ result: 'failed' });
    this.event(cluster, {
      type: 'Warning',
      reason: EVENT_REDIS_CLEANUP_FAILED,
      message: `The controller's own Redis cleanup failed (${message}); released the finalizer anyway (best effort), so ${describeTarget(cluster)} may remain. To delete it by hand run: ${manualCleanupCommand(cluster)}`,
    });
    await this.releaseFresh(cluster, 'inprocess-failed', signal);
  }

  /** Re-reads the cluster (the cleanup took time) and releases the finalizer from that copy. */
  private async releaseFresh(cluster: RayCluster, reason: FinalizerReleaseReason, signal: AbortSignal | undefined): Promise<void> {
    const fresh = await this.kube.getOrUndefined(this.ref(cluster.metadata.namespace, cluster.metadata.name ?? ''), { signal });
    if (!fresh || fresh.metadata.uid !== cluster.metadata.uid) return;
    await this.release(fresh, reason, signal);
  }
}

/** Registration for the runtime (see controller/reconcilers.ts). */
export function createGcsFtCleanupController(ctx: ControllerContext, config: GcsFtCleanupConfig): ControllerRegistration {
  return new GcsFtCleanupReconciler(ctx, config).registration(config.workers);
}
