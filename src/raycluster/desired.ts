// What the RayCluster operator does next, decided from the cluster and the pods / Services the caches
// hold: KubeRay v1.6's reconcileHeadService / reconcileHeadlessService / reconcilePods as one pure
// function. The reconciler (controller/raycluster/reconciler.ts) applies the plan and writes the status.
//
// Order and rules, as KubeRay:
// - spec.managedBy names another controller: hands off. Deleting: nothing (owner references and the
//   GCS-FT cleanup reconciler take over). GCS FT with Redis and the cleanup on: no pod before the cleanup
//   finalizer is on the object (a head that wrote to Redis before it would leave data behind).
// - Services first: the head Service when none carries its labels, the headless worker Service for
//   multi-host groups. Never updated once created (KubeRay neither).
// - Suspend (conditions RayClusterSuspending -> RayClusterSuspended): delete every pod, keep the object.
// - upgradeStrategy Recreate (./upgrade.ts): the head's spec hash differs from the spec's -> delete every pod
//   (nothing else that pass); a head stamped by another hasher is re-stamped, not recreated. Every new head
//   carries the hash, whatever the strategy.
// - Head: exactly one; a head pod that cannot restart (Failed / Succeeded, or its Ray container
//   terminated under restartPolicy Never) is deleted and re-created on the next pass.
// - Workers per group: desired = replicas clamped to [minReplicas, maxReplicas] x numOfHosts; failed
//   pods deleted first (and nothing created in that pass), scaleStrategy.workersToDelete deleted, then
//   the difference created or deleted. Multi-host groups (numOfHosts > 1) live and die as whole replicas.
//   With in-tree autoscaling the autoscaler alone picks the pods to delete (workersToDelete): replicas
//   going down deletes nothing else unless ENABLE_RANDOM_POD_DELETE=true. The list is never cleared by the
//   operator (KubeRay clears only its in-memory copy); the autoscaler does (v1 once the pods are gone, v2
//   with its next scale request).
// - Autoscaling: the ServiceAccount / Role / RoleBinding (./autoscaler.ts) come before everything else.
// - A group (or the head) with writes the cache has not shown yet is left alone (expectations).
// - Embedded GCS storage (./gcs-storage.ts, backend rocksdb): the operator-managed PVC before the Services
//   and pods; none when storage.claimName names the user's.
// - Token auth (./auth.ts): the Secret is generated unless authOptions.secretName names one; while the
//   Secret cannot be used, no pod is created.
import type { RayPodView } from './pod-view.ts';
import { gcsFtFinalizerRule, isManagedExternally } from '../gcsft/rules.ts';
import {
  DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION,
  GCS_FT_REDIS_CLEANUP_FINALIZER,
  HEAD_GROUP_NAME,
  NODE_TYPE_HEAD,
  NODE_TYPE_WORKER,
  RAY_GROUP_LABEL,
  RAY_NODE_TYPE_LABEL,
  RAY_WORKER_REPLICA_INDEX_LABEL,
  RAY_WORKER_REPLICA_NAME_LABEL,
  RAY_HEADLESS_WORKER_SVC_LABEL,
} from '../names.ts';
import type { RayCluster } from '../types.ts';
import { EVENT_AUTH_SECRET_INVALID, EVENT_AUTH_SECRET_NOT_FOUND } from '../event-reasons.ts';
import { AUTH_TOKEN_SECRET_KEY, authOptions, authSecretName, generatesAuthSecret, isTokenAuth } from './auth.ts';
import { buildHeadPod, buildWorkerPod, type BuildOptions } from './pods.ts';
import { desiredGcsStorageClaim, type PersistentVolumeClaim } from './gcs-storage.ts';
import { headGroup, workerGroups, type WorkerGroupSpec } from './groups.ts';
import { ownerReference } from './names.ts';
import { headPodStamp, recreateDecision } from './upgrade.ts';
import type { Pod, Service } from '../../kube/model.ts';
import { autoscalerRbac, type AutoscalerRbacObject } from './autoscaler.ts';
import { isAutoscalingEnabled } from './validation.ts';
import { buildHeadlessWorkerService, buildHeadService, headServiceLabels, needsHeadlessWorkerService } from './service.ts';
import { COND_PROVISIONED, conditionTrue, desiredReplicas, hosts, suspendStatus, type RayClusterStatus } from './status.ts';

