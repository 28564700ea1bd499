// The one RayCluster informer both RayCluster reconcilers read (the GCS-FT cleanup in ./reconciler.ts,
// the pod/Service operator in ./operator.ts): asking the factory with the same spec returns the same
// cache, so the clusters are listed and watched once. Without the operator, the cache keeps only what
// the cleanup reads from it (a sixth of the memory at 10,000 clusters, bench/controller.ts).
import { MODULE } from '../module-names.ts';
import { runsModule, type ControllerContext } from '../../kube/reconciler.ts';
import type { Informer } from '../../kube/informer.ts';
import type { KubeObject } from '../../kube/model.ts';
import { RAYCLUSTERS } from '../../kube/resources.ts';
import type { RayCluster } from '../../src/types.ts';

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * What the RayCluster cache keeps: the object without metadata.managedFields and without kubectl's
 * last-applied copy of itself (the biggest things in a cached RayCluster). Spec and status stay: the
 * operator builds pods from the spec and compares the status it would write with the stored one.
 */
export function slimRayCluster(obj: KubeObject): KubeObject {
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
 * deleting cluster is always read from the API (./reconciler.ts).
 */
export function ftRayCluster(obj: KubeObject): KubeObject {
  const spec = (obj.spec ?? {}) as Record<string, unknown>;
  const kept: Record<string, unknown> = {};
  for (const field of ['gcsFaultToleranceOptions', 'managedBy']) if (spec[field] !== undefined) kept[field] = spec[field];
  return { apiVersion: obj.apiVersion, kind: obj.kind, metadata: slimRayCluster(obj).metadata, spec: kept };
}

/**
 * The operator's RayCluster cache (every cluster, spec and status) when the operator runs in this process
 * (or nobody said), else undefined. The RayJob reconciler reads its clusters from it too.
 */
export function operatorRayClusterInformer(ctx: ControllerContext): Informer<RayCluster> | undefined {
  if (!runsModule(ctx, MODULE.rayClusterPods)) return undefined;
  return ctx.informers.get<RayCluster>({ ...RAYCLUSTERS, transform: slimRayCluster, transformId: 'raycluster' });
}

/** The shared RayCluster informer: the operator's full one when it runs (or nobody said), else the FT projection. */
export function rayClusterInformer(ctx: ControllerContext): Informer<RayCluster> {
  return (
    operatorRayClusterInformer(ctx) ??
    ctx.informers.get<RayCluster>({ ...RAYCLUSTERS, transform: ftRayCluster, transformId: 'raycluster-ft' })
  );
}
