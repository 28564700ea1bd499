// The RayCluster operator: head and worker Pods, the head Service (and the headless worker Service of
// multi-host groups) and the status, for clusters without KubeRay. I/O only: reads the caches, asks
// src/raycluster/desired.ts what to do, applies it, computes the status with src/raycluster/status.ts
// and writes it through /status only when it changed.
//
// - A stale cache never creates a second head pod: pods get KubeRay's generated names
//   (src/raycluster/names.ts), and every create / delete is recorded as an expectation under the name the
//   API server gave; a group whose writes the cache does not show yet is left alone until it does
//   (src/raycluster/expectations.ts). A re-created head never waits for its predecessor's name.
// - Triggers, as KubeRay's predicates on its RayCluster watch: a RayCluster event queues a pass only when
//   its generation (spec), labels, annotations, finalizers or deletion changed. A status-only change (ours or
//   anyone's) queues none: after writing the status a pass comes back in 2 s (KubeRay's requeue after a status
//   write: a suspend goes on from its new condition), a pass skipped on a copy our own write replaced in 1 s.
//   A status edited by someone else is left as written until the next pass for another reason (a pod event,
//   the periodic resync), then recomputed; KubeRay's RayJob copies the cluster's status meanwhile (its e2e
//   "RayCluster status update propagates to RayJob").
// - upgradeStrategy Recreate (src/raycluster/upgrade.ts): every pod deleted when the head's spec hash is
//   stale; a head stamped by KubeRay gets our stamp with a metadata patch (pods patch, base RBAC).
// - Children carry a controller owner reference to the RayCluster; they are found by labels
//   (ray.io/cluster, ray.io/node-type, ray.io/group) in the cluster's namespace.
// - Embedded GCS storage (backend rocksdb): the operator-managed PVC is looked up with a GET and created when
//   absent, before anything else of the cluster (persistentvolumeclaims get/create: manifests/base); owned
//   by the cluster (DeleteWithCluster) or not (Retain): deletion is the garbage collector's, never ours.
// - Token auth: the auth Secret is generated when it is ours to make (create: manifests/base) and read
//   with a GET each pass (Secrets are not watched; get: manifests/base): a missing or keyless one holds the
//   pods back; where the RBAC lacks get (403), as KubeRay: ours created once if missing, a given one not
//   checked. Its token never reaches a log, event or error.
// - Shares the RayCluster informer with the GCS-FT cleanup reconciler (./informers.ts), and its pod
//   creation gate (ctx.creationGate, kube/creation-gate.ts): once the cleanup has seen the cluster deleting, no pod of
//   it is created, whatever this cache still says.
import type { RayPodView } from '../../src/raycluster/pod-view.ts';
import { createHash } from 'node:crypto';
import { MODULE } from '../module-names.ts';
import { Counter } from 'prom-client';
import {
  NODE_TYPE_HEAD,
  NODE_TYPE_WORKER,
  RAY_API_VERSION,
  RAY_CLUSTER_LABEL,
  RAY_HEADLESS_WORKER_SVC_LABEL,
  RAY_NODE_TYPE_LABEL,
} from '../../src/names.ts';
import { RAYCLUSTERS, type RayCluster } from '../../src/types.ts';
import {
  describeUnsupported,
  plan,
  unsupportedFields,
  type AuthSecretState,
  type Plan,
  type PodAction,
} from '../../src/raycluster/desired.ts';
import { Expectations, type CacheLookup } from '../../src/raycluster/expectations.ts';
import type { BuildOptions } from '../../src/raycluster/pods.ts';
import type { ApiObject, KubeObject, ObjectWithMeta, Pod, Secret, Service } from '../../kube/model.ts';
import { computeStatus, COND_UNSUPPORTED, rayClusterStatusChanged, type RayClusterStatus } from '../../src/raycluster/status.ts';
import { isAlreadyExists, isForbidden, isNotFound, MERGE_PATCH, type KubeClient } from '../../kube/client.ts';
import { slimMetadata, type Informer } from '../../kube/informer.ts';
import {
  objectKey,
  ownerKeys,
  splitKey,
  type ControllerContext,
  type ControllerRegistration,
  type ObjectKey,
  type ReconcileResult,
} from '../../kube/reconciler.ts';
import { rayPodInformer, wholeRayClusterInformer } from './informers.ts';
import type { CreationGate } from '../../kube/creation-gate.ts';
import {
  PERSISTENTVOLUMECLAIMS,
  PODS,
  ROLEBINDINGS,
  ROLES,
  SECRETS,
  SERVICEACCOUNTS,
  SERVICES,
  type Projection,
  type Resource,
} from '../../kube/resources.ts';
import { userServiceAccount, type AutoscalerRbacObject } from '../../src/raycluster/autoscaler.ts';
import {
  AUTH_TOKEN_SECRET_KEY,
  authSecretName,
  buildAuthSecret,
  generateAuthToken,
  isTokenAuth,
  tokenOf,
} from '../../src/raycluster/auth.ts';
import {
  EVENT_AUTOSCALER_SERVICE_ACCOUNT_NOT_FOUND,
  EVENT_CREATED_ROLE,
  EVENT_CREATED_ROLE_BINDING,
  EVENT_CREATED_SERVICE_ACCOUNT,
  EVENT_FAILED_TO_CREATE_ROLE,
  EVENT_FAILED_TO_CREATE_ROLE_BINDING,
  EVENT_FAILED_TO_CREATE_SERVICE_ACCOUNT,
  EVENT_CREATED_HEAD_POD,
  EVENT_CREATED_SERVICE,
  EVENT_CREATED_WORKER_POD,
  EVENT_DELETED_HEAD_POD,
  EVENT_DELETED_POD,
  EVENT_DELETED_WORKER_POD,
  EVENT_FAILED_TO_CREATE_HEAD_POD,
  EVENT_FAILED_TO_CREATE_SERVICE,
  EVENT_FAILED_TO_CREATE_WORKER_POD,
  EVENT_FAILED_TO_DELETE_HEAD_POD,
  EVENT_FAILED_TO_DELETE_WORKER_POD,
  EVENT_UNSUPPORTED_FIELDS,
  EVENT_CREATED_AUTH_SECRET,
  EVENT_FAILED_TO_CREATE_AUTH_SECRET,
  EVENT_FAILED_TO_GET_AUTH_SECRET,
  EVENT_CREATED_PVC,
  EVENT_FAILED_TO_CREATE_PVC,
} from '../../src/event-reasons.ts';
import { errorMessage } from '../../src/errors.ts';
import { isManagedExternally } from '../../src/gcsft/rules.ts';
import { isDeleting } from '../../kube/finalizer-patches.ts';
import { validateRayCluster } from '../../src/raycluster/validation.ts';
import { gcsStorageClaimConflict, gcsStorageClaimDrift } from '../../src/raycluster/gcs-storage.ts';

