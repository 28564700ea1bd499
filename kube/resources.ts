// The resources the processes read and write, each a typed descriptor: the type of a resource's objects
// travels with the resource, so a call names the resource and gets its type (as kube-rs's Api<K> and
// Store<K>, and controller-runtime's typed clients do):
//
//   const cluster = await kube.get(RAYCLUSTERS.at(namespace, name));       // RayCluster
//   const pods = await kube.list(PODS.at(namespace), { labelSelector });   // ListResult<Pod>
//   const jobs = informers.get(RAYJOBS);                                   // Informer<RayJob>
//   const clusters = informers.get(RAYCLUSTERS, FT_RAYCLUSTER);            // Informer<RayClusterFtView>
//
// The contract:
// - A Resource<K> names a collection (group, version, plural) and K, the type of its objects as the API
//   server returns them (kube/model.ts; the ray.io kinds and their resources RAYCLUSTERS, RAYJOBS and
//   RAYCRONJOBS are src/types.ts's, beside the kinds). `at(namespace, name)` names one object, `at(namespace)`
//   the collection in a namespace (undefined: a cluster-scoped resource, or every namespace); both are a
//   ResourceRef<K> (kube/client.ts), and so is a spread of one (`{ ...RAYJOBS.at(ns, name), subresource: 'status' }`).
// - The client's calls (get, getOrUndefined, create, patch, replace, list, listMapped, watch) take a
//   ResourceRef<K> and return K or a ListResult<K>: they are generic in the reference (`ObjectOf<R>`,
//   kube/client.ts), not in K, so the caller does not choose the type (`kube.get<View>(ref)` does not
//   compile). A ResourceRef written by hand (a kind read from a manifest) has no K, and its calls return
//   `unknown`. A ref whose answer is not K says so where it is built, annotated (a ServiceAccount's `token`
//   subresource answers a TokenRequest); an answer that is no object of the resource (a List's own fields,
//   a Table, /version) is read with `request<T>` on the path.
// - An informer caches K, or P when given a Projection<K, P>: a named value with an `id` and a `transform`
//   from K to P (`informers.get` is generic in the spec and the projection, not in K or P). The projection's type says what its cache holds: code reading the cache sees P's fields
//   only. Informers are shared by (resource, namespace, selectors, projection id): a transform has one id,
//   and two transforms of one resource never share one. Without a projection an informer keeps K less
//   metadata.managedFields.
// - K is a type only: nothing checks at run time that the API server sent what K says (as anywhere JSON is read).
import type { ResourceRef } from './client.ts';
import type {
  ApiObject,
  BatchJob,
  ConfigMap,
  CustomResourceDefinition,
  Deployment,
  EndpointSlice,
  Event,
  KubeObject,
  Lease,
  Namespace,
  Node,
  ObjectWithMeta,
  Pod,
  Role,
  RoleBinding,
  Secret,
  Service,
  ServiceAccount,
  WebhookConfiguration,
} from './model.ts';

/** A resource collection and the type of its objects. */
export class Resource<K extends ObjectWithMeta> {
  /** Type only, never set: the type of the objects this resource holds. */
  declare readonly objectType?: K;
  /** API group; absent for the core group. */
  declare readonly group?: string;
  declare readonly version: string;
  /** Lowercase plural, e.g. 'rayclusters'. */
  declare readonly plural: string;

  constructor(ref: { group?: string; version: string; plural: string }) {
    // Own properties only, so a spread (`{ ...PODS, labelSelector }`) is the plain REST reference.
    Object.assign(this, ref);
    Object.freeze(this);
  }

  /** One object (`name`), or the collection in `namespace` (undefined: cluster-scoped, or every namespace). */
  at(namespace: string | undefined, name?: string): ResourceRef<K> {
    return name === undefined ? { ...this, namespace } : { ...this, namespace, name };
  }
}

/**
 * What an informer keeps of each object of a resource: P, built from the K the API server sent by
 * `transform` (to save memory). It must keep metadata.name, namespace and resourceVersion. `id` names the
 * transform among the informers of one resource (they are shared by resource, namespace, selectors and id).
 */
export interface Projection<K, P extends ObjectWithMeta> {
  readonly id: string;
  readonly transform: (obj: K) => P;
}

export const JOBS = new Resource<BatchJob>({ group: 'batch', version: 'v1', plural: 'jobs' });
export const PODS = new Resource<Pod>({ version: 'v1', plural: 'pods' });
export const NODES = new Resource<Node>({ version: 'v1', plural: 'nodes' });
export const DEPLOYMENTS = new Resource<Deployment>({ group: 'apps', version: 'v1', plural: 'deployments' });
export const SERVICES = new Resource<Service>({ version: 'v1', plural: 'services' });
export const ENDPOINT_SLICES = new Resource<EndpointSlice>({ group: 'discovery.k8s.io', version: 'v1', plural: 'endpointslices' });
export const EVENTS = new Resource<Event>({ version: 'v1', plural: 'events' });
export const SECRETS = new Resource<Secret>({ version: 'v1', plural: 'secrets' });
export const PERSISTENTVOLUMECLAIMS = new Resource<ApiObject>({ version: 'v1', plural: 'persistentvolumeclaims' });
export const CONFIGMAPS = new Resource<ConfigMap>({ version: 'v1', plural: 'configmaps' });
export const NAMESPACES = new Resource<Namespace>({ version: 'v1', plural: 'namespaces' });
export const SERVICEACCOUNTS = new Resource<ServiceAccount>({ version: 'v1', plural: 'serviceaccounts' });
export const ROLES = new Resource<Role>({ group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'roles' });
export const ROLEBINDINGS = new Resource<RoleBinding>({ group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'rolebindings' });
export const LEASES = new Resource<Lease>({ group: 'coordination.k8s.io', version: 'v1', plural: 'leases' });
export const CUSTOM_RESOURCE_DEFINITIONS = new Resource<CustomResourceDefinition>({
  group: 'apiextensions.k8s.io',
  version: 'v1',
  plural: 'customresourcedefinitions',
});
export const MUTATING_WEBHOOK_CONFIGURATIONS = new Resource<WebhookConfiguration>({
  group: 'admissionregistration.k8s.io',
  version: 'v1',
  plural: 'mutatingwebhookconfigurations',
});
export const VALIDATING_WEBHOOK_CONFIGURATIONS = new Resource<WebhookConfiguration>({
  group: 'admissionregistration.k8s.io',
  version: 'v1',
  plural: 'validatingwebhookconfigurations',
});
export const VALIDATING_ADMISSION_POLICIES = new Resource<KubeObject>({
  group: 'admissionregistration.k8s.io',
  version: 'v1',
  plural: 'validatingadmissionpolicies',
});
export const VALIDATING_ADMISSION_POLICY_BINDINGS = new Resource<KubeObject>({
  group: 'admissionregistration.k8s.io',
  version: 'v1',
  plural: 'validatingadmissionpolicybindings',
});
