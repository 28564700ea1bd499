// Leader election on a coordination.k8s.io/v1 Lease, with client-go's algorithm:
// - A candidate GETs the Lease every retry period (jittered). It takes the Lease (optimistic PUT with
//   the resourceVersion it read) when it is free (no holder, released) or when the record has not
//   changed for a whole lease duration, measured on OUR clock from the moment we observed the record
//   (so clock skew between replicas does not matter).
// - The leader renews every retry period; if it cannot renew for `renewDeadlineMs` it stops leading
//   (its reconcilers are cancelled) before anyone else can take over (renewDeadline < leaseDuration).
// - `release()` (SIGTERM) hands the Lease back: empty holder, so a standby takes over at its next retry
//   instead of waiting for the lease to expire.
import { sleep } from './backoff.ts';
import { isAlreadyExists, isConflict, isNotFound, type KubeClient } from '../../src/kube.ts';
import type { Logger } from '../../src/logger.ts';

export interface LeaseSpec {
  holderIdentity?: string | null;
  leaseDurationSeconds?: number | null;
  acquireTime?: string | null;
  renewTime?: string | null;
  leaseTransitions?: number | null;
}

interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace: string; resourceVersion?: string; [key: string]: unknown };
  spec?: LeaseSpec;
}

export interface LeaderElectionOptions {
  kube: KubeClient;
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  logger?: Logger | undefined;
  now?: () => number;
}

export interface LeaderCallbacks {
  /** Became leader; `signal` aborts when leadership ends. */
  onStartedLeading(signal: AbortSignal): void;
  /** Leadership ended (renew failed, or release on shutdown). */
  onStoppedLeading(reason: string): void;
  /** Observed a (new) leader, possibly ourselves. */
  onNewLeader?(identity: string): void;
}

