// `raykeeper uninstall`'s work (the CLI is ./cli.ts; the decisions are src/uninstall/decide.ts):
//   1. stop what adds the finalizer (./stop.ts): delete the webhook configurations, scale the controller to 0
//      and wait (at most a quarter of --timeout, 60 s at most) for its pods to go; read its settings first;
//   2. passes: list the RayClusters in scope FROM THE API and decide each one that carries the finalizer:
//      - live: remove the finalizer (a JSON patch guarded by `test`, kube/finalizers.ts) and write the
//        Warning that says what stays;
//      - being deleted: the controller's own GCS-FT cleanup reconciler (controller/gcsft-cleanup, the same
//        code, configured from the controller's Deployment) is run for that key in this process until it
//        releases the finalizer: the pods are deleted, the cleanup Job is created and waited for (or the
//        in-process cleanup in a terminating namespace, or the cluster's own deletion timeout), each with
//        the controller's Events; keys are handed to --workers workers through the controller runtime's
//        work queue; whatever is still held at the deadline (--timeout less a margin) is released with a
//        Warning naming what may remain;
//      a pass that finds nothing to do ends the passes (so a RayCluster created while the webhook was still
//      being removed is found by the next pass). Then one last list says what is left;
//   3. RayJobs raykeeper stored as `New` get KubeRay's "" (src/uninstall/decide.ts newStatusReset), and
//      raykeeper's ray.io/rayjob-finalizer is removed (rayJobFinalizerRelease).
// Never: a live cluster's data is never cleaned (it is live), and no finalizer of a deleting cluster is
// removed before its cleanup ended or the deadline came. Every step tolerates having been done before, so
// the command can run again after a partial run (a failed Helm hook, Ctrl-C).
import type { KubeCredentials } from '../../kube/kubeconfig.ts';
import { FIELD_MANAGER, isConflict, isForbidden, isNotFound, isPatchTestFailed, JSON_PATCH, KubeClient } from '../../kube/client.ts';
import { KubeEventRecorder, type EventRecorder } from '../../kube/events.ts';
import { FinalizerPatcher } from '../../kube/finalizers.ts';
import { FINALIZER_REFUSAL } from '../../src/finalizer.ts';
import { InformerFactory, type Informer } from '../../kube/informer.ts';
import type { ObjectWithMeta } from '../../kube/model.ts';
import { runWorkers, WorkQueue } from '../../kube/queue.ts';
import { CreationGate } from '../../kube/creation-gate.ts';
import { objectKey, RetryNoLaterError, splitKey, type ControllerContext, type Reconciler } from '../../kube/reconciler.ts';
import { hostname } from 'node:os';
import { createMetricsRegistry } from '../../kube/metrics.ts';
import { sleep } from '../../kube/backoff.ts';
import type { Logger } from '../../kube/logger.ts';
import { errorMessage } from '../../src/errors.ts';
import type { EventType } from '../../kube/events.ts';
import { GCS_FT_REDIS_CLEANUP_FINALIZER, RAY_API_VERSION, RAYJOB_FINALIZER } from '../../src/names.ts';
import { hasFinalizer, isDeleting } from '../../kube/finalizer-patches.ts';
import { RAYCLUSTERS, RAYJOBS, type RayCluster, type RayClusterFtView, type RayJob } from '../../src/types.ts';
import { describeTarget } from '../../src/gcsft/decide.ts';
import { usesRedisBackend } from '../../src/gcsft/rules.ts';
import {
  deadlineReleaseEvent,
  decideUninstall,
  finalizerWriter,
  rayJobFinalizerRelease,
  readdedEvent,
  NEW_STATUS_CLEARED_EVENT,
  newStatusReset,
  type ClusterOutcome,
  type UninstallReport,
} from '../../src/uninstall/decide.ts';
import { gcsFtCleanupModule } from '../gcsft-cleanup/module.ts';
import { rayClusterInformer } from '../raycluster/informers.ts';
import { MODULE } from '../module-names.ts';
import { controllerSettings } from './settings.ts';
import { stopController, stopWebhooks, type Say, type StopTargets } from './stop.ts';

/** The field manager of every write of `raykeeper uninstall` (managedFields show who removed a finalizer). */
export const UNINSTALL_FIELD_MANAGER = 'raykeeper-uninstall';
/** The Events' source component. */
export const UNINSTALL_COMPONENT = 'raykeeper-uninstall';

