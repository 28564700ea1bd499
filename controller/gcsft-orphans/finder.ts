// The orphan finder (issue 28): every --orphan-scan-interval the leader lists the Ray storage namespaces
// of each Redis a live GCS-FT RayCluster points at and reports those no RayCluster names
// (src/gcsft/orphans.ts decides; this file reads and acts). Reports: the gauges
// raykeeper_gcs_orphaned_namespaces{redis} / raykeeper_gcs_orphaned_namespace_bytes{redis}, one log line
// and one Normal Event (on the controller's leader Lease) per newly found orphan.
// With --orphan-gc-after, an orphan seen orphaned continuously for that long is deleted: after a fresh
// LIST of every RayCluster from the API (never the cache), a dry run (logged), then the cleanup Job's own
// code (controller/redis-cleanup/cleanup.ts: exactly that namespace's keys, adaptive SCAN pacing).
//
// Credentials: a Redis is listed with the credentials one of its RayClusters' head pods gets, resolved
// like the in-process cleanup (../gcsft-cleanup/cleanup-env.ts: Secrets read through the API, in memory
// only). Addresses are printed as redisKey() (no user information); error messages are masked with the
// password in use.
// Embedded GCS storage (backend rocksdb) keeps its state on a PVC instead: a claim made with deletionPolicy
// Retain outlives its RayCluster on purpose, so each scan also lists the operator-managed claims
// (`<cluster>-gcs-pvc`, labelled ray.io/cluster, no owner) whose RayCluster a fresh LIST does not show: the
// gauge raykeeper_gcs_retained_claims{namespace}, one log line and one Normal Event per newly found one.
// Never deleted by us (the data may be wanted back: a cluster of that name adopts the claim).
import type { Counter } from 'prom-client';
import { errorMessage, oneLine } from '../../src/errors.ts';
import {
  EVENT_DELETED_ORPHANED_GCS_NAMESPACE,
  EVENT_ORPHANED_GCS_NAMESPACE,
  EVENT_RETAINED_GCS_STORAGE_CLAIM,
} from '../../src/event-reasons.ts';
import { retainedGcsStorageClaims, type ClaimView } from '../../src/raycluster/gcs-storage.ts';
import { RAY_CLUSTER_LABEL } from '../../src/names.ts';
import { decideGc, findOrphans, groupByRedis, orphanId, trackOrphans, type NamespaceOwner, type Orphan } from '../../src/gcsft/orphans.ts';
import { usesRedisBackend } from '../../src/gcsft/rules.ts';
import { cachedGauge, sharedCounter, type Registry } from '../../kube/metrics.ts';
import type { RayClusterFtView } from '../../src/types.ts';
import type { Informer } from '../../kube/informer.ts';
import type { ControllerContext, ControllerRegistration } from '../../kube/reconciler.ts';
import { LEASES, PERSISTENTVOLUMECLAIMS } from '../../kube/resources.ts';
import type { ObjectDataCache } from '../gcsft-cleanup/cleanup-env.ts';
import { clusterOwners, listAllClusters, resolvedHeadEnv } from './owners.ts';
import { rayClusterInformer } from '../raycluster/informers.ts';
import { MODULE } from '../module-names.ts';
import type { RedisConnectionOptions } from '../redis-cleanup/connect.ts';
import type { NamespaceListing, ListOptions } from '../redis-cleanup/list.ts';
import type { CleanupOptions, CleanupResult } from '../redis-cleanup/cleanup.ts';

/** The one work-queue key of the finder: scans are periodic, not per object. */
export const SCAN_KEY = 'orphan-scan';
/** How long one Redis may take to list (a shared Redis with millions of keys: ~0.6 s of its CPU per 1M). */
const LIST_DEADLINE_MS = 120_000;
const CONNECT_BUDGET_MS = 15_000;
/** Distinct credentials tried on one Redis per scan (clusters may use different ACL users). */
const MAX_CREDENTIALS = 3;

