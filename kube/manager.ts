// The manager ties the runtime together: shared informers, one work queue + workers per registered
// reconciler, leader election, periodic resync, health and metrics.
//
// Lifecycle of `run(signal)`:
//   1. informers start on every replica (a standby keeps a warm cache for a fast takeover);
//   2. once they have listed, the process is ready;
//   3. with leader election, reconcilers start when this replica acquires the Lease and stop when it
//      loses it; without it they start at once;
//   4. `run` resolves when `signal` aborts (SIGTERM: the queues hand out no more keys, in-flight
//      reconciles keep their signal for `shutdownTimeoutMs` to finish and are aborted after it, the
//      Lease is released; their writes stay allowed only while the last renew's deadline lasts, see
//      the fence below) or leadership is lost: then in-flight
//      reconciles are aborted and not waited for, nothing more is written (no Events, no release),
//      and the caller exits non-zero so the Deployment restarts the pod, as controller-runtime does.
//      From the renew deadline on, no reconcile starts and no key is queued (`isLeader()` checks the
//      clock), even before the renew loop has noticed (a process resumed after a pause); and no write
//      of a reconcile already running leaves the process: `ctx.kube` is fenced by `mayWrite()`, and a
//      refused write (NotLeaderError) ends the reconcile without a retry.
//   With `shards` > 1 (kube/sharding.ts) the reconcilers run from the start, but a key is queued and
//   reconciled only while this replica holds its namespace's shard, a write for a namespace leaves only
//   while that shard's Lease is ours within its renew deadline, and a lost shard aborts that shard's
//   reconciles without stopping the process. Cluster-scoped keys and writes, the singleton work
//   (`ctx.isLeader()`: the orphan finder, the per-object gauges) and Events on the controller's Lease
//   belong to shard 0.
//   Two layouts never hold work at once (README "Sharding", Changing N): a sharded replica takes no
//   shard while another layout runs (kube/sharding.ts), and the single leader (`shards` 1) does not take
//   its Lease while a sharded layout's member Leases are live (LayoutWatch, checked before its first
//   campaign and then every retry period until it leads).
import { CreationGate } from './creation-gate.ts';
import { Counter, Gauge, Histogram } from 'prom-client';
import type { KubeCredentials } from './kubeconfig.ts';
import { KubeEventRecorder, type EventRecorder } from './events.ts';
import { InformerFactory, type Informer, type InformerTimings } from './informer.ts';
import type { KubeObject } from './model.ts';
import { isConflict, isNotLeader, KubeClient } from './client.ts';
import { DEFAULT_LEADER_TIMING, LeaderElector, type LeaderElectionOptions } from './leader.ts';
import { LayoutWatch, ShardCoordinator } from './sharding.ts';
import { shardLeaseName, shardOf, shardOfKey } from './shards.ts';
import type { WriteTarget } from './client.ts';
import { WorkQueue, DEFAULT_RETRY } from './queue.ts';
import { objectKey, RetryNoLaterError, type ControllerContext, type ControllerRegistration, type ObjectKey } from './reconciler.ts';
import type { BackoffOptions } from './backoff.ts';
import type { HealthReport } from './health-server.ts';
import type { Logger } from './logger.ts';
import type { Registry } from './metrics.ts';

export interface ManagerOptions {
  kubeConfig: KubeCredentials;
  logger: Logger;
  metrics: Registry;
  watchNamespace?: string | undefined;
  /** Workers per reconciler (default 4). */
  workers?: number;
  /** Client side cap on API requests (`--qps`, `--burst`; kube/rate-limit.ts); undefined: none. */
  rateLimit?: { qps: number; burst: number } | undefined;
  leaderElection?: Pick<LeaderElectionOptions, 'namespace' | 'name' | 'identity' | 'leaseDurationMs' | 'renewDeadlineMs' | 'retryPeriodMs'>;
  /** Namespaces split among replicas in this many shards, each its own Lease (> 1 needs leaderElection). */
  shards?: number;
  /** Re-enqueue every cached key this often (default 10 min, 0 = off). */
  resyncPeriodMs?: number;
  informerTimings?: Partial<InformerTimings>;
  retry?: BackoffOptions;
  /** How long in-flight reconciles may run after SIGTERM / leadership loss (default 20 s). */
  shutdownTimeoutMs?: number;
  /** An informer failing continuously for longer than this fails liveness (default 5 min). */
  healthGraceMs?: number;
  env?: Record<string, string | undefined>;
  now?: () => number;
  eventComponent?: string;
}