export interface UninstallOptions {
  kubeConfig: KubeCredentials;
  targets: StopTargets;
  /** --watch-namespace; undefined: the controller Deployment's, else all namespaces. */
  watchNamespace?: string | undefined;
  timeoutMs: number;
  /** Deleting clusters driven at once. */
  workers: number;
  dryRun: boolean;
  /** The GCS-FT module's flags given to the command (win over the controller Deployment's). */
  moduleFlags: Record<string, string | boolean | undefined>;
  /** This process's environment (RAYKEEPER_IMAGE, ENABLE_GCS_FT_REDIS_CLEANUP when the Deployment has none). */
  env: Record<string, string | undefined>;
  logger: Logger;
  say: Say;
  now?: () => number;
  signal?: AbortSignal;
  /** How often a deleting cluster is looked at again at most (default 1000 ms). */
  pollMs?: number;
}

const MAX_PASSES = 10;
/** How long the last look waits, after a live cluster was released, for another operator to add the finalizer back. */
export const ADDED_BACK_SETTLE_MS = 3_000;
const MAX_RELEASE_TRIES = 3;

type Row = { key: string; outcome: ClusterOutcome; detail: string };

/** The margin before --timeout at which unfinished cleanups are released: a tenth, within [2 s, 15 s]. */
export function deadlineMargin(timeoutMs: number): number {
  return Math.min(15_000, Math.max(2_000, Math.round(timeoutMs / 10)));
}

function what(cluster: RayCluster): string {
  return usesRedisBackend(cluster) ? describeTarget(cluster) : 'no GCS data in Redis';
}

/** Forwards every Event and remembers the last one per object UID (for the progress lines and the report). */
class RememberingRecorder implements EventRecorder {
  readonly last = new Map<string, string>();
  private readonly inner: EventRecorder;
  private readonly say: Say;
  constructor(inner: EventRecorder, say: Say) {
    this.inner = inner;
    this.say = say;
  }
  event(obj: ObjectWithMeta, type: EventType, reason: string, message: string): void {
    this.inner.event(obj, type, reason, message);
    const uid = obj.metadata?.uid;
    if (uid) this.last.set(uid, `${reason}: ${message}`);
    this.say(`${objectKey(obj)}: ${type} ${reason}: ${message}`);
  }
  flush(): Promise<void> {
    return this.inner.flush();
  }
}

export async function runUninstall(o: UninstallOptions): Promise<UninstallReport> {
  const now = o.now ?? Date.now;
  const started = now();
  const deadline = started + o.timeoutMs;
  const report: UninstallReport = { clusters: [], rayJobsReset: [], rayJobsReleased: [], errors: [] };
  const kube = new KubeClient(o.kubeConfig, { fieldManager: UNINSTALL_FIELD_MANAGER });
  try {
    try {
      await stopWebhooks(kube, o.targets, o.dryRun, o.say, o.signal);
    } catch (err) {
      report.errors.push(`stopping the webhook: ${errorMessage(err)}`);
    }
    let deployment;
    try {
      const waitUntil = started + Math.min(60_000, Math.round(o.timeoutMs / 4));
      deployment = await stopController(kube, o.targets, { dryRun: o.dryRun, waitUntil, now }, o.say, o.signal);
    } catch (err) {
      report.errors.push(`stopping the controller: ${errorMessage(err)}`);
    }
    const settings = controllerSettings(deployment);
    const watchNamespace = o.watchNamespace || settings.watchNamespace;
    o.say(`scope: ${watchNamespace ? `namespace ${watchNamespace}` : 'all namespaces'}`);
    if (o.dryRun) {
      report.clusters.push(...(await dryRun(kube, watchNamespace, o.signal)));
      for (const row of report.clusters) o.say(`${row.key}: ${row.outcome}: ${row.detail}`);
      await settleRayJobs(kube, watchNamespace, undefined, o, report);
      return report;
    }
    const flags = { ...settings.moduleFlags };
    for (const [k, v] of Object.entries(o.moduleFlags)) if (v !== undefined) flags[k] = v;
    const env = { ...o.env, ...settings.env };
    await passes(kube, o, { watchNamespace, flags, env, deadline, now }, report);
    const events = new KubeEventRecorder({
      kube,
      component: UNINSTALL_COMPONENT,
      instance: hostname(),
      logger: o.logger.child({}, { level: 'error' }),
    });
    await settleRayJobs(kube, watchNamespace, events, o, report);
    await events.flush();
  } finally {
    kube.close();
  }
  return report;
}

