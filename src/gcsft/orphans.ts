// The orphan finder's decisions (issue 28): which Ray storage namespaces listed in a Redis no live
// RayCluster names, how long each has been seen orphaned, and whether one may be deleted. Pure: the
// controller (controller/gcsft-orphans/) and `raykeeper redis-cleanup --list --orphans` do the I/O.
//
// Ownership is global on purpose: a namespace that ANY live RayCluster names (deleting ones too: their
// cleanup is pending) is never an orphan, whatever Redis that cluster points at. One Redis can be
// written under several addresses (a name and an IP, a Sentinel and its master), so matching by
// address could call a live cluster's data an orphan; a collision of storage namespaces across Redis
// servers (both UIDs, or the same explicit name) only hides an orphan, which is the safe way to be wrong.
import { AddressError, formatHostPort, parseRedisAddress } from '../redis/address.ts';
import { addressAsSeenFromNamespace } from '../redis/identity.ts';
import { storageNamespaceProblem, usesRedisBackend } from './rules.ts';
import { cleanupEnv, effectiveStorageNamespace } from './redis-env.ts';
import { isDeleting } from '../../kube/finalizer-patches.ts';
import { ENV_REDIS_ADDRESS, ENV_STORAGE_NAMESPACE } from '../names.ts';
import type { RayClusterFtView } from '../types.ts';
import type { EnvVar } from '../../kube/model.ts';

/** A live GCS-FT RayCluster as the finder sees it. */
export interface NamespaceOwner {
  /** "namespace/name", for messages. */
  cluster: string;
  /** redisKey() of its Redis address; undefined when the address is unknown. */
  redis: string | undefined;
  /** Its storage namespace; undefined when it cannot be known (e.g. the head reads it from a Secret we may not read). */
  namespace: string | undefined;
  deleting: boolean;
}

/** What a Redis listing says about one namespace (controller/redis-cleanup/list.ts NamespaceSummary). */
export interface ListedNamespace {
  namespace: string;
  /** Ray keys (the summary's `keys`); 0 when only look-alikes were found. */
  keys: number;
  bytes?: number | undefined;
}

export interface Orphan {
  redis: string;
  namespace: string;
  keys: number;
  /** undefined when MEMORY USAGE is not allowed. */
  bytes: number | undefined;
}

/**
 * The one identity of a Redis for grouping, gauges and logs: scheme and host:port, never the user
 * information. Undefined for an address that does not parse.
 */
export function redisKey(address: string): string | undefined {
  try {
    const a = parseRedisAddress(address);
    return `${a.tls ? 'rediss' : 'redis'}://${formatHostPort(a.host, a.port)}`;
  } catch (err) {
    if (err instanceof AddressError) return undefined;
    throw err;
  }
}

/** Owners grouped by Redis (owners with an unknown Redis are left out: there is nothing to list). */
export function groupByRedis(owners: readonly NamespaceOwner[]): Map<string, NamespaceOwner[]> {
  const groups = new Map<string, NamespaceOwner[]>();
  for (const o of owners) {
    if (o.redis === undefined) continue;
    const list = groups.get(o.redis) ?? [];
    list.push(o);
    groups.set(o.redis, list);
  }
  return new Map([...groups].sort(([a], [b]) => a.localeCompare(b)));
}

/** Owners whose storage namespace is unknown: while there is one, nothing may be deleted. */
export function unknownOwners(owners: readonly NamespaceOwner[]): string[] {
  return owners
    .filter((o) => o.namespace === undefined)
    .map((o) => o.cluster)
    .sort();
}

/** The namespaces of `listed` (one Redis) that no owner names, in any Redis. Both layouts count once. */
export function findOrphans(redis: string, listed: readonly ListedNamespace[], owners: readonly NamespaceOwner[]): Orphan[] {
  const named = new Set(owners.map((o) => o.namespace).filter((ns): ns is string => ns !== undefined));
  const byName = new Map<string, Orphan>();
  for (const l of listed) {
    if (l.keys <= 0 || named.has(l.namespace) || storageNamespaceProblem(l.namespace) !== undefined) continue;
    const prior = byName.get(l.namespace);
    if (prior) {
      prior.keys += l.keys;
      prior.bytes = prior.bytes === undefined || l.bytes === undefined ? undefined : prior.bytes + l.bytes;
    } else byName.set(l.namespace, { redis, namespace: l.namespace, keys: l.keys, bytes: l.bytes });
  }
  return [...byName.values()].sort((a, b) => a.namespace.localeCompare(b.namespace));
}

/** An orphan's identity across scans. */
export function orphanId(o: { redis: string; namespace: string }): string {
  return `${o.redis}\u0000${o.namespace}`;
}

/**
 * Since when each orphan has been seen orphaned CONTINUOUSLY: a scan that does not find it (owned again,
 * deleted, or its Redis not scanned) forgets it, so the grace starts over. `scanned` are the Redis
 * servers this scan listed; an orphan of a Redis that could not be listed keeps its time.
 */
