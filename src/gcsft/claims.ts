// One live owner per storage namespace (issue 45): which GCS-FT RayCluster claims which storage namespace on
// which Redis. Pure: a cluster's claim, how two claims compare, and the index of claims the webhook (at
// admission, src/admission/validate.ts) and the controller (before its Redis cleanup, src/gcsft/decide.ts)
// keep from their RayCluster caches.
//
// A claim is (the Redis, the storage namespace) the cluster's head writes under, as the cleanup would delete
// it: the namespace by the one rule (./redis-env.ts storageNamespaceSource: the head's own entry wins), the
// address as the cleanup Job gets it (options.redisAddress, else the head's RAY_REDIS_ADDRESS) and "the same
// Redis" by src/redis/identity.ts (address spellings normalised relative to the cluster's Kubernetes
// namespace; what that does not catch is written there). A Secret / ConfigMap reference (for the namespace
// or the address) is compared as the reference: the same key of the same object in the same Kubernetes
// namespace (a copy-pasted manifest); its content is never read here.
//
// Who claims: the clusters raykeeper cleans (./rules.ts gcsFtFinalizerRule: FT with Redis, not managed by
// another controller, not both of KubeRay's switches), with a namespace known here. Not: a namespace read
// from the pod's own fields or expanded from `$(VAR)` (unknown); an address that does not parse (such a head
// never writes). A namespace known but an address that is not (envFrom, `$(VAR)`): the claim has no Redis,
// and compares 'maybe' with every claim of that namespace.
//
// compareClaims: 'same' (one namespace, one Redis), 'maybe' (one namespace, a Redis unknown), 'different'.
// Default namespaces are the clusters' UIDs, so two claims meet only when a namespace was set by hand (or
// copied with a manifest): the index is keyed by namespace and a lookup costs one map read.
import { ENV_REDIS_ADDRESS } from '../names.ts';
import { redisIdentity } from '../redis/identity.ts';
import type { RayClusterFtView } from '../types.ts';
import { isDeleting } from '../../kube/finalizer-patches.ts';
import { gcsFtFinalizerRule } from './rules.ts';
import {
  cleanupEnv,
  describeReference,
  describeStorageNamespace,
  envReference,
  headContainer,
  storageNamespaceSource,
  type EnvReference,
} from './redis-env.ts';

export interface StorageClaim {
  /** The namespace, comparable: `=<namespace>`, or `<kind>:<k8s namespace>/<name>#<key>` for a reference. */
  namespace: string;
  /** The namespace for people: `"ns"` or `from secret NAME key KEY`. */
  namespaceText: string;
  /** The Redis, comparable (redisIdentity, or a reference as above); undefined when not known here. */
  redis: string | undefined;
  /** The Redis for people: `host:port` (never user information), `from secret NAME key KEY`, or `(not known here)`. */
  redisText: string;
  /**
   * The namespace is the cluster's own UID (nothing set it): no manifest carries it, so no other cluster claims it
   * unless someone wrote that UID in by hand. The controller does not look such a claim up at deletion.
   */
  byDefault: boolean;
}

export type ClaimMatch = 'same' | 'maybe' | 'different';

function referenceKey(ref: EnvReference, k8sNamespace: string): string {
  return `${ref.kind}:${k8sNamespace}/${ref.name}#${ref.key}`;
}

const UNKNOWN_REDIS = { redis: undefined, redisText: '(not known here)' };

/** The Redis `cluster` writes to (undefined: none, no claim), or UNKNOWN_REDIS. */
function redisOf(cluster: RayClusterFtView, k8sNamespace: string): Pick<StorageClaim, 'redis' | 'redisText'> | undefined {
  const entry = cleanupEnv(cluster).find((e) => e.name === ENV_REDIS_ADDRESS);
  if (entry === undefined) {
    const envFrom = headContainer(cluster)?.envFrom;
    return Array.isArray(envFrom) && envFrom.length > 0 ? UNKNOWN_REDIS : undefined;
  }
  if (entry.valueFrom !== undefined) {
    const ref = envReference(entry);
    return ref ? { redis: referenceKey(ref, k8sNamespace), redisText: `from ${describeReference(ref)}` } : UNKNOWN_REDIS;
  }
  const value = entry.value ?? '';
  if (value.includes('$(')) return UNKNOWN_REDIS;
  const identity = redisIdentity(value, k8sNamespace);
  return identity === undefined ? undefined : { redis: identity, redisText: identity };
}

