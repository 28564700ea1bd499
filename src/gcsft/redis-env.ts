// A GCS-FT RayCluster's Redis as its head pod sees it: the storage namespace, the address, the
// credentials (as sources: a secretKeyRef is never resolved here) and the TLS files. ONE module for both
// sides: the pod builder (src/raycluster/pods.ts) starts the head with it, the cleanup Job builder
// (./cleanup-job.ts) deletes what it names with the same address and credentials.
import { explicitStorageNamespace, storageNamespace, storageNamespaceProblem } from './rules.ts';
import { ENV_REDIS_ADDRESS, ENV_REDIS_PASSWORD, ENV_REDIS_USERNAME, ENV_STORAGE_NAMESPACE, REDIS_TLS_ENV } from '../names.ts';
import type { RedisCredential, RayClusterFtView } from '../types.ts';
import type { Container, EnvVar } from '../../kube/model.ts';

/** The head pod's Ray container (KubeRay: the first container). Safe on any JSON (the webhook reads unvalidated objects). */
export function headContainer(cluster: RayClusterFtView): Container | undefined {
  const containers = cluster.spec?.headGroupSpec?.template?.spec?.containers;
  const first: unknown = Array.isArray(containers) ? containers[0] : undefined;
  return first !== null && typeof first === 'object' ? (first as Container) : undefined;
}

function headEnv(cluster: RayClusterFtView, name: string): EnvVar | undefined {
  const env: unknown = headContainer(cluster)?.env;
  if (!Array.isArray(env)) return undefined;
  return (env as unknown[]).find((e): e is EnvVar => e !== null && typeof e === 'object' && (e as EnvVar).name === name);
}

function credentialEnv(name: string, cred: RedisCredential | undefined | null): EnvVar | undefined {
  if (!cred || typeof cred !== 'object') return undefined;
  if (cred.valueFrom && typeof cred.valueFrom === 'object') return { name, valueFrom: cred.valueFrom };
  if (typeof cred.value === 'string') return { name, value: cred.value };
  return undefined;
}

function copyEnv(e: EnvVar): EnvVar {
  return e.valueFrom !== undefined ? { name: e.name, valueFrom: structuredClone(e.valueFrom) } : { name: e.name, value: e.value ?? '' };
}

/** A Secret or ConfigMap key: the kubelet resolves it alike in the head's pod and the cleanup Job's (one namespace). */
export interface EnvReference {
  kind: 'secret' | 'configMap';
  name: string;
  key: string;
}

/** The Secret or ConfigMap key an env var's valueFrom names; undefined for a plain value or another source. */
export function envReference(e: Pick<EnvVar, 'valueFrom'>): EnvReference | undefined {
  const s = e.valueFrom?.secretKeyRef;
  if (s) return { kind: 'secret', name: s.name ?? '', key: s.key };
  const c = e.valueFrom?.configMapKeyRef;
  if (c) return { kind: 'configMap', name: c.name ?? '', key: c.key };
  return undefined;
}

/**
 * Where the head's RAY_external_storage_namespace comes from: THE rule, which the head pod
 * (../raycluster/pods.ts), the cleanup Job, its annotation and by-hand command (./cleanup-job.ts), the events
 * (./decide.ts), admission (../admission/raycluster.ts, update-rules.ts) and the ownership of namespaces
 * (./claims.ts) all read. KubeRay (common/pod.go) sets the entry only when the head container has none, so:
 *   head        the head container's own entry, as written (any value, '' included);
 *   head-ref    its valueFrom, a Secret or ConfigMap key, resolved alike in the Job's pod;
 *   head-field  its valueFrom, a fieldRef / resourceFieldRef: the Job's pod would resolve its OWN fields;
 *   options > annotation > uid (src/gcsft/rules.ts storageNamespace);
 *   none        no UID yet (a CREATE before the API server stored the object).
 */
export type StorageNamespaceSource =
  | { from: 'head'; value: string }
  | { from: 'head-ref'; ref: EnvReference }
  | { from: 'head-field'; field: string }
  | { from: 'options' | 'annotation' | 'uid'; value: string }
  | { from: 'none' };