export type RunOutcome = 'stopped' | 'lost-leadership';

interface RunningController {
  registration: ControllerRegistration;
  queue: WorkQueue;
  workers: Promise<void>[];
  abort: AbortController;
}

export class Manager {
  readonly ctx: ControllerContext;
  readonly kube: KubeClient;
  readonly informers: InformerFactory;
  readonly elector: LeaderElector | undefined;
  readonly sharding: ShardCoordinator | undefined;
  /** The single leader's check for a sharded layout running (kube/sharding.ts LayoutWatch). */
  readonly layoutWatch: LayoutWatch | undefined;
  /** Reconciles running per shard (sharding only): a shard is handed back once its count is 0. */
  private readonly inFlightByShard = new Map<number, number>();
  private readonly options: ManagerOptions;
  private readonly registrations: ControllerRegistration[] = [];
  private running: RunningController[] = [];
  private resyncTimer: NodeJS.Timeout | undefined;
  private synced = false;
  private stopping = false;
  private readonly stopPromises: Promise<void>[] = [];
  private readonly metrics: {
    reconciles: Counter<'controller' | 'result'>;
    duration: Histogram<'controller'>;
    retries: Counter<'controller'>;
    adds: Counter<'controller'>;
  };

  constructor(options: ManagerOptions) {
    this.options = options;
    this.kube = new KubeClient(options.kubeConfig, { rateLimit: options.rateLimit });
    this.informers = new InformerFactory(this.kube, { timings: options.informerTimings, namespace: options.watchNamespace });
    const identity = options.leaderElection?.identity ?? `raykeeper-${process.pid}`;
    const shards = options.shards ?? 1;
    if (shards > 1 && !options.leaderElection) throw new Error('sharding needs leader election');
    if (shards > 1 && options.leaderElection) {
      const { namespace, name, leaseDurationMs, renewDeadlineMs, retryPeriodMs } = options.leaderElection;
      this.sharding = new ShardCoordinator({
        kube: this.kube,
        logger: options.logger.child({ component: 'shards' }),
        now: options.now,
        namespace,
        name,
        identity,
        shards,
        leaseDurationMs: leaseDurationMs ?? DEFAULT_LEADER_TIMING.leaseDurationMs,
        renewDeadlineMs: renewDeadlineMs ?? DEFAULT_LEADER_TIMING.renewDeadlineMs,
        retryPeriodMs: retryPeriodMs ?? DEFAULT_LEADER_TIMING.retryPeriodMs,
      });
    } else if (options.leaderElection) {
      const logger = options.logger.child({ component: 'leader' });
      const layoutWatch = new LayoutWatch({
        kube: this.kube,
        logger,
        now: options.now,
        namespace: options.leaderElection.namespace,
        name: options.leaderElection.name,
        leaseDurationMs: options.leaderElection.leaseDurationMs ?? DEFAULT_LEADER_TIMING.leaseDurationMs,
        retryPeriodMs: options.leaderElection.retryPeriodMs ?? DEFAULT_LEADER_TIMING.retryPeriodMs,
      });
      this.layoutWatch = layoutWatch;
      this.elector = new LeaderElector({
        kube: this.kube,
        logger,
        now: options.now,
        ...options.leaderElection,
        mayAcquire: () => layoutWatch.mayAcquire(),
      });
    }
    // The reconcilers (and their Events) write through a fence: no write leaves once the lease may be
    // another's, even from a reconcile resumed after a pause. The Lease and the informers use `kube`.
    const elector = this.elector;
    const sharding = this.sharding;
    const writer = sharding
      ? this.kube.fenced((target) => this.shardMayWrite(sharding, target))
      : elector
        ? this.kube.fenced(() => elector.mayWrite())
        : this.kube;
    const events: EventRecorder = new KubeEventRecorder({
      kube: writer,
      component: options.eventComponent ?? 'raykeeper-controller',
      instance: identity,
      logger: options.logger.child({ component: 'events' }),
      now: options.now,
    });
    this.ctx = {
      kubeConfig: options.kubeConfig,
      kube: writer,
      informers: this.informers,
      watchNamespace: options.watchNamespace,
      events,
      logger: options.logger,
      metrics: options.metrics,
      env: options.env ?? process.env,
      now: options.now ?? Date.now,
      creationGate: new CreationGate(options.now),
      isLeader: () => this.isLeader(),
      lease: options.leaderElection
        ? {
            namespace: options.leaderElection.namespace,
            name: sharding ? shardLeaseName(options.leaderElection.name, 0) : options.leaderElection.name,
          }
        : undefined,
    };
    this.metrics = this.registerMetrics(options.metrics);
  }

