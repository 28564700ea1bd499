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
// Losing a shard (its renew deadline passed, or the Lease taken) aborts that shard's in-flight
// reconciles (`workSignal`) and the replica campaigns again; the process does not exit. Handing a
// shard back aborts its reconciles, waits for them (`drain`) while the Lease is still ours, then
// releases it. The replica holding shard 0 does the singleton work and cleans up member Leases left by
// replicas that died (unchanged for twice the lease duration).
import { sleep } from '../src/backoff.ts';
import type { Logger } from '../src/logger.ts';
import { isAlreadyExists, isConflict, isNotFound, type KubeClient } from './client.ts';
import { LeaderElector, microTime, type LeaderTiming, type LeaseSpec } from './leader.ts';
import { LEASES } from './resources.ts';
import { liveMembers, memberLeaseName, observeMembers, planShards, quota, shardLeaseName, type MemberObservation } from './shards.ts';

export const MEMBER_LABEL = 'raykeeper.io/shard-members';

interface MemberLease {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace: string; resourceVersion?: string; labels?: Record<string, string> };
  spec?: LeaseSpec;
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
  private memberLease: MemberLease | undefined;
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

  /** Live members as last counted (this replica included). */
  liveMembers(): string[] {
    return liveMembers(this.members, this.options.now(), this.options.leaseDurationMs);
  }

  /** Rounds of membership and balancing every retry period until `signal` aborts (then every term ends). */
  async run(signal: AbortSignal, callbacks: ShardCallbacks): Promise<void> {
    const log = this.options.logger;
    log.info({ shards: this.shards, identity: this.identity }, 'sharding: joining');
    while (!signal.aborted) {
      await this.renewMembership(signal);
      const members = this.liveMembers();
      const want = quota(this.shards, members, this.identity);
      this.want = want;
      // Every shard has a term (a candidate that takes it only within the quota, or its holder). A quota
      // that shrank (a member joined) leaves shards above it: handed back here.
      this.state.forEach((s, shard) => {
        if (!s.term) this.startTerm(shard, signal, callbacks);
      });
      const plan = planShards(this.shards, this.held(), want);
      for (const shard of plan.release) {
        log.info({ shard, members: members.length, quota: want }, 'sharding: handing a shard back (above this replica’s quota)');
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

  private memberRef(): { group: string; version: string; plural: string; namespace: string; name: string } {
    return { ...LEASES, namespace: this.options.namespace, name: memberLeaseName(this.options.name, this.identity) };
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
    try {
      const current = this.memberLease ?? (await kube.getOrUndefined<MemberLease>(this.memberRef(), { signal, timeoutMs }));
      if (current) {
        this.memberLease = await kube.replace<MemberLease>(
          this.memberRef(),
          { ...current, spec: { ...current.spec, ...spec } },
          { signal, timeoutMs },
        );
      } else {
        const created: MemberLease = {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: this.memberRef().name, namespace, labels: { [MEMBER_LABEL]: name } },
          spec: { ...spec, acquireTime: microTime(now) },
        };
        this.memberLease = await kube.create<MemberLease>(this.memberRef(), created, { signal, timeoutMs });
      }
    } catch (err) {
      this.memberLease = undefined; // re-read next round
      if (!signal.aborted && !isConflict(err) && !isAlreadyExists(err))
        logger.warn({ err: String(err) }, 'sharding: cannot renew the member lease');
    }
    try {
      const list = await kube.list<MemberLease>({ ...LEASES, namespace }, { labelSelector: `${MEMBER_LABEL}=${name}`, signal });
      const listed = new Map<string, string>();
      for (const lease of list.items) {
        const holder = lease.spec?.holderIdentity;
        if (holder) listed.set(holder, lease.metadata.resourceVersion ?? '');
      }
      this.members = observeMembers(this.members, listed, this.options.now());
      if (!this.members.has(this.identity)) this.members.set(this.identity, { record: '', observedAt: this.options.now() });
    } catch (err) {
      if (!signal.aborted) logger.warn({ err: String(err) }, 'sharding: cannot list the member leases');
    }
  }

  /** Deletes member Leases not renewed for twice the lease duration (their replica died), if unchanged. */
  private async collectDeadMembers(signal: AbortSignal): Promise<void> {
    const now = this.options.now();
    for (const [identity, o] of this.members) {
      if (identity === this.identity || now - o.observedAt < 2 * this.options.leaseDurationMs) continue;
      const ref = { ...LEASES, namespace: this.options.namespace, name: memberLeaseName(this.options.name, identity) };
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
