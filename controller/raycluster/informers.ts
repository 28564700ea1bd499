// The one RayCluster informer both RayCluster reconcilers read (the GCS-FT cleanup in ./reconciler.ts,
// the pod/Service operator in ./operator.ts): asking the factory with the same spec returns the same
// cache, so the clusters are listed and watched once.
import type { ControllerContext } from '../runtime/reconciler.ts';
import type { Informer, KubeObject } from '../runtime/informer.ts';
import { RAYCLUSTERS } from '../../src/kube-resources.ts';

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * What the RayCluster cache keeps: the object without metadata.managedFields and without kubectl's
 * last-applied copy of itself (the biggest things in a cached RayCluster). Spec and status stay: the
 * operator builds pods from the spec and compares the status it would write with the stored one.
 */
export function slimRayCluster(obj: KubeObject): KubeObject {
  const { managedFields: _m, ...metadata } = (obj.metadata ?? {}) as Record<string, unknown>;
  const annotations = metadata.annotations as Record<string, string> | undefined;
  if (annotations && LAST_APPLIED in annotations) {
    const { [LAST_APPLIED]: _l, ...rest } = annotations;
    metadata.annotations = rest;
  }
  return { ...obj, metadata: metadata as KubeObject['metadata'] };
}

/** The shared RayCluster informer. */
export function rayClusterInformer(ctx: ControllerContext): Informer {
  return ctx.informers.get({ ...RAYCLUSTERS, transform: slimRayCluster, transformId: 'raycluster' });
}
