// RayCluster status as KubeRay v1.6 computes it (raycluster_controller.go calculateStatus, with the
// RayClusterStatusConditions gate on, its default), from the cluster and the pods / Services seen.
// Pure: the reconciler writes the result through /status only when rayClusterStatusChanged() says so.
import type { RayPodView } from './pod-view.ts';
import { NODE_TYPE_HEAD, NODE_TYPE_WORKER, RAY_NODE_TYPE_LABEL } from '../names.ts';
import type { RayCluster } from '../types.ts';
import type { Service } from '../../kube/model.ts';
import { workerGroups, type WorkerGroupSpec } from './groups.ts';
import { headServiceLabels } from './service.ts';

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message?: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

export interface RayClusterStatus {
  state?: string;
  reason?: string;
  observedGeneration?: number;
  lastUpdateTime?: string;
  stateTransitionTimes?: Record<string, string>;
  desiredWorkerReplicas?: number;
  availableWorkerReplicas?: number;
  readyWorkerReplicas?: number;
  minWorkerReplicas?: number;
  maxWorkerReplicas?: number;
  endpoints?: Record<string, string>;
  head?: { podIP?: string; podName?: string; serviceIP?: string; serviceName?: string };
  conditions?: Condition[];
  [key: string]: unknown;
}

export const COND_HEAD_POD_READY = 'HeadPodReady';
export const COND_PROVISIONED = 'RayClusterProvisioned';
export const COND_SUSPENDING = 'RayClusterSuspending';
export const COND_SUSPENDED = 'RayClusterSuspended';
export const COND_REPLICA_FAILURE = 'ReplicaFailure';
/** Ours: spec fields raykeeper does not implement (see unsupportedFields in ./desired.ts). */
export const COND_UNSUPPORTED = 'raykeeper.io/UnsupportedFields';

const MAX_INT32 = 2147483647;

/** GetWorkerGroupDesiredReplicas: replicas clamped to [min, max] (absent: min), times numOfHosts; 0 when suspended. */
export function desiredReplicas(g: WorkerGroupSpec): number {
  if (g.suspend === true) return 0;
  const min = g.minReplicas ?? 0;
  const max = g.maxReplicas ?? MAX_INT32;
  let r: number;
  if (g.replicas === undefined || g.replicas === null || g.replicas < min) r = min;
  else if (g.replicas > max) r = max;
  else r = g.replicas;
  return r * hosts(g);
}

/** numOfHosts, at least 1 (an absent or 0 value must not delete every worker). */
export function hosts(g: WorkerGroupSpec): number {
  const n = g.numOfHosts;
  return typeof n === 'number' && n > 1 ? Math.floor(n) : 1;
}

function isType(p: RayPodView, type: string): boolean {
  return p.metadata.labels?.[RAY_NODE_TYPE_LABEL] === type;
}

