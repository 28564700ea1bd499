// The one RayCluster informer both RayCluster reconcilers read (the GCS-FT cleanup in ../gcsft-cleanup/reconciler.ts,
// the pod/Service operator in ./reconciler.ts): asking the factory with the same spec returns the same
// cache, so the clusters are listed and watched once. Without the operator, the cache keeps only what
// the cleanup reads from it (a sixth of the memory at 10,000 clusters, bench/controller.ts).
import { runsModule, type ControllerContext } from '../../kube/reconciler.ts';
import { slimMetadata, type Informer, type InformerFactory } from '../../kube/informer.ts';
import type { Pod } from '../../kube/model.ts';
import { PODS, type Projection } from '../../kube/resources.ts';
import { NODE_TYPE_HEAD, RAY_CLUSTER_LABEL, RAY_NODE_TYPE_LABEL } from '../../src/names.ts';
import { MODULE } from '../module-names.ts';
import { RAYCLUSTERS, type RayCluster, type RayClusterFtView } from '../../src/types.ts';
import { headRedisSettings } from '../../src/gcsft/redis-env.ts';
import { KUBERAY_VERSION_ANNOTATION, RECREATE_HASH_ANNOTATION } from '../../src/raycluster/upgrade.ts';
import type { RayPodView } from '../../src/raycluster/pod-view.ts';

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * What the RayCluster cache keeps: the object without metadata.managedFields and without kubectl's
 * last-applied copy of itself (the biggest things in a cached RayCluster). Spec and status stay: the
 * operator builds pods from the spec and compares the status it would write with the stored one.
 */
export function slimRayCluster(obj: RayCluster): RayCluster {
  const { managedFields: _m, ...metadata } = obj.metadata ?? {};
  const annotations = metadata.annotations;
  if (annotations && LAST_APPLIED in annotations) {
    const { [LAST_APPLIED]: _l, ...rest } = annotations;
    metadata.annotations = rest;
  }
  return { ...obj, metadata };
}

/**
 * What the GCS-FT cleanup reads from a cached RayCluster (src/gcsft/decide.ts for a cluster that is
 * not being deleted: its metadata, whether GCS FT is on and with which backend, spec.managedBy); a
 * deleting cluster is always read from the API (./reconciler.ts). And what the orphan finder reads: the
 * head's Redis settings only (its storage namespace, address and credential sources), no pod template.
 */
export function ftRayCluster(obj: RayCluster): RayClusterFtView {
  const spec = obj.spec ?? {};
  const kept: NonNullable<RayClusterFtView['spec']> = {};
  if (spec.gcsFaultToleranceOptions !== undefined) kept.gcsFaultToleranceOptions = spec.gcsFaultToleranceOptions;
  if (spec.managedBy !== undefined) kept.managedBy = spec.managedBy;
  const head = headRedisSettings(obj);
  if (head) kept.headGroupSpec = head;
  return { apiVersion: obj.apiVersion, kind: obj.kind, metadata: slimRayCluster(obj).metadata, spec: kept };
}

/** The operator's cache: whole clusters (less managedFields and kubectl's last-applied copy). */
export const SLIM_RAYCLUSTER: Projection<RayCluster, RayCluster> = { id: 'raycluster', transform: slimRayCluster };
/** The GCS-FT cleanup's and the orphan finder's cache when the operator does not run here. */
export const FT_RAYCLUSTER: Projection<RayCluster, RayClusterFtView> = { id: 'raycluster-ft', transform: ftRayCluster };

/** The operator's RayCluster cache: every cluster, spec and status. */
export function wholeRayClusterInformer(informers: InformerFactory): Informer<RayCluster> {
  return informers.get(RAYCLUSTERS, SLIM_RAYCLUSTER);
}

/**
 * The operator's RayCluster cache when the operator runs in this process (or nobody said), else undefined.
 * The RayJob reconciler reads its clusters from it too, and the GCS-FT cleanup builds its Job from it.
 */
export function operatorRayClusterInformer(ctx: ControllerContext): Informer<RayCluster> | undefined {
  return runsModule(ctx, MODULE.rayClusterPods) ? wholeRayClusterInformer(ctx.informers) : undefined;
}

/**
 * The shared RayCluster informer of what reads only GCS-FT fields (the cleanup, the orphan finder): the
 * operator's whole one when it runs (or nobody said), else the FT projection. Either way its type is the
 * FT view: a whole cluster is one.
 */
export function rayClusterInformer(ctx: ControllerContext): Informer<RayClusterFtView> {
  return operatorRayClusterInformer(ctx) ?? ctx.informers.get(RAYCLUSTERS, FT_RAYCLUSTER);
}

/** The pod annotations the plan reads: the head's upgrade stamp (src/raycluster/upgrade.ts). */
const KEPT_POD_ANNOTATIONS = [RECREATE_HASH_ANNOTATION, KUBERAY_VERSION_ANNOTATION];

/**
 * Pods: what the plan and the status read (name, labels, owner, deletion, the upgrade stamp, phase, readiness,
 * IP, every container's state), and the node (the GCS-FT cleanup's src/gcsft/decide.ts PodLite).
 */
export function slimPod(obj: Pod): RayPodView {
  const spec = obj.spec;
  const status = obj.status;
  const annotations = obj.metadata.annotations ?? {};
  const kept = KEPT_POD_ANNOTATIONS.filter((k) => typeof annotations[k] === 'string');
  return {
    metadata: {
      ...slimMetadata(obj),
      ...(kept.length > 0 ? { annotations: Object.fromEntries(kept.map((k) => [k, annotations[k]!])) } : {}),
    },
    spec: {
      restartPolicy: spec?.restartPolicy,
      nodeName: spec?.nodeName,
      containers: (spec?.containers ?? []).slice(0, 1).map((c) => ({ name: c.name })),
    },
    status: status
      ? { phase: status.phase, podIP: status.podIP, conditions: status.conditions, containerStatuses: status.containerStatuses }
      : undefined,
  };
}

/** The operator's pods (every pod labelled with a cluster), and the head pods alone without the operator. */
export const RAY_POD: Projection<Pod, RayPodView> = { id: 'raycluster-pod', transform: slimPod };
export const HEAD_POD: Projection<Pod, RayPodView> = { id: 'raycluster-head-pod', transform: slimPod };

/** The operator's pod cache: every pod labelled with a cluster (the RayJob's SidecarMode reads its head pods there too). */
export function rayPodInformer(informers: InformerFactory): Informer<RayPodView> {
  return informers.get({ ...PODS, labelSelector: RAY_CLUSTER_LABEL }, RAY_POD);
}

/**
 * The head pods the RayJob reconciler reads (SidecarMode's submitter container): the operator's pod
 * cache when the operator runs in this process (or nobody said), else head pods only.
 */
export function headPodInformer(ctx: ControllerContext): Informer<RayPodView> {
  if (operatorRayClusterInformer(ctx) !== undefined) return rayPodInformer(ctx.informers);
  return ctx.informers.get({ ...PODS, labelSelector: `${RAY_NODE_TYPE_LABEL}=${NODE_TYPE_HEAD}` }, HEAD_POD);
}
