// In-tree autoscaling as KubeRay v1.6.2 wires it (ray-operator/controllers/ray/common/pod.go
// DefaultHeadPodTemplate / BuildAutoscalerContainer / mergeAutoscalerOverrides, common/rbac.go,
// raycluster_controller.go reconcileAutoscalerServiceAccount / Role / RoleBinding). Pure: a RayCluster in,
// the autoscaler container and the ServiceAccount / Role / RoleBinding bodies out.
//
// The autoscaler (`ray kuberay-autoscaler`, in the head pod) reads the RayCluster, then writes
// spec.workerGroupSpecs[].replicas and scaleStrategy.workersToDelete; the operator creates and deletes
// the pods. Which version runs, the idle timeouts and upscalingMode are read by the autoscaler from the
// RayCluster itself; the operator only sets RAY_enable_autoscaler_v2 and restartPolicy Never for v2.
import type { Container, EnvVar, OwnerReference, PodSpec, Role, RoleBinding, ServiceAccount, VolumeMount } from '../../kube/model.ts';
import { APP_CREATED_BY_LABEL, APP_NAME_LABEL, RAY_CLUSTER_LABEL } from '../names.ts';
import type { RayCluster } from '../types.ts';
import { APP_NAME, checkName, CREATED_BY } from './names.ts';
import { isTokenAuth, withTokenAuthEnv } from './auth.ts';
import { ENV_ENABLE_AUTOSCALER_V2, isAutoscalingEnabled, isAutoscalingV2Enabled } from './validation.ts';

export const AUTOSCALER_CONTAINER_NAME = 'autoscaler';
export const RAY_LOG_VOLUME_NAME = 'ray-logs';
export const RAY_LOG_VOLUME_MOUNT_PATH = '/tmp/ray';
export const AUTOSCALER_COMMAND = 'ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) --cluster-namespace $(RAY_CLUSTER_NAMESPACE)';
/** The operator's ENABLE_RANDOM_POD_DELETE: with autoscaling, replicas going down deletes pods it picks. */
export const ENABLE_RANDOM_POD_DELETE_ENV = 'ENABLE_RANDOM_POD_DELETE';

export interface AutoscalerOptions {
  version?: string;
  image?: string;
  imagePullPolicy?: string;
  resources?: Container['resources'];
  env?: EnvVar[];
  envFrom?: Container['envFrom'];
  volumeMounts?: VolumeMount[];
  securityContext?: Record<string, unknown>;
  upscalingMode?: string;
  idleTimeoutSeconds?: number;
}

function autoscalerOptions(cluster: RayCluster): AutoscalerOptions | undefined {
  const o = (cluster.spec as { autoscalerOptions?: unknown } | undefined)?.autoscalerOptions;
  return o && typeof o === 'object' ? (o as AutoscalerOptions) : undefined;
}

/** GetHeadGroupServiceAccountName: the head template's serviceAccountName, else the cluster's name. */
export function headServiceAccountName(cluster: RayCluster): string {
  const sa = (cluster.spec?.headGroupSpec as { template?: { spec?: PodSpec } } | undefined)?.template?.spec?.serviceAccountName;
  return typeof sa === 'string' && sa !== '' ? sa : (cluster.metadata.name ?? '');
}

/** The user named the head's ServiceAccount: KubeRay then never creates it (it must exist). */
export function userServiceAccount(cluster: RayCluster): boolean {
  const sa = (cluster.spec?.headGroupSpec as { template?: { spec?: PodSpec } } | undefined)?.template?.spec?.serviceAccountName;
  return typeof sa === 'string' && sa !== '' && sa === headServiceAccountName(cluster);
}

function fieldRef(name: string, fieldPath: string): EnvVar {
  return { name, valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath } } };
}

/** BuildAutoscalerContainer + mergeAutoscalerOverrides. */
export function buildAutoscalerContainer(cluster: RayCluster, rayImage: string | undefined): Container {
  const c: Container = {
    name: AUTOSCALER_CONTAINER_NAME,
    ...(rayImage !== undefined ? { image: rayImage } : {}),
    imagePullPolicy: 'IfNotPresent',
    env: [
      fieldRef('RAY_CLUSTER_NAME', `metadata.labels['${RAY_CLUSTER_LABEL}']`),
      fieldRef('RAY_CLUSTER_NAMESPACE', 'metadata.namespace'),
      fieldRef('RAY_HEAD_POD_NAME', 'metadata.name'),
      { name: 'KUBERAY_CRD_VER', value: 'v1' },
    ],
    command: ['/bin/bash', '-c', '--'],
    args: [AUTOSCALER_COMMAND],
    resources: { limits: { cpu: '500m', memory: '512Mi' }, requests: { cpu: '500m', memory: '512Mi' } },
  };
  // Token auth before the user's overrides, as KubeRay (the autoscaler talks to the authenticated GCS).
  if (isTokenAuth(cluster)) c.env = withTokenAuthEnv(cluster, c.env);
  const o = autoscalerOptions(cluster);
  if (!o) return c;
  if (o.resources) c.resources = structuredClone(o.resources);
  if (typeof o.image === 'string') c.image = o.image;
  if (typeof o.imagePullPolicy === 'string') c.imagePullPolicy = o.imagePullPolicy;
  if (Array.isArray(o.env) && o.env.length > 0) c.env = [...(c.env ?? []), ...structuredClone(o.env)];
  if (Array.isArray(o.envFrom) && o.envFrom.length > 0) c.envFrom = structuredClone(o.envFrom);
  if (Array.isArray(o.volumeMounts) && o.volumeMounts.length > 0) c.volumeMounts = structuredClone(o.volumeMounts);
  if (o.securityContext) c.securityContext = structuredClone(o.securityContext);
  return c;
}

