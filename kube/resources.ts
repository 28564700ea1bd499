// The resources the processes read and write, as REST references: the one table every reconciler,
// stand-in and test spreads (`{ ...RAYCLUSTERS, namespace, name }`).
import type { ResourceRef } from './client.ts';

export const RAYCLUSTERS = { group: 'ray.io', version: 'v1', plural: 'rayclusters' } as const satisfies ResourceRef;
export const RAYJOBS = { group: 'ray.io', version: 'v1', plural: 'rayjobs' } as const satisfies ResourceRef;
export const RAYCRONJOBS = { group: 'ray.io', version: 'v1', plural: 'raycronjobs' } as const satisfies ResourceRef;
export const JOBS = { group: 'batch', version: 'v1', plural: 'jobs' } as const satisfies ResourceRef;
export const PODS = { version: 'v1', plural: 'pods' } as const satisfies ResourceRef;
export const NODES = { version: 'v1', plural: 'nodes' } as const satisfies ResourceRef;
export const DEPLOYMENTS = { group: 'apps', version: 'v1', plural: 'deployments' } as const satisfies ResourceRef;
export const SERVICES = { version: 'v1', plural: 'services' } as const satisfies ResourceRef;
export const ENDPOINT_SLICES = { group: 'discovery.k8s.io', version: 'v1', plural: 'endpointslices' } as const satisfies ResourceRef;
export const EVENTS = { version: 'v1', plural: 'events' } as const satisfies ResourceRef;
export const SECRETS = { version: 'v1', plural: 'secrets' } as const satisfies ResourceRef;
export const CONFIGMAPS = { version: 'v1', plural: 'configmaps' } as const satisfies ResourceRef;
export const NAMESPACES = { version: 'v1', plural: 'namespaces' } as const satisfies ResourceRef;
export const SERVICEACCOUNTS = { version: 'v1', plural: 'serviceaccounts' } as const satisfies ResourceRef;
export const ROLES = { group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'roles' } as const satisfies ResourceRef;
export const ROLEBINDINGS = { group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'rolebindings' } as const satisfies ResourceRef;
export const LEASES = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases' } as const satisfies ResourceRef;
export const MUTATING_WEBHOOK_CONFIGURATIONS = {
  group: 'admissionregistration.k8s.io',
  version: 'v1',
  plural: 'mutatingwebhookconfigurations',
} as const satisfies ResourceRef;
export const VALIDATING_WEBHOOK_CONFIGURATIONS = {
  group: 'admissionregistration.k8s.io',
  version: 'v1',
  plural: 'validatingwebhookconfigurations',
} as const satisfies ResourceRef;
export const VALIDATING_ADMISSION_POLICIES = {
  group: 'admissionregistration.k8s.io',
  version: 'v1',
  plural: 'validatingadmissionpolicies',
} as const satisfies ResourceRef;
export const VALIDATING_ADMISSION_POLICY_BINDINGS = {
  group: 'admissionregistration.k8s.io',
  version: 'v1',
  plural: 'validatingadmissionpolicybindings',
} as const satisfies ResourceRef;
