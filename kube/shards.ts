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
// - Layouts: a member Lease records its replica's N (annotation raykeeper.io/shards). A namespace's
//   shard depends on N, so two layouts must never hold shards at once: the incumbent wins. A replica
//   takes no shard while the single leader's Lease (`--shards 1`) is live, or while a live member of
//   another layout has an older member Lease (created earlier; the same second: the smaller identity);
//   it shares its shards only with the live members of its own layout that nothing blocks.
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

/** The annotation on a member Lease: the number of shards (`--shards`) of the replica renewing it. */
export const SHARDS_ANNOTATION = 'raykeeper.io/shards';

/** A member Lease as listed. */
export interface MemberListing {
  /** The member Lease's resourceVersion (changes at every renew). */
  record: string;
  /** Its replica's N (SHARDS_ANNOTATION); undefined: not recorded (a raykeeper before the annotation). */
  shards?: number | undefined;
  /** Its metadata.creationTimestamp in ms (second resolution); undefined: unknown. */
  createdAt?: number | undefined;
}

export interface MemberObservation extends MemberListing {
  /** When we saw `record` first, on our clock. */
  observedAt: number;
}

/**
 * Members alive `now`: those whose Lease changed (was renewed) within `leaseDurationMs` of our
 * observation, measured on our clock as the leader election does (no trust in the others' clocks).
 */
export function liveMembers(observed: ReadonlyMap<string, MemberObservation>, now: number, leaseDurationMs: number): string[] {
  return [...observed].filter(([, o]) => now - o.observedAt < leaseDurationMs).map(([identity]) => identity);
}

/**
 * Updates the observations with a fresh listing (identity -> resourceVersion, or the whole listing);
 * drops members gone from it.
 */
export function observeMembers(
  previous: ReadonlyMap<string, MemberObservation>,
  listed: ReadonlyMap<string, string | MemberListing>,
  now: number,
): Map<string, MemberObservation> {
  const next = new Map<string, MemberObservation>();
  for (const [identity, entry] of listed) {
    const listing = typeof entry === 'string' ? { record: entry } : entry;
    const before = previous.get(identity);
    next.set(identity, { ...listing, observedAt: before && before.record === listing.record ? before.observedAt : now });
  }
  return next;
}

/** The `N` of a SHARDS_ANNOTATION value; undefined unless a whole number >= 1. */
export function parseShards(value: string | undefined): number | undefined {
  if (value === undefined || !/^[1-9][0-9]*$/.test(value)) return undefined;
  return Number(value);
}

/**
 * The single leader's Lease (`<lease>`, `--shards 1`) observed as a member's: alive while it has a
 * holder and its record (resourceVersion) changed within a lease duration on our clock (`liveLeader`).
 * A released Lease (no holder) or none: nobody.
 */
export function observeLeader(
  previous: ReadonlyMap<string, MemberObservation>,
  lease: { holder: string; record: string } | undefined,
  now: number,
): Map<string, MemberObservation> {
  return observeMembers(previous, lease?.holder ? new Map([[lease.holder, lease.record]]) : new Map(), now);
}

/** The single leader alive `now` (its identity), or undefined. */
export function liveLeader(observed: ReadonlyMap<string, MemberObservation>, now: number, leaseDurationMs: number): string | undefined {
  return liveMembers(observed, now, leaseDurationMs)[0];
}

/** A live member as the layout rules see it. */
export interface LayoutMember {
  identity: string;
  /** Its N; undefined: not recorded, a layout of its own. */
  shards: number | undefined;
  /** When its member Lease was created (ms); undefined: not yet, the newest. */
  createdAt: number | undefined;
}

/** Whether `a` is the incumbent against `b`: its member Lease was created earlier (the same time: the smaller identity). */
export function isOlder(a: LayoutMember, b: LayoutMember): boolean {
  const ta = a.createdAt ?? Number.POSITIVE_INFINITY;
  const tb = b.createdAt ?? Number.POSITIVE_INFINITY;
  return ta !== tb ? ta < tb : a.identity < b.identity;
}

/** What keeps a replica from taking shards: the live single leader, or an older live member of another layout. */
export type LayoutBlocker = { kind: 'leader'; identity: string } | { kind: 'member'; identity: string; shards: number | undefined };

/**
 * Who keeps `self` from taking any shard, or undefined: the single leader while its Lease is live
 * (`leader`, from liveLeader), else the oldest live member of another layout older than `self`.
 */
export function layoutBlocker(self: LayoutMember, live: readonly LayoutMember[], leader?: string): LayoutBlocker | undefined {
  if (leader) return { kind: 'leader', identity: leader };
  let oldest: LayoutMember | undefined;
  for (const m of live) {
    if (m.identity === self.identity || m.shards === self.shards || !isOlder(m, self)) continue;
    if (!oldest || isOlder(m, oldest)) oldest = m;
  }
  return oldest && { kind: 'member', identity: oldest.identity, shards: oldest.shards };
}

/**
 * The members `self` shares its N shards with (itself included): the live members of its layout that
 * no other layout blocks (a blocked one takes nothing, so counting it would leave its share unheld).
 */
export function layoutPeers(self: LayoutMember, live: readonly LayoutMember[]): string[] {
  const peers = live.filter((m) => m.identity !== self.identity && m.shards === self.shards && !layoutBlocker(m, live));
  return [self.identity, ...peers.map((m) => m.identity)];
}

/**
 * How long after its member Lease was created a replica waits before taking its first shard: longer
 * than the creation time's resolution (1 s), so that two replicas that joined in the same second both
 * see each other before either takes a shard, and than a starting single leader's membership check
 * may be stale (two retry periods), so that one of them always sees the other first.
 */
export function joinWaitMs(retryPeriodMs: number): number {
  return 2 * retryPeriodMs + 1_000;
}