async function dryRun(kube: KubeClient, namespace: string | undefined, signal: AbortSignal | undefined): Promise<Row[]> {
  const clusters = (await kube.list({ ...RAYCLUSTERS, namespace }, { signal })).items;
  const rows: Row[] = [];
  for (const c of clusters) {
    const d = decideUninstall(c, new Set());
    if (d.action === 'release') rows.push({ key: objectKey(c), outcome: 'would-release', detail: `live: its data stays (${what(c)})` });
    if (d.action === 'finish')
      rows.push({ key: objectKey(c), outcome: 'would-finish', detail: `being deleted: its Redis cleanup would be finished (${what(c)})` });
  }
  return rows;
}

/**
 * RayJobs raykeeper stored as `New` get "" (src/uninstall/decide.ts newStatusReset), and raykeeper's
 * ray.io/rayjob-finalizer is removed (rayJobFinalizerRelease); `events` undefined: a dry run (say only). No
 * RayJob API (404) or no right to list them (403: the release ran no RayJob reconciler, so it wrote no
 * `New` and no finalizer): skipped with a line.
 */
async function settleRayJobs(
  kube: KubeClient,
  namespace: string | undefined,
  events: EventRecorder | undefined,
  o: UninstallOptions,
  report: UninstallReport,
): Promise<void> {
  let jobs: RayJob[];
  try {
    jobs = (await kube.list({ ...RAYJOBS, namespace }, { signal: o.signal })).items;
  } catch (err) {
    if (isNotFound(err) || isForbidden(err))
      return o.say(`RayJobs: not looked at (${isNotFound(err) ? 'no RayJob API' : 'not allowed to list them'})`);
    report.errors.push(`listing RayJobs: ${errorMessage(err)}`);
    return;
  }
  for (const job of jobs) {
    await releaseRayJobFinalizer(kube, job, events, o, report);
    const ops = newStatusReset(job);
    if (!ops) continue;
    const key = objectKey(job);
    if (!events) {
      o.say(`${key}: RayJob: would set jobDeploymentStatus "New" to "" (KubeRay's New)`);
      report.rayJobsReset.push(key);
      continue;
    }
    try {
      await kube.patch({ ...RAYJOBS, namespace: job.metadata.namespace, name: job.metadata.name, subresource: 'status' }, ops, JSON_PATCH, {
        signal: o.signal,
      });
    } catch (err) {
      if (isNotFound(err) || isPatchTestFailed(err) || isConflict(err)) continue; // gone, or moved on from New
      report.errors.push(`${key}: clearing its status New: ${errorMessage(err)}`);
      continue;
    }
    events.event(job, NEW_STATUS_CLEARED_EVENT.type, NEW_STATUS_CLEARED_EVENT.reason, NEW_STATUS_CLEARED_EVENT.message);
    o.say(`${key}: RayJob: jobDeploymentStatus "New" set to "" (KubeRay's New)`);
    report.rayJobsReset.push(key);
  }
}

async function releaseRayJobFinalizer(
  kube: KubeClient,
  job: RayJob,
  events: EventRecorder | undefined,
  o: UninstallOptions,
  report: UninstallReport,
): Promise<void> {
  const release = rayJobFinalizerRelease(job, FIELD_MANAGER);
  if (!release) return;
  const key = objectKey(job);
  if (!events) {
    o.say(`${key}: RayJob: would remove ${RAYJOB_FINALIZER}`);
    report.rayJobsReleased.push(key);
    return;
  }
  try {
    await kube.patch({ ...RAYJOBS, namespace: job.metadata.namespace, name: job.metadata.name }, release.patch, JSON_PATCH, {
      signal: o.signal,
    });
  } catch (err) {
    if (isNotFound(err) || isPatchTestFailed(err) || isConflict(err)) return; // gone, or changed since listed
    report.errors.push(`${key}: removing ${RAYJOB_FINALIZER}: ${errorMessage(err)}`);
    return;
  }
  events.event(job, release.event.type, release.event.reason, release.event.message);
  report.rayJobsReleased.push(key);
}