export type PodAction =
  | { kind: 'createPod'; group: string; pod: Pod; nodeType: 'head' | 'worker' }
  | {
      kind: 'deletePod';
      group: string;
      name: string;
      uid?: string | undefined;
      nodeType: 'head' | 'worker';
      reason: string;
      terminating: boolean;
    };

export interface Unsupported {
  field: string;
  /** Refused: no pods at all (running without it would be a different, weaker cluster). */
  refused: boolean;
  why: string;
}

export interface Plan {
  /** Nothing to do and no status to write. */
  skip?: 'managedExternally' | 'deleting' | 'waitForFinalizer' | undefined;
  /** The autoscaler's ServiceAccount / Role / RoleBinding: each created when its lookup finds nothing. */
  rbac: AutoscalerRbacObject[];
  services: Service[];
  actions: PodAction[];
  /** The pass stopped early (KubeRay returns an error): the status must not say ready. */
  stop?: string | undefined;
  unsupported: Unsupported[];
  /** Suspending: every pod was asked to go (event DeletedPod once). */
  suspending?: boolean;
  /** upgradeStrategy Recreate and the spec changed: every pod was asked to go (event DeletedPod once). */
  recreating?: boolean;
  /** The head was stamped by another hasher (KubeRay's): write these annotations onto it (./upgrade.ts). */
  restamp?: { pod: string; uid?: string | undefined; annotations: Record<string, string> };
  /** Embedded GCS storage: the operator-managed claim, created (when absent) before any Service or pod. */
  gcsStorageClaim?: PersistentVolumeClaim;
  /** Token auth: the Secret to generate (its name; the reconciler makes the token). */
  createAuthSecret?: string;
  /** Token auth: the Secret cannot be used, so no pod is created (a Warning event and the ReplicaFailure condition say why). */
  blocked?: { reason: string; message: string };
}

/**
 * What the reconciler found at authSecretName(cluster): the Secret with a non-empty `auth_token`, without
 * it, none, or nothing known (403: an install whose RBAC lets the controller create Secrets but not get
 * them; then, as KubeRay, ours is created if missing and a given one is not checked).
 */
export type AuthSecretState = 'present' | 'noKey' | 'absent' | 'unreadable';

export interface PlanInput {
  cluster: RayCluster;
  /** The cluster's pods from the cache (ray.io/cluster=<name>, same namespace), terminating included. */
  pods: RayPodView[];
  /** The cluster's Services from the cache. */
  services: Service[];
  /** Groups (HEAD_GROUP_NAME for the head) whose last writes the cache does not show yet. */
  unsatisfied: (group: string) => boolean;
  /** ENABLE_GCS_FT_REDIS_CLEANUP. */
  gateEnabled: boolean;
  options?: BuildOptions;
  /** ENABLE_RANDOM_POD_DELETE=true: with autoscaling, replicas going down still deletes pods we pick. */
  randomPodDelete?: boolean;
  /** Five random characters for a multi-host replica's name (injectable for tests). */
  randomSuffix?: () => string;
  /** Token auth only: the state of the cluster's auth Secret. */
  authSecret?: AuthSecretState | undefined;
}