const RAY_NODE_TYPES = new Set([NODE_TYPE_HEAD, NODE_TYPE_WORKER]);
/** KubeRay's DefaultRequeueDuration: after an error, a status write, a group waiting for the cache. */
const DEFAULT_REQUEUE_MS = 2_000;
/** A pass that met a copy our own status write replaced (the watch event of a status write queues nothing). */
const STALE_REQUEUE_MS = 1_000;
/** A token-auth cluster waiting for its Secret (not watched) looks again this often. */
const BLOCKED_REQUEUE_MS = 10_000;

const RBAC_KINDS: Record<AutoscalerRbacObject['kind'], { ref: Resource<ApiObject>; created: string; failed: string }> = {
  ServiceAccount: { ref: SERVICEACCOUNTS, created: EVENT_CREATED_SERVICE_ACCOUNT, failed: EVENT_FAILED_TO_CREATE_SERVICE_ACCOUNT },
  Role: { ref: ROLES, created: EVENT_CREATED_ROLE, failed: EVENT_FAILED_TO_CREATE_ROLE },
  RoleBinding: { ref: ROLEBINDINGS, created: EVENT_CREATED_ROLE_BINDING, failed: EVENT_FAILED_TO_CREATE_ROLE_BINDING },
};
/** An autoscaler ServiceAccount / Role / RoleBinding seen is looked up again after this long (re-created if deleted). */
const RBAC_RECHECK_MS = 5 * 60_000;

export interface RayClusterOperatorConfig {
  /** ENABLE_GCS_FT_REDIS_CLEANUP and the cleanup reconciler running: wait for its finalizer before any pod. */
  waitForCleanupFinalizer: boolean;
  /** ENABLE_RANDOM_POD_DELETE=true (see PlanInput.randomPodDelete). */
  randomPodDelete?: boolean;
  build?: BuildOptions;
  /** Expectation timeout (default 60 s). */
  expectationTimeoutMs?: number;
  workers?: number;
}

