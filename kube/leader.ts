// Leader election on a coordination.k8s.io/v1 Lease, with client-go's algorithm:
// - A candidate GETs the Lease every retry period (jittered). It takes the Lease (optimistic PUT with
//   the resourceVersion it read) when it is free (no holder, released) or when the record has not
//   changed for a whole lease duration, measured on OUR clock from the moment we observed the record
//   (so clock skew between replicas does not matter).
// - The leader leads until ONE deadline: its last successful renew + `renewDeadlineMs`. It retries the
//   renew (GET + PUT) every retry period, each request aborted at that deadline, and stops leading when
//   it passes (`renewStep`). Since renewDeadline < leaseDuration (`leaderTimingProblem`), it has stopped
//   before any other replica can see the lease expire: a replica waits a whole lease duration from when
//   it OBSERVED our last renew, which is after we sent it.
// - After losing the lease the elector does not campaign again here: the manager exits the process.
// - `release()` (SIGTERM) hands a still-held Lease back: empty holder, so a standby takes over at its
//   next retry instead of waiting for the lease to expire.
import { REAL_TIMERS, sleep, type Timers } from './backoff.ts';
import { LEASES } from './resources.ts';
import { isAlreadyExists, isConflict, isNotFound, type KubeClient, type ResourceRef } from './client.ts';
import type { Lease } from './model.ts';
import type { Logger } from './logger.ts';

export interface LeaderTiming {
  /** How long a Lease holds without renewal: a standby takes over after observing it unchanged this long. */
  leaseDurationMs: number;
  /** The leader leads until its last successful renew + this; shorter than the lease duration. */
  renewDeadlineMs: number;
  /** Between two attempts (campaign and renew). */
  retryPeriodMs: number;
}

/** client-go's defaults (15 s / 10 s / 2 s). */
export const DEFAULT_LEADER_TIMING: LeaderTiming = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

/** A campaign waits the retry period stretched by up to this fraction (client-go's JitterFactor 1.2). */
const RETRY_JITTER = 0.2;

/** The release's GET and PUT together, on SIGTERM (within the Pod's termination grace period). */
const RELEASE_TIMEOUT_MS = 5_000;

/** What makes a timing unsafe (client-go's rules), or undefined. */
export function leaderTimingProblem(t: LeaderTiming): string | undefined {
  for (const [name, v] of [
    ['lease duration', t.leaseDurationMs],
    ['renew deadline', t.renewDeadlineMs],
    ['retry period', t.retryPeriodMs],
  ] as const) {
    if (!Number.isFinite(v) || v <= 0) return `leader election: the ${name} must be positive`;
  }
  if (t.renewDeadlineMs >= t.leaseDurationMs)
    return `leader election: the renew deadline (${t.renewDeadlineMs} ms) must be shorter than the lease duration (${t.leaseDurationMs} ms), or two replicas could lead at once`;
  if (t.renewDeadlineMs <= t.retryPeriodMs * (1 + RETRY_JITTER))
    return `leader election: the renew deadline (${t.renewDeadlineMs} ms) must be longer than ${1 + RETRY_JITTER} x the retry period (${t.retryPeriodMs} ms)`;
  return undefined;
}

/** The leader's next move: stop at the deadline, or wait (never past it) and renew before it. */
export type RenewStep = { kind: 'stop'; deadline: number } | { kind: 'renew'; waitMs: number; deadline: number };

/**
 * Where a leader stands `now`, having last renewed successfully at `lastRenewAt` (when that attempt
 * started). It leads until `lastRenewAt + renewDeadlineMs` and not one moment longer, however the
 * attempts in between went: the next one starts a retry period later (or at the deadline) and its
 * requests are aborted at the deadline.
 */
export function renewStep(now: number, lastRenewAt: number, t: Pick<LeaderTiming, 'renewDeadlineMs' | 'retryPeriodMs'>): RenewStep {
  const deadline = lastRenewAt + t.renewDeadlineMs;
  if (now >= deadline) return { kind: 'stop', deadline };
  return { kind: 'renew', waitMs: Math.min(t.retryPeriodMs, deadline - now), deadline };
}