interface Run {
  watchNamespace: string | undefined;
  flags: Record<string, string | boolean | undefined>;
  env: Record<string, string | undefined>;
  deadline: number;
  now: () => number;
}

async function passes(kube: KubeClient, o: UninstallOptions, run: Run, report: UninstallReport): Promise<void> {
  const { now, deadline } = run;
  const events = new RememberingRecorder(
    // Its own log of each Event would repeat the progress line: errors only.
    new KubeEventRecorder({ kube, component: UNINSTALL_COMPONENT, instance: hostname(), logger: o.logger.child({}, { level: 'error' }) }),
    o.say,
  );
  const finalizers = new FinalizerPatcher({ kube, events, kind: 'RayCluster', apiVersion: RAY_API_VERSION, refusal: FINALIZER_REFUSAL });
  const rows = new Map<string, Row>(); // by UID
  const released = new Set<string>();
  const tries = new Map<string, number>();
  let cleanup: CleanupDriver | undefined;
  try {
    cleanup = await CleanupDriver.start(kube, o, run, events, finalizers);
    for (let pass = 1; pass <= MAX_PASSES && !o.signal?.aborted; pass++) {
      const held = (await kube.list({ ...RAYCLUSTERS, namespace: run.watchNamespace }, { signal: o.signal })).items.filter((c) =>
        hasFinalizer(c.metadata, GCS_FT_REDIS_CLEANUP_FINALIZER),
      );
      const deleting = held.filter((c) => isDeleting(c)).length;
      o.say(
        `pass ${pass}: ${held.length} RayClusters carry ${GCS_FT_REDIS_CLEANUP_FINALIZER} (${held.length - deleting} live, ${deleting} being deleted)`,
      );
      let acted = 0;
      for (const c of held) {
        const uid = c.metadata.uid ?? '';
        const key = objectKey(c);
        const d = decideUninstall(c, released);
        if (d.action === 'finish') {
          if (cleanup.add(key, uid)) acted++;
        } else if (d.action === 'readded') {
          rows.set(uid, { key, outcome: 'readded', detail: 'the finalizer came back after it was removed: another operator adds it' });
        } else if (d.action === 'release' && (tries.get(uid) ?? 0) < MAX_RELEASE_TRIES) {
          acted++;
          tries.set(uid, (tries.get(uid) ?? 0) + 1);
          try {
            const r = await finalizers.patch(
              { ...RAYCLUSTERS, namespace: c.metadata.namespace, name: c.metadata.name },
              c,
              'remove',
              GCS_FT_REDIS_CLEANUP_FINALIZER,
              o.signal,
            );
            if (r.result === 'patched') {
              released.add(uid);
              events.event(c, d.event.type, d.event.reason, d.event.message);
              rows.set(uid, { key, outcome: 'released', detail: `live: finalizer removed, its data stays (${what(c)})` });
            }
          } catch (err) {
            rows.set(uid, { key, outcome: 'stuck', detail: `removing the finalizer: ${errorMessage(err)}` });
          }
        }
      }
      await cleanup.idle();
      if (acted === 0 || now() >= deadline) break;
    }
    for (const [uid, row] of cleanup.rows) rows.set(uid, row);
    // Another operator that holds the same finalizer (KubeRay's, with its cleanup on) adds it back to a live
    // cluster within a reconcile: give it that long before the last look, so the report and the Events say so.
    if (released.size > 0) await sleep(Math.max(0, Math.min(ADDED_BACK_SETTLE_MS, deadline - now())), o.signal);
    // What is left, from the API.
    const left = (await kube.list({ ...RAYCLUSTERS, namespace: run.watchNamespace }, { signal: o.signal })).items.filter((c) =>
      hasFinalizer(c.metadata, GCS_FT_REDIS_CLEANUP_FINALIZER),
    );
    for (const c of left) {
      const uid = c.metadata.uid ?? '';
      const row = rows.get(uid);
      if (released.has(uid) && !isDeleting(c)) {
        const writer = finalizerWriter(c.metadata.managedFields as Parameters<typeof finalizerWriter>[0], GCS_FT_REDIS_CLEANUP_FINALIZER);
        const e = readdedEvent(writer);
        events.event(c, e.type, e.reason, e.message);
        rows.set(uid, {
          key: objectKey(c),
          outcome: 'readded',
          detail: `the finalizer came back after it was removed${writer ? `, added by ${writer}` : ''}: that operator holds it`,
        });
        continue;
      }
      rows.set(uid, {
        key: objectKey(c),
        outcome: 'stuck',
        detail: row && row.outcome === 'stuck' ? row.detail : 'still carries the finalizer',
      });
    }
  } catch (err) {
    report.errors.push(errorMessage(err));
  } finally {
    await cleanup?.stop();
    await events.flush();
  }
  report.clusters.push(...[...rows.values()].sort((a, b) => a.key.localeCompare(b.key)));
}