  /** Registers a reconciler; call before `run`. */
  add(registration: ControllerRegistration): void {
    if (this.registrations.some((r) => r.name === registration.name)) throw new Error(`duplicate reconciler name ${registration.name}`);
    this.registrations.push(registration);
    for (const watch of registration.watches) {
      const toKeys = watch.toKeys ?? ((obj: KubeObject) => [objectKey(obj)]);
      watch.informer.on((type, obj) => {
        const rc = this.running.find((r) => r.registration === registration);
        if (!rc || (!this.sharding && !this.isLeader())) return; // not leading: the resync at leadership start covers it
        if (watch.filter && !watch.filter(type, obj)) return;
        for (const key of toKeys(obj)) if (key && this.owns(key)) rc.queue.add(key);
      });
    }
  }

  isLeader(): boolean {
    if (this.sharding) return this.sharding.holds(0);
    return this.elector ? this.elector.isLeader() : this.running.length > 0;
  }

  /** Whether this replica reconciles the key now: it leads, or holds the key's shard. */
  owns(key: ObjectKey): boolean {
    return this.sharding ? this.sharding.holds(shardOfKey(key, this.sharding.shards)) : this.isLeader();
  }

  /**
   * The sharded write fence: a write for namespace X while X's shard is ours within its renew deadline;
   * cluster-scoped writes with shard 0; Events in the Lease namespace with shard 0 too (those about the
   * controller's own Lease come from the singleton work shard 0's holder runs).
   */
  private shardMayWrite(sharding: ShardCoordinator, target: WriteTarget): boolean {
    if (sharding.mayWrite(shardOf(target.namespace, sharding.shards))) return true;
    return target.resource === 'events' && target.namespace === this.options.leaderElection?.namespace && sharding.mayWrite(0);
  }

  /** Names of the reconcilers currently running workers. */
  activeControllers(): string[] {
    return this.running.map((r) => r.registration.name);
  }

  liveness(): HealthReport {
    const grace = this.options.healthGraceMs ?? 5 * 60_000;
    const checks: Record<string, boolean | string> = {};
    let ok = true;
    for (const informer of this.informers.all()) {
      const healthy = informer.healthy(grace);
      checks[`informer:${label(informer)}`] =
        healthy || `failing since ${new Date(informer.stats.failingSince ?? 0).toISOString()}: ${informer.stats.lastError ?? ''}`;
      ok &&= healthy || this.stopping;
    }
    if (this.elector ?? this.sharding) {
      const healthy = (this.elector ?? this.sharding)!.healthy();
      checks.leaderElection = healthy;
      ok &&= healthy;
    }
    return { ok, checks };
  }

  readiness(): HealthReport {
    const checks: Record<string, boolean | string> = { informersSynced: this.synced, stopping: this.stopping ? 'yes' : false };
    return { ok: this.synced && !this.stopping, checks };
  }

  /** Runs until `signal` aborts or leadership is lost. */
  async run(signal: AbortSignal): Promise<RunOutcome> {
    let outcome: RunOutcome = 'stopped';
    try {
      outcome = await this.runInner(signal);
      return outcome;
    } finally {
      await this.shutdown(outcome);
    }
  }