/** IsRunningAndReady. */
export function isRunningAndReady(p: RayPodView): boolean {
  return p.status?.phase === 'Running' && (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/** CheckAllPodsRunning: at least one pod, all Running, none with Ready != True. */
export function allPodsRunning(pods: RayPodView[]): boolean {
  if (pods.length === 0) return false;
  return pods.every(
    (p) => p.status?.phase === 'Running' && !(p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status !== 'True'),
  );
}

/** meta.SetStatusCondition: lastTransitionTime changes only with the status. */
export function setCondition(conditions: Condition[], c: Condition, now: string): void {
  const i = conditions.findIndex((x) => x.type === c.type);
  if (i < 0) {
    conditions.push({ ...c, lastTransitionTime: c.lastTransitionTime ?? now });
    return;
  }
  const old = conditions[i]!;
  const next: Condition = { ...old, reason: c.reason, status: c.status };
  if (c.message !== undefined) next.message = c.message;
  else delete next.message;
  if (c.observedGeneration !== undefined) next.observedGeneration = c.observedGeneration;
  if (old.status !== c.status) next.lastTransitionTime = now;
  conditions[i] = next;
}

export function removeCondition(conditions: Condition[], type: string): Condition[] {
  return conditions.filter((c) => c.type !== type);
}

export function conditionTrue(conditions: Condition[] | undefined, type: string): boolean {
  return (conditions ?? []).some((c) => c.type === type && c.status === 'True');
}

/** FindRayClusterSuspendStatus. */
export function suspendStatus(status: RayClusterStatus | undefined): 'Suspending' | 'Suspended' | '' {
  for (const c of status?.conditions ?? []) {
    if (c.status !== 'True') continue;
    if (c.type === COND_SUSPENDING) return 'Suspending';
    if (c.type === COND_SUSPENDED) return 'Suspended';
  }
  return '';
}

/** FindHeadPodReadyCondition. */
function headPodReady(head: RayPodView | undefined): Condition {
  if (!head) return { type: COND_HEAD_POD_READY, status: 'False', reason: 'HeadPodNotFound', message: 'Head Pod not found' };
  const c: Condition = { type: COND_HEAD_POD_READY, status: 'False', reason: 'Unknown' };
  const ready = (head.status?.conditions ?? []).find((x) => x.type === 'Ready');
  if (ready) {
    c.status = ready.status === 'True' ? 'True' : ready.status === 'Unknown' ? 'Unknown' : 'False';
    c.message = ready.message ?? '';
    let reason = ready.reason ?? '';
    if (ready.status === 'True' && reason === '') reason = 'HeadPodRunningAndReady';
    if (reason !== '') c.reason = reason;
    if (reason === 'ContainersNotReady') {
      for (const s of head.status?.containerStatuses ?? []) {
        const st = s.state?.waiting ?? s.state?.terminated;
        if (!st) continue;
        c.message = `${c.message ? `${c.message}; ` : ''}${s.name}: ${st.message ?? ''}`;
        c.reason = st.reason ?? c.reason;
        break;
      }
    }
  }
  if (c.message === '') delete c.message;
  return c;
}

export interface StatusInput {
  cluster: RayCluster;
  /** The cluster's pods (ray.io/cluster=<name>), terminating ones included. */
  pods: RayPodView[];
  /** The cluster's Services (the head Service is found by its labels). */
  services: Service[];
  /** Why the last reconcile failed (KubeRay's ReplicaFailure reasons), if it did. */
  failure?: { reason: string; message: string } | undefined;
  /** Fields raykeeper does not implement (condition raykeeper.io/UnsupportedFields). */
  unsupported?: { refused: boolean; message: string } | undefined;
  now: number;
}

function headServiceOf(cluster: RayCluster, services: Service[]): Service[] {
  const want = headServiceLabels(cluster);
  const keys = ['ray.io/cluster', 'ray.io/node-type', 'ray.io/identifier'];
  return services.filter((s) => keys.every((k) => s.metadata.labels?.[k] === want[k]));
}

/** The new status (a copy; the input is not changed). */
export function computeStatus(input: StatusInput): RayClusterStatus {
  const { cluster, pods, services } = input;
  const old = (cluster.status ?? {}) as RayClusterStatus;
  const s: RayClusterStatus = structuredClone(old);
  const now = new Date(input.now).toISOString().replace(/\.\d{3}Z$/, 'Z');
  let conditions: Condition[] = [...(s.conditions ?? [])];
  if (input.failure)
    setCondition(
      conditions,
      { type: COND_REPLICA_FAILURE, status: 'True', reason: input.failure.reason, message: input.failure.message },
      now,
    );
  else conditions = removeCondition(conditions, COND_REPLICA_FAILURE);
  if (input.unsupported)
    setCondition(
      conditions,
      {
        type: COND_UNSUPPORTED,
        status: 'True',
        reason: input.unsupported.refused ? 'Refused' : 'Ignored',
        message: input.unsupported.message,
      },
      now,
    );
  else conditions = removeCondition(conditions, COND_UNSUPPORTED);

  if (cluster.metadata.generation !== undefined) s.observedGeneration = cluster.metadata.generation;
  const groups = workerGroups(cluster);
  const workers = pods.filter((p) => isType(p, NODE_TYPE_WORKER));
  s.readyWorkerReplicas = workers.filter(isRunningAndReady).length;
  s.availableWorkerReplicas = workers.filter((p) => p.status?.phase === 'Running').length;
  s.desiredWorkerReplicas = groups.reduce((n, g) => n + desiredReplicas(g), 0);
  s.minWorkerReplicas = groups.reduce((n, g) => (g.suspend === true ? n : n + (g.minReplicas ?? 0) * hosts(g)), 0);
  s.maxWorkerReplicas = Math.min(
    MAX_INT32,
    groups.reduce((n, g) => (g.suspend === true ? n : n + (g.maxReplicas ?? MAX_INT32) * hosts(g)), 0),
  );

  if (!input.failure && pods.length === s.desiredWorkerReplicas + 1 && allPodsRunning(pods)) {
    s.state = 'ready';
    s.reason = '';
  }
  const head = pods.find((p) => isType(p, NODE_TYPE_HEAD));
  setCondition(conditions, headPodReady(head), now);
  const suspend = suspendStatus({ conditions });
  if (!conditionTrue(conditions, COND_PROVISIONED) && suspend !== 'Suspended') {
    if (allPodsRunning(pods))
      setCondition(
        conditions,
        {
          type: COND_PROVISIONED,
          status: 'True',
          reason: 'AllPodRunningAndReadyFirstTime',
          message: 'All Ray Pods are ready for the first time',
        },
        now,
      );
    else
      setCondition(
        conditions,
        {
          type: COND_PROVISIONED,
          status: 'False',
          reason: 'RayClusterPodsProvisioning',
          message: 'RayCluster Pods are being provisioned for first time',
        },
        now,
      );
  }
  const wantSuspend = cluster.spec?.suspend === true;
  if (suspend === 'Suspending') {
    if (pods.length === 0) {
      setCondition(
        conditions,
        { type: COND_PROVISIONED, status: 'False', reason: 'RayClusterPodsProvisioning', message: 'RayCluster has been suspended' },
        now,
      );
      setCondition(conditions, { type: COND_SUSPENDING, status: 'False', reason: COND_SUSPENDING }, now);
      setCondition(conditions, { type: COND_SUSPENDED, status: 'True', reason: COND_SUSPENDED }, now);
    }
  } else if (suspend === 'Suspended') {
    if (!wantSuspend) setCondition(conditions, { type: COND_SUSPENDED, status: 'False', reason: COND_SUSPENDED }, now);
  } else {
    setCondition(conditions, { type: COND_SUSPENDED, status: 'False', reason: COND_SUSPENDED }, now);
    setCondition(conditions, { type: COND_SUSPENDING, status: wantSuspend ? 'True' : 'False', reason: COND_SUSPENDING }, now);
  }
  if (wantSuspend && pods.length === 0) s.state = 'suspended';

  // updateEndpoints: the head Service's port names -> nodePort, else targetPort.
  const headSvc = headServiceOf(cluster, services);
  if (headSvc.length > 0) {
    const endpoints: Record<string, string> = { ...(s.endpoints ?? {}) };
    for (const p of headSvc[0]!.spec?.ports ?? []) {
      if (!p.name) continue;
      if (p.nodePort) endpoints[p.name] = String(p.nodePort);
      else if (typeof p.targetPort === 'number' && p.targetPort !== 0) endpoints[p.name] = String(p.targetPort);
      else if (typeof p.targetPort === 'string' && p.targetPort !== '') endpoints[p.name] = p.targetPort;
    }
    s.endpoints = endpoints;
  }
  // updateHeadInfo.
  const headInfo: NonNullable<RayClusterStatus['head']> = { ...(s.head ?? {}) };
  headInfo.podIP = head?.status?.podIP ?? '';
  headInfo.podName = head?.metadata.name ?? '';
  if (headSvc.length === 1) {
    const svc = headSvc[0]!;
    headInfo.serviceIP = svc.spec?.clusterIP === 'None' ? (head?.status?.podIP ?? '') : (svc.spec?.clusterIP ?? '');
    headInfo.serviceName = svc.metadata.name ?? '';
  }
  s.head = dropEmpty(headInfo);
  // metav1.Condition's message is required (KubeRay's CRD refuses a status without it); Go writes "".
  s.conditions = conditions.map((c) => ({ ...c, message: c.message ?? '' }));
  if (old.state !== s.state && s.state !== undefined) s.stateTransitionTimes = { ...(s.stateTransitionTimes ?? {}), [s.state]: now };
  if (rayClusterStatusChanged(old, s)) s.lastUpdateTime = now;
  return s;
}

function dropEmpty<T extends Record<string, string | undefined>>(o: T): T {
  const out = {} as T;
  for (const [k, v] of Object.entries(o)) if (v !== undefined && v !== '') (out as Record<string, string>)[k] = v;
  return out;
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

/** InconsistentRayClusterStatus (+ observedGeneration): whether the status must be written. */
export function rayClusterStatusChanged(a: RayClusterStatus, b: RayClusterStatus): boolean {
  if ((a.state ?? '') !== (b.state ?? '') || (a.reason ?? '') !== (b.reason ?? '')) return true;
  for (const k of [
    'readyWorkerReplicas',
    'availableWorkerReplicas',
    'desiredWorkerReplicas',
    'minWorkerReplicas',
    'maxWorkerReplicas',
    'observedGeneration',
  ] as const) {
    if ((a[k] ?? 0) !== (b[k] ?? 0)) return true;
  }
  if (!same(sortKeys(a.endpoints), sortKeys(b.endpoints)) || !same(sortKeys(a.head), sortKeys(b.head))) return true;
  return !same((a.conditions ?? []).map(sortKeys), (b.conditions ?? []).map(sortKeys));
}

function sortKeys(o: object | undefined): Record<string, unknown> | undefined {
  if (!o) return undefined;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(o).sort()) out[k] = (o as Record<string, unknown>)[k];
  return out;
}
