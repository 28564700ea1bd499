// Integration harness for the RayJob reconciler on the REAL kube-apiserver: a namespace of its own,
// the test job runner executing submitter Jobs as local processes, a fake Ray dashboard (or a real
// Ray head), and a driver that calls reconcile(key) the way the runtime's queue would (honouring
// requeueAfterMs, capped so tests stay fast). Tests play KubeRay's RayCluster controller by writing
// RayCluster status.state through /status (there is no kubelet to make a head ready).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLogger } from '../../../kube/logger.ts';
import { startJobRunner, type JobRunner } from '../../../localcluster/job-runner.ts';
import { rayJobSettings } from '../../../src/rayjob/config.ts';
import { shellQuote } from '../../../src/shell.ts';
import { storedState } from '../../../src/rayjob/machine/status.ts';
import type { MachineConfig } from '../../../src/rayjob/machine/vocabulary.ts';
import { RAYCLUSTERS, RAYJOBS, type RayCluster, type RayJob } from '../../../src/types.ts';
import { KubeEventRecorder } from '../../../kube/events.ts';
import { KubeClient } from '../../../kube/client.ts';
import { RayJobReconciler, type RayJobReconcilerDeps } from '../../../controller/rayjob/reconciler.ts';
import { testNamespace, type Teardownable, type TestNamespace } from '../../helpers/control-plane.ts';
import { startFakeDashboard, type FakeDashboard } from './fake-dashboard.ts';
import { sleep } from '../../../kube/backoff.ts';
import { EVENTS, JOBS } from '../../../kube/resources.ts';
import type { BatchJob } from '../../../kube/model.ts';

export const FAKE_RAY = join(dirname(fileURLToPath(import.meta.url)), 'fake-ray.mjs');
/** The submitter's `ray` command: our stand-in under the Node running the tests. */
export const FAKE_RAY_COMMAND = `${shellQuote(process.execPath)} ${shellQuote(FAKE_RAY)}`;

export interface HarnessOptions {
  /** Machine settings over test defaults (grace, status-check timeout, submitter-finished timeout: 10 s). */
  machine?: Partial<MachineConfig>;
  /** Dashboard URL for every cluster (default: the fake dashboard). */
  dashboardUrl?: string;
  /** The submitter's `ray` (default: the fake). */
  rayCommand?: string;
  /** Extra env for submitter processes. */
  submitterEnv?: Record<string, string>;
  /** Start no fake dashboard (a real Ray head plays it). */
  noFakeDashboard?: boolean;
}

export interface Harness {
  ns: TestNamespace;
  namespace: string;
  kube: KubeClient;
  dashboard: FakeDashboard;
  runner: JobRunner;
  reconciler: RayJobReconciler;
  /** Lines the fake `ray` appended (one per invocation). */
  rayCalls(): Promise<string[]>;
  /** A fresh reconciler sharing nothing but the API server (a second replica), optionally with its own clock, client or caches. */
  replica(options?: Partial<Pick<RayJobReconcilerDeps, 'now' | 'kube' | 'caches' | 'metrics'>>): RayJobReconciler;
  create(job: RayJob): Promise<RayJob>;
  get(name: string): Promise<RayJob | undefined>;
  patchSpec(name: string, spec: Record<string, unknown>): Promise<void>;
  cluster(name: string): Promise<RayCluster | undefined>;
  clusters(): Promise<RayCluster[]>;
  submitterJob(name: string): Promise<BatchJob | undefined>;
  /** Plays KubeRay's RayCluster controller: status.state = ready. */
  markReady(clusterName: string): Promise<void>;
  /**
   * Reconciles `name` until `until(job)` holds (the object may be gone: undefined), recording every
   * stored deployment status seen. `autoReady` marks the RayJob's cluster ready as soon as it exists.
   */
  drive(
    name: string,
    until: (job: RayJob | undefined) => boolean,
    options?: { timeoutMs?: number; autoReady?: boolean; maxSleepMs?: number },
  ): Promise<{ job: RayJob | undefined; states: string[] }>;
  /** The RayJob's Events; count is the Event's own (repeats within one recorder are folded into it). */
  events(name: string): Promise<Array<{ type: string; reason: string; message: string; count: number }>>;
}

export function headSpec(image = 'rayproject/ray:2.40.0') {
  return {
    rayStartParams: {},
    template: { spec: { containers: [{ name: 'ray-head', image }] } },
  };
}

/** A RayJob manifest with our defaults (shutdownAfterJobFinishes on, a tiny cluster spec). */
export function manifest(name: string, spec: Record<string, unknown> = {}, metadata: Record<string, unknown> = {}): RayJob {
  return {
    apiVersion: 'ray.io/v1',
    kind: 'RayJob',
    metadata: { name, ...metadata },
    spec: {
      entrypoint: 'true',
      shutdownAfterJobFinishes: true,
      rayClusterSpec: { headGroupSpec: headSpec(), workerGroupSpecs: [] },
      ...spec,
    },
  };
}