/** Spec fields raykeeper does not implement: each gets an event and the raykeeper.io/UnsupportedFields condition. */
export function unsupportedFields(cluster: RayCluster): Unsupported[] {
  const out: Unsupported[] = [];
  if (authOptions(cluster)?.enableK8sTokenAuth === true)
    out.push({
      field: 'spec.authOptions.enableK8sTokenAuth',
      refused: true,
      why: 'Kubernetes-delegated token auth is not implemented; a cluster with another authentication is not started in its place',
    });
  if (headGroup(cluster).enableIngress === true)
    out.push({ field: 'spec.headGroupSpec.enableIngress', refused: false, why: 'no Ingress is created' });
  if (cluster.metadata.annotations?.['ray.io/enable-serve-service'] === 'true')
    out.push({ field: 'annotation ray.io/enable-serve-service', refused: false, why: 'no serve Service is created' });
  for (const label of ['ray.io/scheduler-name', 'ray.io/gang-scheduling-enabled', 'ray.io/priority-class-name']) {
    if (cluster.metadata.labels?.[label] !== undefined)
      out.push({
        field: `label ${label}`,
        refused: false,
        why: 'no batch scheduler integration: pods are created one by one for the default scheduler',
      });
  }
  return out;
}

/** Why the auth Secret cannot be used (undefined: it can, or it is ours to generate). */
export function authSecretProblem(cluster: RayCluster, state: AuthSecretState): { reason: string; message: string } | undefined {
  if (state === 'present' || state === 'unreadable') return undefined;
  const where = `${cluster.metadata.namespace}/${authSecretName(cluster)}`;
  if (generatesAuthSecret(cluster))
    return state === 'noKey'
      ? {
          reason: EVENT_AUTH_SECRET_INVALID,
          message: `Secret ${where} exists without a key ${AUTH_TOKEN_SECRET_KEY}; delete it to have one generated`,
        }
      : undefined;
  return state === 'absent'
    ? {
        reason: EVENT_AUTH_SECRET_NOT_FOUND,
        message: `Secret ${where} named by spec.authOptions.secretName not found; no pod is created until it exists`,
      }
    : {
        reason: EVENT_AUTH_SECRET_INVALID,
        message: `Secret ${where} named by spec.authOptions.secretName has no key ${AUTH_TOKEN_SECRET_KEY}; no pod is created until it has`,
      };
}

export function describeUnsupported(list: Unsupported[]): string {
  return list.map((u) => `${u.field} (${u.why})`).join('; ');
}

function labelOf(p: RayPodView, key: string): string | undefined {
  return p.metadata.labels?.[key];
}

function terminating(p: RayPodView): boolean {
  return typeof p.metadata.deletionTimestamp === 'string' && p.metadata.deletionTimestamp !== '';
}

/** shouldDeletePod: a pod that will not run Ray again. */
export function shouldDeletePod(p: RayPodView): string | undefined {
  const phase = p.status?.phase;
  if (phase === 'Failed' || phase === 'Succeeded') return `the Pod ${p.metadata.name} is ${phase}, a terminal state`;
  if (phase === 'Running' && p.spec?.restartPolicy === 'Never') {
    const rayName = p.spec.containers?.[0]?.name;
    const st = (p.status?.containerStatuses ?? []).find((c) => c.name === rayName);
    if (st?.state?.terminated) return `the Ray container of ${p.metadata.name} terminated and restartPolicy is Never`;
  }
  return undefined;
}

function del(p: RayPodView, group: string, nodeType: 'head' | 'worker', reason: string): PodAction {
  return { kind: 'deletePod', group, name: p.metadata.name ?? '', uid: p.metadata.uid, nodeType, reason, terminating: terminating(p) };
}

function randomFive(): string {
  const a = 'bcdfghjklmnpqrstvwxz2456789';
  let s = '';
  for (let i = 0; i < 5; i++) s += a[Math.floor(Math.random() * a.length)];
  return s;
}

/** Lowest replica indices not in use. */
function freeIndices(used: Set<number>, n: number): number[] {
  const out: number[] = [];
  for (let i = 0; out.length < n; i++) if (!used.has(i)) out.push(i);
  return out;
}

