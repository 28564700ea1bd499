// Plan for running the Redis cleanup INSIDE the controller, used when the cleanup Job cannot be created
// because the RayCluster's namespace is being deleted (kuberay #3388: the API server refuses new
// objects in a terminating namespace, so KubeRay's finalizer stays until someone removes it by hand).
//
// The controller can do the Job's work itself when every input the Job would have had is resolvable
// by the controller: plain values, Secrets / ConfigMaps it may read (a 403 means it may not), TLS files
// that live in Secret / ConfigMap volumes. Pure: this only says what to fetch; the I/O is in
// controller/gcsft-cleanup.
//
// The controller runs in ITS namespace, the Job would have run in the cluster's: a one-label Service name in
// RAY_REDIS_ADDRESS (`redis`, `redis:6379`) is qualified with the cluster's namespace (asJobInNamespace,
// src/redis/identity.ts asSeenFromNamespace), or the controller would reach another namespace's Redis, or
// none (issue 47: `EAI_AGAIN redis`, the finalizer released and the keys left). Longer names resolve alike
// from every namespace and are kept. Not reached: a one-label name the Job's pod would find only through
// the node's own DNS search domains (the controller looks for it in the cluster's namespace).
import { ENV_REDIS_ADDRESS, REDIS_TLS_ENV } from '../names.ts';
import { AddressError, mapAddressHost, parseRedisAddress } from '../redis/address.ts';
import { asSeenFromNamespace } from '../redis/identity.ts';
import type { RayClusterFtView } from '../types.ts';
import { cleanupEnv, headContainer } from './redis-env.ts';
import type { Container, EnvFromSource, EnvVar } from '../../kube/model.ts';

export type Source =
  | { kind: 'value'; value: string }
  | { kind: 'secretKey'; name: string; key: string; optional: boolean }
  | { kind: 'configMapKey'; name: string; key: string; optional: boolean }
  /** A file the head pod read from a Secret / ConfigMap volume: fetch the key, write it to a 0600 temp file. */
  | { kind: 'file'; from: 'secret' | 'configMap'; name: string; key: string; optional: boolean };

export interface PlannedEnvFrom {
  kind: 'secret' | 'configMap';
  name: string;
  prefix: string;
  optional: boolean;
}

export interface InProcessPlan {
  /** env name -> where its value comes from (explicit env; wins over envFrom). */
  env: Record<string, Source>;
  /** Whole Secrets / ConfigMaps the head container imported (envFrom), in order. */
  envFrom: PlannedEnvFrom[];
  /** Inputs the controller cannot reproduce (fieldRef, files on non-Secret volumes, ...). */
  unresolvable: string[];
}

interface Mount {
  name: string;
  mountPath: string;
  subPath?: string;
}

interface KeyToPath {
  key: string;
  path: string;
}

/** Which Secret / ConfigMap key backs a file path in the head container, if any. */
export function fileSource(cluster: RayClusterFtView, path: string): Source | undefined {
  const container = headContainer(cluster);
  const mounts = (container?.volumeMounts ?? []) as Mount[];
  const volumes = (cluster.spec?.headGroupSpec?.template?.spec?.volumes ?? []) as Array<Record<string, unknown>>;
  for (const m of mounts) {
    if (!m || typeof m.mountPath !== 'string') continue;
    const base = m.mountPath.replace(/\/+$/, '');
    let relative: string | undefined;
    if (m.subPath)
      relative = path === base ? m.subPath : path.startsWith(`${base}/`) ? `${m.subPath}/${path.slice(base.length + 1)}` : undefined;
    else relative = path.startsWith(`${base}/`) ? path.slice(base.length + 1) : undefined;
    if (relative === undefined) continue;
    const volume = volumes.find((v) => v?.name === m.name);
    if (!volume) return undefined;
    for (const from of ['secret', 'configMap'] as const) {
      const src = volume[from] as { secretName?: string; name?: string; items?: KeyToPath[]; optional?: boolean } | undefined;
      if (!src) continue;
      const objectName = from === 'secret' ? src.secretName : src.name;
      if (!objectName) return undefined;
      const item = src.items?.find((i) => i.path === relative);
      if (src.items && !item) return undefined;
      return { kind: 'file', from, name: objectName, key: item ? item.key : relative, optional: src.optional === true };
    }
    return undefined;
  }
  return undefined;
}

