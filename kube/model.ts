// The Kubernetes objects raykeeper reads and writes, typed once for every part of the product: the webhook,
// the controller, the cleanup Job builder, the pod operator and the local cluster. Every kind extends one
// base, ApiObject (its type and metadata); the ray.io kinds (src/types.ts) do too. Each type holds the
// fields some code reads or writes; the index signatures keep whatever else the API server sent, because
// an object is written back whole and a field we do not know must never be dropped. Which resource holds
// which kind: kube/resources.ts.

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string | null;
  labels?: Record<string, string> | null;
  annotations?: Record<string, string> | null;
  finalizers?: string[] | null;
  ownerReferences?: OwnerReference[] | null;
  managedFields?: ManagedFieldsEntry[] | null;
  [key: string]: unknown;
}

/** Which field manager set which fields (server-side apply's bookkeeping; informers drop it). */
export interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  apiVersion?: string;
  time?: string;
  subresource?: string;
  fieldsType?: string;
  fieldsV1?: { [key: string]: unknown };
}

/** Any object of any kind, as the generic client and the runtime move it. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  [key: string]: unknown;
}

/**
 * What every object an informer caches has: a typed model (RayCluster, Pod, Service ...) fits it without
 * a cast, which KubeObject's index signature does not allow.
 */
export interface ObjectWithMeta {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
}

/** The base of every kind: an object as the API server stores it always has its metadata. */
export interface ApiObject extends ObjectWithMeta {
  metadata: ObjectMeta;
}

export interface KeyRef {
  name?: string;
  key: string;
  optional?: boolean;
}

/** core/v1 EnvVarSource. */
export interface EnvVarSource {
  secretKeyRef?: KeyRef;
  configMapKeyRef?: KeyRef;
  fieldRef?: { apiVersion?: string; fieldPath: string };
  resourceFieldRef?: { containerName?: string; resource: string; divisor?: string };
  [key: string]: unknown;
}

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: EnvVarSource;
}

export interface EnvFromSource {
  prefix?: string;
  secretRef?: { name?: string; optional?: boolean };
  configMapRef?: { name?: string; optional?: boolean };
}

export interface ContainerPort {
  name?: string;
  containerPort: number;
  protocol?: string;
  [key: string]: unknown;
}

export interface ResourceRequirements {
  limits?: Record<string, string | number>;
  requests?: Record<string, string | number>;
  [key: string]: unknown;
}

export interface VolumeMount {
  name: string;
  mountPath: string;
  subPath?: string;
  readOnly?: boolean;
  [key: string]: unknown;
}

export interface Volume {
  name: string;
  [key: string]: unknown;
}

export interface Container {
  name: string;
  image?: string;
  imagePullPolicy?: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  env?: EnvVar[];
  envFrom?: EnvFromSource[];
  ports?: ContainerPort[];
  resources?: ResourceRequirements;
  volumeMounts?: VolumeMount[];
  livenessProbe?: Record<string, unknown>;
  readinessProbe?: Record<string, unknown>;
  securityContext?: Record<string, unknown>;
  [key: string]: unknown;
}

export interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  volumes?: Volume[];
  restartPolicy?: string;
  serviceAccountName?: string;
  nodeName?: string;
  [key: string]: unknown;
}

export interface PodTemplateSpec {
  metadata?: ObjectMeta;
  spec?: Partial<PodSpec>;
}

export interface PodCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  [key: string]: unknown;
}

export interface ContainerStatus {
  name: string;
  state?: {
    waiting?: { reason?: string; message?: string };
    terminated?: { reason?: string; message?: string; exitCode?: number; finishedAt?: string };
    running?: unknown;
  };
  [key: string]: unknown;
}

export interface PodStatus {
  phase?: string;
  podIP?: string;
  conditions?: PodCondition[];
  containerStatuses?: ContainerStatus[];
  [key: string]: unknown;
}

export interface Pod extends ApiObject {
  spec?: PodSpec;
  status?: PodStatus;
}

export interface ServicePort {
  name?: string;
  port: number;
  targetPort?: number | string;
  nodePort?: number;
  appProtocol?: string;
  protocol?: string;
  [key: string]: unknown;
}

export interface Service extends ApiObject {
  spec?: {
    selector?: Record<string, string>;
    ports?: ServicePort[];
    type?: string;
    clusterIP?: string;
    publishNotReadyAddresses?: boolean;
    [key: string]: unknown;
  };
}

/** A batch/v1 Job condition (Complete, Failed, SuccessCriteriaMet, FailureTarget, Suspended). */
export interface JobCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastProbeTime?: string;
  lastTransitionTime?: string;
}

