// Sharded leadership (`--shards N`, N > 1): namespaces split into N shards (kube/shards.ts: FNV-1a of
// the namespace mod N), each shard held through its own Lease `<lease>-shard-<i>` by the leader
// election's own LeaderElector (same algorithm, same renew deadline, same write fence), one elector
// per shard, reused term after term.
//
// Balance, and why this way: every replica also renews a member Lease `<lease>-member-<identity>`
// (labelled raykeeper.io/shard-members=<lease>) every retry period, lists the member Leases, and counts
// as alive those it saw renewed within a lease duration (on its own clock, as the elector does). Each
// member's quota is floor(N / M), plus one for the first N mod M identities in sorted order, so the
// quotas add up to N and no replica idles beside one holding two. A replica campaigns for every free
// shard while below its quota and hands back (releases, as on SIGTERM) the shards above it: every
// shard's elector runs all the time, observing the Lease, and takes it only while the quota allows
// (LeaderElector's mayAcquire), so a dead holder's shard is taken a lease duration after its last renew. No
// coordinator, no extra object beyond one Lease per replica, and every safety property is still the
// shard Lease's: two replicas can at worst disagree on quotas for a round, never hold one shard.
// A replica killed with -9 stops renewing both its member Lease and its shard Leases: after a lease
// duration the others see its shards free and its member gone, so their quotas grow and they take them.
//
// Layouts: a namespace's shard depends on N, and the shard Leases do not say which N they were taken
// under, so two layouts (two --shards, or a single leader beside shards) must never hold work at once.
// A member Lease records its N (annotation raykeeper.io/shards, on create and every renew) and the
// incumbent layout wins (the rules are kube/shards.ts layoutBlocker/layoutPeers): a replica counts only
// the live members of its N (not blocked themselves) for its quota, and its quota is 0, so it takes no
// shard and hands back what it holds, while a live member of another N has an older member Lease, or
// while the single leader's Lease `<lease>` is live (a holder, renewed within a lease duration on our
// clock, read every round). Each change is logged at error level and exported
// (raykeeper_shard_layout_blocked). The single leader's side is LayoutWatch below: it does not take its
// Lease while any member Lease is live. A fresh replica takes its first shard only from a round started
// joinWaitMs after its member Lease was created: two layouts starting in the same second (creation
// times have 1 s resolution) or a sharded replica starting just as a single leader takes its Lease
// (whose membership check may be two retry periods old) then always see each other before either
// takes work.
//
// Losing a shard (its renew deadline passed, or the Lease taken) aborts that shard's in-flight
// reconciles (`workSignal`) and the replica campaigns again; the process does not exit. Handing a
// shard back aborts its reconciles, waits for them (`drain`) while the Lease is still ours, then
// releases it. The replica holding shard 0 does the singleton work and cleans up member Leases left by
// replicas that died (unchanged for twice the lease duration).
import { sleep } from './backoff.ts';
import type { Logger } from './logger.ts';
import { isAlreadyExists, isConflict, isForbidden, isNotFound, type KubeClient, type ResourceRef } from './client.ts';
import { LeaderElector, microTime, type LeaderTiming } from './leader.ts';
import type { Lease, LeaseSpec } from './model.ts';
import { LEASES } from './resources.ts';
import {
  joinWaitMs,
  layoutBlocker,
  layoutPeers,
  liveLeader,
  liveMembers,
  memberLeaseName,
  observeLeader,
  observeMembers,
  parseShards,
  planShards,
  quota,
  SHARDS_ANNOTATION,
  shardLeaseName,
  type LayoutBlocker,
  type LayoutMember,
  type MemberListing,
  type MemberObservation,
} from './shards.ts';

export const MEMBER_LABEL = 'raykeeper.io/shard-members';

/** A listed member Lease as the layout rules read it (identity: its holder). */
function memberListing(lease: Lease): MemberListing {
  const created = lease.metadata.creationTimestamp ? Date.parse(lease.metadata.creationTimestamp) : Number.NaN;
  return {
    record: lease.metadata.resourceVersion ?? '',
    shards: parseShards(lease.metadata.annotations?.[SHARDS_ANNOTATION]),
    createdAt: Number.isFinite(created) ? created : undefined,
  };
}