/** Scale-down order: terminating first (already going), then not running, then the highest replica index. */
function scaleDownOrder(pods: RayPodView[]): RayPodView[] {
  const rank = (p: RayPodView) => (terminating(p) ? 0 : p.status?.phase !== 'Running' ? 1 : 2);
  const index = (p: RayPodView) => Number(labelOf(p, RAY_WORKER_REPLICA_INDEX_LABEL) ?? -1);
  return [...pods].sort((a, b) => rank(a) - rank(b) || index(b) - index(a) || (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''));
}

/** createHeadPod: the built head with the upgrade hash and our version stamped on it. */
function stampedHeadPod(cluster: RayCluster, options: BuildOptions): Pod {
  const pod = buildHeadPod(cluster, options);
  pod.metadata.annotations = { ...(pod.metadata.annotations ?? {}), ...headPodStamp(cluster) };
  return pod;
}

export function plan(input: PlanInput): Plan {
  const out = planAll(input);
  // Unlike KubeRay, no pod is created while the auth Secret is unusable (it would only sit in
  // CreateContainerConfigError); deletions (suspend, failed pods) still happen.
  if (out.blocked) {
    out.actions = out.actions.filter((a) => a.kind !== 'createPod');
    out.stop ??= out.blocked.message;
  }
  return out;
}