/**
 * The controller's GCS-FT cleanup reconciler (controller/gcsft-cleanup/), created by its own module from the
 * controller's flags, on a context of this process (its informers list and watch the scope), driven key by key.
 */
class CleanupDriver {
  readonly rows = new Map<string, Row>();
  private readonly queue = new WorkQueue({ retry: { baseMs: 200, maxMs: 5_000, factor: 2, jitter: 0.2 } });
  private readonly uids = new Map<string, string>(); // key -> uid being finished
  private readonly pending = new Set<string>();
  private idleWaiters: Array<() => void> = [];
  private workers: Promise<void> = Promise.resolve();

  private readonly kube: KubeClient;
  private readonly o: UninstallOptions;
  private readonly run: Run;
  private readonly events: RememberingRecorder;
  private readonly finalizers: FinalizerPatcher;
  private readonly informers: InformerFactory;
  private readonly clusters: Informer<RayClusterFtView>;
  private readonly reconciler: Reconciler;

  private constructor(parts: {
    kube: KubeClient;
    o: UninstallOptions;
    run: Run;
    events: RememberingRecorder;
    finalizers: FinalizerPatcher;
    informers: InformerFactory;
    clusters: Informer<RayClusterFtView>;
    reconciler: Reconciler;
  }) {
    this.kube = parts.kube;
    this.o = parts.o;
    this.run = parts.run;
    this.events = parts.events;
    this.finalizers = parts.finalizers;
    this.informers = parts.informers;
    this.clusters = parts.clusters;
    this.reconciler = parts.reconciler;
  }

  static async start(
    kube: KubeClient,
    o: UninstallOptions,
    run: Run,
    events: RememberingRecorder,
    finalizers: FinalizerPatcher,
  ): Promise<CleanupDriver> {
    const informers = new InformerFactory(kube, { namespace: run.watchNamespace });
    const ctx: ControllerContext = {
      kubeConfig: o.kubeConfig,
      kube,
      informers,
      watchNamespace: run.watchNamespace,
      events,
      logger: o.logger,
      metrics: createMetricsRegistry(),
      env: run.env,
      now: run.now,
      creationGate: new CreationGate(run.now),
      isLeader: () => true,
      // Only the cleanup runs here: no pod operator (the cleanup lists the pods from the API).
      reconcilers: [MODULE.gcsFtCleanup],
    };
    const registration = await gcsFtCleanupModule.create(ctx, run.flags);
    const clusters = rayClusterInformer(ctx);
    informers.start();
    // A watch refused (403: the hook's RBAC) retries for ever: listing is given until the deadline.
    const synced = await informers.waitForSync(
      AbortSignal.any([...(o.signal ? [o.signal] : []), AbortSignal.timeout(Math.max(1, run.deadline - run.now()))]),
    );
    if (!synced) {
      const why = informers
        .all()
        .map((i) => i.stats.lastError)
        .filter(Boolean)
        .join('; ');
      await informers.stop();
      throw new Error(`could not list and watch RayClusters, their pods and cleanup Jobs before the deadline${why ? `: ${why}` : ''}`);
    }
    const driver = new CleanupDriver({ kube, o, run, events, finalizers, informers, clusters, reconciler: registration.reconciler });
    driver.workers = runWorkers(
      driver.queue,
      Math.max(1, o.workers),
      (key) => driver.step(key),
      (key, err, retryInMs) => o.logger.warn({ cluster: key, err: errorMessage(err), retryInMs }, 'cleanup step failed; retrying'),
    );
    return driver;
  }

  /** Starts finishing a deleting cluster; false when it is being (or was) finished already. */
  add(key: string, uid: string): boolean {
    if (this.uids.get(key) === uid) return false;
    this.uids.set(key, uid);
    this.pending.add(key);
    this.o.say(`${key}: being deleted: finishing its Redis cleanup as the controller would`);
    this.queue.add(key);
    return true;
  }

