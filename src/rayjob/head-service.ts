// The RayJob's own head Service, `<rayjob>-head-svc`, beside its RayCluster's head Service (KubeRay v1.6.2
// common/job.go BuildHeadServiceForRayJob, created by rayjob_controller.go reconcileServices): users' clients
// address the RayJob's name, which stays the same across the clusters of its attempts. Its spec is the
// cluster's head Service's (selector, ports, type, headless); its name, labels and owner are the RayJob's.
// KubeRay makes it while Running, never with a clusterSelector, and moves its selector to the new cluster
// after a retry; the garbage collector removes it with the RayJob. Pure.
import { NODE_TYPE_HEAD, RAY_CLUSTER_LABEL, RAY_IDENTIFIER_LABEL, RAY_NODE_TYPE_LABEL } from '../names.ts';
import type { RayCluster, RayJob } from '../types.ts';
import type { Service } from '../../kube/model.ts';
import { buildHeadService } from '../raycluster/service.ts';
import { checkLabel } from '../raycluster/names.ts';
import { headGroup } from '../raycluster/groups.ts';
import { ORIGINATED_FROM_CRD_LABEL, ORIGINATED_FROM_CRD_RAYJOB, ORIGINATED_FROM_CR_NAME_LABEL } from './constants.ts';
import { ownerReferenceTo } from './builders.ts';
import { defaultHeadServiceName } from './ids.ts';

/** utils.GenerateHeadServiceName(RayJobCRD, ...): `<rayjob>-head-svc`. */
export function rayJobHeadServiceName(job: RayJob): string {
  return defaultHeadServiceName(job.metadata.name ?? '');
}

/**
 * The Service for `job` on `cluster`. The selector is the cluster's head Service's, so both always reach
 * the same head pod (KubeRay's ignores an app.kubernetes.io/name label on the head template and then
 * selects nothing); annotations are only a custom headService's (KubeRay does not copy
 * headServiceAnnotations here).
 */
export function buildRayJobHeadService(job: RayJob, cluster: RayCluster): Service {
  const base = buildHeadService(cluster);
  const name = job.metadata.name ?? '';
  const annotations = headGroup(cluster).headService?.metadata?.annotations as Record<string, string> | undefined;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: rayJobHeadServiceName(job),
      namespace: job.metadata.namespace,
      labels: {
        [ORIGINATED_FROM_CR_NAME_LABEL]: name,
        [ORIGINATED_FROM_CRD_LABEL]: ORIGINATED_FROM_CRD_RAYJOB,
        [RAY_NODE_TYPE_LABEL]: NODE_TYPE_HEAD,
        [RAY_IDENTIFIER_LABEL]: checkLabel(`${name}-${NODE_TYPE_HEAD}`),
      },
      ...(annotations && Object.keys(annotations).length > 0 ? { annotations: { ...annotations } } : {}),
      ownerReferences: [ownerReferenceTo(job)],
    },
    spec: structuredClone(base.spec ?? {}),
  };
}

/** What a Running pass does about the RayJob's head Service (KubeRay's reconcileServices). */
export type HeadServiceChoice =
  | { kind: 'create'; service: Service }
  /** The stored Service with this attempt's spec, its clusterIP kept (immutable), at the resourceVersion read. */
  | { kind: 'update'; service: Service }
  /** It selects this attempt's cluster already: KubeRay updates only when the cluster switches. */
  | { kind: 'keep' }
  /** A Service of that name this RayJob does not own (KubeRay would take it over): left alone. */
  | { kind: 'foreign' };

export function chooseHeadService(job: RayJob, cluster: RayCluster, stored: Service | null): HeadServiceChoice {
  const desired = buildRayJobHeadService(job, cluster);
  if (stored === null) return { kind: 'create', service: desired };
  if (!(stored.metadata.ownerReferences ?? []).some((o) => o.uid === job.metadata.uid)) return { kind: 'foreign' };
  if (headServiceCluster(stored) === headServiceCluster(desired)) return { kind: 'keep' };
  const spec: NonNullable<Service['spec']> = { ...desired.spec };
  if (stored.spec?.clusterIP !== undefined) spec.clusterIP = stored.spec.clusterIP;
  if (stored.spec?.['clusterIPs'] !== undefined) spec['clusterIPs'] = stored.spec['clusterIPs'];
  return { kind: 'update', service: { ...stored, spec } };
}

/** The RayCluster a RayJob head Service selects (its selector's ray.io/cluster). */
export function headServiceCluster(service: Service): string | undefined {
  return service.spec?.selector?.[RAY_CLUSTER_LABEL];
}