function planAll(input: PlanInput): Plan {
  const { cluster, pods, services } = input;
  const out: Plan = { rbac: [], services: [], actions: [], unsupported: unsupportedFields(cluster) };
  if (isManagedExternally(cluster)) return { ...out, skip: 'managedExternally' };
  if (cluster.metadata.deletionTimestamp) return { ...out, skip: 'deleting' };
  // Wait only for a finalizer that will come (the rule the webhook and the cleanup controller follow).
  if (
    input.gateEnabled &&
    gcsFtFinalizerRule(cluster).wanted &&
    !(cluster.metadata.finalizers ?? []).includes(GCS_FT_REDIS_CLEANUP_FINALIZER)
  )
    return { ...out, skip: 'waitForFinalizer' };
  if (out.unsupported.some((u) => u.refused)) return out;
  const options = input.options ?? {};
  out.rbac = autoscalerRbac(cluster, ownerReference(cluster));
  const scaleDown = !isAutoscalingEnabled(cluster.spec) || input.randomPodDelete === true;

  // reconcileGCSStoragePVC, before the Services and the head that mounts it.
  const claim = desiredGcsStorageClaim(cluster);
  if (claim) out.gcsStorageClaim = claim;

  // reconcileAuthSecret, before the Services as in KubeRay.
  if (isTokenAuth(cluster)) {
    const blocked = authSecretProblem(cluster, input.authSecret ?? 'absent');
    if (blocked) out.blocked = blocked;
    else if (input.authSecret !== 'present' && generatesAuthSecret(cluster)) out.createAuthSecret = authSecretName(cluster);
  }

  // Services.
  const want = headServiceLabels(cluster);
  const heads = services.filter((s) =>
    ['ray.io/cluster', 'ray.io/node-type', 'ray.io/identifier'].every((k) => s.metadata.labels?.[k] === want[k]),
  );
  if (heads.length === 0) out.services.push(buildHeadService(cluster));
  else if (heads.length > 1)
    return { ...out, stop: `${heads.length} head Services found: ${heads.map((s) => s.metadata.name).join(', ')}` };
  if (
    needsHeadlessWorkerService(cluster) &&
    !services.some((s) => s.metadata.labels?.[RAY_HEADLESS_WORKER_SVC_LABEL] === cluster.metadata.name)
  )
    out.services.push(buildHeadlessWorkerService(cluster));

  // Suspend.
  const status = cluster.status as RayClusterStatus | undefined;
  const suspend = suspendStatus(status);
  if (suspend === 'Suspending') {
    for (const p of pods) {
      const type = labelOf(p, RAY_NODE_TYPE_LABEL) === NODE_TYPE_HEAD ? 'head' : 'worker';
      out.actions.push(del(p, type === 'head' ? HEAD_GROUP_NAME : (labelOf(p, RAY_GROUP_LABEL) ?? ''), type, 'suspended'));
    }
    return { ...out, suspending: true };
  }
  if (suspend === 'Suspended' || cluster.spec?.suspend === true) return out;

  // upgradeStrategy Recreate.
  const headPods = pods.filter((p) => labelOf(p, RAY_NODE_TYPE_LABEL) === NODE_TYPE_HEAD);
  const upgrade = recreateDecision(cluster, headPods);
  if (upgrade.action === 'recreate') {
    // Only once the cache shows every pod we created: one it does not show yet would survive the deletion.
    const groups = [HEAD_GROUP_NAME, ...workerGroups(cluster).map((g) => g.groupName ?? '')];
    if (groups.filter((g) => input.unsatisfied(g)).length > 0) return out;
    for (const p of pods) {
      const type = labelOf(p, RAY_NODE_TYPE_LABEL) === NODE_TYPE_HEAD ? 'head' : 'worker';
      out.actions.push(del(p, type === 'head' ? HEAD_GROUP_NAME : (labelOf(p, RAY_GROUP_LABEL) ?? ''), type, upgrade.why));
    }
    return { ...out, recreating: true };
  }
  if (upgrade.action === 'restamp' && !headPods.some(terminating))
    out.restamp = { pod: upgrade.pod, uid: upgrade.uid, annotations: upgrade.annotations };

  // Head.
  if (!input.unsatisfied(HEAD_GROUP_NAME)) {
    if (headPods.length === 1) {
      const why = shouldDeletePod(headPods[0]!);
      if (why && !terminating(headPods[0]!)) {
        out.actions.push(del(headPods[0]!, HEAD_GROUP_NAME, 'head', why));
        return { ...out, stop: why };
      }
    } else if (headPods.length === 0) {
      const skipRestart =
        conditionTrue(status?.conditions, COND_PROVISIONED) &&
        cluster.metadata.annotations?.[DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION] === 'true';
      if (!skipRestart)
        out.actions.push({ kind: 'createPod', group: HEAD_GROUP_NAME, nodeType: 'head', pod: stampedHeadPod(cluster, options) });
    } else {
      return {
        ...out,
        stop: `${headPods.length} head pods found (${headPods.map((p) => p.metadata.name).join(', ')}); delete the extra ones`,
      };
    }
  }

  // Workers.
  for (const group of workerGroups(cluster)) {
    const name = group.groupName ?? '';
    if (input.unsatisfied(name)) continue;
    const groupPods = pods.filter((p) => labelOf(p, RAY_NODE_TYPE_LABEL) === NODE_TYPE_WORKER && labelOf(p, RAY_GROUP_LABEL) === name);
    if (group.suspend === true) {
      for (const p of groupPods) out.actions.push(del(p, name, 'worker', `worker group ${name} is suspended`));
      continue;
    }
    const stop =
      hosts(group) > 1
        ? planMultiHost(cluster, group, groupPods, out, options, scaleDown, input.randomSuffix ?? randomFive)
        : planSingleHost(cluster, group, groupPods, out, options, scaleDown);
    if (stop) return { ...out, stop };
  }
  return out;
}

function planSingleHost(
  cluster: RayCluster,
  group: WorkerGroupSpec,
  groupPods: RayPodView[],
  out: Plan,
  options: BuildOptions,
  scaleDown: boolean,
): string | undefined {
  const name = group.groupName ?? '';
  const unhealthy = groupPods.filter((p) => !terminating(p) && shouldDeletePod(p));
  for (const p of unhealthy) out.actions.push(del(p, name, 'worker', shouldDeletePod(p)!));
  if (unhealthy.length > 0) return `deleted ${unhealthy.length} unhealthy worker Pods of group ${name}`;
  const deleted = new Set<string>();
  const toDelete = new Set(group.scaleStrategy?.workersToDelete ?? []);
  for (const p of groupPods) {
    if (!toDelete.has(p.metadata.name ?? '')) continue;
    out.actions.push(del(p, name, 'worker', 'listed in scaleStrategy.workersToDelete'));
    deleted.add(p.metadata.name ?? '');
  }
  const remaining = groupPods.filter((p) => !deleted.has(p.metadata.name ?? ''));
  const diff = desiredReplicas(group) - remaining.length;
  if (diff > 0) {
    const used = new Set(remaining.map((p) => Number(labelOf(p, RAY_WORKER_REPLICA_INDEX_LABEL))).filter(Number.isInteger));
    for (const replicaIndex of freeIndices(used, diff))
      out.actions.push({
        kind: 'createPod',
        group: name,
        nodeType: 'worker',
        pod: buildWorkerPod(cluster, group, { replicaIndex }, options),
      });
  } else if (diff < 0 && scaleDown) {
    for (const p of scaleDownOrder(remaining).slice(0, -diff))
      out.actions.push(del(p, name, 'worker', `scaling group ${name} down to ${desiredReplicas(group)}`));
  }
  return undefined;
}