export async function rayJobHarness(t: Teardownable, options: HarnessOptions = {}): Promise<Harness> {
  const ns = await testNamespace(t);
  const namespace = ns.name;
  const kube = new KubeClient(ns.kubeConfig);
  t.teardown(() => kube.close());
  const logger = createLogger('rayjob-test', { level: process.env.LOG_LEVEL ?? 'warn' });
  let dashboard: FakeDashboard;
  if (options.noFakeDashboard) {
    dashboard = undefined as unknown as FakeDashboard;
  } else {
    dashboard = await startFakeDashboard();
    t.teardown(() => dashboard.close());
  }
  const dashboardUrl = options.dashboardUrl ?? dashboard.url;
  const dir = await mkdtemp(join(tmpdir(), 'raykeeper-rayjob-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const rayLog = join(dir, 'ray-calls.log');
  const runner = await startJobRunner({
    kubeConfig: ns.kubeConfig,
    namespaces: [namespace],
    logger,
    retryDelayMs: 200,
    killGraceMs: 500,
    baseEnv: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/tmp',
      NO_PROXY: '127.0.0.1,localhost',
      no_proxy: '127.0.0.1,localhost',
      FAKE_RAY_LOG: rayLog,
      ...(options.submitterEnv ?? {}),
    },
  });
  t.teardown(() => runner.stop());
  const settings = rayJobSettings(
    {
      'rayjob-dashboard-url-template': dashboardUrl,
      'rayjob-submitter-dashboard-url-template': dashboardUrl,
      'rayjob-submitter-ray-command': options.rayCommand ?? FAKE_RAY_COMMAND,
      'rayjob-dashboard-timeout': '2',
    },
    {},
    {
      gracePeriodSeconds: 10,
      statusCheckTimeoutSeconds: 10,
      submitterFinishedTimeoutSeconds: 10,
      requeueMs: 1000,
      ...(options.machine ?? {}),
    },
  );
  const recorders: KubeEventRecorder[] = [];
  const makeReconciler = (overrides: Partial<Pick<RayJobReconcilerDeps, 'now' | 'kube' | 'caches' | 'metrics'>> = {}) => {
    const events = new KubeEventRecorder({ kube, component: 'raykeeper-test', instance: 'test', logger });
    recorders.push(events);
    return new RayJobReconciler({ kube, events, logger, settings, ...overrides });
  };
  t.teardown(() => Promise.all(recorders.map((r) => r.flush())));
  const reconciler = makeReconciler();
  const ref = (name: string) => ({ ...RAYJOBS, namespace, name });

  const h: Harness = {
    ns,
    namespace,
    kube,
    dashboard,
    runner,
    reconciler,
    async rayCalls() {
      try {
        return (await readFile(rayLog, 'utf8')).split('\n').filter((l) => l !== '');
      } catch {
        return [];
      }
    },
    replica: (options) => makeReconciler(options),
    async create(job) {
      return kube.create({ ...RAYJOBS, namespace }, job);
    },
    get: (name) => kube.getOrUndefined(ref(name)),
    async patchSpec(name, spec) {
      await kube.patch(ref(name), { spec }, 'application/merge-patch+json');
    },
    cluster: (name) => kube.getOrUndefined({ ...RAYCLUSTERS, namespace, name }),
    async clusters() {
      return (await kube.list({ ...RAYCLUSTERS, namespace })).items;
    },
    submitterJob: (name) => kube.getOrUndefined({ ...JOBS, namespace, name }),
    async markReady(clusterName) {
      await kube.patch(
        { ...RAYCLUSTERS, namespace, name: clusterName, subresource: 'status' },
        { status: { state: 'ready' } },
        'application/merge-patch+json',
      );
    },
    async drive(name, until, opts = {}) {
      const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
      const states: string[] = [];
      let job = await h.get(name);
      const record = (j: RayJob | undefined) => {
        const s = j ? storedState(j) : '<deleted>';
        if (states[states.length - 1] !== s) states.push(s);
      };
      record(job);
      while (!until(job)) {
        if (Date.now() > deadline) {
          throw new Error(
            `RayJob ${namespace}/${name} did not reach the expected state; states seen: ${states.join(' -> ')}; status: ${JSON.stringify(job?.status)}`,
          );
        }
        let wait = 100;
        try {
          const result = await reconciler.reconcile(`${namespace}/${name}`);
          if (result && result.requeueAfterMs !== undefined) wait = Math.min(result.requeueAfterMs, opts.maxSleepMs ?? 250);
        } catch (err) {
          logger.warn({ err: String(err) }, 'reconcile failed; retrying');
          wait = 200;
        }
        job = await h.get(name);
        record(job);
        if (opts.autoReady && job?.status?.rayClusterName) {
          const c = await h.cluster(job.status.rayClusterName);
          if (c && c.status?.state !== 'ready' && !c.metadata.deletionTimestamp) await h.markReady(job.status.rayClusterName);
        }
        if (until(job)) break;
        await sleep(wait);
      }
      return { job, states };
    },
    async events(name) {
      await Promise.all(recorders.map((r) => r.flush()));
      const list = await kube.list({
        ...EVENTS,
        namespace,
      });
      return list.items
        .filter((e) => e.involvedObject.name === name && e.involvedObject.kind === 'RayJob')
        .map((e) => ({ type: e.type!, reason: e.reason!, message: e.message!, count: e.count ?? 1 }));
    },
  };
  return h;
}

export const inState =
  (...states: string[]) =>
  (job: RayJob | undefined) =>
    job !== undefined && states.includes(storedState(job));