export interface OrphanFinderConfig {
  /** Between scans; 0: no periodic scan (scan() still works). */
  intervalMs: number;
  /** Delete an orphan seen orphaned continuously this long; 0: never. */
  gcAfterMs: number;
  /** The GC's command budget (--cleanup-command-budget-ms; undefined: the cleanup's default). */
  commandBudgetMs?: number | undefined;
  /** The grace's clock (default ctx.now). */
  now?: () => number;
  /** Tests inject; default the CLI's --list and the cleanup Job's code. */
  list?: (options: ListOptions) => Promise<NamespaceListing>;
  cleanup?: (options: CleanupOptions) => Promise<CleanupResult>;
}

export interface ScanReport {
  /** Redis servers listed, and those that could not be (with why). */
  scanned: string[];
  failed: Array<{ redis: string; reason: string }>;
  orphans: Orphan[];
  newlyFound: Orphan[];
  /** Retained GCS storage claims whose RayCluster is gone (undefined: they could not be listed). */
  retainedClaims?: RetainedClaim[];
  deleted: Orphan[];
  /** Due orphans kept, and why (a RayCluster names it again, ...). */
  kept: Array<{ orphan: Orphan; reason: string }>;
}

type RetainedClaim = ReturnType<typeof retainedGcsStorageClaims>[number];

interface Target {
  connection: RedisConnectionOptions;
  password: string | undefined;
}

const noSecrets = (t: Target | undefined) => [t?.password];

export class OrphanFinder {
  private readonly ctx: ControllerContext;
  private readonly config: OrphanFinderConfig;
  private readonly clusters: Informer<RayClusterFtView>;
  private readonly now: () => number;
  /** Since when each orphan (orphanId) has been seen orphaned, continuously. */
  private firstSeen = new Map<string, number>();
  /** The last scan's numbers per Redis (a Redis that could not be listed keeps its last ones). */
  private counts = new Map<string, { orphans: number; bytes: number | undefined }>();
  /** When the last scan that had a Redis to list ran: a scan of nothing does not hold back the next one. */
  private lastScan: number | undefined;
  /** The retained claims of the last scan (namespace/name), each announced once while it stays retained. */
  private retained = new Map<string, RetainedClaim>();
  private readonly metrics: { scans: Counter<'result'>; deleted: Counter };

  constructor(ctx: ControllerContext, config: OrphanFinderConfig) {
    this.ctx = ctx;
    this.config = config;
    this.now = config.now ?? ctx.now;
    this.clusters = rayClusterInformer(ctx);
    this.registerGauges(ctx.metrics);
    this.metrics = {
      scans: sharedCounter(ctx.metrics, {
        name: 'raykeeper_gcs_orphan_scans_total',
        help: 'Redis servers listed by the orphan finder, by result (ok, failed).',
        labelNames: ['result'] as const,
      }),
      deleted: sharedCounter(ctx.metrics, {
        name: 'raykeeper_gcs_orphaned_namespaces_deleted_total',
        help: 'Orphaned Ray storage namespaces deleted by --orphan-gc-after.',
      }),
    };
    // From 0: a series that first appears at 1 has no increase() (the dashboard and alerts read it so).
    for (const result of ['ok', 'failed'] as const) this.metrics.scans.inc({ result }, 0);
  }