/** How a blocker reads in the logs. */
function describeBlocker(b: LayoutBlocker, leaseName: string): string {
  return b.kind === 'leader'
    ? `the single leader ${b.identity} holds Lease ${leaseName} (--shards 1)`
    : `member ${b.identity} runs --shards ${b.shards ?? '(not recorded)'} and joined first`;
}

export interface ShardingOptions extends LeaderTiming {
  kube: KubeClient;
  namespace: string;
  /** The base Lease name (`--lease-name`). */
  name: string;
  identity: string;
  shards: number;
  logger: Logger;
  now?: () => number;
}

export interface ShardCallbacks {
  /** A shard was acquired: resync its keys. */
  onAcquired(shard: number): void;
  /** A shard was lost or handed back (its work already aborted). */
  onStopped(shard: number, reason: string): void;
  /** Resolves when no reconcile of the shard runs any more (before its Lease is handed back). */
  drain(shard: number): Promise<void>;
}

interface ShardState {
  elector: LeaderElector;
  /** The current term (campaign, then lead); aborting it ends the campaign or hands the shard back. */
  term: AbortController | undefined;
  /** Aborted when the shard is lost or handed back: the shard's in-flight reconciles stop. */
  work: AbortController;
  handingBack: boolean;
}

export class ShardCoordinator {
  readonly shards: number;
  readonly identity: string;
  private readonly options: ShardingOptions & { now: () => number };
  private readonly state: ShardState[];
  private members = new Map<string, MemberObservation>();
  private memberLease: Lease | undefined;
  /** The single leader's Lease (`<lease>`), observed as a member's: live while renewed. */
  private leader = new Map<string, MemberObservation>();
  /** When the last successful member listing and single leader's Lease read started (our clock). */
  private listedAt: number | undefined;
  private leaderReadAt: number | undefined;
  /** When our member Lease was created (or first renewed by this process), on our clock. */
  private joinedAt: number | undefined;
  /** What keeps us from taking shards (another layout), as last counted. */
  private blocker: LayoutBlocker | undefined;
  private reportedBlocker = '';
  private readonly terms = new Set<Promise<void>>();

  constructor(options: ShardingOptions) {
    this.options = { ...options, now: options.now ?? Date.now };
    this.shards = options.shards;
    this.identity = options.identity;
    this.state = Array.from({ length: options.shards }, (_, shard) => {
      const work = new AbortController();
      work.abort(); // nothing held yet
      return {
        elector: new LeaderElector({
          kube: options.kube,
          namespace: options.namespace,
          name: shardLeaseName(options.name, shard),
          identity: options.identity,
          leaseDurationMs: options.leaseDurationMs,
          renewDeadlineMs: options.renewDeadlineMs,
          retryPeriodMs: options.retryPeriodMs,
          logger: options.logger,
          now: this.options.now,
          mayAcquire: () => this.reserve(shard),
        }),
        term: undefined,
        work,
        handingBack: false,
      };
    });
  }

  /** How many shards this replica should hold, as last counted. */
  private want = 0;
  /** Shards whose acquisition was allowed and may be in flight (until when), counted against the quota. */
  private readonly reserved = new Map<number, number>();

  /**
   * The elector's mayAcquire: yes only within the quota, counting the acquisitions already allowed and
   * not yet held (every shard's elector asks on its own; without this, one replica at a cold start could
   * take every free shard at once and hand most back, each hand-back draining its reconciles).
   */
  private reserve(shard: number): boolean {
    const now = this.options.now();
    for (const [s, until] of this.reserved) if (until <= now || this.holds(s)) this.reserved.delete(s);
    if (this.reserved.has(shard)) return true;
    const counted = [...new Set([...this.held(), ...this.reserved.keys()])];
    if (!planShards(this.shards, counted, this.want).campaign.includes(shard)) return false;
    this.reserved.set(shard, now + this.options.retryPeriodMs);
    return true;
  }

