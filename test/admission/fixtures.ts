// Builders for admission test objects and AdmissionReviews (not a test file: no .test.ts suffix).
import type { JsonObject } from '../../kube/model.ts';

export const FT = 'ray.io/ft-enabled';
export const NS_ANNOTATION = 'ray.io/external-storage-namespace';
export const FINALIZER = 'ray.io/gcs-ft-redis-cleanup-finalizer';

export interface ClusterShape {
  annotations?: Record<string, string> | null;
  finalizers?: string[] | null;
  options?: JsonObject | null;
  deletionTimestamp?: string;
  uid?: string;
  headEnv?: Array<{ name: string; value: string }>;
  managedBy?: string;
}

/** A RayCluster with a head group; every field of `shape` that is undefined stays absent. */
export function rayCluster(shape: ClusterShape = {}): JsonObject {
  const metadata: JsonObject = { name: 'demo', namespace: 'ray' };
  if (shape.annotations !== undefined) metadata.annotations = shape.annotations;
  if (shape.finalizers !== undefined) metadata.finalizers = shape.finalizers;
  if (shape.deletionTimestamp !== undefined) metadata.deletionTimestamp = shape.deletionTimestamp;
  if (shape.uid !== undefined) metadata.uid = shape.uid;
  const container: JsonObject = { name: 'ray-head', image: 'rayproject/ray:2.41.0' };
  if (shape.headEnv !== undefined) container.env = shape.headEnv;
  const spec: JsonObject = {
    rayVersion: '2.41.0',
    headGroupSpec: { rayStartParams: {}, template: { spec: { containers: [container] } } },
    workerGroupSpecs: [{ groupName: 'small', replicas: 1, template: { spec: { containers: [{ name: 'ray-worker' }] } } }],
  };
  if (shape.options !== undefined) spec.gcsFaultToleranceOptions = shape.options;
  if (shape.managedBy !== undefined) spec.managedBy = shape.managedBy;
  return { apiVersion: 'ray.io/v1', kind: 'RayCluster', metadata, spec };
}

export function rayJob(
  spec: JsonObject | null | undefined = { entrypoint: 'python -c "print(1)"' },
  status?: JsonObject | null,
): JsonObject {
  const job: JsonObject = { apiVersion: 'ray.io/v1', kind: 'RayJob', metadata: { name: 'job', namespace: 'ray' } };
  if (spec !== undefined) job.spec = spec;
  if (status !== undefined) job.status = status;
  return job;
}

export function review(
  kind: 'RayCluster' | 'RayJob' | string,
  operation: string,
  object: unknown,
  oldObject?: unknown,
  extra: JsonObject = {},
): JsonObject {
  const request: JsonObject = {
    uid: 'e911857d-c318-11e8-bbad-025000000001',
    kind: { group: 'ray.io', version: 'v1', kind },
    resource: { group: 'ray.io', version: 'v1', resource: kind.toLowerCase() + 's' },
    operation,
    namespace: 'ray',
    name: 'demo',
    userInfo: { username: 'admin' },
    ...extra,
  };
  if (object !== undefined) request.object = object as JsonObject;
  if (oldObject !== undefined) request.oldObject = oldObject as JsonObject;
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request };
}

/** A deterministic namespace generator: ns-1, ns-2, ... */
export function counterNamespaces(prefix = 'ns-'): () => string {
  let n = 0;
  return () => `${prefix}${++n}`;
}