export function storageNamespaceSource(cluster: RayClusterFtView): StorageNamespaceSource {
  const own = headEnv(cluster, ENV_STORAGE_NAMESPACE);
  if (own) {
    const from = own.valueFrom;
    if (from === undefined || from === null) return { from: 'head', value: typeof own.value === 'string' ? own.value : '' };
    const ref = envReference(own);
    if (ref) return { from: 'head-ref', ref };
    return { from: 'head-field', field: Object.keys(from).join(', ') || 'valueFrom' };
  }
  const options = cluster.spec?.gcsFaultToleranceOptions?.externalStorageNamespace;
  if (typeof options === 'string' && options !== '') return { from: 'options', value: options };
  const explicit = explicitStorageNamespace(cluster);
  if (explicit !== undefined) return { from: 'annotation', value: explicit };
  const ns = storageNamespace(cluster);
  return ns === undefined ? { from: 'none' } : { from: 'uid', value: ns };
}

/** Whether the head container sets RAY_external_storage_namespace itself (KubeRay then leaves it, and so does admission). */
export function headSetsStorageNamespace(cluster: RayClusterFtView): boolean {
  return headEnv(cluster, ENV_STORAGE_NAMESPACE) !== undefined;
}

/** The storage namespace the head writes, when it is known here (not a reference the kubelet resolves). */
export function effectiveStorageNamespace(cluster: RayClusterFtView): string | undefined {
  const source = storageNamespaceSource(cluster);
  return 'value' in source ? source.value : undefined;
}

/** A reference in words: `secret NAME key KEY` / `configmap NAME key KEY`. */
export function describeReference(ref: EnvReference): string {
  return `${ref.kind === 'secret' ? 'secret' : 'configmap'} ${ref.name} key ${ref.key}`;
}

/**
 * The storage namespace for people (events, the Job's annotation, the by-hand command): the value quoted,
 * or where the head reads it (`from secret NAME key KEY`). Never a Secret's content: it is not read.
 */
export function describeStorageNamespace(cluster: RayClusterFtView): string {
  const source = storageNamespaceSource(cluster);
  switch (source.from) {
    case 'head':
    case 'options':
    case 'annotation':
    case 'uid':
      return JSON.stringify(source.value);
    case 'head-ref':
      return `from ${describeReference(source.ref)}`;
    case 'head-field':
      return `from the head pod's ${source.field}`;
    case 'none':
      return '(unknown)';
  }
}

/** Why the cleanup cannot clean this storage namespace, or undefined. */
export function storageNamespaceSourceProblem(cluster: RayClusterFtView): string | undefined {
  const source = storageNamespaceSource(cluster);
  switch (source.from) {
    case 'none':
      return 'no storage namespace is known (no UID, annotation or option)';
    case 'head-field':
      return `the head reads ${ENV_STORAGE_NAMESPACE} from its pod's ${source.field}, which the cleanup Job's pod would resolve to its own value`;
    case 'head-ref':
      return undefined;
    default:
      return storageNamespaceProblem(source.value);
  }
}

/**
 * The RAY_external_storage_namespace entry of a GCS-FT head (storageNamespaceSource): the head template's
 * own as written, else options > annotation > UID. ONE function for both sides: the head pod
 * (../raycluster/pods.ts) is started with it and the cleanup Job deletes what it names.
 */
export function storageNamespaceEnv(cluster: RayClusterFtView): EnvVar | undefined {
  const own = headEnv(cluster, ENV_STORAGE_NAMESPACE);
  if (own) return copyEnv(own);
  const ns = effectiveStorageNamespace(cluster);
  return ns === undefined ? undefined : { name: ENV_STORAGE_NAMESPACE, value: ns };
}

