// The Kubernetes objects raykeeper reads and writes, typed once for every part of the product: the webhook,
// the controller, the cleanup Job builder, the pod operator and the local cluster. The ray.io kinds
// (src/types.ts) are built from these. Each type holds the fields some code reads or writes; the index
// signatures keep whatever else the API server sent, because an object is written back whole and a field
// we do not know must never be dropped.

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
  [key: string]: unknown;
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

export interface Pod {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
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

export interface Service {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
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
export interface BatchJob {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: { backoffLimit?: number; template?: PodTemplateSpec; [key: string]: unknown };
  status?: { conditions?: JobCondition[] | null; active?: number; succeeded?: number; failed?: number; [key: string]: unknown };
}

/** A core/v1 Secret (the cleanup's credentials are read by reference only; the local cluster resolves them). */
export interface Secret {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  type?: string;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}