  /** Whether this replica holds the shard now (false from its renew deadline on, or once handed back). */
  holds(shard: number): boolean {
    const s = this.state[shard];
    return s !== undefined && !s.handingBack && s.elector.isLeader();
  }

  /** Whether writes for the shard are still safe (the fence): its Lease is ours within its renew deadline. */
  mayWrite(shard: number): boolean {
    return this.state[shard]?.elector.mayWrite() ?? false;
  }

  /** Aborted when the shard is lost or handed back. */
  workSignal(shard: number): AbortSignal {
    return this.state[shard]!.work.signal;
  }

  held(): number[] {
    return this.state.flatMap((_, shard) => (this.holds(shard) ? [shard] : []));
  }

  /** Unhealthy when a held shard was not renewed for longer than the lease duration. */
  healthy(): boolean {
    return this.state.every((s) => s.elector.healthy());
  }

  /** Live members as last counted (this replica included), of every layout. */
  liveMembers(): string[] {
    return liveMembers(this.members, this.options.now(), this.options.leaseDurationMs);
  }

  /** Another layout running, as last counted (this replica takes no shard meanwhile), or undefined. */
  layoutBlocker(): LayoutBlocker | undefined {
    return this.blocker;
  }

  /** A member as the layout rules see it; this replica with its own N and its member Lease's age. */
  private layoutMember(identity: string): LayoutMember {
    const o = this.members.get(identity);
    if (identity !== this.identity) return { identity, shards: o?.shards, createdAt: o?.createdAt };
    const created = Date.parse(this.memberLease?.metadata.creationTimestamp ?? '');
    return { identity, shards: this.shards, createdAt: Number.isFinite(created) ? created : o?.createdAt };
  }

  /**
   * This round's quota: 0 while another layout runs (kube/shards.ts layoutBlocker) or before the join
   * wait is over (joinWaitMs: a member listing and a read of the single leader's Lease, both started
   * that long after our member Lease was created); else our share among the unblocked members of our layout.
   */
  private countQuota(): { want: number; peers: string[] } {
    const now = this.options.now();
    const { leaseDurationMs, retryPeriodMs } = this.options;
    const live = liveMembers(this.members, now, leaseDurationMs).map((identity) => this.layoutMember(identity));
    const self = this.layoutMember(this.identity);
    this.blocker = layoutBlocker(self, live, liveLeader(this.leader, now, leaseDurationMs));
    this.reportBlocker();
    const peers = layoutPeers(self, live);
    const joined =
      this.joinedAt !== undefined &&
      this.listedAt !== undefined &&
      this.leaderReadAt !== undefined &&
      Math.min(this.listedAt, this.leaderReadAt) >= this.joinedAt + joinWaitMs(retryPeriodMs);
    return { want: joined && !this.blocker ? quota(this.shards, peers, this.identity) : 0, peers };
  }

  /** Logs each change of what keeps us from taking shards (an error: two layouts are deployed). */
  private reportBlocker(): void {
    const b = this.blocker;
    const key = b ? JSON.stringify(b) : '';
    if (key === this.reportedBlocker) return;
    this.reportedBlocker = key;
    const log = this.options.logger;
    if (b) {
      log.error(
        {
          shards: this.shards,
          other: b.identity,
          otherShards: b.kind === 'leader' ? 1 : (b.shards ?? null),
          otherLease: b.kind === 'leader' ? this.options.name : memberLeaseName(this.options.name, b.identity),
        },
        `sharding: another layout is running (${describeBlocker(b, this.options.name)}); this replica (--shards ${this.shards}) takes no shard while it lives`,
      );
    } else {
      log.info({ shards: this.shards }, 'sharding: no other layout is running any more; taking shards');
    }
  }

