// The RayJob reconciler: reads the RayJob and what it owns from the informer caches (level-triggered),
// observes the Ray dashboard when the state needs it, runs the pure state machine
// (src/rayjob/machine/decide.ts), executes its actions, then writes the status ONLY through /status, only
// when it changed, with the resourceVersion it read. Before any side effect that does not carry its
// own guard, a GET must show the RayJob at the resourceVersion decided on. A 409, a failed finalizer
// `test`, or a stored object that moved on while we decided means "re-read (from the API) and decide
// again", so a stale copy (informer cache, squashed events, a second replica) can neither apply a
// transition twice nor skip one; a cached RayJob that one of our own writes replaced is not decided on
// at all (kube/superseded.ts: the watch event of our write queues it again). A cache MISS of a
// dependent is confirmed by a GET (a RayCluster that is not in the cache yet must not fail a running
// job), except the RayJob's own cluster while Initializing on a first pass (and the decisions chained to it,
// below), unless this process created it: absent means create, and a
// create answered AlreadyExists means "re-read from the API and decide again". A miss of the RayJob
// itself is trusted (its add event queues it), so a steady Running RayJob costs no API reads at all.
// That GET is skipped only before creations a repeat cannot duplicate (the cluster, the submitter Job,
// the submission: machine/vocabulary.ts isRepeatableCreate), when the cached copy is the very version this
// process's own last write of the RayJob produced and the RayJob watch is not failing. The cache may
// then miss a write by someone else that its watch has not delivered yet (a GET would see it): the
// creation goes ahead on a copy a moment old, and the next pass, on that write, undoes it (a suspend
// deletes the cluster, stops the job). Deletions, stops and suspends always GET first. That is the
// common path: New -> Initializing written by us, then the cluster created and the job submitted.
// A decision that waits on nothing but its own status write (RayJobStep.decideAgain: New with its names,
// New -> Initializing, HTTPMode's Initializing -> Running) is followed at once, in the same reconcile, by
// the next one, made on the RayJob that write returned: a RayJob is not sent round the work queue three
// times more on its way to a submission. That copy is our own last write, so the rule above holds for it
// as for the cache: the creations a repeat cannot duplicate go ahead on it, and a write someone else made
// after ours (a suspend, a deletion) is undone by the pass its watch event queues. A cluster this process
// created that its cache has not shown yet is not taken as absent: a GET looks. The RayJob's own head
// Service is the exception the other way: read from its cache only (the controller may not GET Services),
// a miss taken as absent, since a create it had not seen answers AlreadyExists and changes nothing.
import type { RayPodView } from '../../src/raycluster/pod-view.ts';
import type { Counter, Gauge } from 'prom-client';
import { RAY_API_VERSION, RAYJOB_FINALIZER } from '../../src/names.ts';
import type { Logger } from '../../kube/logger.ts';
import { sharedCounter, sharedGauge, type Registry } from '../../kube/metrics.ts';
import type { BatchJob, ObjectWithMeta, Pod, Secret, Service } from '../../kube/model.ts';
import type { RayJobSettings } from '../../src/rayjob/config.ts';
import { DELETION_RECORD_ANNOTATION, STATUS_CHECK_FAILING_SINCE_ANNOTATION, SUBMITTER_CONTAINER_NAME } from '../../src/rayjob/constants.ts';
import { submitterJobName } from '../../src/rayjob/ids.ts';
import { finishedCondition } from '../../src/rayjob/builders.ts';
import { decideRayJob } from '../../src/rayjob/machine/decide.ts';
import { initializingNeedsDashboard } from '../../src/rayjob/machine/starting.ts';
import { clusterMissIsAbsent, observationPlan } from '../../src/rayjob/machine/observe.ts';
import { rayJobStatusChanged } from '../../src/rayjob/machine/status.ts';
import {
  isRepeatableCreate,
  isSelfGuarded,
  type Observed,
  type RayJobAction,
  type RayJobStep,
  type SubmitterAttempt,
} from '../../src/rayjob/machine/vocabulary.ts';
import { RAYCLUSTERS, RAYJOBS, type RayCluster, type RayJob } from '../../src/types.ts';
import { NODE_TYPE_HEAD, RAY_CLUSTER_LABEL, RAY_NODE_TYPE_LABEL } from '../../src/names.ts';
import type { EventRecorder } from '../../kube/events.ts';
import type { Informer } from '../../kube/informer.ts';
import {
  isAlreadyExists,
  isConflict,
  isForbidden,
  isNotFound,
  isPatchTestFailed,
  JSON_PATCH,
  MERGE_PATCH,
  type KubeClient,
  type ResourceRef,
} from '../../kube/client.ts';
import type { JsonPatchOp } from '../../kube/json-patch.ts';
import { FinalizerPatcher } from '../../kube/finalizers.ts';
import { FINALIZER_REFUSAL } from '../../src/finalizer.ts';
import type { FinalizerChange } from '../../kube/finalizer-patches.ts';
import { Moved, objectKey, splitKey, type ObjectKey, type Reconciler, type ReconcileResult } from '../../kube/reconciler.ts';
import { DashboardClient, type DashboardAddress } from './dashboard.ts';
import { JOBS, PODS, SECRETS, SERVICES } from '../../kube/resources.ts';
import { rayJobHeadServiceName } from '../../src/rayjob/head-service.ts';
import { AUTH_TOKEN_SECRET_KEY, authSecretName, isTokenAuth, tokenOf } from '../../src/raycluster/auth.ts';
import {
  EVENT_CREATED_RAYCLUSTER,
  EVENT_FAILED_TO_GET_AUTH_SECRET,
  EVENT_CREATED_SUBMITTER,
  EVENT_DELETED_RAYCLUSTER,
  EVENT_DELETED_SUBMITTER,
  EVENT_FAILED_TO_CREATE_RAYCLUSTER,
  EVENT_FAILED_TO_CREATE_SUBMITTER,
  EVENT_FAILED_TO_DELETE_RAYCLUSTER,
  EVENT_FAILED_TO_DELETE_SUBMITTER,
  EVENT_FAILED_TO_STOP_RAY_JOB,
  EVENT_STOPPED_RAY_JOB,
  EVENT_SUBMITTED_RAY_JOB,
  EVENT_FAILED_TO_UPDATE_RAYCLUSTER,
  EVENT_UPDATED_RAYCLUSTER,
  EVENT_CREATED_SERVICE,
  EVENT_FAILED_TO_CREATE_SERVICE,
  EVENT_UPDATED_SERVICE,
  EVENT_FAILED_TO_UPDATE_SERVICE,
} from '../../src/event-reasons.ts';
import { errorMessage } from '../../src/errors.ts';

