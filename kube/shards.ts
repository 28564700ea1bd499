// Sharding's pure rules (kube/sharding.ts does the I/O): which shard a key belongs to, how many shards
// a replica should hold, and which it campaigns for or hands back.
//
// - A namespace's shard is FNV-1a (32-bit) of its name, mod the number of shards: stable across
//   processes, versions and restarts, so every replica maps a key the same way. Cluster-scoped keys
//   (no namespace: the orphan finder's scan key) belong to shard 0.
// - Quotas: the live members, sorted by identity, each get floor(N / M) shards, and the first N mod M
//   of them one more. The quotas add up to N exactly, so once every replica sees the same members no
//   replica is left idle while another holds two (a plain ceil(N / M) fair share can settle at 2-2-0 for
//   4 shards on 3 replicas). While members disagree (one just joined or died) a replica may briefly
//   hold one shard too many or too few; the next round corrects it.
import { splitKey, type ObjectKey } from './reconciler.ts';

/** FNV-1a, 32-bit, over the UTF-8 bytes of `s`. */
export function fnv1a32(s: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(s, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** The shard of a namespace (undefined: cluster-scoped, shard 0). */
export function shardOf(namespace: string | undefined, shards: number): number {
  if (!namespace || shards <= 1) return 0;
  return fnv1a32(namespace) % shards;
}

/** The shard of a work-queue key ("namespace/name", or "name" when cluster-scoped). */
export function shardOfKey(key: ObjectKey, shards: number): number {
  return shardOf(splitKey(key).namespace, shards);
}

/** How many of `shards` the member `identity` should hold among the live `members` (itself included). */
export function quota(shards: number, members: readonly string[], identity: string): number {
  const sorted = [...new Set([...members, identity])].sort();
  const rank = sorted.indexOf(identity);
  const base = Math.floor(shards / sorted.length);
  return base + (rank < shards % sorted.length ? 1 : 0);
}

export interface ShardPlan {
  /** Shards not held to campaign for (all of them while below the quota: the first won counts). */
  campaign: number[];
  /** Held shards to hand back (release) because the quota is exceeded: the highest-numbered ones. */
  release: number[];
}

/** Given the shards held now and the quota: what to campaign for and what to hand back. */
export function planShards(shards: number, held: readonly number[], want: number): ShardPlan {
  const mine = [...new Set(held)].sort((a, b) => a - b);
  if (mine.length > want) return { campaign: [], release: mine.slice(want) };
  if (mine.length === want) return { campaign: [], release: [] };
  const campaign: number[] = [];
  for (let s = 0; s < shards; s++) if (!mine.includes(s)) campaign.push(s);
  return { campaign, release: [] };
}

/** A member Lease's name: `<lease>-member-<identity>`, the identity made a valid object name. */
export function memberLeaseName(lease: string, identity: string): string {
  const safe = identity
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, '-')
    .replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '');
  return `${lease}-member-${safe || fnv1a32(identity).toString(16)}`.slice(0, 253);
}

/** A shard's Lease name. */
export function shardLeaseName(lease: string, shard: number): string {
  return `${lease}-shard-${shard}`;
}

export interface MemberObservation {
  /** The member Lease's resourceVersion when last seen (changes at every renew). */
  record: string;
  /** When we saw that record first, on our clock. */
  observedAt: number;
}

/**
 * Members alive `now`: those whose Lease changed (was renewed) within `leaseDurationMs` of our
 * observation, measured on our clock as the leader election does (no trust in the others' clocks).
 */
export function liveMembers(observed: ReadonlyMap<string, MemberObservation>, now: number, leaseDurationMs: number): string[] {
  return [...observed].filter(([, o]) => now - o.observedAt < leaseDurationMs).map(([identity]) => identity);
}

/** Updates the observations with a fresh listing (identity -> resourceVersion); drops members gone from it. */
export function observeMembers(
  previous: ReadonlyMap<string, MemberObservation>,
  listed: ReadonlyMap<string, string>,
  now: number,
): Map<string, MemberObservation> {
  const next = new Map<string, MemberObservation>();
  for (const [identity, record] of listed) {
    const before = previous.get(identity);
    next.set(identity, before && before.record === record ? before : { record, observedAt: now });
  }
  return next;
}