/** The Lease requests the elector makes (a KubeClient). */
export type LeaseClient = Pick<KubeClient, 'get' | 'create' | 'replace'>;

export interface LeaderElectionOptions extends Partial<LeaderTiming> {
  kube: LeaseClient;
  namespace: string;
  name: string;
  identity: string;
  logger?: Logger | undefined;
  now?: () => number;
  /** What the retry waits and the per-attempt deadlines are scheduled with. */
  timers?: Timers;
  /**
   * Asked before a candidate takes a free or expired Lease: false keeps it a candidate that only observes
   * (kube/sharding.ts: a replica at its quota keeps watching every shard, so that when a holder dies it
   * can take over a lease duration after the last renew it saw, not after it started looking; the single
   * leader's LayoutWatch: no sharded layout's member Lease is live). Default: yes.
   */
  mayAcquire?: () => boolean;
}

export interface LeaderCallbacks {
  /** Became leader; `signal` aborts when leadership ends. */
  onStartedLeading(signal: AbortSignal): void;
  /** Leadership ended (renew deadline passed, lease taken, or shutdown). */
  onStoppedLeading(reason: string): void;
  /** Observed a (new) leader, possibly ourselves. */
  onNewLeader?(identity: string): void;
}

/** Kubernetes MicroTime: RFC 3339 with microseconds. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** One attempt's outcome: we hold the lease, another replica holds it, or we could not tell. */
type Attempt = 'held' | 'lost' | 'failed';

export class LeaderElector {
  readonly identity: string;
  private readonly options: LeaderTiming &
    Required<Pick<LeaderElectionOptions, 'kube' | 'namespace' | 'name' | 'now' | 'timers'>> & {
      logger: Logger | undefined;
      mayAcquire: (() => boolean) | undefined;
    };
  private observedRecord = '';
  private observedTime = 0;
  private observedHolder = '';
  private leading = false;
  /** When the last successful acquire or renew STARTED (what the others measure from is later). */
  private lastRenew = 0;
  /** Writes are safe before this: the renew deadline while the lease is ours, 0 once lost or released. */
  private writeUntil = 0;
  private leaderController: AbortController | undefined;
  /** The Lease as we last wrote it while holding it; cleared when leadership is lost. */
  private current: Lease | undefined;

  constructor(options: LeaderElectionOptions) {
    this.options = {
      kube: options.kube,
      namespace: options.namespace,
      name: options.name,
      leaseDurationMs: options.leaseDurationMs ?? DEFAULT_LEADER_TIMING.leaseDurationMs,
      renewDeadlineMs: options.renewDeadlineMs ?? DEFAULT_LEADER_TIMING.renewDeadlineMs,
      retryPeriodMs: options.retryPeriodMs ?? DEFAULT_LEADER_TIMING.retryPeriodMs,
      now: options.now ?? Date.now,
      timers: options.timers ?? REAL_TIMERS,
      logger: options.logger,
      mayAcquire: options.mayAcquire,
    };
    const problem = leaderTimingProblem(this.options);
    if (problem) throw new Error(problem);
    this.identity = options.identity;
  }

  /** True while leading: false from the renew deadline on, even before the renew loop notices. */
  isLeader(): boolean {
    return this.leading && this.options.now() < this.lastRenew + this.options.renewDeadlineMs;
  }

  /**
   * Whether writes are still safe, by clock: the lease is ours and its renew deadline has not passed.
   * Unlike isLeader() it stays true through a graceful shutdown (the reconcilers finishing) until the
   * lease is released or the deadline passes. The reconcilers' client asks it before every write.
   */
  mayWrite(): boolean {
    return this.options.now() < this.writeUntil;
  }

  /** The holder we last saw ('' when free). */
  get observedLeader(): string {
    return this.observedHolder;
  }

  /** Healthy unless we lead and have not renewed for longer than the lease duration. */
  healthy(): boolean {
    return !this.leading || this.options.now() - this.lastRenew <= this.options.leaseDurationMs;
  }