/** Decisions in one reconcile before giving the key back to the queue's backoff. */
const MAX_PASSES = 4;
/**
 * Decisions made at once on our own write's answer (RayJobStep.decideAgain) in one reconcile. The longest chain:
 * New with its names -> Initializing -> (a selected cluster already ready) Running -> the submission.
 */
const MAX_CHAINED = 3;

/** The informers the reconciler reads from (the ones its module watches). */
export interface RayJobCaches {
  rayJobs: Informer<RayJob>;
  /**
   * Every RayCluster (the operator's cache), or only those a RayJob created (labelled); a cluster not in
   * it (a clusterSelector's, without the operator) is read with a GET.
   */
  clusters: Informer<RayCluster>;
  submitters: Informer<BatchJob>;
  /** Head pods (SidecarMode reads its submitter container's state there); without it, a LIST. */
  headPods?: Informer<RayPodView> | undefined;
  /** The RayJobs' own head Services (`<rayjob>-head-svc`); a miss is a GET. */
  headServices?: Informer<Service> | undefined;
}

export interface RayJobReconcilerDeps {
  kube: KubeClient;
  events: EventRecorder;
  logger: Logger;
  settings: RayJobSettings;
  /** Without caches every read is a GET (tests that drive the reconciler by hand). */
  caches?: RayJobCaches | undefined;
  metrics?: Registry | undefined;
  now?: () => number;
  dashboard?: DashboardClient;
}

/**
 * One decide-and-act pass: done (with the runtime's result, and the RayJob as its status write left it) or
 * "the object moved: re-read".
 */
export type Pass =
  | { kind: 'done'; result: ReconcileResult; decision?: RayJobStep; written?: RayJob | undefined }
  | { kind: 'conflict'; why: string };

/** How one pass reads. */
export interface PassOptions {
  signal?: AbortSignal | undefined;
  /**
   * The pass follows a conflict, so the caches are known to lag the API: a miss of the RayJob's own cluster
   * is confirmed with a GET while Initializing too (clusterMissIsAbsent), and the stored RayJob is read before
   * every action without a guard of its own. A first pass (the default) may trust both (the file's header).
   */
  cachesLag?: boolean;
}

/** Where an action runs: the RayJob as the previous action left it, what the pass observed, its signal and log. */
interface ActionScope {
  current: RayJob;
  observed: Observed;
  signal: AbortSignal | undefined;
  log: Logger;
}

type ActionOf<T extends RayJobAction['type']> = Extract<RayJobAction, { type: T }>;

/** One executor per action type; one that patches the RayJob returns the patched copy, the others nothing. */
type Executors = { [T in RayJobAction['type']]: (action: ActionOf<T>, scope: ActionScope) => Promise<RayJob | void> };

/**
 * A side effect an admin must see (reconciler's `reported`): `run` does it and returns the Normal event's
 * message (undefined: nothing happened worth telling, e.g. already gone, a duplicate submission). A failure
 * is told as the Warning `<failure><separator><error>` and thrown, unless `expected` gives the error another
 * meaning.
 */
interface Reported {
  run: () => Promise<string | undefined>;
  normal: string;
  /** Absent: a failure is thrown without an event. `separator`: ': ' unless KubeRay's text has another. */
  warning?: { reason: string; failure: string; separator?: string };
  /** An error that is no failure: 'done' (nothing left to do), or a Moved (re-read and decide again). */
  expected?: (err: unknown) => 'done' | Moved | undefined;
  /** Best effort: a failure is told, logged with this note and not thrown. */
  bestEffort?: string;
}