  /** Rounds of membership and balancing every retry period until `signal` aborts (then every term ends). */
  async run(signal: AbortSignal, callbacks: ShardCallbacks): Promise<void> {
    const log = this.options.logger;
    log.info({ shards: this.shards, identity: this.identity }, 'sharding: joining');
    while (!signal.aborted) {
      await this.renewMembership(signal);
      await this.readLeader(signal);
      if (signal.aborted) break; // a term started now would never hear of the abort
      const { want, peers } = this.countQuota();
      this.want = want;
      // Every shard has a term (a candidate that takes it only within the quota, or its holder). A quota
      // that shrank (a member joined) leaves shards above it: handed back here.
      this.state.forEach((s, shard) => {
        if (!s.term) this.startTerm(shard, signal, callbacks);
      });
      const plan = planShards(this.shards, this.held(), want);
      for (const shard of plan.release) {
        log.info(
          { shard, members: peers.length, quota: want },
          this.blocker
            ? 'sharding: handing a shard back (another layout is running)'
            : 'sharding: handing a shard back (above this replica’s quota)',
        );
        this.state[shard]!.handingBack = true;
        this.state[shard]!.term?.abort();
      }
      if (this.holds(0)) await this.collectDeadMembers(signal);
      await sleep(this.options.retryPeriodMs, signal);
    }
    await Promise.all([...this.terms]);
  }

  /** On SIGTERM, after the reconcilers stopped: releases every shard still ours and leaves the members. */
  async release(): Promise<void> {
    await Promise.all(this.state.map((s) => s.elector.release()));
    const lease = this.memberLease;
    this.memberLease = undefined;
    if (lease) {
      await this.options.kube
        .delete(this.memberRef(), { preconditions: { resourceVersion: lease.metadata.resourceVersion ?? '' } })
        .catch((err: unknown) => this.options.logger.warn({ err: String(err) }, 'sharding: could not delete the member lease'));
    }
  }

  private startTerm(shard: number, runSignal: AbortSignal, callbacks: ShardCallbacks): void {
    const log = this.options.logger;
    const s = this.state[shard]!;
    if (runSignal.aborted) return; // its 'abort' has fired: the term would campaign for ever
    const term = new AbortController();
    const stopTerm = (): void => term.abort();
    runSignal.addEventListener('abort', stopTerm, { once: true });
    s.term = term;
    s.handingBack = false;
    const running = s.elector
      .run(term.signal, {
        onStartedLeading: () => {
          s.work = new AbortController();
          log.info({ shard, lease: shardLeaseName(this.options.name, shard) }, 'sharding: shard acquired');
          callbacks.onAcquired(shard);
        },
        onStoppedLeading: (reason) => {
          // A graceful stop (SIGTERM) lets in-flight reconciles finish, as the single leader does.
          if (runSignal.aborted) return;
          s.work.abort();
          // 'shutdown' here is our own term's end: the quota says hand it back (released below).
          const why = reason === 'shutdown' ? 'handed back' : reason;
          log.warn({ shard, reason: why }, 'sharding: shard lost');
          callbacks.onStopped(shard, why);
        },
      })
      .then(async () => {
        if (runSignal.aborted) return; // the manager releases after its drain
        // A no-op unless the term ended by our own abort with the Lease still ours (handed back).
        await callbacks.drain(shard);
        await s.elector.release();
      })
      .catch((err: unknown) => log.error({ shard, err: String(err) }, 'sharding: shard term failed'))
      .finally(() => {
        runSignal.removeEventListener('abort', stopTerm);
        s.term = undefined;
        s.handingBack = false;
        this.terms.delete(running);
      });
    this.terms.add(running);
  }

  private memberRef(): ResourceRef<Lease> & { name: string } {
    return { ...LEASES.at(this.options.namespace), name: memberLeaseName(this.options.name, this.identity) };
  }