  private async runInner(signal: AbortSignal): Promise<RunOutcome> {
    const log = this.options.logger;
    this.informers.start();
    for (const informer of this.informers.all()) {
      informer.onError((err) => log.warn({ informer: label(informer), err: String(err) }, 'watch failed; retrying with backoff'));
    }
    const syncedOk = await this.informers.waitForSync(signal);
    this.synced = syncedOk;
    if (syncedOk) log.info({ informers: this.informers.all().map(label) }, 'caches synced');
    let outcome: RunOutcome = 'stopped';
    if (!signal.aborted) {
      if (this.sharding) {
        this.startControllers(signal, signal);
        const shards = this.sharding.shards;
        await this.sharding.run(signal, {
          onAcquired: (shard) => {
            for (const rc of this.running) this.resync(rc, (key) => shardOfKey(key, shards) === shard);
          },
          onStopped: () => undefined, // the coordinator aborted the shard's work and logged why
          drain: (shard) => this.drainShard(shard),
        });
      } else if (this.elector) {
        const lost = new AbortController();
        const stopAll = (): void => lost.abort();
        signal.addEventListener('abort', stopAll, { once: true });
        // While not leading: a sharded layout's live members keep the Lease from us (checked once before
        // the first campaign, so an idle cluster's leader takes it at once, then every retry period).
        const watching = new AbortController();
        const stopWatching = (): void => watching.abort();
        lost.signal.addEventListener('abort', stopWatching, { once: true });
        await this.layoutWatch?.check(watching.signal);
        const watch = this.layoutWatch?.run(watching.signal);
        const electorRun = this.elector.run(lost.signal, {
          onStartedLeading: (leaderSignal) => {
            watching.abort();
            this.startControllers(leaderSignal, signal);
          },
          onStoppedLeading: (reason) => {
            if (!signal.aborted) {
              outcome = 'lost-leadership';
              log.error({ reason }, 'lost leadership; stopping');
            }
            lost.abort();
          },
          onNewLeader: (identity) => log.info({ leader: identity, self: identity === this.elector?.identity }, 'leader observed'),
        });
        await electorRun;
        watching.abort();
        await watch;
        lost.signal.removeEventListener('abort', stopWatching);
        signal.removeEventListener('abort', stopAll);
      } else {
        this.startControllers(signal, signal);
        await new Promise<void>((resolve) =>
          signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true }),
        );
      }
    }
    return outcome;
  }

  /**
   * Starts every reconciler until `leaderSignal` aborts. Then, when `runSignal` aborted too (SIGTERM: a
   * graceful stop), in-flight reconciles keep their signal for `shutdownTimeoutMs` (stopControllersNow
   * aborts what is still running after that); otherwise leadership was lost and they are aborted at once.
   */
  private startControllers(leaderSignal: AbortSignal, runSignal: AbortSignal): void {
    const log = this.options.logger;
    for (const registration of this.registrations) {
      const hooks = {
        onRetry: () => this.metrics.retries.inc({ controller: registration.name }),
        onAdd: () => this.metrics.adds.inc({ controller: registration.name }),
      };
      const queue = new WorkQueue({ retry: this.options.retry ?? DEFAULT_RETRY, hooks, now: this.ctx.now });
      const abort = new AbortController();
      leaderSignal.addEventListener(
        'abort',
        () => {
          if (!runSignal.aborted) abort.abort(); // lost leadership; a graceful stop aborts after the drain
        },
        { once: true },
      );
      const rc: RunningController = { registration, queue, workers: [], abort };
      this.running.push(rc);
      this.resync(rc);
      const n = registration.workers ?? this.options.workers ?? 4;
      for (let i = 0; i < n; i++) rc.workers.push(this.worker(rc));
      log.info({ controller: registration.name, workers: n }, 'reconciler started');
    }
    const period = this.options.resyncPeriodMs ?? 10 * 60_000;
    if (period > 0) {
      this.resyncTimer = setInterval(() => {
        for (const rc of this.running) this.resync(rc);
      }, period);
      this.resyncTimer.unref?.();
    }
    leaderSignal.addEventListener('abort', () => void this.stopControllers(), { once: true });
  }

  private resync(rc: RunningController, only: (key: ObjectKey) => boolean = (key) => this.owns(key)): void {
    for (const watch of rc.registration.watches) {
      if (watch.resync === false) continue;
      const toKeys = watch.toKeys ?? ((obj: KubeObject) => [objectKey(obj)]);
      for (const obj of watch.informer.list()) for (const key of toKeys(obj)) if (key && only(key)) rc.queue.add(key);
    }
  }

  /** Resolves once no reconcile of the shard runs (or after the shutdown timeout). */
  private async drainShard(shard: number): Promise<void> {
    const until = this.ctx.now() + (this.options.shutdownTimeoutMs ?? 20_000);
    while ((this.inFlightByShard.get(shard) ?? 0) > 0 && this.ctx.now() < until) await new Promise((r) => setTimeout(r, 50));
  }

  private async worker(rc: RunningController): Promise<void> {
    const name = rc.registration.name;
    const log = this.options.logger;
    for (;;) {
      const key: ObjectKey | undefined = await rc.queue.get();
      if (key === undefined) return;
      if (rc.abort.signal.aborted || !this.owns(key)) {
        if (this.sharding) rc.queue.forget(key); // its shard is another's: no backoff kept for when it comes back
        rc.queue.done(key);
        continue;
      }
      const end = this.metrics.duration.startTimer({ controller: name });
      const shard = this.sharding ? shardOfKey(key, this.sharding.shards) : 0;
      const signal = this.sharding ? AbortSignal.any([rc.abort.signal, this.sharding.workSignal(shard)]) : rc.abort.signal;
      if (this.sharding) this.inFlightByShard.set(shard, (this.inFlightByShard.get(shard) ?? 0) + 1);
      try {
        const result = await rc.registration.reconciler.reconcile(key, signal);
        rc.queue.forget(key);
        const after = result?.requeueAfterMs;
        if (after !== undefined && after > 0) {
          rc.queue.addAfter(key, after);
          this.metrics.reconciles.inc({ controller: name, result: 'requeue' });
        } else {
          this.metrics.reconciles.inc({ controller: name, result: 'success' });
        }
      } catch (err) {
        if (isNotLeader(err)) {
          // The fence held a write back: this replica no longer leads (its renew loop stops it next): no retry.
          this.metrics.reconciles.inc({ controller: name, result: 'fenced' });
          log.warn(
            { controller: name, key, err: err instanceof Error ? err.message : String(err) },
            'reconcile stopped: no longer leading, write not sent',
          );
        } else if (signal.aborted && !rc.abort.signal.aborted) {
          // Its shard was lost or handed back (sharding only): the new holder reconciles it, no retry here.
          this.metrics.reconciles.inc({ controller: name, result: 'fenced' });
          log.info({ controller: name, key, shard }, 'reconcile stopped: its shard is no longer held');
        } else {
          this.metrics.reconciles.inc({ controller: name, result: 'error' });
          if (!rc.abort.signal.aborted) {
            const delay = rc.queue.addRateLimited(key);
            if (err instanceof RetryNoLaterError) rc.queue.addAfter(key, Math.max(0, err.notLaterThanMs));
            // A write that lost a race (409: the object changed since it was read) is how optimistic
            // concurrency works, not a fault: re-read and retried, at debug; anything else is a warning.
            const level = isConflict(err) ? 'debug' : 'warn';
            log[level](
              {
                controller: name,
                key,
                err: err instanceof Error ? err.message : String(err),
                retryInMs: delay,
                failures: rc.queue.failuresOf(key),
              },
              'reconcile failed; will retry',
            );
          }
        }
      } finally {
        end();
        if (this.sharding) this.inFlightByShard.set(shard, (this.inFlightByShard.get(shard) ?? 1) - 1);
        rc.queue.done(key);
      }
    }
  }

  private stopControllers(): Promise<void> {
    const p = this.stopControllersNow();
    this.stopPromises.push(p);
    return p;
  }

  private async stopControllersNow(): Promise<void> {
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    this.resyncTimer = undefined;
    const running = this.running;
    this.running = [];
    for (const rc of running) rc.queue.shutdown();
    const timeout = this.options.shutdownTimeoutMs ?? 20_000;
    await Promise.all(
      running.map(async (rc) => {
        const drained = await rc.queue.drain(timeout);
        if (!drained)
          this.options.logger.warn(
            { controller: rc.registration.name, inFlight: rc.queue.inFlight },
            'reconciles still running at the shutdown timeout: aborting them',
          );
        rc.abort.abort();
        if (drained) await Promise.all(rc.workers);
      }),
    );
  }

  private async shutdown(outcome: RunOutcome): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    const stopped = this.stopControllers();
    if (outcome !== 'lost-leadership') {
      await stopped;
      await Promise.all(this.stopPromises);
      await this.ctx.events.flush();
      if (this.elector) await this.elector.release();
      if (this.sharding) await this.sharding.release();
    }
    await this.informers.stop();
    this.kube.close();
  }

  private registerMetrics(registry: Registry) {
    const registers = [registry];
    const reconciles = new Counter({
      name: 'raykeeper_controller_reconcile_total',
      help: 'Reconciles by controller and result (success, requeue, error; fenced: stopped at a write after leadership ended).',
      labelNames: ['controller', 'result'] as const,
      registers,
    });
    const duration = new Histogram({
      name: 'raykeeper_controller_reconcile_duration_seconds',
      help: 'Reconcile duration.',
      labelNames: ['controller'] as const,
      buckets: [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    const retries = new Counter({
      name: 'raykeeper_controller_queue_retries_total',
      help: 'Retries scheduled after failed reconciles.',
      labelNames: ['controller'] as const,
      registers,
    });
    const adds = new Counter({
      name: 'raykeeper_controller_queue_adds_total',
      help: 'Keys added to the ready queue (after dedup).',
      labelNames: ['controller'] as const,
      registers,
    });
    const self = this;
    new Gauge({
      name: 'raykeeper_controller_queue_depth',
      help: 'Keys ready in the work queue.',
      labelNames: ['controller'] as const,
      registers,
      collect() {
        this.reset();
        for (const rc of self.running) this.set({ controller: rc.registration.name }, rc.queue.length);
      },
    });
    new Gauge({
      name: 'raykeeper_controller_inflight_reconciles',
      help: 'Reconciles in progress.',
      labelNames: ['controller'] as const,
      registers,
      collect() {
        this.reset();
        for (const rc of self.running) this.set({ controller: rc.registration.name }, rc.queue.inFlight);
      },
    });
    const sharding = this.sharding;
    if (sharding) {
      new Gauge({
        name: 'raykeeper_shards_held',
        help: 'Shards (--shards) this replica holds now.',
        registers,
        collect() {
          this.set(sharding.held().length);
        },
      });
      new Gauge({
        name: 'raykeeper_shard_held',
        help: '1 for each shard this replica holds, 0 for the others.',
        labelNames: ['shard'] as const,
        registers,
        collect() {
          for (let shard = 0; shard < sharding.shards; shard++) this.set({ shard: String(shard) }, sharding.holds(shard) ? 1 : 0);
        },
      });
    }
    const layoutWatch = this.layoutWatch;
    // One gauge for both layouts: a sharded replica is blocked by an older layout's Leases; a single
    // leader (--shards 1) by live member Leases of a sharded layout while it does not lead.
    const elector = this.elector;
    const layoutBlocked = sharding
      ? () => sharding.layoutBlocker() !== undefined
      : layoutWatch && elector
        ? () => !elector.isLeader() && layoutWatch.blockedBy() !== undefined
        : undefined;
    if (layoutBlocked) {
      new Gauge({
        name: 'raykeeper_shard_layout_blocked',
        help: '1 while this replica takes no work because another layout of Leases runs (a sharded replica: a live single leader, or a live member of another --shards that joined first; a single leader: live member Leases of a sharded layout; README: Sharding), else 0.',
        registers,
        collect() {
          this.set(layoutBlocked() ? 1 : 0);
        },
      });
    }
    new Gauge({
      name: 'raykeeper_leader',
      help: '1 while this replica runs the reconcilers (holds the Lease), else 0.',
      registers,
      collect() {
        this.set(self.isLeader() ? 1 : 0);
      },
    });
    const informerGauge = (name: string, help: string, value: (i: Informer) => number | undefined) =>
      new Gauge({
        name,
        help,
        labelNames: ['informer'] as const,
        registers,
        collect() {
          this.reset();
          for (const i of self.informers.all()) {
            const v = value(i);
            if (v !== undefined) this.set({ informer: label(i) }, v);
          }
        },
      });
    const now = () => this.ctx.now();
    informerGauge(
      'raykeeper_informer_reconnects',
      'Watch reconnects since start (normal every ~30 s on quiet resources).',
      (i) => i.stats.reconnects,
    );
    informerGauge('raykeeper_informer_relists', 'Full lists since start (start, 410 Gone, staleness, periodic).', (i) => i.stats.relists);
    informerGauge('raykeeper_informer_errors', 'List/watch failures since start (each retried with backoff).', (i) => i.stats.errors);
    informerGauge('raykeeper_informer_stale_restarts', 'Watches aborted by the staleness watchdog.', (i) => i.stats.staleRestarts);
    informerGauge('raykeeper_informer_last_event_age_seconds', 'Seconds since the last watch event, bookmark or list.', (i) =>
      i.stats.lastEventAt === undefined ? undefined : (now() - i.stats.lastEventAt) / 1000,
    );
    informerGauge('raykeeper_informer_objects', 'Objects in the informer cache.', (i) => i.size);
    informerGauge('raykeeper_informer_healthy', '1 when the informer is not failing continuously.', (i) =>
      i.healthy(this.options.healthGraceMs ?? 5 * 60_000) ? 1 : 0,
    );
    new Gauge({
      name: 'raykeeper_kube_requests',
      help: 'Kubernetes API requests since start by verb (WATCH apart from GET), status code and resource (its plural).',
      labelNames: ['verb', 'code', 'resource'] as const,
      registers,
      collect() {
        this.reset();
        for (const [k, v] of self.kube.requestCounts) {
          const [verb = '', code = '', resource = ''] = k.split(' ');
          this.set({ verb, code, resource }, v);
        }
      },
    });
    const latency = new Histogram({
      name: 'raykeeper_kube_request_duration_seconds',
      help: 'Kubernetes API request latency (answered requests, not watches) by verb and resource: from send to the whole answer, without any wait for --qps.',
      labelNames: ['verb', 'resource'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.kube.observeLatency((verb, resource, seconds) => latency.observe({ verb, resource }, seconds));
    new Counter({
      name: 'raykeeper_kube_client_throttled_seconds_total',
      help: 'Seconds API requests have waited for the client side cap (--qps, --burst); 0 without one.',
      registers,
      collect() {
        this.reset();
        this.inc(self.kube.throttledSeconds);
      },
    });
    new Gauge({
      name: 'raykeeper_kube_writes_fenced',
      help: 'Writes by the reconcilers not sent since start because this replica no longer held the Lease, by verb.',
      labelNames: ['verb'] as const,
      registers,
      collect() {
        this.reset();
        for (const [verb, v] of self.kube.fencedCounts) this.set({ verb }, v);
      },
    });
    const recorder = this.ctx.events;
    if (recorder instanceof KubeEventRecorder) {
      new Gauge({
        name: 'raykeeper_events_recorded',
        help: 'Kubernetes Events emitted since start by type and reason.',
        labelNames: ['type', 'reason'] as const,
        registers,
        collect() {
          this.reset();
          for (const [k, v] of recorder.counts) {
            const [type, reason] = k.split('/');
            this.set({ type: type ?? '', reason: reason ?? '' }, v);
          }
        },
      });
    }
    return { reconciles, duration, retries, adds };
  }
}

function label(i: Informer): string {
  const s = i.spec;
  const res = `${s.plural}.${s.group || 'core'}`;
  const ns = s.namespace ? `@${s.namespace}` : '';
  const sel = s.labelSelector ? `{${s.labelSelector}}` : '';
  return `${res}${ns}${sel}${i.projection.id ? `#${i.projection.id}` : ''}`;
}