export class RayJobReconciler implements Reconciler {
  private readonly kube: KubeClient;
  private readonly events: EventRecorder;
  private readonly log: Logger;
  private readonly settings: RayJobSettings;
  private readonly caches: RayJobCaches | undefined;
  private readonly now: () => number;
  private readonly dashboard: DashboardClient;
  private readonly transitions: Counter<'from' | 'to'>;
  private readonly dashboardCalls: Counter<'operation' | 'outcome'>;
  private readonly finalizers: FinalizerPatcher;
  private readonly unmatched: Gauge<'namespace'>;
  /** Per RayJob key, the last auth-token problem told in an event (once per distinct problem, not every poll). */
  private readonly tokenProblems = new Map<string, string>();
  /** Keys of the finished RayJobs whose kept cluster no deletion rule matches (kuberay #5184). */
  private readonly unmatchedKeys = new Set<string>();
  /** Per RayJob key, the resourceVersion this process's last write of it produced. */
  private readonly lastWritten = new Map<string, string>();
  /** Per RayJob key, the RayCluster this process created for it that the cluster cache has not shown yet. */
  private readonly clustersNotCached = new Map<string, string>();

  constructor(deps: RayJobReconcilerDeps) {
    this.kube = deps.kube;
    this.events = deps.events;
    this.log = deps.logger;
    this.settings = deps.settings;
    this.caches = deps.caches;
    this.now = deps.now ?? Date.now;
    this.dashboard = deps.dashboard ?? new DashboardClient({ timeoutMs: deps.settings.dashboardTimeoutMs });
    this.finalizers = new FinalizerPatcher({
      kube: deps.kube,
      events: deps.events,
      metrics: deps.metrics,
      kind: 'RayJob',
      apiVersion: RAY_API_VERSION,
      refusal: FINALIZER_REFUSAL,
    });
    this.transitions = sharedCounter(deps.metrics, {
      name: 'raykeeper_rayjob_transitions_total',
      help: 'RayJob deployment status transitions written',
      labelNames: ['from', 'to'],
    });
    this.dashboardCalls = sharedCounter(deps.metrics, {
      name: 'raykeeper_rayjob_dashboard_requests_total',
      help: 'Ray dashboard requests by operation and outcome',
      labelNames: ['operation', 'outcome'],
    });
    this.unmatched = sharedGauge(deps.metrics, {
      name: 'raykeeper_rayjob_unmatched_deletion_rules',
      help: 'Finished RayJobs whose RayCluster is kept because none of their deletion rules matches the terminal state',
      labelNames: ['namespace'],
    });
    // Also when the RayJob is in a shard this replica no longer holds (its reconcile never sees it gone).
    deps.caches?.rayJobs.on((type, job) => {
      if (type !== 'delete') return;
      this.kube.forgetVersions({ ...RAYJOBS, namespace: job.metadata.namespace, name: job.metadata.name ?? '' });
      this.forget(objectKey(job));
    });
  }

  /** Drops what this process keeps per RayJob: it is gone. */
  private forget(key: string): void {
    this.lastWritten.delete(key);
    this.clustersNotCached.delete(key);
    this.trackUnmatched(splitKey(key).namespace ?? '', key, false);
    this.tokenProblems.delete(key);
  }

  /** Keeps raykeeper_rayjob_unmatched_deletion_rules: one per finished RayJob in that case, gone with it. */
  private trackUnmatched(namespace: string, key: string, unmatched: boolean): void {
    const had = this.unmatchedKeys.has(key);
    if (had === unmatched) return;
    if (unmatched) this.unmatchedKeys.add(key);
    else this.unmatchedKeys.delete(key);
    const count = [...this.unmatchedKeys].filter((k) => splitKey(k).namespace === namespace).length;
    if (count === 0) this.unmatched.remove({ namespace });
    else this.unmatched.set({ namespace }, count);
  }

  async reconcile(key: ObjectKey, signal?: AbortSignal): Promise<ReconcileResult | void> {
    const { namespace, name } = splitKey(key);
    let why = '';
    let written: RayJob | undefined;
    let chained = 0;
    for (let pass = 0; pass < MAX_PASSES; pass++) {
      signal?.throwIfAborted();
      // The first pass trusts the cache, a miss too (gone, or not seen yet: its add event queues it); after
      // a conflict the cache is known to lag: ask the API. A decision asked for at once (decideAgain) is made
      // on the RayJob our status write returned (our own last write: the header's rule), with the trust of the
      // pass it follows.
      const ref = { ...RAYJOBS, namespace, name };
      const cache = pass === 0 ? this.caches?.rayJobs : undefined;
      const job = written ?? (cache ? (cache.getByName(namespace, name) ?? null) : await this.read<RayJob>(undefined, ref, signal));
      // A write of ours replaced the cached copy: its watch event queues us again (deciding now earns a 409).
      if (!written && cache && job !== null && this.kube.isStale(ref, job.metadata.resourceVersion)) return;
      if (job === null) {
        this.kube.forgetVersions(ref);
        this.forget(key);
        return;
      }
      if (written) this.log.debug({ rayjob: key, chained }, 'deciding again on our own write');
      const outcome = await this.reconcileObject(job, { signal, cachesLag: pass > 0 });
      written = undefined;
      if (outcome.kind === 'done') {
        if (outcome.decision) this.trackUnmatched(namespace ?? '', key, outcome.decision.unmatchedDeletionRules === true);
        if (outcome.decision?.decideAgain && outcome.written && chained < MAX_CHAINED) {
          written = outcome.written;
          chained++;
          pass--; // not a conflict: the passes count re-reads only
          continue;
        }
        return outcome.result;
      }
      why = outcome.why;
      this.log.debug({ rayjob: key, why }, 're-reading the RayJob and deciding again');
    }
    throw new Error(`RayJob ${key} kept changing while being reconciled (${why}); retrying with backoff`);
  }