function slimService(obj: Service): Service {
  const spec = obj.spec;
  return {
    metadata: slimMetadata(obj),
    spec: { clusterIP: spec?.clusterIP, ports: spec?.ports, type: spec?.type },
  };
}
const SLIM_SERVICE: Projection<Service, Service> = { id: 'slim', transform: slimService };

/** The cluster a pod or Service belongs to: its RayCluster owner, else its ray.io/cluster label. */
function clusterKeys(obj: KubeObject): ObjectKey[] {
  const owners = ownerKeys('RayCluster', 'ray.io')(obj);
  if (owners.length > 0) return owners;
  const name = obj.metadata?.labels?.[RAY_CLUSTER_LABEL] ?? obj.metadata?.labels?.[RAY_HEADLESS_WORKER_SVC_LABEL];
  return name && obj.metadata?.namespace ? [`${obj.metadata.namespace}/${name}`] : [];
}

/**
 * What makes a RayCluster event worth a pass (KubeRay's GenerationChanged / LabelChanged / AnnotationChanged
 * predicates, plus the finalizers the GCS-FT cleanup adds, which our first pod waits for, and the deletion).
 * A digest: one short string per cluster in memory.
 */
function triggerSignature(cluster: ObjectWithMeta): string {
  const m = cluster.metadata ?? {};
  const sorted = (o: Record<string, string> | null | undefined) => Object.entries(o ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const what = [m.generation ?? null, sorted(m.labels), sorted(m.annotations), m.finalizers ?? [], m.deletionTimestamp ?? null];
  return createHash('sha1').update(JSON.stringify(what)).digest('base64');
}

function isTerminating(obj: ObjectWithMeta): boolean {
  const ts = obj.metadata?.deletionTimestamp;
  return typeof ts === 'string' && ts !== '';
}

export class RayClusterOperator {
  private readonly ctx: ControllerContext;
  private readonly kube: KubeClient;
  private readonly config: RayClusterOperatorConfig;
  private readonly clusters: Informer<RayCluster>;
  private readonly pods: Informer<RayPodView>;
  private readonly services: Informer<Service>;
  private readonly headless: Informer<Service>;
  readonly expectations: Expectations;
  /** The last invalid-cluster problem reported per key (one event per distinct problem). */
  private readonly invalid = new Map<ObjectKey, string>();
  /** The last auth Secret problem reported per key (one event per distinct problem). */
  private readonly warned = new Map<ObjectKey, string>();
  /** Per key, the UID of the cluster whose generated auth Secret was created or found (AlreadyExists). */
  private readonly ensured = new Map<ObjectKey, string>();
  private readonly gate: CreationGate;
  /** `<cluster uid>/<kind>/<name>` -> when the autoscaler's RBAC object was last seen or created (no informer for them). */
  private readonly rbacSeen = new Map<string, number>();
  private readonly metrics: { actions: Counter<'action'>; statusWrites: Counter<never> };
  /** Per key, triggerSignature() of the copy the last pass read: an update with the same one is status only. */
  private readonly passedOn = new Map<ObjectKey, string>();

  constructor(ctx: ControllerContext, config: RayClusterOperatorConfig) {
    this.ctx = ctx;
    this.kube = ctx.kube;
    this.config = config;
    this.clusters = wholeRayClusterInformer(ctx.informers);
    this.pods = rayPodInformer(ctx.informers);
    this.services = ctx.informers.get({ ...SERVICES, labelSelector: RAY_CLUSTER_LABEL }, SLIM_SERVICE);
    this.headless = ctx.informers.get({ ...SERVICES, labelSelector: RAY_HEADLESS_WORKER_SVC_LABEL }, SLIM_SERVICE);
    this.expectations = new Expectations({ now: ctx.now, timeoutMs: config.expectationTimeoutMs });
    this.gate = ctx.creationGate;
    const registers = [ctx.metrics];
    this.metrics = {
      actions: new Counter({
        name: 'raykeeper_raycluster_operator_actions_total',
        help: 'Pods and Services the RayCluster operator created or deleted, by action.',
        labelNames: ['action'] as const,
        registers,
      }),
      statusWrites: new Counter({
        name: 'raykeeper_raycluster_status_writes_total',
        help: 'RayCluster status writes (only when the computed status differs).',
        registers,
      }),
    };
  }

  registration(): ControllerRegistration {
    const reg: ControllerRegistration = {
      name: MODULE.rayClusterPods,
      reconciler: { reconcile: (key) => this.reconcile(key) },
      watches: [
        { informer: this.clusters, filter: (type, cluster) => this.triggers(type, cluster) },
        { informer: this.pods, toKeys: clusterKeys, resync: false },
        { informer: this.services, toKeys: clusterKeys, filter: (type) => type !== 'update', resync: false },
        { informer: this.headless, toKeys: clusterKeys, filter: (type) => type !== 'update', resync: false },
      ],
    };
    if (this.config.workers !== undefined) reg.workers = this.config.workers;
    return reg;
  }

  /** Whether a RayCluster event queues a pass (see the header: KubeRay's predicates). */
  private triggers(type: 'add' | 'update' | 'delete', cluster: ObjectWithMeta): boolean {
    if (type !== 'update') return true;
    return this.passedOn.get(objectKey(cluster)) !== triggerSignature(cluster);
  }

  private observed(cluster: RayCluster): { pods: Pod[]; services: Service[] } {
    const ns = cluster.metadata.namespace;
    const name = cluster.metadata.name;
    // Head and worker pods only (the Redis cleanup Job's pod carries ray.io/cluster too).
    const pods = this.pods
      .list(ns)
      .filter(
        (p) => p.metadata?.labels?.[RAY_CLUSTER_LABEL] === name && RAY_NODE_TYPES.has(p.metadata?.labels?.[RAY_NODE_TYPE_LABEL] ?? ''),
      );
    const services = [
      ...this.services.list(ns).filter((s) => s.metadata?.labels?.[RAY_CLUSTER_LABEL] === name),
      ...this.headless.list(ns).filter((s) => s.metadata?.labels?.[RAY_HEADLESS_WORKER_SVC_LABEL] === name),
    ];
    return { pods, services };
  }

  async reconcile(key: ObjectKey, signal?: AbortSignal): Promise<ReconcileResult | void> {
    const cached = this.clusters.get(key);
    const ref = { ...RAYCLUSTERS, ...splitKey(key) };
    if (!cached) {
      this.kube.forgetVersions(ref);
      this.expectations.forget(key);
      this.invalid.delete(key);
      for (const k of [...this.rbacSeen.keys()]) if (k.startsWith(`${key}/`)) this.rbacSeen.delete(k);
      this.warned.delete(key);
      this.ensured.delete(key);
      this.passedOn.delete(key);
      return;
    }
    this.passedOn.set(key, triggerSignature(cached));
    // The GCS-FT cleanup has seen it deleting, even if this cache has not yet.
    if (this.gate.isClosed(cached.metadata?.uid)) return;
    // A write of this process (our status, the cleanup's finalizer) replaced this copy. The finalizer's watch
    // event queues us again; a status write's does not (status only): look again shortly.
    if (this.kube.isStale(ref, cached.metadata?.resourceVersion)) return { requeueAfterMs: STALE_REQUEUE_MS };
    // List items come without apiVersion / kind; events and the /status PUT need them.
    const cluster: RayCluster = { ...cached, apiVersion: RAY_API_VERSION, kind: 'RayCluster' };
    if (this.refuseInvalid(cluster, key)) return;
    const { pods, services } = this.observed(cluster);
    let authSecret: AuthSecretState | undefined;
    try {
      authSecret = await this.authSecretState(cluster, signal);
    } catch (err) {
      this.warnOnce(
        cluster,
        key,
        EVENT_FAILED_TO_GET_AUTH_SECRET,
        `Failed to get Secret ${cluster.metadata.namespace}/${authSecretName(cluster)}: ${errorMessage(err)}`,
      );
      return { requeueAfterMs: BLOCKED_REQUEUE_MS };
    }
    const byName = new Map(pods.map((p) => [p.metadata.name ?? '', p]));
    const lookup: CacheLookup = (pod) => {
      const p = byName.get(pod);
      return p === undefined ? 'absent' : isTerminating(p) ? 'terminating' : 'present';
    };
    const unsatisfied = new Set<string>();
    const p = plan({
      cluster,
      pods,
      services,
      gateEnabled: this.config.waitForCleanupFinalizer,
      authSecret,
      options: this.config.build ?? {},
      randomPodDelete: this.config.randomPodDelete === true,
      unsatisfied: (group) => {
        const ok = this.expectations.satisfied(key, group, lookup);
        if (!ok) unsatisfied.add(group);
        return !ok;
      },
    });
    if (p.skip) {
      this.ctx.logger.debug({ cluster: key, skip: p.skip }, 'raycluster operator: nothing to do');
      return;
    }
    const log = this.ctx.logger.child({ cluster: key });
    let failure: { reason: string; message: string } | undefined;
    let stop = p.stop;
    if (p.blocked) {
      failure = p.blocked;
      this.warnOnce(cluster, key, p.blocked.reason, p.blocked.message);
    } else this.warned.delete(key);
    try {
      await this.applyRbac(cluster, key, p.rbac);
      await this.applyGcsStorageClaim(cluster, key, p);
      await this.applyAuthSecret(cluster, p, authSecret);
      await this.applyServices(cluster, p);
      await this.applyRestamp(cluster, key, p);
      failure = (await this.applyPods(cluster, key, p)) ?? failure;
    } catch (err) {
      stop = errorMessage(err);
      log.warn({ err: stop }, 'raycluster operator: apply failed');
    }
    if (failure) stop ??= failure.message;
    const unsupported =
      p.unsupported.length > 0 ? { refused: p.unsupported.some((u) => u.refused), message: describeUnsupported(p.unsupported) } : undefined;
    const old = (cluster.status ?? {}) as RayClusterStatus;
    const oldUnsupported = old.conditions?.find((c) => c.type === COND_UNSUPPORTED);
    if (unsupported && oldUnsupported?.message !== unsupported.message) {
      this.ctx.events.event(
        cluster,
        'Warning',
        EVENT_UNSUPPORTED_FIELDS,
        `${unsupported.refused ? 'not started' : 'started without them'}: ${unsupported.message}`,
      );
    }
    const next = computeStatus({ cluster, pods, services, failure, unsupported, now: this.ctx.now() });
    // A pass that stopped early (KubeRay's reconcile error) must not make the cluster ready.
    if (stop && next.state === 'ready' && old.state !== 'ready') next.state = old.state ?? '';
    const written = rayClusterStatusChanged(old, next) && (await this.writeStatus(cluster, next));
    // Secrets are not watched: a missing one is looked for again.
    if (p.blocked) return { requeueAfterMs: BLOCKED_REQUEUE_MS };
    // KubeRay requeues after an error and after a status write (a suspend goes on from its new condition).
    if (stop || unsatisfied.size > 0 || written) return { requeueAfterMs: DEFAULT_REQUEUE_MS };
    return undefined;
  }

  /**
   * KubeRay's RayCluster controller refuses an invalid cluster before anything else (after managedBy):
   * a Warning event with its reason, no pods, no status write. The validating webhook refuses such an
   * object at admission; this catches those admitted while it was down. One event per distinct problem.
   */
  private refuseInvalid(cluster: RayCluster, key: ObjectKey): boolean {
    if (isManagedExternally(cluster) || isDeleting(cluster)) return false;
    const problem = validateRayCluster(cluster, { status: true });
    if (problem === undefined) {
      this.invalid.delete(key);
      return false;
    }
    if (this.invalid.get(key) !== problem.message) {
      this.invalid.set(key, problem.message);
      this.ctx.events.event(cluster, 'Warning', problem.eventReason, problem.message);
      this.ctx.logger.info(
        { cluster: key, reason: problem.eventReason, error: problem.message },
        'raycluster operator: invalid cluster, not reconciled',
      );
    }
    return true;
  }

  /**
   * reconcileAutoscalerServiceAccount / Role / RoleBinding: each looked up by KubeRay's name and created
   * when absent, never updated. A ServiceAccount the user named on the head template is never created:
   * absent, it is an error (no pods), as in KubeRay.
   */
  private async applyRbac(cluster: RayCluster, key: ObjectKey, objects: AutoscalerRbacObject[]): Promise<void> {
    const ns = cluster.metadata.namespace;
    const now = this.ctx.now();
    for (const o of objects) {
      const seenKey = `${key}/${cluster.metadata.uid}/${o.kind}/${o.lookupName}`;
      if (now - (this.rbacSeen.get(seenKey) ?? Number.NEGATIVE_INFINITY) < RBAC_RECHECK_MS) continue;
      const kind = RBAC_KINDS[o.kind];
      const found = await this.kube.get({ ...kind.ref, namespace: ns, name: o.lookupName }).then(
        () => true,
        (err: unknown) => {
          if (isNotFound(err)) return false;
          throw err;
        },
      );
      if (!found && o.kind === 'ServiceAccount' && userServiceAccount(cluster)) {
        const message = `If users specify ServiceAccountName for the head Pod, they need to create a ServiceAccount themselves. However, ServiceAccount ${o.lookupName} is not found. Please create one. See the PR description of https://github.com/ray-project/kuberay/pull/1128 for more details.`;
        this.ctx.events.event(
          cluster,
          'Warning',
          EVENT_AUTOSCALER_SERVICE_ACCOUNT_NOT_FOUND,
          `Failed to reconcile RayCluster ${ns}/${cluster.metadata.name}. ${message}`,
        );
        throw new Error(message);
      }
      if (!found) {
        const what = `${o.kind === 'ServiceAccount' ? 'service account' : o.kind === 'Role' ? 'role' : 'role binding'} ${ns}/${o.body.metadata?.name}`;
        try {
          await this.kube.create({ ...kind.ref, namespace: ns }, o.body);
          this.metrics.actions.inc({ action: `create${o.kind}` });
          this.ctx.events.event(cluster, 'Normal', kind.created, `Created ${what}`);
        } catch (err) {
          if (!isAlreadyExists(err)) {
            this.ctx.events.event(cluster, 'Warning', kind.failed, `Failed creating ${what}, ${errorMessage(err)}`);
            throw err;
          }
        }
      }
      this.rbacSeen.set(seenKey, now);
    }
  }

  /**
   * reconcileGCSStoragePVC: the operator-managed claim looked up by name and created when absent, never
   * updated (a claim of that name already there, e.g. retained from an earlier cluster, is adopted as-is;
   * one that differs from the spec gets KubeRay's Warning FailedToCreatePVC, each time it is looked up).
   * One being deleted or controlled by another RayCluster is not used: a Warning, and the pass stops.
   * Before any Service or pod: a failure stops the pass, so the head never waits on a claim nobody makes.
   */
  private async applyGcsStorageClaim(cluster: RayCluster, key: ObjectKey, p: Plan): Promise<void> {
    const claim = p.gcsStorageClaim;
    if (claim === undefined) return;
    const ns = cluster.metadata.namespace;
    const now = this.ctx.now();
    const seenKey = `${key}/${cluster.metadata.uid}/PersistentVolumeClaim/${claim.metadata.name}`;
    if (now - (this.rbacSeen.get(seenKey) ?? Number.NEGATIVE_INFINITY) < RBAC_RECHECK_MS) return;
    const where = `${ns}/${claim.metadata.name}`;
    const found = await this.kube.getOrUndefined({ ...PERSISTENTVOLUMECLAIMS, namespace: ns, name: claim.metadata.name ?? '' });
    const conflict = found && gcsStorageClaimConflict(cluster, found);
    if (conflict) {
      this.ctx.events.event(cluster, 'Warning', EVENT_FAILED_TO_CREATE_PVC, conflict);
      throw new Error(conflict); // stops the pass before any pod; looked at again on the requeue
    }
    const drift = found && gcsStorageClaimDrift(claim, found as { spec?: unknown });
    if (drift) this.ctx.events.event(cluster, 'Warning', EVENT_FAILED_TO_CREATE_PVC, drift);
    if (found === undefined) {
      try {
        await this.kube.create({ ...PERSISTENTVOLUMECLAIMS, namespace: ns }, claim);
        this.metrics.actions.inc({ action: 'createPersistentVolumeClaim' });
        this.ctx.events.event(cluster, 'Normal', EVENT_CREATED_PVC, `Created PersistentVolumeClaim ${where} for the GCS storage`);
      } catch (err) {
        if (!isAlreadyExists(err)) {
          this.ctx.events.event(
            cluster,
            'Warning',
            EVENT_FAILED_TO_CREATE_PVC,
            `Failed creating PersistentVolumeClaim ${where}, ${errorMessage(err)}`,
          );
          throw err;
        }
      }
    }
    this.rbacSeen.set(seenKey, now);
  }

  /** Token auth: whether the cluster's auth Secret is there with its key (a GET; Secrets are not cached). */
  private async authSecretState(cluster: RayCluster, signal?: AbortSignal): Promise<AuthSecretState | undefined> {
    if (!isTokenAuth(cluster) || isManagedExternally(cluster) || isDeleting(cluster)) return undefined;
    // A refused cluster (enableK8sTokenAuth) creates nothing: its Secret is not read, so no read error hides the refusal.
    if (unsupportedFields(cluster).some((u) => u.refused)) return undefined;
    const ref = { ...SECRETS, namespace: cluster.metadata.namespace, name: authSecretName(cluster) };
    let secret: Secret | undefined;
    try {
      secret = await this.kube.getOrUndefined(ref, { signal });
    } catch (err) {
      if (isForbidden(err)) return 'unreadable';
      throw err;
    }
    if (secret === undefined) return 'absent';
    return tokenOf(secret) === undefined ? 'noKey' : 'present';
  }

  private warnOnce(cluster: RayCluster, key: ObjectKey, reason: string, message: string): void {
    if (this.warned.get(key) === message) return;
    this.warned.set(key, message);
    this.ctx.events.event(cluster, 'Warning', reason, message);
    this.ctx.logger.info({ cluster: key, reason, error: message }, 'raycluster operator: no pods until the auth Secret is usable');
  }

  /** createAuthSecret: a fresh token, only ever in the Secret (an API error quoting it is redacted). */
  private async applyAuthSecret(cluster: RayCluster, p: Plan, state: AuthSecretState | undefined): Promise<void> {
    if (p.createAuthSecret === undefined) return;
    // Unreadable: created (or found AlreadyExists) once per cluster is enough.
    const key = `${cluster.metadata.namespace}/${cluster.metadata.name}`;
    const uid = cluster.metadata.uid ?? '';
    if (state === 'unreadable' && this.ensured.get(key) === uid) return;
    const where = `${cluster.metadata.namespace}/${p.createAuthSecret}`;
    const token = generateAuthToken();
    try {
      await this.kube.create({ ...SECRETS, namespace: cluster.metadata.namespace }, buildAuthSecret(cluster, token));
    } catch (err) {
      if (isAlreadyExists(err)) {
        this.ensured.set(key, uid);
        return;
      }
      const message = errorMessage(err).replaceAll(token, '[redacted]');
      this.ctx.events.event(cluster, 'Warning', EVENT_FAILED_TO_CREATE_AUTH_SECRET, `Failed creating Secret ${where}, ${message}`);
      throw new Error(`creating Secret ${where}: ${message}`);
    }
    this.ensured.set(key, uid);
    this.metrics.actions.inc({ action: 'createAuthSecret' });
    this.ctx.events.event(cluster, 'Normal', EVENT_CREATED_AUTH_SECRET, `Created Secret ${where} (key ${AUTH_TOKEN_SECRET_KEY})`);
  }

  private async applyServices(cluster: RayCluster, p: Plan): Promise<void> {
    for (const svc of p.services) {
      try {
        await this.kube.create({ ...SERVICES, namespace: cluster.metadata.namespace }, svc);
        this.metrics.actions.inc({ action: 'createService' });
        this.ctx.events.event(
          cluster,
          'Normal',
          EVENT_CREATED_SERVICE,
          `Created service ${cluster.metadata.namespace}/${svc.metadata.name}`,
        );
      } catch (err) {
        if (isAlreadyExists(err)) continue;
        this.ctx.events.event(
          cluster,
          'Warning',
          EVENT_FAILED_TO_CREATE_SERVICE,
          `Failed creating service ${cluster.metadata.namespace}/${svc.metadata.name}, ${errorMessage(err)}`,
        );
        throw err;
      }
    }
  }

  /** Applies the pod actions in order; stops at the first failure and answers its ReplicaFailure reason. */
  private async applyPods(cluster: RayCluster, key: string, p: Plan): Promise<{ reason: string; message: string } | undefined> {
    const ns = cluster.metadata.namespace;
    const obj = cluster;
    for (const a of p.actions) {
      if (a.kind === 'createPod') {
        const head = a.nodeType === 'head';
        try {
          const gated = await this.gate.create(cluster.metadata.uid, () => this.kube.create({ ...PODS, namespace: ns }, a.pod));
          if (!gated.created) {
            this.ctx.logger.debug({ cluster: key }, 'raycluster operator: the cluster is being deleted, no more pods');
            return undefined;
          }
          const name = gated.value.metadata.name ?? '';
          this.expectations.expect(key, a.group, name, 'create');
          this.metrics.actions.inc({ action: head ? 'createHeadPod' : 'createWorkerPod' });
          this.ctx.events.event(
            obj,
            'Normal',
            head ? EVENT_CREATED_HEAD_POD : EVENT_CREATED_WORKER_POD,
            `Created ${head ? 'head' : 'worker'} Pod ${ns}/${name}`,
          );
        } catch (err) {
          // A generated name taken (the API server retries those itself): wait for the next pass.
          if (isAlreadyExists(err)) return undefined;
          this.ctx.events.event(
            obj,
            'Warning',
            head ? EVENT_FAILED_TO_CREATE_HEAD_POD : EVENT_FAILED_TO_CREATE_WORKER_POD,
            `Failed to create ${head ? 'head' : 'worker'} Pod for the cluster ${ns}/${cluster.metadata.name}, ${errorMessage(err)}`,
          );
          return { reason: head ? 'FailedCreateHeadPod' : 'FailedCreateWorkerPod', message: errorMessage(err) };
        }
      } else {
        const fail = await this.deletePod(cluster, key, a, p.suspending === true || p.recreating === true);
        if (fail) return fail;
      }
    }
    if ((p.suspending || p.recreating) && p.actions.some((a) => a.kind === 'deletePod' && !a.terminating)) {
      this.ctx.events.event(
        obj,
        'Normal',
        EVENT_DELETED_POD,
        p.suspending
          ? `Deleted Pods for RayCluster ${ns}/${cluster.metadata.name} due to suspension`
          : `Deleted all Pods for RayCluster ${ns}/${cluster.metadata.name} due to spec change with Recreate upgradeStrategy`,
      );
    }
    return undefined;
  }

  private async deletePod(
    cluster: RayCluster,
    key: string,
    a: Extract<PodAction, { kind: 'deletePod' }>,
    quiet: boolean,
  ): Promise<{ reason: string; message: string } | undefined> {
    if (a.terminating) return undefined; // already going
    const ns = cluster.metadata.namespace;
    const head = a.nodeType === 'head';
    try {
      await this.kube.delete({ ...PODS, namespace: ns, name: a.name }, a.uid ? { preconditions: { uid: a.uid } } : {});
    } catch (err) {
      if (isNotFound(err)) return undefined;
      this.ctx.events.event(
        cluster,
        'Warning',
        head ? EVENT_FAILED_TO_DELETE_HEAD_POD : EVENT_FAILED_TO_DELETE_WORKER_POD,
        `Failed deleting ${head ? 'head' : 'worker'} Pod ${ns}/${a.name}, ${errorMessage(err)}`,
      );
      return { reason: quiet ? 'FailedDeleteAllPods' : head ? 'FailedDeleteHeadPod' : 'FailedDeleteWorkerPod', message: errorMessage(err) };
    }
    this.expectations.expect(key, a.group, a.name, 'delete');
    this.metrics.actions.inc({ action: head ? 'deleteHeadPod' : 'deleteWorkerPod' });
    if (!quiet)
      this.ctx.events.event(
        cluster,
        'Normal',
        head ? EVENT_DELETED_HEAD_POD : EVENT_DELETED_WORKER_POD,
        `Deleted ${head ? 'head' : 'worker'} Pod ${ns}/${a.name}: ${a.reason}`,
      );
    return undefined;
  }

  /**
   * upgradeStrategy Recreate, a head stamped by another hasher (KubeRay's): our hash and version onto it, as
   * KubeRay re-stamps after its own upgrade. Best effort, as KubeRay's: a failure is logged, the pass goes on.
   */
  private async applyRestamp(cluster: RayCluster, key: ObjectKey, p: Plan): Promise<void> {
    if (p.restamp === undefined) return;
    const { pod, uid, annotations } = p.restamp;
    try {
      await this.kube.patch(
        { ...PODS, namespace: cluster.metadata.namespace, name: pod },
        { metadata: { ...(uid ? { uid } : {}), annotations } },
        MERGE_PATCH,
      );
      this.metrics.actions.inc({ action: 'restampHeadPod' });
      this.ctx.logger.info(
        { cluster: key, pod },
        'raycluster operator: head pod stamped by another operator, re-stamped with our spec hash',
      );
    } catch (err) {
      if (!isNotFound(err))
        this.ctx.logger.warn({ cluster: key, pod, err: errorMessage(err) }, 'raycluster operator: re-stamping the head pod failed');
    }
  }

  /** PUT /status with the cached object's resourceVersion (true: written); a conflict (the object moved on) throws and is retried. */
  private async writeStatus(cluster: RayCluster, status: RayClusterStatus): Promise<boolean> {
    const ref = { ...RAYCLUSTERS, namespace: cluster.metadata.namespace, name: cluster.metadata.name ?? '', subresource: 'status' };
    try {
      await this.kube.replace(ref, {
        apiVersion: cluster.apiVersion,
        kind: cluster.kind,
        metadata: cluster.metadata,
        spec: cluster.spec,
        status,
      });
      this.metrics.statusWrites.inc();
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }
}

/** Registration for the runtime (see controller/reconcilers.ts). */
export function createRayClusterOperator(ctx: ControllerContext, config: RayClusterOperatorConfig): ControllerRegistration {
  return new RayClusterOperator(ctx, config).registration();
}