/** The storage namespace and Redis `cluster` claims, or undefined when it claims none (see the header). */
export function storageClaim(cluster: RayClusterFtView): StorageClaim | undefined {
  if (!gcsFtFinalizerRule(cluster).wanted) return undefined;
  const k8sNamespace = cluster.metadata?.namespace ?? '';
  const source = storageNamespaceSource(cluster);
  let namespace: string;
  if ('value' in source) {
    if (source.value === '' || source.value.includes('$(')) return undefined;
    namespace = `=${source.value}`;
  } else if (source.from === 'head-ref') namespace = referenceKey(source.ref, k8sNamespace);
  else return undefined;
  const redis = redisOf(cluster, k8sNamespace);
  if (redis === undefined) return undefined;
  return { namespace, namespaceText: describeStorageNamespace(cluster), ...redis, byDefault: source.from === 'uid' };
}

export function compareClaims(a: StorageClaim, b: StorageClaim): ClaimMatch {
  if (a.namespace !== b.namespace) return 'different';
  if (a.redis === undefined || b.redis === undefined) return 'maybe';
  return a.redis === b.redis ? 'same' : 'different';
}

/** One cluster in the index. */
export interface ClaimEntry {
  /** "namespace/name". */
  cluster: string;
  uid: string | undefined;
  deleting: boolean;
  claim: StorageClaim;
}

/** A cluster's entry for the index, or undefined when it claims nothing. */
export function claimEntry(cluster: RayClusterFtView): ClaimEntry | undefined {
  const claim = storageClaim(cluster);
  if (claim === undefined) return undefined;
  const { namespace = '', name = '' } = cluster.metadata ?? {};
  return { cluster: `${namespace}/${name}`, uid: cluster.metadata?.uid, deleting: isDeleting(cluster), claim };
}

/** Another cluster holding the same claim, and how sure that is. */
export interface Claimant {
  cluster: string;
  deleting: boolean;
  match: 'same' | 'maybe';
}

/** Claimants of `claim` among `entries`, but `self` ("namespace/name"); live ones first, then by name. */
export function claimantsAmong(claim: StorageClaim, entries: Iterable<ClaimEntry>, self: string | undefined): Claimant[] {
  const out: Claimant[] = [];
  for (const e of entries) {
    if (e.cluster === self) continue;
    const match = compareClaims(claim, e.claim);
    if (match !== 'different') out.push({ cluster: e.cluster, deleting: e.deleting, match });
  }
  return out.sort((a, b) => Number(a.deleting) - Number(b.deleting) || a.cluster.localeCompare(b.cluster));
}

/**
 * The claims of the clusters in a cache, by "namespace/name", indexed by storage namespace. Fed from the
 * cache's events (watchClaims): `put` on add and update, `remove` on delete.
 */
export class ClaimIndex {
  private readonly byCluster = new Map<string, ClaimEntry>();
  private readonly byNamespace = new Map<string, Map<string, ClaimEntry>>();

  get size(): number {
    return this.byCluster.size;
  }

  /** Records `key`'s entry (undefined: it claims nothing now). */
  put(key: string, entry: ClaimEntry | undefined): void {
    this.remove(key);
    if (entry === undefined) return;
    this.byCluster.set(key, entry);
    let group = this.byNamespace.get(entry.claim.namespace);
    if (!group) this.byNamespace.set(entry.claim.namespace, (group = new Map()));
    group.set(key, entry);
  }

  remove(key: string): void {
    const old = this.byCluster.get(key);
    if (!old) return;
    this.byCluster.delete(key);
    const group = this.byNamespace.get(old.claim.namespace);
    group?.delete(key);
    if (group?.size === 0) this.byNamespace.delete(old.claim.namespace);
  }

  /** The other clusters claiming what `claim` does (self: the asking cluster's "namespace/name"). */
  claimants(claim: StorageClaim, self: string | undefined): Claimant[] {
    return claimantsAmong(claim, this.byNamespace.get(claim.namespace)?.values() ?? [], self);
  }
}

/** The source of cache events watchClaims reads (kube/informer.ts Informer fits). */
export interface ClaimEvents<T> {
  on(handler: (type: 'add' | 'update' | 'delete', obj: T) => void): void;
}

/** Keeps `index` in step with a cache of RayClusters (or of projections, with `entryOf` reading them). */
export function watchClaims<T extends { metadata?: { namespace?: string | undefined; name?: string | undefined } | undefined }>(
  source: ClaimEvents<T>,
  index: ClaimIndex,
  entryOf: (obj: T) => ClaimEntry | undefined,
): void {
  source.on((type, obj) => {
    const key = `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
    if (type === 'delete') index.remove(key);
    else index.put(key, entryOf(obj));
  });
}

/** The claimants in words, for an Event or an admission message (at most three named). */
export function describeClaimants(claimants: readonly Claimant[]): string {
  const named = claimants.slice(0, 3).map((c) => {
    const state = c.deleting ? 'being deleted' : 'live';
    const maybe = c.match === 'maybe' ? ', whose Redis address is not known here and may be the same' : '';
    return `${state} RayCluster ${c.cluster}${maybe}`;
  });
  const more = claimants.length > 3 ? ` and ${claimants.length - 3} more` : '';
  return `${named.join(', ')}${more}`;
}