/** Kubernetes MicroTime: RFC 3339 with microseconds. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

const LEASE = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases' } as const;

export class LeaderElector {
  readonly identity: string;
  private readonly o: Required<Omit<LeaderElectionOptions, 'logger'>> & { logger: Logger | undefined };
  private observedRecord = '';
  private observedTime = 0;
  private observedHolder = '';
  private leading = false;
  private lastRenew = 0;
  private leaderController: AbortController | undefined;
  private current: Lease | undefined;

  constructor(options: LeaderElectionOptions) {
    this.o = {
      ...options,
      leaseDurationMs: options.leaseDurationMs ?? 15_000,
      renewDeadlineMs: options.renewDeadlineMs ?? 10_000,
      retryPeriodMs: options.retryPeriodMs ?? 2_000,
      now: options.now ?? Date.now,
      logger: options.logger,
    };
    if (this.o.renewDeadlineMs >= this.o.leaseDurationMs) throw new Error('leader election: renew deadline must be shorter than the lease duration');
    if (this.o.retryPeriodMs >= this.o.renewDeadlineMs) throw new Error('leader election: retry period must be shorter than the renew deadline');
    this.identity = options.identity;
  }

  isLeader(): boolean {
    return this.leading;
  }

  /** The holder we last saw ('' when free). */
  get observedLeader(): string {
    return this.observedHolder;
  }

  /** Healthy unless we lead and have not renewed for longer than the lease duration. */
  healthy(): boolean {
    return !this.leading || this.o.now() - this.lastRenew <= this.o.leaseDurationMs;
  }

  /** Runs until `signal` aborts: campaigns, leads, and campaigns again after losing the lease. */
  async run(signal: AbortSignal, callbacks: LeaderCallbacks): Promise<void> {
    while (!signal.aborted) {
      // Campaign.
      while (!signal.aborted && !(await this.tryAcquireOrRenew(callbacks))) {
        await sleep(this.o.retryPeriodMs * (1 + 0.2 * Math.random()), signal);
      }
      if (signal.aborted) break;
      this.leading = true;
      this.lastRenew = this.o.now();
      this.leaderController = new AbortController();
      this.o.logger?.info({ lease: `${this.o.namespace}/${this.o.name}`, identity: this.identity }, 'became leader');
      callbacks.onStartedLeading(this.leaderController.signal);
      // Renew until it fails for renewDeadline.
      let reason = 'shutdown';
      while (!signal.aborted) {
        await sleep(this.o.retryPeriodMs, signal);
        if (signal.aborted) break;
        if (await this.tryAcquireOrRenew(callbacks)) {
          this.lastRenew = this.o.now();
          continue;
        }
        if (!this.leading) {
          reason = 'lease taken by another replica';
          break;
        }
        if (this.o.now() - this.lastRenew > this.o.renewDeadlineMs) {
          reason = `could not renew the lease for ${this.o.renewDeadlineMs} ms`;
          break;
        }
      }
      this.leading = false;
      this.leaderController.abort();
      this.o.logger?.warn({ lease: `${this.o.namespace}/${this.o.name}`, reason }, 'stopped leading');
      callbacks.onStoppedLeading(reason);
    }
  }

  /** Gives the lease back if we hold it (best effort; call on SIGTERM after reconcilers stopped). */
  async release(): Promise<boolean> {
    const lease = this.current;
    if (!lease || lease.spec?.holderIdentity !== this.identity) return false;
    const now = this.o.now();
    const released: Lease = {
      ...lease,
      spec: { ...lease.spec, holderIdentity: null, leaseDurationSeconds: 1, acquireTime: microTime(now), renewTime: microTime(now) },
    };
    try {
      await this.o.kube.replace(this.ref(), released, { timeoutMs: 5_000 });
      this.leading = false;
      this.o.logger?.info({ lease: `${this.o.namespace}/${this.o.name}` }, 'released the lease');
      return true;
    } catch (err) {
      this.o.logger?.warn({ err: String(err) }, 'could not release the lease');
      return false;
    }
  }

  private ref(): { group: string; version: string; plural: string; namespace: string; name: string } {
    return { ...LEASE, namespace: this.o.namespace, name: this.o.name };
  }

  private observe(lease: Lease, callbacks: LeaderCallbacks): void {
    const spec = lease.spec ?? {};
    const record = JSON.stringify([spec.holderIdentity ?? '', spec.renewTime ?? '', spec.acquireTime ?? '', spec.leaseDurationSeconds ?? 0, spec.leaseTransitions ?? 0]);
    if (record !== this.observedRecord) {
      this.observedRecord = record;
      this.observedTime = this.o.now();
      const holder = spec.holderIdentity ?? '';
      if (holder !== this.observedHolder) {
        this.observedHolder = holder;
        if (holder) callbacks.onNewLeader?.(holder);
      }
    }
  }

  /** One round: create, renew or take over the lease. True when we hold it afterwards. */
  async tryAcquireOrRenew(callbacks: LeaderCallbacks): Promise<boolean> {
    const kube = this.o.kube;
    const now = this.o.now();
    const durationSeconds = Math.max(1, Math.ceil(this.o.leaseDurationMs / 1000));
    let lease: Lease | undefined;
    try {
      lease = await kube.get<Lease>(this.ref(), { timeoutMs: this.o.renewDeadlineMs });
    } catch (err) {
      if (!isNotFound(err)) {
        this.o.logger?.warn({ err: String(err) }, 'leader election: cannot read the lease');
        return false;
      }
    }
    if (!lease) {
      const created: Lease = {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: this.o.name, namespace: this.o.namespace },
        spec: { holderIdentity: this.identity, leaseDurationSeconds: durationSeconds, acquireTime: microTime(now), renewTime: microTime(now), leaseTransitions: 0 },
      };
      try {
        this.current = await kube.create<Lease>(this.ref(), created, { timeoutMs: this.o.renewDeadlineMs });
        this.observe(this.current, callbacks);
        return true;
      } catch (err) {
        if (!isAlreadyExists(err)) this.o.logger?.warn({ err: String(err) }, 'leader election: cannot create the lease');
        return false;
      }
    }
    this.observe(lease, callbacks);
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const mine = holder === this.identity;
    const observedDurationMs = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (!mine && holder !== '' && this.observedTime + observedDurationMs > now) {
      if (this.leading) this.leading = false; // someone else holds it: we lost it
      return false;
    }
    const next: Lease = {
      ...lease,
      spec: mine
        ? { ...spec, leaseDurationSeconds: durationSeconds, renewTime: microTime(now) }
        : {
            ...spec,
            holderIdentity: this.identity,
            leaseDurationSeconds: durationSeconds,
            acquireTime: microTime(now),
            renewTime: microTime(now),
            leaseTransitions: (spec.leaseTransitions ?? 0) + 1,
          },
    };
    try {
      this.current = await kube.replace<Lease>(this.ref(), next, { timeoutMs: this.o.renewDeadlineMs });
      this.observe(this.current, callbacks);
      return true;
    } catch (err) {
      if (!isConflict(err)) this.o.logger?.warn({ err: String(err) }, 'leader election: cannot update the lease');
      return false;
    }
  }
}