/**
 * The parts of a batch/v1 Job raykeeper writes or reads: the Redis cleanup Jobs (src/gcsft/cleanup-job.ts),
 * the RayJob submitters (src/rayjob/builders.ts) and the local job runner.
 */
export interface BatchJob extends ApiObject {
  spec?: { backoffLimit?: number; activeDeadlineSeconds?: number; suspend?: boolean; template?: PodTemplateSpec; [key: string]: unknown };
  status?: JobStatus;
}

/** A batch/v1 Job's status. */
export interface JobStatus {
  conditions?: JobCondition[] | null;
  startTime?: string;
  completionTime?: string;
  active?: number;
  ready?: number;
  succeeded?: number;
  failed?: number;
  [key: string]: unknown;
}

/** A core/v1 Secret (the cleanup's credentials are read by reference only; the local cluster resolves them). */
export interface Secret extends ApiObject {
  type?: string;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

/** A core/v1 ConfigMap. */
export interface ConfigMap extends ApiObject {
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
}

/** A core/v1 ServiceAccount (the autoscaler's, KubeRay's RayCluster controller). */
export interface ServiceAccount extends ApiObject {
  automountServiceAccountToken?: boolean;
  [key: string]: unknown;
}

/** An rbac.authorization.k8s.io/v1 PolicyRule. */
export interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs: string[];
}

/** An rbac.authorization.k8s.io/v1 Role. */
export interface Role extends ApiObject {
  rules?: PolicyRule[];
}

/** An rbac.authorization.k8s.io/v1 RoleBinding. */
export interface RoleBinding extends ApiObject {
  subjects?: Array<{ kind: string; name: string; namespace?: string; apiGroup?: string }>;
  roleRef: { apiGroup: string; kind: string; name: string };
}

/** A coordination.k8s.io/v1 Lease's spec (leader election, kube/leader.ts; shard members, kube/sharding.ts). */
export interface LeaseSpec {
  holderIdentity?: string | null;
  leaseDurationSeconds?: number | null;
  acquireTime?: string | null;
  renewTime?: string | null;
  leaseTransitions?: number | null;
}

/** A coordination.k8s.io/v1 Lease. */
export interface Lease extends ApiObject {
  spec?: LeaseSpec;
}

/** A core/v1 Event (kube/events.ts writes them). */
export interface Event extends ApiObject {
  involvedObject: {
    apiVersion?: string | undefined;
    kind?: string | undefined;
    name?: string | undefined;
    namespace?: string | undefined;
    uid?: string | undefined;
    resourceVersion?: string | undefined;
  };
  type?: string;
  reason?: string;
  message?: string;
  count?: number;
  firstTimestamp?: string;
  lastTimestamp?: string;
  source?: { component?: string; host?: string };
  reportingComponent?: string;
  reportingInstance?: string;
}

/** A core/v1 Namespace. */
export interface Namespace extends ApiObject {
  status?: { phase?: string; [key: string]: unknown };
}

/** An apps/v1 Deployment, as far as waiting for its rollout reads it. */
export interface Deployment extends ApiObject {
  spec?: { replicas?: number; selector?: { matchLabels?: Record<string, string> }; template?: PodTemplateSpec; [key: string]: unknown };
  status?: { observedGeneration?: number; replicas?: number; readyReplicas?: number; availableReplicas?: number; updatedReplicas?: number };
}

/** A core/v1 Node, as far as readiness goes. */
export interface Node extends ApiObject {
  spec?: { [key: string]: unknown };
  status?: { conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>; [key: string]: unknown };
}

/** A discovery.k8s.io/v1 EndpointSlice (the local node's cluster DNS reads headless Services' addresses). */
export interface EndpointSlice extends ApiObject {
  addressType?: string;
  endpoints?: Array<{ addresses: string[]; conditions?: { ready?: boolean } }>;
}

/** An admissionregistration.k8s.io/v1 Mutating- or ValidatingWebhookConfiguration, as far as where it calls goes. */
export interface WebhookConfiguration extends ApiObject {
  webhooks?: Array<{
    name: string;
    clientConfig: { service?: { name: string; namespace: string; path?: string; port?: number }; url?: string; caBundle?: string };
    [key: string]: unknown;
  }>;
}

/** An apiextensions.k8s.io/v1 CustomResourceDefinition, as far as waiting for it and reading its schema go. */
export interface CustomResourceDefinition extends ApiObject {
  spec?: {
    group?: string;
    names?: { plural?: string; kind?: string };
    versions?: Array<{
      name: string;
      served?: boolean;
      storage?: boolean;
      additionalPrinterColumns?: Array<{ name: string; type?: string; jsonPath: string }>;
      [key: string]: unknown;
    }>;
    [key: string]: unknown;
  };
  status?: { conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>; [key: string]: unknown };
}