  /** Resolves once no cluster is being finished. */
  idle(): Promise<void> {
    if (this.pending.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private end(key: string, row: Row): void {
    const uid = this.uids.get(key) ?? '';
    this.rows.set(uid, row);
    this.o.say(`${row.key}: ${row.outcome}: ${row.detail}`);
    this.pending.delete(key);
    if (this.pending.size === 0) for (const w of this.idleWaiters.splice(0)) w();
  }

  /** One look at a deleting cluster: released? the deadline? else one reconcile, then again later. */
  private async step(key: string): Promise<void> {
    if (!this.pending.has(key)) return;
    const uid = this.uids.get(key) ?? '';
    const { now, deadline } = this.run;
    const poll = this.o.pollMs ?? 1000;
    // Past the deadline even the release at the deadline failed (the API refused or was unreachable): give up.
    if (now() >= deadline)
      return this.end(key, { key, outcome: 'stuck', detail: 'the deadline passed before its finalizer could be removed' });
    if (await this.released(key, uid)) return this.finished(key, uid);
    if (this.o.signal?.aborted) return this.end(key, { key, outcome: 'stuck', detail: 'stopped before its cleanup ended' });
    const releaseAt = deadline - deadlineMargin(this.o.timeoutMs);
    if (now() >= releaseAt) return this.releaseAtDeadline(key, uid);
    let wait = poll;
    try {
      const r = await this.reconciler.reconcile(key, this.o.signal ?? new AbortController().signal);
      wait = Math.min(poll, Math.max(100, r?.requeueAfterMs ?? poll));
    } catch (err) {
      if (!(err instanceof RetryNoLaterError)) throw err; // the queue backs off
      wait = Math.min(poll, Math.max(100, err.notLaterThanMs));
    }
    if (await this.released(key, uid)) return this.finished(key, uid);
    this.queue.addAfter(key, Math.max(0, Math.min(wait, releaseAt - now())));
  }

  private finished(key: string, uid: string): void {
    const last = this.events.last.get(uid);
    this.end(key, {
      key,
      outcome: 'finished',
      detail: last ? `finalizer released by the cleanup (${last})` : 'finalizer released by the cleanup',
    });
  }

  /** Gone, replaced by another cluster of that name, or without our finalizer: the cache first, the API to confirm. */
  private async released(key: string, uid: string): Promise<boolean> {
    const cached = this.clusters.get(key);
    if (cached && cached.metadata.uid === uid && hasFinalizer(cached.metadata, GCS_FT_REDIS_CLEANUP_FINALIZER)) return false;
    const { namespace, name } = splitKey(key);
    const fresh = await this.kube.getOrUndefined({ ...RAYCLUSTERS, namespace, name }, { signal: this.o.signal });
    return !fresh || fresh.metadata.uid !== uid || !hasFinalizer(fresh.metadata, GCS_FT_REDIS_CLEANUP_FINALIZER);
  }

  private async releaseAtDeadline(key: string, uid: string): Promise<void> {
    const { namespace, name } = splitKey(key);
    const fresh = await this.kube.getOrUndefined({ ...RAYCLUSTERS, namespace, name }, { signal: this.o.signal });
    if (!fresh || fresh.metadata.uid !== uid || !hasFinalizer(fresh.metadata, GCS_FT_REDIS_CLEANUP_FINALIZER))
      return this.finished(key, uid);
    const r = await this.finalizers.patch(
      { ...RAYCLUSTERS, namespace, name },
      fresh,
      'remove',
      GCS_FT_REDIS_CLEANUP_FINALIZER,
      this.o.signal,
    );
    if (r.result === 'conflict') throw new Error('finalizers changed while removing ours at the deadline; re-reading');
    if (r.result === 'patched') {
      const e = deadlineReleaseEvent(fresh, Math.round(this.o.timeoutMs / 1000));
      this.events.event(fresh, e.type, e.reason, e.message);
      return this.end(key, { key, outcome: 'released-at-deadline', detail: `its cleanup had not ended: ${what(fresh)} may remain` });
    }
    return this.finished(key, uid);
  }

  async stop(): Promise<void> {
    for (const key of [...this.pending]) this.end(key, { key, outcome: 'stuck', detail: 'stopped before its cleanup ended' });
    this.queue.shutdown();
    await this.workers;
    await this.informers.stop();
  }
}