export function trackOrphans(
  previous: ReadonlyMap<string, number>,
  orphans: readonly Orphan[],
  scanned: ReadonlySet<string>,
  now: number,
): { firstSeen: Map<string, number>; newlyFound: Orphan[] } {
  const firstSeen = new Map<string, number>();
  for (const [id, at] of previous) if (!scanned.has(id.slice(0, id.indexOf('\u0000')))) firstSeen.set(id, at);
  const newlyFound: Orphan[] = [];
  for (const o of orphans) {
    const id = orphanId(o);
    const at = previous.get(id);
    if (at === undefined) newlyFound.push(o);
    firstSeen.set(id, at ?? now);
  }
  return { firstSeen, newlyFound };
}

export type GcDecision = { action: 'delete' } | { action: 'wait'; dueAt: number } | { action: 'keep'; reason: string };

/**
 * Whether an orphan seen since `firstSeen` may be deleted now. `fresh` are the owners from a LIST of
 * RayClusters read from the API just before (never the cache): a namespace one of them names, or any
 * owner whose namespace is unknown, keeps it.
 */
export function decideGc(input: {
  orphan: { redis: string; namespace: string };
  firstSeen: number;
  now: number;
  graceMs: number;
  fresh: readonly NamespaceOwner[];
}): GcDecision {
  const { orphan, firstSeen, now, graceMs, fresh } = input;
  const dueAt = firstSeen + graceMs;
  if (now < dueAt) return { action: 'wait', dueAt };
  const named = fresh.find((o) => o.namespace === orphan.namespace);
  if (named) return { action: 'keep', reason: `RayCluster ${named.cluster}${named.deleting ? ' (being deleted)' : ''} names it` };
  const unknown = unknownOwners(fresh);
  if (unknown.length > 0)
    return { action: 'keep', reason: `the storage namespace of RayCluster ${unknown.slice(0, 3).join(', ')} cannot be read` };
  const problem = storageNamespaceProblem(orphan.namespace);
  if (problem) return { action: 'keep', reason: problem };
  return { action: 'delete' };
}

/** A cleanup-env entry's plain value; undefined for a reference (valueFrom) or no entry. */
function plain(env: readonly EnvVar[], name: string): string | undefined {
  const e = env.find((x) => x.name === name);
  return e && e.valueFrom === undefined ? (e.value ?? '') : undefined;
}

/**
 * Whether the cluster's storage namespace or Redis address is known only to its head pod's environment
 * (a Secret, a ConfigMap, envFrom): the caller resolves it (the in-process cleanup's resolver) first.
 */
export function ownerNeedsEnv(cluster: RayClusterFtView): boolean {
  if (!usesRedisBackend(cluster)) return false;
  const env = cleanupEnv(cluster);
  return plain(env, ENV_STORAGE_NAMESPACE) === undefined || plain(env, ENV_REDIS_ADDRESS) === undefined;
}

/**
 * The owner a RayCluster is: its storage namespace and Redis as its head pod got them (src/gcsft/redis-env.ts),
 * from plain values or, when given, the head's resolved environment. A one-label Redis host is the Service
 * of that name in the cluster's own namespace (`redis` in team-a is `redis.team-a`): two namespaces'
 * `redis` are two servers, listed apart, each where the cluster's own pods reach it. A cluster without GCS FT in Redis
 * still owns its namespace (a switch of backend must not make its data an orphan) but points at no Redis.
 */
export function ownerOf(cluster: RayClusterFtView, resolved?: Readonly<Record<string, string>>): NamespaceOwner {
  const { namespace = '', name = '' } = cluster.metadata;
  const owner = { cluster: `${namespace}/${name}`, deleting: isDeleting(cluster) };
  if (!usesRedisBackend(cluster)) return { ...owner, redis: undefined, namespace: literal(effectiveStorageNamespace(cluster)) };
  const env = cleanupEnv(cluster);
  const ns = plain(env, ENV_STORAGE_NAMESPACE) ?? resolved?.[ENV_STORAGE_NAMESPACE];
  const address = literal(plain(env, ENV_REDIS_ADDRESS) ?? resolved?.[ENV_REDIS_ADDRESS]);
  return {
    ...owner,
    redis: address === undefined ? undefined : redisKey(addressAsSeenFromNamespace(address, namespace)),
    namespace: literal(ns),
  };
}

/**
 * A value as the head got it, or undefined when it is not known here: empty, or with a `$(VAR)` reference
 * the kubelet expands in the pod (`$(TEAM)-gcs`): the literal text is not the namespace the head writes, and
 * an unknown owner keeps the GC from deleting anything.
 */
function literal(value: string | undefined): string | undefined {
  return value === undefined || value === '' || value.includes('$(') ? undefined : value;
}