  /** Renews (or creates) our member Lease and lists every member's; on failure keeps the last count. */
  private async renewMembership(signal: AbortSignal): Promise<void> {
    const { kube, namespace, name, logger } = this.options;
    const now = this.options.now();
    const spec: LeaseSpec = {
      holderIdentity: this.identity,
      leaseDurationSeconds: Math.max(1, Math.ceil(this.options.leaseDurationMs / 1000)),
      renewTime: microTime(now),
    };
    const timeoutMs = this.options.renewDeadlineMs;
    const layout = String(this.shards);
    try {
      let current = this.memberLease ?? (await kube.getOrUndefined(this.memberRef(), { signal, timeoutMs }));
      if (current && current.metadata.annotations?.[SHARDS_ANNOTATION] !== layout) {
        // Our identity's Lease from another layout (a restart with another --shards): it must not lend
        // this layout its age. Deleted (if unchanged) and created anew.
        await kube
          .delete(this.memberRef(), { preconditions: { resourceVersion: current.metadata.resourceVersion ?? '' }, signal })
          .catch((err: unknown) => {
            if (!isNotFound(err)) throw err;
          });
        current = undefined;
      }
      if (current) {
        this.memberLease = await kube.replace(
          this.memberRef(),
          {
            ...current,
            metadata: { ...current.metadata, annotations: { ...current.metadata.annotations, [SHARDS_ANNOTATION]: layout } },
            spec: { ...current.spec, ...spec },
          },
          { signal, timeoutMs },
        );
        this.joinedAt ??= this.options.now();
      } else {
        const created: Lease = {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: {
            name: this.memberRef().name,
            namespace,
            labels: { [MEMBER_LABEL]: name },
            annotations: { [SHARDS_ANNOTATION]: layout },
          },
          spec: { ...spec, acquireTime: microTime(now) },
        };
        this.memberLease = await kube.create(this.memberRef(), created, { signal, timeoutMs });
        this.joinedAt = this.options.now();
      }
    } catch (err) {
      this.memberLease = undefined; // re-read next round
      if (!signal.aborted && !isConflict(err) && !isAlreadyExists(err))
        logger.warn({ err: String(err) }, 'sharding: cannot renew the member lease');
    }
    const listStarted = this.options.now();
    try {
      const list = await kube.list(LEASES.at(namespace), { labelSelector: `${MEMBER_LABEL}=${name}`, signal });
      const listed = new Map<string, MemberListing>();
      for (const lease of list.items) {
        const holder = lease.spec?.holderIdentity;
        if (holder) listed.set(holder, memberListing(lease));
      }
      this.members = observeMembers(this.members, listed, this.options.now());
      if (!this.members.has(this.identity)) this.members.set(this.identity, { record: '', observedAt: this.options.now() });
      this.listedAt = listStarted;
    } catch (err) {
      if (!signal.aborted) logger.warn({ err: String(err) }, 'sharding: cannot list the member leases');
    }
  }

  /** Reads the single leader's Lease (`<lease>`): while it is live, this layout takes no shard. */
  private async readLeader(signal: AbortSignal): Promise<void> {
    const { kube, namespace, name } = this.options;
    const started = this.options.now();
    try {
      const lease = await kube.getOrUndefined(LEASES.at(namespace, name), { signal, timeoutMs: this.options.renewDeadlineMs });
      const holder = lease?.spec?.holderIdentity ?? '';
      this.leader = observeLeader(this.leader, { holder, record: lease?.metadata.resourceVersion ?? '' }, this.options.now());
      this.leaderReadAt = started;
    } catch (err) {
      if (!signal.aborted) this.options.logger.warn({ err: String(err) }, 'sharding: cannot read the single leader’s lease');
    }
  }

  /** Deletes member Leases not renewed for twice the lease duration (their replica died), if unchanged. */
  private async collectDeadMembers(signal: AbortSignal): Promise<void> {
    const now = this.options.now();
    for (const [identity, o] of this.members) {
      if (identity === this.identity || now - o.observedAt < 2 * this.options.leaseDurationMs) continue;
      const ref = LEASES.at(this.options.namespace, memberLeaseName(this.options.name, identity));
      try {
        await this.options.kube.delete(ref, { preconditions: { resourceVersion: o.record }, signal });
        this.options.logger.info({ member: identity }, 'sharding: removed the member lease of a replica gone');
      } catch (err) {
        if (!signal.aborted && !isConflict(err) && !isNotFound(err))
          this.options.logger.warn({ member: identity, err: String(err) }, 'sharding: cannot remove a dead member lease');
      }
    }
  }
}