  /** Leader-only (cachedGauge): a standby scans nothing, and two replicas' series would double every sum. */
  private registerGauges(registry: Registry): void {
    const counts = { list: () => [...this.counts] };
    const gauge = (name: string, help: string, value: (c: { orphans: number; bytes: number | undefined }) => number | undefined) =>
      cachedGauge(
        registry,
        { name, help, labelNames: ['redis'] },
        counts,
        ([redis, c]) => {
          const v = value(c);
          return v === undefined ? undefined : { labels: { redis }, value: v };
        },
        this.ctx.isLeader,
      );
    gauge(
      'raykeeper_gcs_orphaned_namespaces',
      'Ray storage namespaces in a Redis that no live RayCluster names (orphans), by Redis (no user information), at the last scan.',
      (c) => c.orphans,
    );
    const perNamespace = {
      list: () => {
        const counts = new Map<string, number>();
        for (const c of this.retained.values()) counts.set(c.namespace, (counts.get(c.namespace) ?? 0) + 1);
        return [...counts];
      },
    };
    cachedGauge(
      registry,
      {
        name: 'raykeeper_gcs_retained_claims',
        help: 'Embedded GCS storage claims (<cluster>-gcs-pvc, deletionPolicy Retain) whose RayCluster is gone, by namespace, at the last scan.',
        labelNames: ['namespace'],
      },
      perNamespace,
      ([namespace, n]) => ({ labels: { namespace }, value: n }),
      this.ctx.isLeader,
    );
    gauge(
      'raykeeper_gcs_orphaned_namespace_bytes',
      'MEMORY USAGE of those orphans, by Redis (absent when the Redis user may not run MEMORY USAGE).',
      (c) => c.bytes,
    );
  }

  registration(): ControllerRegistration {
    const periodic = this.config.intervalMs > 0;
    return {
      name: MODULE.gcsOrphans,
      workers: 1,
      reconciler: { reconcile: async (_key, signal) => this.reconcile(signal) },
      // Every cached cluster maps to the one key: leadership start (and the manager's resync) starts the
      // scans, the first cluster added starts them when there was none; reconcile() keeps the interval.
      watches: periodic ? [{ informer: this.clusters, toKeys: () => [SCAN_KEY], filter: (type) => type === 'add' }] : [],
    };
  }

  private async reconcile(signal: AbortSignal): Promise<{ requeueAfterMs: number }> {
    const interval = this.config.intervalMs;
    const now = this.ctx.now();
    if (this.lastScan !== undefined && now - this.lastScan < interval) return { requeueAfterMs: this.lastScan + interval - now };
    try {
      const report = await this.scan(signal);
      // A cluster without GCS FT (say a RayJob's) added first must not hold back the scan the first GCS-FT
      // cluster added after it starts: a scan that had no Redis to list does not count.
      this.lastScan = report.scanned.length + report.failed.length > 0 ? now : undefined;
    } catch (err) {
      signal.throwIfAborted();
      this.lastScan = now;
      // E.g. no permission to list RayClusters in every namespace under --watch-namespace: say why once per
      // interval rather than retrying with backoff.
      this.metrics.scans.inc({ result: 'failed' });
      this.ctx.logger.warn({ controller: MODULE.gcsOrphans, err: errorMessage(err) }, 'orphan scan failed; next scan at the interval');
    }
    return { requeueAfterMs: interval };
  }