/** The env of the cleanup container (names and sources, never resolved secrets). */
export function cleanupEnv(cluster: RayClusterFtView): EnvVar[] {
  const env: EnvVar[] = [];
  const options = cluster.spec?.gcsFaultToleranceOptions ?? undefined;
  const ns = storageNamespaceEnv(cluster);
  if (ns) env.push(ns);
  if (options && typeof options.redisAddress === 'string' && options.redisAddress !== '')
    env.push({ name: ENV_REDIS_ADDRESS, value: options.redisAddress });
  else {
    const e = headEnv(cluster, ENV_REDIS_ADDRESS);
    if (e) env.push(copyEnv(e));
  }
  const password =
    credentialEnv(ENV_REDIS_PASSWORD, options?.redisPassword) ??
    (headEnv(cluster, ENV_REDIS_PASSWORD) ? copyEnv(headEnv(cluster, ENV_REDIS_PASSWORD) as EnvVar) : undefined) ??
    (typeof cluster.spec?.headGroupSpec?.rayStartParams?.['redis-password'] === 'string'
      ? { name: ENV_REDIS_PASSWORD, value: cluster.spec.headGroupSpec.rayStartParams['redis-password'] }
      : undefined);
  if (password) env.push(password);
  const username =
    credentialEnv(ENV_REDIS_USERNAME, options?.redisUsername) ??
    (headEnv(cluster, ENV_REDIS_USERNAME) ? copyEnv(headEnv(cluster, ENV_REDIS_USERNAME) as EnvVar) : undefined);
  if (username) env.push(username);
  for (const name of REDIS_TLS_ENV) {
    const e = headEnv(cluster, name);
    if (e) env.push(copyEnv(e));
  }
  return env;
}

interface VolumeMount {
  name: string;
  mountPath: string;
  subPath?: string;
  readOnly?: boolean;
  [key: string]: unknown;
}

function isUnder(path: string, mountPath: string): boolean {
  const m = mountPath.replace(/\/+$/, '');
  return path === m || path.startsWith(`${m}/`);
}

/** The head container's mounts (and their volumes) that hold a file a TLS env entry points at. */
export function tlsVolumes(cluster: RayClusterFtView): { volumeMounts: VolumeMount[]; volumes: Array<Record<string, unknown>> } {
  const container = headContainer(cluster);
  const paths = REDIS_TLS_ENV.filter((n) => n !== 'RAY_REDIS_SERVER_NAME')
    .map((n) => headEnv(cluster, n))
    .filter((e): e is EnvVar => e !== undefined && e.valueFrom === undefined && typeof e.value === 'string' && e.value.startsWith('/'))
    .map((e) => e.value as string);
  const mounts = ((container?.volumeMounts ?? []) as VolumeMount[]).filter(
    (m) => m && typeof m.mountPath === 'string' && paths.some((p) => isUnder(p, m.mountPath)),
  );
  const names = new Set(mounts.map((m) => m.name));
  const volumes = ((cluster.spec?.headGroupSpec?.template?.spec?.volumes ?? []) as Array<Record<string, unknown>>).filter((v) =>
    names.has(v?.name as string),
  );
  return {
    volumeMounts: mounts.map((m) => ({ ...structuredClone(m), readOnly: true })),
    volumes: volumes.map((v) => structuredClone(v)),
  };
}

/**
 * The head group as far as the functions above read it (the Redis env entries, envFrom, the TLS files'
 * mounts and volumes, rayStartParams' redis-password): what a cache that needs a cluster's Redis, but
 * not its pods, keeps (controller/raycluster/informers.ts ftRayCluster). Undefined when there is none.
 */
export function headRedisSettings(cluster: RayClusterFtView): Record<string, unknown> | undefined {
  const head = headContainer(cluster);
  const password = cluster.spec?.headGroupSpec?.rayStartParams?.['redis-password'];
  if (!head && password === undefined) return undefined;
  const names = new Set<string>([ENV_STORAGE_NAMESPACE, ENV_REDIS_ADDRESS, ENV_REDIS_PASSWORD, ENV_REDIS_USERNAME, ...REDIS_TLS_ENV]);
  const { volumeMounts, volumes } = tlsVolumes(cluster);
  const container: Record<string, unknown> = { name: head?.name ?? '' };
  const env = (head?.env ?? []).filter((e) => names.has(e?.name));
  if (env.length > 0) container.env = structuredClone(env);
  if (Array.isArray(head?.envFrom) && head.envFrom.length > 0) container.envFrom = structuredClone(head.envFrom);
  if (volumeMounts.length > 0) container.volumeMounts = volumeMounts;
  const spec: Record<string, unknown> = { containers: head ? [container] : [] };
  if (volumes.length > 0) spec.volumes = volumes;
  return {
    ...(password !== undefined ? { rayStartParams: { 'redis-password': password } } : {}),
    template: { spec },
  };
}