  /** From the cache when it has the object; a miss (or no cache) is a GET. `null`: it does not exist. */
  private async read<T extends ObjectWithMeta>(
    cache: Informer<T> | undefined,
    ref: ResourceRef<T>,
    signal?: AbortSignal,
  ): Promise<T | null> {
    const cached = cache?.getByName(ref.namespace, ref.name ?? '');
    if (cached !== undefined) return cached;
    return (await this.kube.getOrUndefined(ref, { signal })) ?? null;
  }

  /**
   * Decides on `job` and acts. `job` may be stale (an informer copy, a second replica's view, or just
   * older than the dashboard call that took seconds): before any side effect other than a self-guarded
   * patch (finalizers carry a `test`, the status-check clock a resourceVersion), the stored object must
   * still be this one (same resourceVersion); the status write is guarded by that resourceVersion too.
   */
  async reconcileObject(job: RayJob, options: PassOptions = {}): Promise<Pass> {
    const { signal, cachesLag = false } = options;
    const key = `${job.metadata.namespace ?? ''}/${job.metadata.name ?? ''}`;
    const observed = await this.observe(job, options);
    const now = this.now();
    const decision = decideRayJob(job, observed, now, this.settings.machine);
    if (decision.kind === 'leftAlone') {
      this.log.debug({ rayjob: key, stored: decision.stored }, decision.note);
      return { kind: 'done', result: {} };
    }
    const log = this.log.child({ rayjob: key, from: decision.from, next: decision.next });
    const changed = rayJobStatusChanged(job.status, decision.status);
    try {
      let current: RayJob = job;
      const unguarded = decision.actions.filter((a) => !isSelfGuarded(a));
      const trusted = !cachesLag && unguarded.every(isRepeatableCreate) && this.cacheIsOurLastWrite(key, job);
      if (unguarded.length > 0 && !trusted) {
        const stored = await this.kube.getOrUndefined(this.ref(job), { signal });
        if (stored === undefined) return { kind: 'done', result: {} };
        if (stored.metadata.resourceVersion !== job.metadata.resourceVersion) {
          throw new Moved(`stored resourceVersion ${stored.metadata.resourceVersion} is not the decided ${job.metadata.resourceVersion}`);
        }
      }
      for (const action of decision.actions) {
        current = (await this.execute(action, { current, observed, signal, log })) ?? current;
      }
      let written: RayJob | undefined;
      if (changed && !decision.actions.some((a) => a.type === 'removeFinalizer' || a.type === 'deleteRayJob')) {
        written = await this.writeStatus(current, decision, signal);
        if (written) {
          this.transitions.inc({ from: decision.from, to: decision.next });
          if (decision.from !== decision.next)
            log.info({ reason: decision.status.reason, note: decision.note }, `RayJob ${decision.from} -> ${decision.next}`);
        }
      } else {
        log.debug({ note: decision.note }, 'no status change');
      }
      for (const ev of decision.events) this.events.event(current, ev.type, ev.reason, ev.message);
      const result: ReconcileResult = {};
      if (decision.requeueAfterMs !== undefined) result.requeueAfterMs = decision.requeueAfterMs;
      return { kind: 'done', result, decision, written };
    } catch (err) {
      if (err instanceof Moved) return { kind: 'conflict', why: err.message };
      throw err;
    }
  }

  /** `job` (cached, or our write's answer) is the version our own last write produced, and the RayJob watch is not failing (the file's header). */
  private cacheIsOurLastWrite(key: string, job: RayJob): boolean {
    const rv = job.metadata.resourceVersion;
    return rv !== undefined && this.lastWritten.get(key) === rv && this.caches?.rayJobs.healthy(0) === true;
  }

  /** Remembers the version a write of ours produced (`written` is the API's answer). */
  private wrote<T extends RayJob | undefined>(written: T): T {
    const { namespace, name } = written?.metadata ?? {};
    const rv = written?.metadata.resourceVersion;
    if (name && rv) this.lastWritten.set(`${namespace ?? ''}/${name}`, rv);
    return written;
  }

  private ref(job: RayJob, subresource?: string): ResourceRef<RayJob> {
    const ref: ResourceRef<RayJob> = { ...RAYJOBS, namespace: job.metadata.namespace, name: job.metadata.name ?? '' };
    if (subresource) ref.subresource = subresource;
    return ref;
  }

  private dashboardUrl(job: RayJob, cluster: string): string {
    return this.settings.dashboardUrl({ namespace: job.metadata.namespace ?? 'default', cluster });
  }