  /** One scan: list, report what is newly orphaned, and (with GC on) delete what is due. */
  async scan(signal?: AbortSignal): Promise<ScanReport> {
    const log = this.ctx.logger.child({ controller: MODULE.gcsOrphans });
    const cache: ObjectDataCache = new Map();
    // The Redis servers to list are those the watched clusters point at; the owners are every cluster:
    // under --watch-namespace, clusters elsewhere may share that Redis (a fresh LIST of all namespaces).
    const watched = [...this.clusters.list()];
    const watchedOwners = await clusterOwners(this.ctx.kube, watched, signal, cache);
    const owners = this.ctx.watchNamespace
      ? await clusterOwners(this.ctx.kube, await listAllClusters(this.ctx.kube, signal), signal, cache)
      : watchedOwners;
    const groups = groupByRedis(watchedOwners);
    const report: ScanReport = { scanned: [], failed: [], orphans: [], newlyFound: [], deleted: [], kept: [] };
    const targets = new Map<string, Target>();
    for (const [redis, users] of groups) {
      signal?.throwIfAborted();
      const listed = await this.listRedis(watched, users, cache, signal);
      if ('reason' in listed) {
        report.failed.push({ redis, reason: listed.reason });
        continue;
      }
      const orphans = findOrphans(redis, listed.listing.namespaces, owners);
      report.scanned.push(redis);
      report.orphans.push(...orphans);
      targets.set(redis, listed.target);
      const bytes = orphans.reduce<number | undefined>(
        (sum, o) => (sum === undefined || o.bytes === undefined ? undefined : sum + o.bytes),
        0,
      );
      this.counts.set(redis, { orphans: orphans.length, bytes });
      this.metrics.scans.inc({ result: 'ok' });
    }
    for (const f of report.failed) {
      this.metrics.scans.inc({ result: 'failed' });
      log.warn({ redis: f.redis, err: f.reason }, 'orphan finder: could not list the storage namespaces of this Redis');
    }
    // A Redis no live cluster points at any more is not scanned again: forget it.
    for (const redis of this.counts.keys()) if (!groups.has(redis)) this.counts.delete(redis);
    const known = new Map([...this.firstSeen].filter(([id]) => groups.has(id.slice(0, id.indexOf('\u0000')))));
    const tracked = trackOrphans(known, report.orphans, new Set(report.scanned), this.now());
    this.firstSeen = tracked.firstSeen;
    report.newlyFound = tracked.newlyFound;
    for (const o of tracked.newlyFound) await this.announce(o, log, signal);
    if (this.config.gcAfterMs > 0) await this.collect(report, targets, log, signal);
    await this.scanClaims(report, log, signal);
    return report;
  }

  /**
   * The retained GCS storage claims: the claims first, then a fresh LIST of RayClusters (a cluster created
   * in between is seen, so its claim is never called retained). A claim list that fails (no RBAC) is logged.
   */
  private async scanClaims(report: ScanReport, log: ControllerContext['logger'], signal: AbortSignal | undefined): Promise<void> {
    let found: RetainedClaim[];
    try {
      // Under --watch-namespace the claims of that namespace (the Role there grants list), else all.
      const where = this.ctx.watchNamespace ? PERSISTENTVOLUMECLAIMS.at(this.ctx.watchNamespace) : PERSISTENTVOLUMECLAIMS;
      const claims = (await this.ctx.kube.list(where, { labelSelector: RAY_CLUSTER_LABEL, ...(signal ? { signal } : {}) }))
        .items as ClaimView[];
      const live = new Set((await listAllClusters(this.ctx.kube, signal)).map((c) => `${c.metadata.namespace}/${c.metadata.name}`));
      found = retainedGcsStorageClaims(claims, (ns, name) => live.has(`${ns}/${name}`));
    } catch (err) {
      signal?.throwIfAborted();
      log.warn({ err: errorMessage(err) }, 'orphan finder: could not list the GCS storage claims');
      return;
    }
    report.retainedClaims = found;
    const before = this.retained;
    this.retained = new Map(found.map((c) => [`${c.namespace}/${c.name}`, c]));
    for (const [key, c] of this.retained) {
      if (before.has(key)) continue;
      log.info(
        { namespace: c.namespace, claim: c.name, cluster: c.cluster, why: 'no owner reference and no RayCluster of that name' },
        'retained GCS storage claim found',
      );
      await this.event(
        EVENT_RETAINED_GCS_STORAGE_CLAIM,
        `PersistentVolumeClaim ${key} holds the embedded GCS storage of RayCluster ${c.cluster}, which no longer exists (the claim has no owner: deletionPolicy Retain when it was made); a RayCluster of that name adopts it, or delete it by hand: kubectl -n ${c.namespace} delete pvc ${c.name}.`,
        signal,
      );
    }
  }