  /**
   * Campaigns until this replica holds the lease, leads until the renew deadline passes, the lease is
   * taken or `signal` aborts, then resolves (one term: a replica that lost the lease exits and starts
   * over as a fresh candidate).
   */
  async run(signal: AbortSignal, callbacks: LeaderCallbacks): Promise<void> {
    const now = this.options.now;
    for (;;) {
      if (signal.aborted) return;
      const attemptAt = now();
      if ((await this.tryAcquireOrRenew(callbacks, attemptAt + this.options.renewDeadlineMs, signal)) === 'held') {
        this.renewed(attemptAt);
        break;
      }
      await sleep(this.options.retryPeriodMs * (1 + RETRY_JITTER * Math.random()), signal, this.options.timers);
    }
    this.leading = true;
    this.leaderController = new AbortController();
    const lease = `${this.options.namespace}/${this.options.name}`;
    this.options.logger?.info({ lease, identity: this.identity }, 'became leader');
    callbacks.onStartedLeading(this.leaderController.signal);
    let reason = 'shutdown';
    for (;;) {
      const step = renewStep(now(), this.lastRenew, this.options);
      if (step.kind === 'stop') {
        reason = `could not renew the lease within the renew deadline (${this.options.renewDeadlineMs} ms)`;
        break;
      }
      await sleep(step.waitMs, signal, this.options.timers);
      if (signal.aborted) break;
      const attemptAt = now();
      if (attemptAt >= step.deadline) continue;
      const attempt = await this.tryAcquireOrRenew(callbacks, step.deadline, signal);
      if (attempt === 'held') this.renewed(attemptAt);
      else if (attempt === 'lost') {
        reason = 'lease taken by another replica';
        break;
      }
    }
    const leadingUntil = Math.min(now(), this.lastRenew + this.options.renewDeadlineMs);
    this.leading = false;
    if (reason !== 'shutdown') {
      this.current = undefined; // not ours to release any more
      this.writeUntil = 0;
    }
    this.leaderController.abort();
    this.options.logger?.warn(
      { lease, reason, lastRenew: new Date(this.lastRenew).toISOString(), leadingUntil: new Date(leadingUntil).toISOString() },
      'stopped leading',
    );
    callbacks.onStoppedLeading(reason);
  }

  /**
   * Gives the lease back if we still hold it (best effort; call on SIGTERM after reconcilers stopped).
   * It reads the Lease first, as client-go's release does: a renew aborted by the shutdown may still
   * have reached the API server, and a PUT with the resourceVersion we last saw would then conflict,
   * leaving the standby to wait out the whole lease duration.
   */
  async release(): Promise<boolean> {
    const held = this.current;
    if (!held || held.spec?.holderIdentity !== this.identity) return false;
    this.writeUntil = 0; // from the moment the release may reach the API server, another may lead
    const deadline = this.options.now() + RELEASE_TIMEOUT_MS;
    const left = (): number => Math.max(1, deadline - this.options.now());
    const lease = `${this.options.namespace}/${this.options.name}`;
    try {
      const fresh = await this.options.kube.get(this.ref(), { timeoutMs: left() });
      if (fresh.spec?.holderIdentity !== this.identity) {
        this.options.logger?.info({ lease, holder: fresh.spec?.holderIdentity ?? '' }, 'not releasing the lease: no longer ours');
        return false;
      }
      const now = this.options.now();
      const released: Lease = {
        ...fresh,
        spec: { ...fresh.spec, holderIdentity: null, leaseDurationSeconds: 1, acquireTime: microTime(now), renewTime: microTime(now) },
      };
      await this.options.kube.replace(this.ref(), released, { timeoutMs: left() });
      this.options.logger?.info({ lease }, 'released the lease');
      return true;
    } catch (err) {
      this.options.logger?.warn({ lease, err: String(err) }, 'could not release the lease');
      return false;
    } finally {
      this.leading = false;
      this.current = undefined;
    }
  }

  private renewed(attemptAt: number): void {
    this.lastRenew = attemptAt;
    this.writeUntil = attemptAt + this.options.renewDeadlineMs;
  }

