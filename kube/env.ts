// A container's environment as the kubelet builds it, for whoever must reproduce it outside a kubelet:
// the local job runner and Ray pod runner (localcluster/), and the controller's in-process Redis cleanup
// (controller/gcsft-cleanup/), which reads what the cleanup Job would have had. ONE resolver: envFrom,
// then env in order with $(VAR) expansion, Secret and ConfigMap keys through lookups, simple fieldRefs.
import type { Container } from './model.ts';

/**
 * Kubernetes' $(VAR) expansion (kubelet, third_party/forked/golang/expansion): `$(NAME)` becomes the
 * value when NAME is defined, stays as written otherwise; `$$` is an escaped `$`.
 */
export function expand(input: string, lookup: (name: string) => string | undefined): string {
  let out = '';
  for (let i = 0; i < input.length; i++) {
    const c = input[i];
    if (c !== '$' || i + 1 >= input.length) {
      out += c;
      continue;
    }
    const next = input[i + 1];
    if (next === '$') {
      out += '$';
      i++;
    } else if (next === '(') {
      const close = input.indexOf(')', i + 2);
      if (close === -1) {
        out += input.slice(i);
        break;
      }
      const name = input.slice(i + 2, close);
      const value = lookup(name);
      out += value ?? `$(${name})`;
      i = close;
    } else {
      out += c;
    }
  }
  return out;
}

/** The pod the kubelet would have made: what fieldRef env vars read. */
export interface LocalPod {
  name: string;
  namespace: string;
  uid: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  serviceAccountName: string;
}

/** A fieldRef's value for a local process; undefined when we cannot know it. */
export function fieldRefValue(pod: LocalPod, fieldPath: string): string | undefined {
  const m = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(fieldPath);
  if (m) return (m[1] === 'labels' ? pod.labels : pod.annotations)[m[2]!] ?? '';
  switch (fieldPath) {
    case 'metadata.name':
      return pod.name;
    case 'metadata.namespace':
      return pod.namespace;
    case 'metadata.uid':
      return pod.uid;
    case 'spec.serviceAccountName':
      return pod.serviceAccountName;
    case 'spec.nodeName':
      return 'localhost';
    case 'status.podIP':
    case 'status.hostIP':
      return '127.0.0.1';
    case 'status.podIPs':
    case 'status.hostIPs':
      return '127.0.0.1';
    default:
      return undefined;
  }
}

/** Reads Secret and ConfigMap keys (through the API in the runner; a map in the tests). */
export interface EnvLookups {
  /** The Secret's decoded data, or undefined if the Secret does not exist. */
  secret(namespace: string, name: string): Promise<Record<string, string> | undefined>;
  /** The ConfigMap's data (binaryData decoded), or undefined if it does not exist. */
  configMap(namespace: string, name: string): Promise<Record<string, string> | undefined>;
}

/** Env resolution failed the way the kubelet's CreateContainerConfigError does (the pod would wait). */
export class EnvResolutionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EnvResolutionError';
  }
}

/**
 * The container's environment as the kubelet builds it: envFrom first (prefix applied), then env in
 * order, each value $(VAR)-expanded against what came before; secretKeyRef/configMapKeyRef read
 * through `lookups` (a missing non-optional one is an EnvResolutionError); simple fieldRefs.
 */
export async function resolveEnv(container: Container, pod: LocalPod, lookups: EnvLookups): Promise<Record<string, string>> {
  const env: Record<string, string> = {};
  const ns = pod.namespace;
  for (const from of container.envFrom ?? []) {
    const prefix = from.prefix ?? '';
    if (from.secretRef) {
      const data = await lookups.secret(ns, from.secretRef.name ?? '');
      if (data === undefined && !from.secretRef.optional) throw new EnvResolutionError(`secret "${from.secretRef.name}" not found`);
      for (const [k, v] of Object.entries(data ?? {})) env[prefix + k] = v;
    }
    if (from.configMapRef) {
      const data = await lookups.configMap(ns, from.configMapRef.name ?? '');
      if (data === undefined && !from.configMapRef.optional)
        throw new EnvResolutionError(`configmap "${from.configMapRef.name}" not found`);
      for (const [k, v] of Object.entries(data ?? {})) env[prefix + k] = v;
    }
  }
  for (const e of container.env ?? []) {
    if (e.valueFrom === undefined) {
      env[e.name] = expand(e.value ?? '', (n) => env[n]);
      continue;
    }
    const src = e.valueFrom;
    if (src.secretKeyRef) {
      const ref = src.secretKeyRef;
      const data = await lookups.secret(ns, ref.name ?? '');
      if (data === undefined) {
        if (ref.optional) continue;
        throw new EnvResolutionError(`secret "${ref.name}" not found`);
      }
      if (!Object.hasOwn(data, ref.key)) {
        if (ref.optional) continue;
        throw new EnvResolutionError(`couldn't find key ${ref.key} in Secret ${ns}/${ref.name}`);
      }
      env[e.name] = data[ref.key]!;
    } else if (src.configMapKeyRef) {
      const ref = src.configMapKeyRef;
      const data = await lookups.configMap(ns, ref.name ?? '');
      if (data === undefined) {
        if (ref.optional) continue;
        throw new EnvResolutionError(`configmap "${ref.name}" not found`);
      }
      if (!Object.hasOwn(data, ref.key)) {
        if (ref.optional) continue;
        throw new EnvResolutionError(`couldn't find key ${ref.key} in ConfigMap ${ns}/${ref.name}`);
      }
      env[e.name] = data[ref.key]!;
    } else if (src.fieldRef) {
      const value = fieldRefValue(pod, src.fieldRef.fieldPath);
      if (value === undefined) throw new EnvResolutionError(`cannot resolve fieldRef ${src.fieldRef.fieldPath} (env ${e.name})`);
      env[e.name] = value;
    } else {
      throw new EnvResolutionError(`cannot resolve env ${e.name}: only value, secretKeyRef, configMapKeyRef and fieldRef are supported`);
    }
  }
  return env;
}