export interface LayoutWatchOptions extends Pick<LeaderTiming, 'leaseDurationMs' | 'retryPeriodMs'> {
  kube: KubeClient;
  namespace: string;
  /** The Lease name (`--lease-name`): its member Leases are labelled MEMBER_LABEL=<name>. */
  name: string;
  logger: Logger;
  now?: () => number;
}

/**
 * The single leader's side of the layout rule (`--shards 1`): while it does not lead, it lists the
 * member Leases of its lease name every retry period and declines its Lease (LeaderElector's
 * mayAcquire) while any is live (renewed within a lease duration on our clock), whatever its N: a
 * sharded layout runs. Declined too until a listing succeeded within the last two retry periods (one
 * failing or not made yet tells nothing). Once leading it keeps leading: the sharded replicas defer
 * to a live single leader. RBAC refusing the list (a Role from before the list was granted) leaves the
 * check off, logged once: the single leader then takes its Lease as before.
 */
export class LayoutWatch {
  private readonly options: LayoutWatchOptions & { now: () => number };
  private members = new Map<string, MemberObservation>();
  /** When the last successful listing started (our clock). */
  private checkedAt: number | undefined;
  /** The list is forbidden: not checking. */
  private unchecked = false;
  private reported = '';

  constructor(options: LayoutWatchOptions) {
    this.options = { ...options, now: options.now ?? Date.now };
  }

  /** The elector's mayAcquire: no live member Lease seen by a recent listing (or the check is off). */
  mayAcquire(): boolean {
    if (this.unchecked) return true;
    const now = this.options.now();
    if (this.checkedAt === undefined || now - this.checkedAt > 2 * this.options.retryPeriodMs) return false;
    return this.blocker(now) === undefined;
  }

  /** The live member (of a sharded layout) keeping us from the Lease, as last listed, or undefined. */
  blockedBy(): { identity: string; shards: number | undefined } | undefined {
    return this.unchecked ? undefined : this.blocker(this.options.now());
  }

  /** Lists the member Leases every retry period until `signal` aborts (the manager aborts it once leading). */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await sleep(this.options.retryPeriodMs, signal);
      if (!signal.aborted) await this.check(signal);
    }
  }

  /** One listing of the member Leases. */
  async check(signal: AbortSignal): Promise<void> {
    const { kube, namespace, name, logger } = this.options;
    const started = this.options.now();
    try {
      // Bounded: a listing older than two retry periods counts for nothing anyway.
      const bounded = AbortSignal.any([signal, AbortSignal.timeout(2 * this.options.retryPeriodMs)]);
      const list = await kube.list(LEASES.at(namespace), { labelSelector: `${MEMBER_LABEL}=${name}`, signal: bounded });
      const listed = new Map<string, MemberListing>();
      for (const lease of list.items) {
        const holder = lease.spec?.holderIdentity;
        if (holder) listed.set(holder, memberListing(lease));
      }
      this.members = observeMembers(this.members, listed, this.options.now());
      this.checkedAt = started;
      this.unchecked = false;
    } catch (err) {
      if (signal.aborted) return;
      if (isForbidden(err)) {
        if (!this.unchecked)
          logger.error(
            { namespace, err: String(err) },
            'leader election: cannot list the member Leases (RBAC: list on leases in the lease namespace); not checking for a sharded layout',
          );
        this.unchecked = true;
        return;
      }
      logger.warn({ err: String(err) }, 'leader election: cannot list the member leases');
      return;
    }
    const b = this.blocker(this.options.now());
    const key = b ? JSON.stringify(b) : '';
    if (key === this.reported) return;
    this.reported = key;
    if (b)
      logger.error(
        { other: b.identity, otherShards: b.shards ?? null, otherLease: memberLeaseName(name, b.identity) },
        `leader election: another layout is running (member ${b.identity} runs --shards ${b.shards ?? '(not recorded)'}); not taking Lease ${name} while its members live`,
      );
    else logger.info('leader election: no sharded layout is running any more');
  }

  private blocker(now: number): { identity: string; shards: number | undefined } | undefined {
    const [identity] = liveMembers(this.members, now, this.options.leaseDurationMs).sort();
    return identity === undefined ? undefined : { identity, shards: this.members.get(identity)?.shards };
  }
}