  /**
   * The cluster's dashboard, with the token from its auth Secret when it has token auth (KubeRay's
   * GetRayDashboardClientFunc: a GET of the Secret per client; the controller's RBAC grants get on Secrets for it).
   * `known`: the cluster already read.
   */
  private async dashboardAddress(
    job: RayJob,
    clusterName: string,
    signal?: AbortSignal,
    known?: RayCluster | null,
  ): Promise<DashboardAddress> {
    const url = this.dashboardUrl(job, clusterName);
    const namespace = job.metadata.namespace;
    const cluster =
      known !== undefined
        ? known
        : await this.read<RayCluster>(this.caches?.clusters, { ...RAYCLUSTERS, namespace, name: clusterName }, signal);
    if (cluster === null || !isTokenAuth(cluster)) return url;
    const name = authSecretName(cluster);
    let secret: Secret | undefined;
    try {
      secret = await this.kube.getOrUndefined({ ...SECRETS, namespace, name }, { signal });
    } catch (err) {
      if (!isForbidden(err)) throw err;
      const message = `failed to get auth secret ${namespace}/${name}: forbidden; the controller's RBAC must grant get on Secrets in this namespace (manifests/base/rbac-controller.yaml, the chart's controller ClusterRole or Role: docs/reference/controller-rbac.md)`;
      // Told at once: otherwise only the status-check timeout (minutes later) would say why the job stalls.
      const key = objectKey(job);
      if (this.tokenProblems.get(key) !== message) {
        this.tokenProblems.set(key, message);
        this.events.event(
          job,
          'Warning',
          EVENT_FAILED_TO_GET_AUTH_SECRET,
          `The Ray job's status cannot be read from the token-auth cluster's dashboard: ${message}`,
        );
      }
      throw new Error(message);
    }
    const token = tokenOf(secret);
    if (token === undefined)
      throw new Error(
        `failed to get auth secret ${namespace}/${name}: ${secret === undefined ? 'not found' : `no key ${AUTH_TOKEN_SECRET_KEY}`}`,
      );
    return { url, token };
  }

  /** Reads what the state needs: the caches first, a GET for a miss (see the top of this file and PassOptions). */
  async observe(job: RayJob, options: PassOptions = {}): Promise<Observed> {
    const { signal, cachesLag = false } = options;
    const plan = observationPlan(job);
    const namespace = job.metadata.namespace;
    const status = job.status ?? {};
    const clusterName = status.rayClusterName ?? '';
    const observed: Observed = {};
    if (plan.cluster) {
      const ref = { ...RAYCLUSTERS, namespace, name: clusterName };
      const clusters = this.caches?.clusters;
      const key = objectKey(job);
      const cached = clusterName === '' ? undefined : clusters?.getByName(namespace, clusterName);
      if (cached !== undefined) this.clustersNotCached.delete(key);
      // A cluster this process created that its cache has not shown yet is not absent: a GET looks.
      const createdHere = this.clustersNotCached.get(key) === clusterName;
      observed.cluster =
        clusterName === ''
          ? null
          : clusters && !cachesLag && clusterMissIsAbsent(job) && !createdHere
            ? (cached ?? null)
            : (cached ?? (await this.read<RayCluster>(undefined, ref, signal)));
      if (observed.cluster === null) this.clustersNotCached.delete(key);
    }
    if (plan.submitter) {
      const name = submitterJobName(job);
      const submitter = await this.read<BatchJob>(this.caches?.submitters, { ...JOBS, namespace, name }, signal);
      if (submitter !== null && !(submitter.metadata.ownerReferences ?? []).some((o) => o.uid === job.metadata.uid)) {
        const message = `Job ${namespace}/${name} exists but is not owned by RayJob ${namespace}/${job.metadata.name}; rename or delete it`;
        this.events.event(job, 'Warning', EVENT_FAILED_TO_CREATE_SUBMITTER, message);
        throw new Error(message);
      }
      observed.submitter = submitter;
      if (submitter !== null && finishedCondition(submitter)?.type === 'Failed')
        observed.submitterAttempt = await this.submitterAttempt(submitter, signal);
    }
    if (plan.headService && observed.cluster) {
      // A miss of the cache is taken as absent (the controller may not GET Services): a Service the cache has
      // not shown yet answers the create with AlreadyExists, and its watch event brings the RayJob back.
      const name = rayJobHeadServiceName(job);
      const cache = this.caches?.headServices;
      observed.headService = cache
        ? (cache.getByName(namespace, name) ?? null)
        : ((await this.kube.getOrUndefined({ ...SERVICES, namespace, name }, { signal })) ?? null);
    }
    if (plan.headPod) observed.headPod = clusterName === '' ? null : await this.headPod(namespace ?? '', clusterName, signal);
    const jobId = status.jobId ?? '';
    // Initializing asks the dashboard only once the cluster reads ready, before the submitter is made.
    if ((plan.dashboard || initializingNeedsDashboard(job, observed)) && jobId !== '' && clusterName !== '') {
      try {
        const address = await this.dashboardAddress(job, clusterName, signal, observed.cluster);
        observed.dashboard = await this.dashboard.getJob(address, jobId, signal);
      } catch (err) {
        observed.dashboard = { kind: 'error', message: errorMessage(err) };
      }
      this.dashboardCalls.inc({ operation: 'get', outcome: observed.dashboard.kind });
    }
    return observed;
  }