  /**
   * Lists one Redis with the credentials of its clusters' head pods: the first (clusters not being deleted
   * first) whose credentials resolve and are accepted; at most MAX_CREDENTIALS distinct ones are tried.
   */
  private async listRedis(
    clusters: readonly RayClusterFtView[],
    users: readonly NamespaceOwner[],
    cache: ObjectDataCache,
    signal: AbortSignal | undefined,
  ): Promise<{ target: Target; listing: NamespaceListing } | { reason: string }> {
    const { resolveSettings } = await import('../redis-cleanup/config.ts');
    const list = this.config.list ?? (await import('../redis-cleanup/list.ts')).listNamespaces;
    const byKey = new Map(clusters.map((c) => [`${c.metadata.namespace ?? ''}/${c.metadata.name ?? ''}`, c]));
    const order = [...users].sort((a, b) => Number(a.deleting) - Number(b.deleting) || a.cluster.localeCompare(b.cluster));
    const reasons: string[] = [];
    const tried = new Set<string>();
    for (const u of order) {
      const cluster = byKey.get(u.cluster);
      if (!cluster || !usesRedisBackend(cluster) || tried.size >= MAX_CREDENTIALS) continue;
      let target: Target | undefined;
      try {
        const settings = await resolveSettings({}, await resolvedHeadEnv(this.ctx.kube, cluster, signal, cache));
        target = { connection: settings.connection, password: settings.password };
        const id = JSON.stringify([settings.connection.username, settings.password]);
        if (tried.has(id)) continue;
        tried.add(id);
        const listing = await list({
          connection: target.connection,
          deadlineMs: LIST_DEADLINE_MS,
          connectBudgetMs: CONNECT_BUDGET_MS,
          commandBudgetMs: this.config.commandBudgetMs,
          signal,
        });
        return { target, listing };
      } catch (err) {
        signal?.throwIfAborted();
        reasons.push(`with the credentials of ${u.cluster}: ${oneLine(errorMessage(err), noSecrets(target))}`);
      }
    }
    return {
      reason: reasons.length > 0 ? reasons.slice(0, MAX_CREDENTIALS).join('; ') : 'no RayCluster of this Redis to take credentials from',
    };
  }

  private async announce(o: Orphan, log: ControllerContext['logger'], signal: AbortSignal | undefined): Promise<void> {
    const size = `${o.keys} key(s)${o.bytes === undefined ? '' : `, ${o.bytes} bytes`}`;
    const gc =
      this.config.gcAfterMs > 0
        ? `deleted after ${this.config.gcAfterMs / 1000} s orphaned (--orphan-gc-after)`
        : 'not deleted (--orphan-gc-after is off)';
    const message = `Storage namespace ${JSON.stringify(o.namespace)} in Redis at ${o.redis} is orphaned: no live RayCluster names it (${size}); ${gc}. To delete it by hand: raykeeper redis-cleanup --address ${o.redis} --namespace ${o.namespace} (password in REDIS_PASSWORD).`;
    log.info(
      { redis: o.redis, namespace: o.namespace, keys: o.keys, bytes: o.bytes, why: 'no live RayCluster names it' },
      'orphaned GCS storage namespace found',
    );
    await this.event(EVENT_ORPHANED_GCS_NAMESPACE, message, signal);
  }

