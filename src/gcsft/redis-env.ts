// A GCS-FT RayCluster's Redis as its head pod sees it: the storage namespace, the address, the
// credentials (as sources: a secretKeyRef is never resolved here) and the TLS files. ONE module for both
// sides: the pod builder (src/raycluster/pods.ts) starts the head with it, the cleanup Job builder
// (./cleanup-job.ts) deletes what it names with the same address and credentials.
import { storageNamespace } from './rules.ts';
import { ENV_REDIS_ADDRESS, ENV_REDIS_PASSWORD, ENV_REDIS_USERNAME, ENV_STORAGE_NAMESPACE, REDIS_TLS_ENV } from '../names.ts';
import type { RayCluster, RedisCredential } from '../types.ts';
import type { Container, EnvVar } from '../../kube/model.ts';

/** The head pod's Ray container (KubeRay: the first container). */
export function headContainer(cluster: RayCluster): Container | undefined {
  return cluster.spec?.headGroupSpec?.template?.spec?.containers?.[0];
}

function headEnv(cluster: RayCluster, name: string): EnvVar | undefined {
  return headContainer(cluster)?.env?.find((e) => e?.name === name);
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

/** The storage namespace the head pod used: its own env value if set, else options > annotation > UID. */
export function effectiveStorageNamespace(cluster: RayCluster): string | undefined {
  const own = headEnv(cluster, ENV_STORAGE_NAMESPACE);
  if (own && own.valueFrom === undefined && typeof own.value === 'string' && own.value !== '') return own.value;
  return storageNamespace(cluster);
}

/**
 * The RAY_external_storage_namespace entry of a GCS-FT head: the head template's own if it sets one
 * (KubeRay keeps it), else options > annotation > UID. ONE function for both sides: the head pod
 * (../raycluster/pods.ts) is started with it and the cleanup Job deletes what it names.
 */
export function storageNamespaceEnv(cluster: RayCluster): EnvVar | undefined {
  const own = headEnv(cluster, ENV_STORAGE_NAMESPACE);
  if (own) return copyEnv(own);
  const ns = storageNamespace(cluster);
  return ns === undefined ? undefined : { name: ENV_STORAGE_NAMESPACE, value: ns };
}

/** The env of the cleanup container (names and sources, never resolved secrets). */
export function cleanupEnv(cluster: RayCluster): EnvVar[] {
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
export function tlsVolumes(cluster: RayCluster): { volumeMounts: VolumeMount[]; volumes: Array<Record<string, unknown>> } {
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
export function headRedisSettings(cluster: RayCluster): Record<string, unknown> | undefined {
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