function planMultiHost(
  cluster: RayCluster,
  group: WorkerGroupSpec,
  groupPods: RayPodView[],
  out: Plan,
  options: BuildOptions,
  scaleDown: boolean,
  suffix: () => string,
): string | undefined {
  const name = group.groupName ?? '';
  const n = hosts(group);
  const replicas = new Map<string, RayPodView[]>();
  for (const p of groupPods) {
    const r = labelOf(p, RAY_WORKER_REPLICA_NAME_LABEL);
    if (r !== undefined) replicas.set(r, [...(replicas.get(r) ?? []), p]);
  }
  const dropReplica = (r: string, why: string) => {
    for (const p of replicas.get(r) ?? []) out.actions.push(del(p, name, 'worker', why));
    replicas.delete(r);
  };
  // An incomplete replica (a host pod deleted from outside) goes as a whole.
  const incomplete = [...replicas].filter(([, ps]) => ps.length < n).map(([r]) => r);
  for (const r of incomplete) dropReplica(r, `multi-host replica ${r} is incomplete`);
  if (incomplete.length > 0) return `cleaned up incomplete replica groups ${incomplete.join(', ')}`;
  for (const [r, ps] of [...replicas]) {
    const bad = ps.find((p) => !terminating(p) && shouldDeletePod(p));
    if (bad) dropReplica(r, shouldDeletePod(bad)!);
  }
  const toDelete = new Set(group.scaleStrategy?.workersToDelete ?? []);
  const listed = [...replicas].filter(([, ps]) => ps.some((p) => toDelete.has(p.metadata.name ?? ''))).map(([r]) => r);
  for (const r of listed) dropReplica(r, 'listed in scaleStrategy.workersToDelete');
  if (listed.length > 0) return `deleted replica groups ${listed.join(', ')} listed in scaleStrategy.workersToDelete`;
  const want = desiredReplicas(group) / n;
  const diff = want - replicas.size;
  if (diff > 0) {
    const used = new Set(
      [...replicas.values()].map((ps) => Number(labelOf(ps[0]!, RAY_WORKER_REPLICA_INDEX_LABEL))).filter(Number.isInteger),
    );
    for (const replicaIndex of freeIndices(used, diff)) {
      const replicaName = `${name}-${suffix()}`;
      for (let hostIndex = 0; hostIndex < n; hostIndex++)
        out.actions.push({
          kind: 'createPod',
          group: name,
          nodeType: 'worker',
          pod: buildWorkerPod(cluster, group, { replicaIndex, replicaName, hostIndex }, options),
        });
    }
  } else if (diff < 0 && scaleDown) {
    const order = [...replicas.keys()].sort(
      (a, b) =>
        Number(labelOf(replicas.get(b)![0]!, RAY_WORKER_REPLICA_INDEX_LABEL)) -
        Number(labelOf(replicas.get(a)![0]!, RAY_WORKER_REPLICA_INDEX_LABEL)),
    );
    for (const r of order.slice(0, -diff)) dropReplica(r, `scaling group ${name} down to ${want} replicas`);
  }
  return undefined;
}