  /** A Normal Event on the leader Lease (the controller's own object; without leader election: the log only). */
  private async event(reason: string, message: string, signal: AbortSignal | undefined): Promise<void> {
    const lease = this.ctx.lease;
    if (!lease) return;
    const obj = await this.ctx.kube.getOrUndefined({ ...LEASES, ...lease }, { signal }).catch(() => undefined);
    if (obj) this.ctx.events.event({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', ...obj }, 'Normal', reason, message);
  }

  /** --orphan-gc-after: the due orphans, re-checked against a fresh LIST of RayClusters, dry run, then deleted. */
  private async collect(
    report: ScanReport,
    targets: ReadonlyMap<string, Target>,
    log: ControllerContext['logger'],
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const now = this.now();
    const due = report.orphans.filter((o) => now >= (this.firstSeen.get(orphanId(o)) ?? now) + this.config.gcAfterMs);
    if (due.length === 0) return;
    const fresh = await clusterOwners(this.ctx.kube, await listAllClusters(this.ctx.kube, signal), signal);
    const cleanup = this.config.cleanup ?? (await import('../redis-cleanup/cleanup.ts')).runCleanup;
    const { summarize } = await import('../redis-cleanup/cleanup.ts');
    for (const o of due) {
      signal?.throwIfAborted();
      const d = decideGc({ orphan: o, firstSeen: this.firstSeen.get(orphanId(o)) ?? now, now, graceMs: this.config.gcAfterMs, fresh });
      if (d.action !== 'delete') {
        if (d.action === 'keep') {
          report.kept.push({ orphan: o, reason: d.reason });
          log.info({ redis: o.redis, namespace: o.namespace, why: d.reason }, 'orphan not deleted');
        }
        continue;
      }
      const target = targets.get(o.redis);
      if (!target) continue;
      const base = {
        connection: target.connection,
        namespace: o.namespace,
        sweep: { mode: 'always', reason: 'orphan: Ray version unknown' },
        commandBudgetMs: this.config.commandBudgetMs,
      } as const;
      try {
        const dry = await cleanup({ ...base, dryRun: true, signal });
        log.info(
          { redis: o.redis, namespace: o.namespace, keys: dry.deleted.map((k) => k.key) },
          oneLine(`orphan GC dry run: ${summarize(dry)}`, noSecrets(target)),
        );
        signal?.throwIfAborted();
        // The dry run walked the keyspace: a RayCluster created meanwhile with this storage namespace
        // must still stop the deletion, so the API is asked again right before it.
        const now2 = this.now();
        const recheck = decideGc({
          orphan: o,
          firstSeen: this.firstSeen.get(orphanId(o)) ?? now2,
          now: now2,
          graceMs: this.config.gcAfterMs,
          fresh: await clusterOwners(this.ctx.kube, await listAllClusters(this.ctx.kube, signal), signal),
        });
        if (recheck.action !== 'delete') {
          const why = recheck.action === 'keep' ? recheck.reason : 'not due';
          report.kept.push({ orphan: o, reason: why });
          log.info({ redis: o.redis, namespace: o.namespace, why }, 'orphan not deleted (re-checked after the dry run)');
          continue;
        }
        const done = await cleanup({ ...base, signal });
        const summary = oneLine(summarize(done), noSecrets(target));
        log.info({ redis: o.redis, namespace: o.namespace }, `orphan GC: ${summary}`);
        this.metrics.deleted.inc();
        report.deleted.push(o);
        this.firstSeen.delete(orphanId(o));
        const c = this.counts.get(o.redis);
        if (c)
          this.counts.set(o.redis, {
            orphans: c.orphans - 1,
            bytes: c.bytes === undefined || o.bytes === undefined ? c.bytes : c.bytes - o.bytes,
          });
        await this.event(
          EVENT_DELETED_ORPHANED_GCS_NAMESPACE,
          `Deleted the orphaned storage namespace ${JSON.stringify(o.namespace)} in Redis at ${o.redis} after ${this.config.gcAfterMs / 1000} s with no RayCluster naming it: ${summary}`,
          signal,
        );
      } catch (err) {
        signal?.throwIfAborted();
        log.warn(
          { redis: o.redis, namespace: o.namespace, err: oneLine(errorMessage(err), noSecrets(target)) },
          'orphan GC failed; retried at the next scan',
        );
      }
    }
  }
}

/** The finder and its registration for the runtime. */
export function createOrphanFinder(
  ctx: ControllerContext,
  config: OrphanFinderConfig,
): { finder: OrphanFinder; registration: ControllerRegistration } {
  const finder = new OrphanFinder(ctx, config);
  return { finder, registration: finder.registration() };
}