  /**
   * How a failed submitter Job's last attempt ended: the submitter container's terminated state in the
   * newest of its pods (the job controller labels them `controller-uid`). A pod we may not list, or none:
   * nothing more to say (null), never a failed reconcile.
   */
  private async submitterAttempt(submitter: BatchJob, signal?: AbortSignal): Promise<SubmitterAttempt | null> {
    const uid = submitter.metadata.uid ?? '';
    let pods: Pod[];
    try {
      pods = (
        await this.kube.list({ ...PODS, namespace: submitter.metadata.namespace }, { labelSelector: `controller-uid=${uid}`, signal })
      ).items;
    } catch (err) {
      this.log.debug({ err: errorMessage(err), job: submitter.metadata.name }, "could not list the submitter's pods");
      return null;
    }
    let last: { at: string; attempt: SubmitterAttempt } | undefined;
    for (const pod of pods) {
      const statuses = pod.status?.containerStatuses ?? [];
      const container = statuses.find((c) => c.name === SUBMITTER_CONTAINER_NAME) ?? statuses[0];
      const ended = container?.state?.terminated;
      if (!ended) continue;
      const at = ended.finishedAt ?? '';
      if (last !== undefined && at < last.at) continue;
      const attempt: SubmitterAttempt = {};
      if (ended.exitCode !== undefined) attempt.exitCode = ended.exitCode;
      if (ended.reason) attempt.reason = ended.reason;
      if (ended.message) attempt.message = ended.message;
      last = { at, attempt };
    }
    return last?.attempt ?? null;
  }

  /**
   * The cluster's head pod from the pod cache; a miss is confirmed with a LIST by labels (as KubeRay's
   * GetRayClusterHeadPod), so a cache behind the operator's create never fails a running job.
   */
  private async headPod(namespace: string, cluster: string, signal?: AbortSignal): Promise<RayPodView | null> {
    const isHead = (p: Pod) =>
      p.metadata.labels?.[RAY_CLUSTER_LABEL] === cluster && p.metadata.labels?.[RAY_NODE_TYPE_LABEL] === NODE_TYPE_HEAD;
    const cached = this.caches?.headPods?.list(namespace).find(isHead);
    if (cached !== undefined) return cached;
    const selector = `${RAY_CLUSTER_LABEL}=${cluster},${RAY_NODE_TYPE_LABEL}=${NODE_TYPE_HEAD}`;
    const listed = await this.kube.list({ ...PODS, namespace }, { labelSelector: selector, signal });
    return listed.items[0] ?? null;
  }