  private ref(): ResourceRef<Lease> {
    return LEASES.at(this.options.namespace, this.options.name);
  }

  private observe(lease: Lease, callbacks: LeaderCallbacks): void {
    const spec = lease.spec ?? {};
    const record = JSON.stringify([
      spec.holderIdentity ?? '',
      spec.renewTime ?? '',
      spec.acquireTime ?? '',
      spec.leaseDurationSeconds ?? 0,
      spec.leaseTransitions ?? 0,
    ]);
    if (record !== this.observedRecord) {
      this.observedRecord = record;
      this.observedTime = this.options.now();
      const holder = spec.holderIdentity ?? '';
      if (holder !== this.observedHolder) {
        this.observedHolder = holder;
        if (holder) callbacks.onNewLeader?.(holder);
      }
    }
  }

  /**
   * One round: create, renew or take over the lease, every request aborted at `deadline` (or with
   * `signal`), and none started after it.
   */
  private async tryAcquireOrRenew(callbacks: LeaderCallbacks, deadline: number, signal: AbortSignal): Promise<Attempt> {
    if (signal.aborted) return 'failed';
    const attempt = new AbortController();
    const timer = this.options.timers.setTimer(
      () => attempt.abort(new Error('leader election: deadline reached')),
      Math.max(0, deadline - this.options.now()),
    );
    const onAbort = (): void => attempt.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      return await this.acquireOrRenewUntil(callbacks, deadline, attempt.signal);
    } finally {
      this.options.timers.clearTimer(timer);
      signal.removeEventListener('abort', onAbort);
    }
  }

  private async acquireOrRenewUntil(callbacks: LeaderCallbacks, deadline: number, signal: AbortSignal): Promise<Attempt> {
    const kube = this.options.kube;
    const now = this.options.now();
    const durationSeconds = Math.max(1, Math.ceil(this.options.leaseDurationMs / 1000));
    /** Request options, or undefined when the deadline has passed (checked on our clock before each request). */
    const bounded = (): { signal: AbortSignal; timeoutMs: number } | undefined => {
      const left = deadline - this.options.now();
      return left > 0 && !signal.aborted ? { signal, timeoutMs: left } : undefined;
    };
    let lease: Lease | undefined;
    let options = bounded();
    if (!options) return 'failed';
    try {
      lease = await kube.get(this.ref(), options);
    } catch (err) {
      if (!isNotFound(err)) {
        this.options.logger?.warn({ err: String(err) }, 'leader election: cannot read the lease');
        return 'failed';
      }
    }
    options = bounded();
    if (!options) return 'failed';
    const declined = (): boolean => !this.leading && this.options.mayAcquire !== undefined && !this.options.mayAcquire();
    if (!lease) {
      if (declined()) return 'failed';
      const created: Lease = {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: this.options.name, namespace: this.options.namespace },
        spec: {
          holderIdentity: this.identity,
          leaseDurationSeconds: durationSeconds,
          acquireTime: microTime(now),
          renewTime: microTime(now),
          leaseTransitions: 0,
        },
      };
      try {
        this.current = await kube.create(this.ref(), created, options);
        this.observe(this.current, callbacks);
        return 'held';
      } catch (err) {
        if (!isAlreadyExists(err)) this.options.logger?.warn({ err: String(err) }, 'leader election: cannot create the lease');
        return 'failed';
      }
    }
    this.observe(lease, callbacks);
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const mine = holder === this.identity;
    const observedDurationMs = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (!mine && holder !== '' && this.observedTime + observedDurationMs > now) return 'lost';
    if (!mine && this.leading) return 'lost'; // released or expired under us: we were not renewing it
    if (declined()) return 'failed';
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
      this.current = await kube.replace(this.ref(), next, options);
      this.observe(this.current, callbacks);
      return 'held';
    } catch (err) {
      if (!isConflict(err)) this.options.logger?.warn({ err: String(err) }, 'leader election: cannot update the lease');
      return 'failed';
    }
  }
}
