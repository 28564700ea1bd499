// The head group and the worker groups of a RayCluster spec as typed views (KubeRay's HeadGroupSpec /
// WorkerGroupSpec, apis/ray/v1/raycluster_types.go): only the fields the operator reads are named, the rest
// is kept as written. Pure accessors, no defaults applied.
import type { ObjectMeta, PodSpec } from '../../kube/model.ts';
import type { RayCluster } from '../types.ts';

export interface WorkerGroupSpec {
  groupName?: string;
  replicas?: number;
  minReplicas?: number;
  maxReplicas?: number;
  numOfHosts?: number;
  suspend?: boolean;
  idleTimeoutSeconds?: number;
  rayStartParams?: Record<string, string>;
  resources?: Record<string, string>;
  labels?: Record<string, string>;
  scaleStrategy?: { workersToDelete?: string[] };
  template?: { metadata?: ObjectMeta; spec?: PodSpec };
  [key: string]: unknown;
}

export interface HeadGroupSpec {
  rayStartParams?: Record<string, string>;
  resources?: Record<string, string>;
  labels?: Record<string, string>;
  serviceType?: string;
  headService?: { metadata?: ObjectMeta; spec?: Record<string, unknown> };
  template?: { metadata?: ObjectMeta; spec?: PodSpec };
  [key: string]: unknown;
}

export function headGroup(cluster: RayCluster): HeadGroupSpec {
  return (cluster.spec?.headGroupSpec ?? {}) as HeadGroupSpec;
}

export function workerGroups(cluster: RayCluster): WorkerGroupSpec[] {
  return (cluster.spec?.workerGroupSpecs ?? []) as WorkerGroupSpec[];
}
