// spec.upgradeStrategy of a RayCluster (type Recreate | None; absent: None), as KubeRay v1.6.2
// (raycluster_controller.go createHeadPod / shouldRecreatePodsForUpgrade, utils/util.go
// GenerateHashWithoutReplicasAndWorkersToDelete). Pure: a cluster and its head pods in, a decision out.
//
// - Every head pod is created with two annotations, whatever the strategy: `ray.io/upgrade-strategy-recreate-hash`,
//   the hash of the spec without what scaling and schedulers change (each worker group's replicas, min/max
//   replicas and scaleStrategy.workersToDelete; every template's tolerations and schedulingGates, which Kueue
//   injects; upgradeStrategy itself), and `ray.io/kuberay-version`, who computed it.
// - With Recreate, each pass compares the head's hash with the spec's. A head stamped by another hasher (its
//   kuberay-version is not ours: KubeRay's, or a raykeeper whose hash differs) is re-stamped with ours and NOT
//   recreated, as KubeRay does after its own upgrade, so taking over a cluster never restarts it; a head without
//   a hash is left alone. A different hash deletes every pod of the cluster; the head (under a fresh generated
//   name) and the workers come back from the new spec once the old head is gone.
//
// The hash: SHA-1 of the spec as canonical JSON (keys sorted; absent, null, empty objects and empty lists
// dropped, as Go's omitempty drops empty maps and lists), in Go's base32 "hex" alphabet: the same shape as
// KubeRay's (32 characters), not the same value (KubeRay serializes its typed Go structs). The two never meet:
// each re-stamps the other's heads. HASH_VERSION says which hasher stamped; bump it when the hash of an
// unchanged stored spec would change (the canonical form, the muted fields, a CRD default that appears on read).
import type { RayPodView } from './pod-view.ts';
import { createHash } from 'node:crypto';
import type { RayCluster } from '../types.ts';

export const RECREATE_HASH_ANNOTATION = 'ray.io/upgrade-strategy-recreate-hash';
export const KUBERAY_VERSION_ANNOTATION = 'ray.io/kuberay-version';
/** Our value of ray.io/kuberay-version (KubeRay writes its release, e.g. v1.6.2). */
export const HASH_VERSION = 'raykeeper/v1';
export const UPGRADE_RECREATE = 'Recreate';

/** spec.upgradeStrategy.type is Recreate. */
export function isRecreate(cluster: RayCluster): boolean {
  const strategy = (cluster.spec as Record<string, unknown> | undefined)?.upgradeStrategy;
  return strategy !== null && typeof strategy === 'object' && (strategy as { type?: unknown }).type === UPGRADE_RECREATE;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Sorted keys; object fields that are absent, null, {} or [] dropped (list elements are kept as they are). */
function canonical(value: unknown): Json | undefined {
  if (value === undefined || value === null) return undefined;
  if (Array.isArray(value)) return value.map((v) => canonical(v) ?? null);
  if (typeof value === 'object') {
    const out: { [key: string]: Json } = {};
    for (const key of Object.keys(value).sort()) {
      const v = canonical((value as Record<string, unknown>)[key]);
      if (v === undefined || (Array.isArray(v) && v.length === 0)) continue;
      if (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0) continue;
      out[key] = v;
    }
    return out;
  }
  return value as Json;
}

const BASE32_HEX = '0123456789ABCDEFGHIJKLMNOPQRSTUV';

/** Go's base32.HexEncoding (RFC 4648 "base32hex", padded). */
export function base32Hex(bytes: Uint8Array): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += BASE32_HEX[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    value &= (1 << bits) - 1;
  }
  if (bits > 0) out += BASE32_HEX[(value << (5 - bits)) & 31];
  while (out.length % 8 !== 0) out += '=';
  return out;
}

function templateSpec(group: unknown): Record<string, unknown> | undefined {
  const template = (group as { template?: { spec?: unknown } } | null)?.template;
  const spec = template?.spec;
  return spec !== null && typeof spec === 'object' ? (spec as Record<string, unknown>) : undefined;
}

/** GenerateHashWithoutReplicasAndWorkersToDelete: the spec's hash, blind to scaling and to injected tolerations / gates. */
export function clusterSpecHash(cluster: RayCluster): string {
  const spec = structuredClone((cluster.spec ?? {}) as Record<string, unknown>);
  const head = templateSpec(spec.headGroupSpec);
  if (head) {
    delete head.tolerations;
    delete head.schedulingGates;
  }
  for (const group of Array.isArray(spec.workerGroupSpecs) ? spec.workerGroupSpecs : []) {
    if (group === null || typeof group !== 'object') continue;
    const g = group as Record<string, unknown>;
    delete g.replicas;
    delete g.minReplicas;
    delete g.maxReplicas;
    const scale = g.scaleStrategy as Record<string, unknown> | null | undefined;
    if (scale !== null && typeof scale === 'object') delete scale.workersToDelete;
    const t = templateSpec(g);
    if (t) {
      delete t.tolerations;
      delete t.schedulingGates;
    }
  }
  delete spec.upgradeStrategy;
  const digest = createHash('sha1')
    .update(JSON.stringify(canonical(spec) ?? {}))
    .digest();
  return base32Hex(digest);
}

/** The annotations a new head pod carries (KubeRay stamps every head, whatever the strategy). */
export function headPodStamp(cluster: RayCluster): Record<string, string> {
  return { [RECREATE_HASH_ANNOTATION]: clusterSpecHash(cluster), [KUBERAY_VERSION_ANNOTATION]: HASH_VERSION };
}

export type RecreateDecision =
  | { action: 'keep' }
  /** Stamped by another hasher: write ours onto the head (a metadata patch), recreate nothing. */
  | { action: 'restamp'; pod: string; uid?: string | undefined; annotations: Record<string, string> }
  /** The spec changed: delete every pod of the cluster. */
  | { action: 'recreate'; why: string };

/** shouldRecreatePodsForUpgrade, over the cluster's head pods as the cache holds them (terminating ones included). */
export function recreateDecision(cluster: RayCluster, headPods: RayPodView[]): RecreateDecision {
  if (!isRecreate(cluster) || headPods.length === 0) return { action: 'keep' };
  const head = [...headPods].sort((a, b) => (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''))[0]!;
  const annotations = head.metadata.annotations ?? {};
  const version = annotations[KUBERAY_VERSION_ANNOTATION] ?? '';
  if (version !== '' && version !== HASH_VERSION)
    return { action: 'restamp', pod: head.metadata.name ?? '', uid: head.metadata.uid, annotations: headPodStamp(cluster) };
  const actual = annotations[RECREATE_HASH_ANNOTATION] ?? '';
  const expected = clusterSpecHash(cluster);
  if (actual === '' || actual === expected) return { action: 'keep' };
  return {
    action: 'recreate',
    why: `the spec changed (head ${head.metadata.name} has hash ${actual}, the spec ${expected}) and upgradeStrategy is Recreate`,
  };
}