export function planInProcessCleanup(cluster: RayClusterFtView): InProcessPlan {
  const env: Record<string, Source> = {};
  const unresolvable: string[] = [];
  const fileVars = new Set<string>(REDIS_TLS_ENV.filter((n) => n !== 'RAY_REDIS_SERVER_NAME'));
  for (const e of cleanupEnv(cluster)) {
    if (e.valueFrom === undefined) {
      const value = e.value ?? '';
      if (fileVars.has(e.name) && value.startsWith('/')) {
        const src = fileSource(cluster, value);
        if (src) env[e.name] = src;
        else unresolvable.push(`${e.name}=${value} (not a file from a Secret or ConfigMap volume)`);
      } else {
        env[e.name] = { kind: 'value', value };
      }
      continue;
    }
    const s = e.valueFrom.secretKeyRef;
    const c = e.valueFrom.configMapKeyRef;
    if (s) env[e.name] = { kind: 'secretKey', name: s.name ?? '', key: s.key, optional: s.optional === true };
    else if (c) env[e.name] = { kind: 'configMapKey', name: c.name ?? '', key: c.key, optional: c.optional === true };
    else unresolvable.push(`${e.name} (valueFrom ${Object.keys(e.valueFrom).join(', ')})`);
  }
  const envFrom: PlannedEnvFrom[] = [];
  const rawEnvFrom = headContainer(cluster)?.envFrom;
  if (Array.isArray(rawEnvFrom)) {
    for (const ef of rawEnvFrom) {
      if (ef?.secretRef?.name)
        envFrom.push({ kind: 'secret', name: ef.secretRef.name, prefix: ef.prefix ?? '', optional: ef.secretRef.optional === true });
      else if (ef?.configMapRef?.name)
        envFrom.push({
          kind: 'configMap',
          name: ef.configMapRef.name,
          prefix: ef.prefix ?? '',
          optional: ef.configMapRef.optional === true,
        });
    }
  }
  return { env, envFrom, unresolvable };
}

/**
 * The plan as the container the cleanup Job would have run: each file becomes the Secret / ConfigMap key
 * behind it (`raykeeper redis-cleanup` takes inline PEM), so kube/env.ts resolves it as the kubelet would.
 */
export function planContainer(plan: InProcessPlan): Container {
  const env: EnvVar[] = Object.entries(plan.env).map(([name, src]): EnvVar => {
    switch (src.kind) {
      case 'value':
        return { name, value: src.value };
      case 'secretKey':
        return { name, valueFrom: { secretKeyRef: { name: src.name, key: src.key, optional: src.optional } } };
      case 'configMapKey':
        return { name, valueFrom: { configMapKeyRef: { name: src.name, key: src.key, optional: src.optional } } };
      case 'file': {
        const ref = { name: src.name, key: src.key, optional: src.optional };
        return { name, valueFrom: src.from === 'secret' ? { secretKeyRef: ref } : { configMapKeyRef: ref } };
      }
    }
  });
  const envFrom: EnvFromSource[] = plan.envFrom.map((ef) => {
    const ref = { name: ef.name, optional: ef.optional };
    return { prefix: ef.prefix, ...(ef.kind === 'secret' ? { secretRef: ref } : { configMapRef: ref }) };
  });
  return { name: 'redis-cleanup', env, envFrom };
}

const SERVER_NAME_ENV = 'RAY_REDIS_SERVER_NAME';

/**
 * The cleanup's resolved environment as the Job's pod in `clusterNamespace` would have used it: a one-label
 * host of RAY_REDIS_ADDRESS qualified with that namespace (asSeenFromNamespace). Over TLS the certificate is still checked
 * against the name as written (RAY_REDIS_SERVER_NAME, unless the head sets one), as the Job would check it.
 * An address that does not parse is left for the cleanup to report.
 */
export function asJobInNamespace(env: Readonly<Record<string, string>>, clusterNamespace: string): Record<string, string> {
  const address = env[ENV_REDIS_ADDRESS];
  if (address === undefined || address === '' || clusterNamespace === '') return { ...env };
  let parsed: ReturnType<typeof parseRedisAddress>;
  let qualified: string;
  try {
    parsed = parseRedisAddress(address);
    qualified = mapAddressHost(address, (host) => asSeenFromNamespace(host, clusterNamespace));
  } catch (err) {
    if (err instanceof AddressError) return { ...env };
    throw err;
  }
  const out: Record<string, string> = { ...env, [ENV_REDIS_ADDRESS]: qualified };
  if (parsed.tls && asSeenFromNamespace(parsed.host, clusterNamespace) !== parsed.host && !env[SERVER_NAME_ENV])
    out[SERVER_NAME_ENV] = parsed.host;
  return out;
}