/**
 * What DefaultHeadPodTemplate does to the head template with autoscaling on (before GCS FT): no monitor
 * in `ray start`, the ServiceAccount, the autoscaler container appended, and for v2 the env on the Ray
 * container and restartPolicy Never.
 */
export function addAutoscalerToHead(cluster: RayCluster, spec: PodSpec, params: Record<string, string>, rayEnv: EnvVar[]): void {
  if (!isAutoscalingEnabled(cluster.spec)) return;
  params['no-monitor'] = 'true';
  spec.serviceAccountName = checkName(headServiceAccountName(cluster));
  spec.containers.push(buildAutoscalerContainer(cluster, spec.containers[0]?.image));
  if (isAutoscalingV2Enabled(cluster.spec)) {
    rayEnv.push({ name: ENV_ENABLE_AUTOSCALER_V2, value: 'true' });
    spec.restartPolicy = 'Never';
  }
}

/** DefaultWorkerPodTemplate: autoscaler v2 workers never restart in place. */
export function addAutoscalerToWorker(cluster: RayCluster, spec: PodSpec): void {
  if (isAutoscalingEnabled(cluster.spec) && isAutoscalingV2Enabled(cluster.spec)) spec.restartPolicy = 'Never';
}

/** BuildPod: the Ray container and the autoscaler share /tmp/ray (the autoscaler's events reach the head's logs). */
export function addRayLogVolume(spec: PodSpec): void {
  const autoscaler = spec.containers.find((c) => c.name === AUTOSCALER_CONTAINER_NAME);
  if (!autoscaler) return;
  for (const c of [spec.containers[0]!, autoscaler]) {
    if ((c.volumeMounts ?? []).some((m) => m.mountPath === RAY_LOG_VOLUME_MOUNT_PATH)) continue;
    if (!(spec.volumes ?? []).some((v) => v.name === RAY_LOG_VOLUME_NAME))
      spec.volumes = [...(spec.volumes ?? []), { name: RAY_LOG_VOLUME_NAME, emptyDir: {} }];
    c.volumeMounts = [...(c.volumeMounts ?? []), { name: RAY_LOG_VOLUME_NAME, mountPath: RAY_LOG_VOLUME_MOUNT_PATH, readOnly: false }];
  }
}

// ---- the autoscaler's RBAC (common/rbac.go) ----

/** The rules of KubeRay's per-cluster Role, in its order. The controller must hold each of them. */
export const AUTOSCALER_ROLE_RULES = [
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'patch'] },
  { apiGroups: [''], resources: ['pods/resize'], verbs: ['patch'] },
  { apiGroups: ['ray.io'], resources: ['rayclusters'], verbs: ['get', 'patch'] },
];

/** KubeRay's labels on the three objects; app.kubernetes.io/created-by says raykeeper, as on our pods. */
function rbacLabels(cluster: RayCluster): Record<string, string> {
  return {
    [RAY_CLUSTER_LABEL]: cluster.metadata.name ?? '',
    [APP_NAME_LABEL]: APP_NAME,
    [APP_CREATED_BY_LABEL]: CREATED_BY,
  };
}

export interface AutoscalerRbacObject {
  kind: 'ServiceAccount' | 'Role' | 'RoleBinding';
  /** The name KubeRay looks the object up by (before CheckName): found means nothing is created. */
  lookupName: string;
  body: ServiceAccount | Role | RoleBinding;
}

/**
 * What reconcileAutoscalerServiceAccount / Role / RoleBinding create when the object is absent, in
 * KubeRay's order. `serviceAccountMissing`: the user named a ServiceAccount on the head template; KubeRay
 * never creates it, and reports it missing (event AutoscalerServiceAccountNotFound) instead.
 */
export function autoscalerRbac(cluster: RayCluster, owner: OwnerReference): AutoscalerRbacObject[] {
  if (!isAutoscalingEnabled(cluster.spec)) return [];
  const name = cluster.metadata.name ?? '';
  const namespace = cluster.metadata.namespace;
  const meta = (n: string) => ({ name: checkName(n), namespace, labels: rbacLabels(cluster), ownerReferences: [owner] });
  const sa = headServiceAccountName(cluster);
  return [
    { kind: 'ServiceAccount', lookupName: sa, body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(sa) } },
    {
      kind: 'Role',
      lookupName: name,
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: meta(name),
        rules: structuredClone(AUTOSCALER_ROLE_RULES),
      },
    },
    {
      kind: 'RoleBinding',
      lookupName: name,
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: meta(name),
        subjects: [{ kind: 'ServiceAccount', name: checkName(sa), namespace }],
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: checkName(name) },
      },
    },
  ];
}
