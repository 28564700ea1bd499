// The head Service and the headless worker Service of a RayCluster, as KubeRay v1.6 builds them
// (common/service.go BuildServiceForHeadPod / BuildHeadlessServiceForRayCluster). Pure functions.
import {
  APP_CREATED_BY_LABEL,
  APP_NAME_LABEL,
  NODE_TYPE_HEAD,
  NODE_TYPE_WORKER,
  RAY_CLUSTER_LABEL,
  RAY_HEADLESS_WORKER_SVC_LABEL,
  RAY_IDENTIFIER_LABEL,
  RAY_NODE_TYPE_LABEL,
} from '../names.ts';
import type { RayCluster } from '../types.ts';
import type { Service, ServicePort } from '../../kube/model.ts';
import { headGroup, workerGroups } from './groups.ts';
import {
  APP_NAME,
  checkLabel,
  CREATED_BY,
  DEFAULT_CLIENT_PORT,
  DEFAULT_DASHBOARD_PORT,
  DEFAULT_GCS_PORT,
  DEFAULT_METRICS_PORT,
  DEFAULT_SERVE_PORT,
  headServiceName,
  ownerReference,
} from './names.ts';

/** HeadServiceLabels: also the head Service's selector and what finds it again. */
export function headServiceLabels(cluster: RayCluster): Record<string, string> {
  const name = cluster.metadata.name ?? '';
  return {
    [RAY_CLUSTER_LABEL]: name,
    [RAY_NODE_TYPE_LABEL]: NODE_TYPE_HEAD,
    [RAY_IDENTIFIER_LABEL]: checkLabel(`${name}-${NODE_TYPE_HEAD}`),
    [APP_NAME_LABEL]: APP_NAME,
    [APP_CREATED_BY_LABEL]: CREATED_BY,
  };
}

/** getServicePorts: the head container's ports (unnamed ones as `<port>-port`), else KubeRay's five; metrics always. */
export function headServicePorts(cluster: RayCluster): Map<string, number> {
  const ports = new Map<string, number>();
  for (const p of headGroup(cluster).template?.spec?.containers?.[0]?.ports ?? []) {
    if (typeof p?.containerPort !== 'number') continue;
    ports.set(p.name ? p.name : `${p.containerPort}-port`, p.containerPort);
  }
  if (ports.size === 0) {
    ports.set('client', DEFAULT_CLIENT_PORT);
    ports.set('gcs-server', DEFAULT_GCS_PORT);
    ports.set('dashboard', DEFAULT_DASHBOARD_PORT);
    ports.set('metrics', DEFAULT_METRICS_PORT);
    ports.set('serve', DEFAULT_SERVE_PORT);
  }
  if (!ports.has('metrics')) ports.set('metrics', DEFAULT_METRICS_PORT);
  return ports;
}

/**
 * BuildServiceForHeadPod for a RayCluster. Headless (clusterIP None, publishNotReadyAddresses) unless
 * spec.headGroupSpec.serviceType asks for another type; a custom spec.headGroupSpec.headService is the
 * base (its selector replaced, KubeRay's ports appended, labels merged, namespace forced).
 */
export function buildHeadService(cluster: RayCluster, options: { clusterIpService?: boolean } = {}): Service {
  const head = headGroup(cluster);
  const selector = headServiceLabels(cluster);
  const templateAppName = head.template?.metadata?.labels?.[APP_NAME_LABEL];
  if (templateAppName !== undefined) selector[APP_NAME_LABEL] = templateAppName;
  const ports: ServicePort[] = [...headServicePorts(cluster)].map(([name, port]) => ({ name, port, appProtocol: 'tcp' }));
  const annotations = { ...((cluster.spec?.headServiceAnnotations as Record<string, string> | undefined) ?? {}) };
  const type = head.serviceType || undefined;
  const metaBase = { namespace: cluster.metadata.namespace, ownerReferences: [ownerReference(cluster)] };
  const custom = head.headService;
  if (custom) {
    const svc = structuredClone(custom) as Service;
    const spec = { ...(svc.spec ?? {}) };
    spec.selector = { ...selector };
    spec.ports = [...((spec.ports as ServicePort[] | undefined) ?? []), ...ports];
    if (!spec.type && type) spec.type = type;
    svc.metadata = {
      ...(svc.metadata ?? {}),
      ...metaBase,
      name: headServiceName(cluster),
      labels: { ...(svc.metadata?.labels ?? {}), ...selector },
      annotations: { ...(svc.metadata?.annotations ?? {}), ...annotations },
    };
    return { apiVersion: 'v1', kind: 'Service', metadata: svc.metadata, spec };
  }
  ports.sort((a, b) => ((a.name ?? '') < (b.name ?? '') ? -1 : (a.name ?? '') > (b.name ?? '') ? 1 : 0));
  const spec: NonNullable<Service['spec']> = { selector: { ...selector }, ports };
  if (type) spec.type = type;
  if (!options.clusterIpService && (type === undefined || type === 'ClusterIP')) {
    // At most one head pod: the name resolves straight to it, ready or not.
    spec.clusterIP = 'None';
    spec.publishNotReadyAddresses = true;
  }
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { ...metaBase, name: headServiceName(cluster), labels: { ...selector }, annotations },
    spec,
  };
}

/** KubeRay creates the headless worker Service only for multi-host worker groups (numOfHosts > 1). */
export function needsHeadlessWorkerService(cluster: RayCluster): boolean {
  return workerGroups(cluster).some((g) => (g.numOfHosts ?? 1) > 1);
}

export function headlessWorkerServiceName(cluster: RayCluster): string {
  return `${cluster.metadata.name ?? ''}-headless`;
}

/** BuildHeadlessServiceForRayCluster: peer DNS for the pods of multi-host worker groups. */
export function buildHeadlessWorkerService(cluster: RayCluster): Service {
  const name = cluster.metadata.name ?? '';
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: headlessWorkerServiceName(cluster),
      namespace: cluster.metadata.namespace,
      labels: { [RAY_HEADLESS_WORKER_SVC_LABEL]: name },
      ownerReferences: [ownerReference(cluster)],
    },
    spec: {
      clusterIP: 'None',
      selector: { [RAY_CLUSTER_LABEL]: name, [RAY_NODE_TYPE_LABEL]: NODE_TYPE_WORKER },
      type: 'ClusterIP',
      publishNotReadyAddresses: true,
    },
  };
}