  /** The status through /status at the decided resourceVersion; the RayJob as written (undefined: it is gone). */
  private async writeStatus(current: RayJob, decision: RayJobStep, signal?: AbortSignal): Promise<RayJob | undefined> {
    const body = {
      apiVersion: current.apiVersion ?? RAY_API_VERSION,
      kind: current.kind ?? 'RayJob',
      metadata: current.metadata,
      spec: current.spec,
      status: decision.status,
    };
    try {
      return this.wrote(await this.kube.replace(this.ref(current, 'status'), body, { signal }));
    } catch (err) {
      if (isConflict(err)) throw new Moved(`status write conflicted (${decision.from} -> ${decision.next})`);
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** A failed `test` (or the RayJob gone) means re-read; a refusal by the API throws (Warning, backoff). */
  private async patchFinalizer(current: RayJob, change: FinalizerChange, signal?: AbortSignal): Promise<RayJob> {
    const r = await this.finalizers.patch(this.ref(current), current, change, RAYJOB_FINALIZER, signal);
    if (r.result === 'patched') return this.wrote(r.object);
    if (r.result === 'unchanged') return current;
    throw new Moved(r.result === 'gone' ? 'the RayJob is gone' : 'finalizers changed since read');
  }

  /** One of our annotations, written at the decided resourceVersion (a conflict: decide again). */
  private async setAnnotation(current: RayJob, key: string, value: string | null, what: string, signal?: AbortSignal): Promise<RayJob> {
    const patch = { metadata: { resourceVersion: current.metadata.resourceVersion, annotations: { [key]: value } } };
    try {
      return this.wrote(
        await this.kube.patch(this.ref(current), patch, MERGE_PATCH, { signal, basedOn: current.metadata.resourceVersion }),
      );
    } catch (err) {
      if (isConflict(err)) throw new Moved(`the RayJob changed before ${what} was written`);
      throw err;
    }
  }

  /** Runs one action through the table below; the RayJob it returns is the one the next action starts from. */
  private execute(action: RayJobAction, scope: ActionScope): Promise<RayJob | void> {
    // The table is keyed by action.type, so the executor found takes this very action's type.
    const executor = this.executors[action.type] as (action: RayJobAction, scope: ActionScope) => Promise<RayJob | void>;
    return executor(action, scope);
  }

  /** Does it, then tells it: a Normal event on success, a Warning on failure (see Reported). */
  private async reported(scope: ActionScope, r: Reported): Promise<void> {
    let told: string | undefined;
    try {
      told = await r.run();
    } catch (err) {
      const meaning = r.expected?.(err);
      if (meaning === 'done') return;
      if (meaning) throw meaning;
      if (r.warning) {
        const { reason, failure, separator = ': ' } = r.warning;
        this.events.event(scope.current, 'Warning', reason, `${failure}${separator}${errorMessage(err)}`);
      }
      if (r.bestEffort === undefined) throw err;
      scope.log.warn({ err: errorMessage(err) }, r.bestEffort);
      return;
    }
    if (told !== undefined) this.events.event(scope.current, 'Normal', r.normal, told);
  }

  /** A dashboard call, counted by operation and outcome (raykeeper_rayjob_dashboard_requests_total). */
  private async counted<T>(operation: 'submit' | 'stop', call: () => Promise<T>, outcome: (result: T) => string): Promise<T> {
    try {
      const result = await call();
      this.dashboardCalls.inc({ operation, outcome: outcome(result) });
      return result;
    } catch (err) {
      this.dashboardCalls.inc({ operation, outcome: 'error' });
      throw err;
    }
  }

  /** What each action does (the machine decides them: src/rayjob/machine/vocabulary.ts RayJobAction). */
  private readonly executors: Executors = {
    addFinalizer: (_, { current, signal }) => this.patchFinalizer(current, 'add', signal),
    removeFinalizer: (_, { current, signal }) => this.patchFinalizer(current, 'remove', signal),
    setStatusCheckClock: ({ since }, { current, signal }) =>
      this.setAnnotation(current, STATUS_CHECK_FAILING_SINCE_ANNOTATION, since, 'the status-check clock', signal),
    recordDeletion: ({ record }, { current, signal }) =>
      this.setAnnotation(current, DELETION_RECORD_ANNOTATION, record, 'the deletion record', signal),

    createCluster: ({ cluster }, scope) => {
      const namespace = scope.current.metadata.namespace;
      const name = `${namespace}/${cluster.metadata.name ?? ''}`;
      return this.reported(scope, {
        run: async () => {
          await this.kube.create({ ...RAYCLUSTERS, namespace }, cluster, { signal: scope.signal });
          if (this.caches && this.caches.clusters.getByName(namespace, cluster.metadata.name ?? '') === undefined)
            this.clustersNotCached.set(objectKey(scope.current), cluster.metadata.name ?? '');
          return `Created RayCluster ${name}`;
        },
        normal: EVENT_CREATED_RAYCLUSTER,
        warning: { reason: EVENT_FAILED_TO_CREATE_RAYCLUSTER, failure: `Failed to create RayCluster ${name}` },
        // Decided on a cache that had not seen it (clusterMissIsAbsent): look again at the API's copies.
        expected: (err) => (isAlreadyExists(err) ? new Moved(`RayCluster ${name} exists though the cache had not seen it`) : undefined),
      });
    },

    deleteCluster: ({ name }, scope) => {
      const namespace = scope.current.metadata.namespace;
      const uid = scope.observed.cluster?.metadata.uid;
      return this.reported(scope, {
        run: async () => {
          const options = uid ? { preconditions: { uid }, signal: scope.signal } : { signal: scope.signal };
          const deleted = await this.kube.delete({ ...RAYCLUSTERS, namespace, name }, options);
          return deleted ? `Deleted cluster ${namespace}/${name}` : undefined; // KubeRay's words
        },
        normal: EVENT_DELETED_RAYCLUSTER,
        warning: { reason: EVENT_FAILED_TO_DELETE_RAYCLUSTER, failure: `Failed to delete RayCluster ${namespace}/${name}` },
        expected: (err) => (isConflict(err) ? new Moved('the RayCluster was replaced since read') : undefined),
      });
    },

    createSubmitter: ({ job }, scope) => {
      const namespace = scope.current.metadata.namespace;
      const name = `${namespace}/${job.metadata.name ?? ''}`;
      return this.reported(scope, {
        run: async () => {
          await this.kube.create({ ...JOBS, namespace }, job, { signal: scope.signal });
          return `Created Kubernetes Job ${name}`;
        },
        normal: EVENT_CREATED_SUBMITTER,
        warning: { reason: EVENT_FAILED_TO_CREATE_SUBMITTER, failure: `Failed to create Kubernetes Job ${name}` },
        expected: (err) => (isAlreadyExists(err) ? 'done' : undefined),
      });
    },

    deleteSubmitter: ({ name }, scope) => {
      const namespace = scope.current.metadata.namespace;
      const uid = scope.observed.submitter?.metadata.uid;
      return this.reported(scope, {
        run: async () => {
          const options = { propagationPolicy: 'Background' as const, signal: scope.signal, ...(uid ? { preconditions: { uid } } : {}) };
          const deleted = await this.kube.delete({ ...JOBS, namespace, name }, options);
          return deleted ? `Deleted submitter K8s Job ${namespace}/${name}` : undefined;
        },
        normal: EVENT_DELETED_SUBMITTER,
        warning: { reason: EVENT_FAILED_TO_DELETE_SUBMITTER, failure: `Failed to delete submitter K8s Job ${namespace}/${name}` },
        expected: (err) => (isConflict(err) ? new Moved('the submitter Job was replaced since read') : undefined),
      });
    },

    // A failed submission is not an event: the next pass asks the dashboard again and submits again.
    submitRayJob: ({ cluster, request }, scope) =>
      this.reported(scope, {
        run: async () => {
          const { duplicate } = await this.counted(
            'submit',
            async () => this.dashboard.submitJob(await this.dashboardAddress(scope.current, cluster, scope.signal), request, scope.signal),
            (r) => (r.duplicate ? 'duplicate' : 'ok'),
          );
          return duplicate ? undefined : `Submitted Ray job ${request.submission_id} to ${this.dashboardUrl(scope.current, cluster)}`;
        },
        normal: EVENT_SUBMITTED_RAY_JOB,
      }),

    // Best effort, like KubeRay: the finalizer goes whether or not the dashboard answers.
    stopRayJob: ({ cluster, jobId }, scope) =>
      this.reported(scope, {
        run: async () => {
          const stopped = await this.counted(
            'stop',
            async () => this.dashboard.stopJob(await this.dashboardAddress(scope.current, cluster, scope.signal), jobId, scope.signal),
            (r) => (r ? 'ok' : 'noop'),
          );
          return stopped ? `Stopped Ray job ${jobId}` : undefined;
        },
        normal: EVENT_STOPPED_RAY_JOB,
        warning: {
          reason: EVENT_FAILED_TO_STOP_RAY_JOB,
          failure: `Could not stop Ray job ${jobId} at ${this.dashboardUrl(scope.current, cluster)}`,
        },
        bestEffort: 'could not stop the Ray job; releasing the finalizer anyway',
      }),

    // KubeRay's suspendWorkerGroups (an Update of the whole cluster); here a JSON patch whose `test` makes it
    // apply only to the cluster as read, so an autoscaler's or a person's write in between is re-read, never
    // overwritten.
    suspendWorkerGroups: ({ name, resourceVersion, groups }, scope) => {
      const namespace = scope.current.metadata.namespace;
      return this.reported(scope, {
        run: async () => {
          const ops: JsonPatchOp[] = [{ op: 'test', path: '/metadata/resourceVersion', value: resourceVersion }];
          for (let i = 0; i < groups; i++) ops.push({ op: 'add', path: `/spec/workerGroupSpecs/${i}/suspend`, value: true });
          await this.kube.patch({ ...RAYCLUSTERS, namespace, name }, ops, JSON_PATCH, { signal: scope.signal, basedOn: resourceVersion });
          return `Set the \`suspend\` field to true for all worker groups in cluster ${namespace}/${name}`;
        },
        normal: EVENT_UPDATED_RAYCLUSTER,
        warning: { reason: EVENT_FAILED_TO_UPDATE_RAYCLUSTER, failure: `Failed to suspend worker groups in cluster ${namespace}/${name}` },
        expected: (err) =>
          isPatchTestFailed(err) || isConflict(err) ? new Moved('the RayCluster changed since read') : isNotFound(err) ? 'done' : undefined,
      });
    },

    // KubeRay's reconcileServices, its events word for word ("Failed to create the service %s/%s, %v").
    createHeadService: ({ service }, scope) => {
      const namespace = scope.current.metadata.namespace;
      const name = `${namespace}/${service.metadata.name ?? ''}`;
      return this.reported(scope, {
        run: async () => {
          await this.kube.create({ ...SERVICES, namespace }, service, { signal: scope.signal });
          return `Created the service ${name}`;
        },
        normal: EVENT_CREATED_SERVICE,
        warning: { reason: EVENT_FAILED_TO_CREATE_SERVICE, failure: `Failed to create the service ${name}`, separator: ', ' },
        // Made already (a cache behind, a second replica): the next pass reads it and moves it if it must.
        expected: (err) => (isAlreadyExists(err) ? 'done' : undefined),
      });
    },

    updateHeadService: ({ service }, scope) => {
      const namespace = scope.current.metadata.namespace;
      const name = `${namespace}/${service.metadata.name ?? ''}`;
      return this.reported(scope, {
        run: async () => {
          await this.kube.replace({ ...SERVICES, namespace, name: service.metadata.name ?? '' }, service, { signal: scope.signal });
          return `Updated the service ${name}`;
        },
        normal: EVENT_UPDATED_SERVICE,
        warning: { reason: EVENT_FAILED_TO_UPDATE_SERVICE, failure: `Failed to update the service ${name}`, separator: ', ' },
        // The body carries the resourceVersion read: a 409 means it changed since; gone means the next pass creates it.
        expected: (err) => (isConflict(err) ? new Moved(`Service ${name} changed since read`) : isNotFound(err) ? 'done' : undefined),
      });
    },

    deleteRayJob: async (_, { current, signal }) => {
      const uid = current.metadata.uid;
      await this.kube.delete(this.ref(current), { signal, ...(uid ? { preconditions: { uid } } : {}) });
    },
  };
}
