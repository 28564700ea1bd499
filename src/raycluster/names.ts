// The names, identities and well-known ports of a RayCluster's children, as KubeRay v1.6.2 keeps them in
// ray-operator/controllers/ray/utils (util.go PodName / CheckName / CheckLabel / GenerateHeadServiceName /
// GenerateFQDNServiceName, constant.go): what pods.ts, service.ts, auth.ts and autoscaler.ts all name
// things with. Imports nothing of this folder but ./groups.ts, so none of those modules imports another
// just for a name (test/ci/no-import-cycles.test.ts holds src/ to no import circle).
//
// Pod names, as KubeRay by default (ENABLE_DETERMINISTIC_HEAD_POD_NAME unset): the head is created with
// generateName `<cluster[:50]>-head-` and each worker with `<cluster-group[:50]>-worker-`, lowercased; the
// API server appends five random characters. A fresh name for every head means a re-created head never
// waits for its predecessor's name to be free; the expectations (./expectations.ts) keep a lagging cache
// from making a second one.
import { RAY_API_VERSION, RAY_ORIGINATED_FROM_CRD_LABEL } from '../names.ts';
import type { OwnerReference } from '../../kube/model.ts';
import { controllerReference } from '../../kube/owner.ts';
import type { RayCluster } from '../types.ts';
import { headGroup } from './groups.ts';

export type NodeType = 'head' | 'worker';

export const DEFAULT_GCS_PORT = 6379;
export const DEFAULT_CLIENT_PORT = 10001;
export const DEFAULT_DASHBOARD_PORT = 8265;
export const DEFAULT_METRICS_PORT = 8080;
export const DEFAULT_SERVE_PORT = 8000;
export const DEFAULT_DASHBOARD_AGENT_LISTEN_PORT = 52365;
/** KubeRay's app.kubernetes.io/name on Ray pods and the head Service (dashboards select on it). */
export const APP_NAME = 'kuberay';
/** Ours in app.kubernetes.io/created-by (KubeRay writes kuberay-operator). */
export const CREATED_BY = 'raykeeper';

const PUNCT = /^[!-/:-@[-`{-~]/;

/** CheckLabel: at most 63 characters (the END is kept), a leading punctuation becomes 'r'. */
export function checkLabel(s: string): string {
  let v = s.length > 63 ? s.slice(s.length - 63) : s;
  if (v !== '' && PUNCT.test(v)) v = `r${v.slice(1)}`;
  return v;
}

/**
 * utils.CheckName: at most 50 characters (the end is kept), a leading digit or punctuation becomes 'r'.
 * Names of the autoscaler's ServiceAccount, Role and RoleBinding, the head pod's serviceAccountName and
 * the generated auth Secret.
 */
export function checkName(s: string): string {
  let v = s.length > 50 ? s.slice(s.length - 50) : s;
  if (/^[0-9!"#%&'()*,\-./:;?@[\\\]_{}]/.test(v)) v = `r${v.slice(1)}`;
  return v;
}

/** PodName: `<prefix[:50]>-<type>` lowercased, with a trailing '-' when it is a generateName. */
export function podName(prefix: string, nodeType: NodeType, generate: boolean): string {
  return `${prefix.slice(0, 50)}-${nodeType}`.toLowerCase() + (generate ? '-' : '');
}

/** generateName of the head Pod: `<cluster>-head-` (KubeRay's default; the API server adds five characters). */
export function headPodGenerateName(cluster: RayCluster): string {
  return podName(cluster.metadata.name ?? '', 'head', true);
}

/** generateName of a worker Pod of `group`: `<cluster>-<group>-worker-`. */
export function workerPodGenerateName(cluster: RayCluster, group: string): string {
  return podName(`${cluster.metadata.name ?? ''}-${group}`, 'worker', true);
}

/** GenerateHeadServiceName: spec.headGroupSpec.headService.metadata.name, else `<cluster>-head-svc`. */
export function headServiceName(cluster: RayCluster): string {
  const custom = headGroup(cluster).headService?.metadata?.name;
  return typeof custom === 'string' && custom !== '' ? custom : `${cluster.metadata.name ?? ''}-head-svc`;
}

/** The head Service's fully qualified name (FQ_RAY_IP); `clusterDomain` is the operator's CLUSTER_DOMAIN. */
export function headServiceFqdn(cluster: RayCluster, options: { clusterDomain?: string | undefined } = {}): string {
  return `${headServiceName(cluster)}.${cluster.metadata.namespace ?? 'default'}.svc.${options.clusterDomain || 'cluster.local'}`;
}

/** GetHeadPort: the head's rayStartParams `port`, else 6379. */
export function headPort(cluster: RayCluster): string {
  return headGroup(cluster).rayStartParams?.port ?? String(DEFAULT_GCS_PORT);
}

/** The controller owner reference every child carries (SetControllerReference). */
export function ownerReference(cluster: RayCluster): OwnerReference {
  return controllerReference(RAY_API_VERSION, 'RayCluster', cluster.metadata);
}

/** KubeRay's creator CRD (label ray.io/originated-from-crd), RayCluster by default. */
export function creatorCrd(cluster: RayCluster): string {
  const v = cluster.metadata.labels?.[RAY_ORIGINATED_FROM_CRD_LABEL];
  return v === 'RayJob' || v === 'RayService' ? v : 'RayCluster';
}
