// The RayCronJob reconciler on the REAL kube-apiserver, driven by hand with a fake clock (ticks are minutes
// apart; the clock jumps): one RayJob a tick, owned by the RayCronJob, none twice across a restart or a
// lost status write, none while suspended, one catch-up run after downtime, Forbid / Replace, history
// limits; then the module inside the real controller runtime on the wall clock. No RayJob controller runs
// here: the tests play it by writing the children's status.jobDeploymentStatus through /status.
import t, { type Test } from 'tap';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { createLogger } from '../../kube/logger.ts';
import { createMetricsRegistry } from '../../kube/metrics.ts';
import { KubeClient, MERGE_PATCH } from '../../kube/client.ts';
import { EVENTS } from '../../kube/resources.ts';
import { parseSchedule } from '../../src/raycronjob/schedule.ts';
import { RAYCRONJOBS, RAYJOBS, type RayCronJob, type RayCronJobSpec, type RayJob } from '../../src/types.ts';
import { KubeEventRecorder } from '../../kube/events.ts';
import { RayCronJobReconciler } from '../../controller/raycronjob/reconciler.ts';
import { rayCronJobModule } from '../../controller/raycronjob/module.ts';
import { RECONCILER_MODULES } from '../../controller/reconcilers.ts';
import { startController } from '../../controller/main.ts';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { testNamespace } from '../helpers/control-plane.ts';
import { until } from '../helpers/until.ts';

const SCHEDULE = '*/10 * * * *';
const TEMPLATE = {
  entrypoint: 'python -c "print(1)"',
  shutdownAfterJobFinishes: true,
  rayClusterSpec: {
    headGroupSpec: { rayStartParams: {}, template: { spec: { containers: [{ name: 'ray-head', image: 'rayproject/ray:2.60.0' }] } } },
  },
};

async function cronHarness(t: Test) {
  const ns = await testNamespace(t);
  const namespace = ns.name;
  const kube = new KubeClient(ns.kubeConfig);
  t.teardown(() => kube.close());
  const logger = createLogger('raycronjob-test', { level: process.env.LOG_LEVEL ?? 'warn' });
  const clock = { at: 0 };
  const metrics = createMetricsRegistry();
  const recorders: KubeEventRecorder[] = [];
  /** A controller process: a reconciler sharing nothing with earlier ones but the API server and the clock. */
  const start = () => {
    const events = new KubeEventRecorder({ kube, component: 'raykeeper-test', instance: 'test', logger });
    recorders.push(events);
    return new RayCronJobReconciler({ kube, events, logger, metrics, now: () => clock.at });
  };
  t.teardown(() => Promise.all(recorders.map((r) => r.flush())));
  let reconciler = start();
  const ref = (name: string) => ({ ...RAYCRONJOBS, namespace, name });
  const h = {
    namespace,
    kubeConfig: ns.kubeConfig,
    kube,
    clock,
    metrics,
    restart() {
      reconciler = start();
    },
    /** Another replica (its own client state and recorder), on the same clock. */
    replica: start,
    reconcile: (name: string) => reconciler.reconcile(`${namespace}/${name}`),
    async create(name: string, spec: Partial<RayCronJobSpec> = {}): Promise<{ cronJob: RayCronJob; ticks: number[] }> {
      const cronJob = await kube.create(
        { ...RAYCRONJOBS, namespace },
        { apiVersion: 'ray.io/v1', kind: 'RayCronJob', metadata: { name }, spec: { schedule: SCHEDULE, jobTemplate: TEMPLATE, ...spec } },
      );
      // The ticks after its creation, on the schedule's own clock.
      const parsed = parseSchedule(spec.schedule ?? SCHEDULE, spec.timeZone);
      const ticks: number[] = [];
      if (!parsed.ok) return { cronJob, ticks };
      let cursor = Date.parse(cronJob.metadata.creationTimestamp ?? '');
      for (let i = 0; i < 8; i++) ticks.push((cursor = parsed.schedule.next(cursor, cursor) ?? 0));
      return { cronJob, ticks };
    },
    get: (name: string) => kube.get(ref(name)),
    patchSpec: (name: string, spec: Record<string, unknown>) => kube.patch(ref(name), { spec }, MERGE_PATCH),
    setStatus: (name: string, status: Record<string, unknown>) => kube.patch(ref(name), { status }, MERGE_PATCH),
    async children(cronJob: string): Promise<RayJob[]> {
      const list = await kube.list({ ...RAYJOBS, namespace }, { labelSelector: `ray.io/cronjob-name=${cronJob}` });
      return list.items.sort((a, b) => (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''));
    },
    async childNames(cronJob: string): Promise<string[]> {
      return (await h.children(cronJob)).map((c) => c.metadata.name ?? '');
    },
    /** Plays the RayJob controller: the child's deployment status. */
    finish: (child: string, state: 'Complete' | 'Failed' | 'Running') =>
      kube.patch({ ...RAYJOBS, namespace, name: child, subresource: 'status' }, { status: { jobDeploymentStatus: state } }, MERGE_PATCH),
    async events(name: string): Promise<Array<{ type: string; reason: string; message: string }>> {
      await Promise.all(recorders.map((r) => r.flush()));
      const list = await kube.list({
        ...EVENTS,
        namespace,
      });
      return list.items
        .filter((e) => e.involvedObject.name === name && e.involvedObject.kind === 'RayCronJob')
        .map((e) => ({ type: e.type!, reason: e.reason!, message: e.message! }));
    },
  };
  return h;
}

const child = (cron: string, tick: number) => `${cron}-${Math.floor(tick / 60_000)}`;
const rfc3339 = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

t.test('one RayJob a tick, owned by the RayCronJob; none twice across a restart or a lost status write', async (t) => {
  const h = await cronHarness(t);
  const { cronJob, ticks } = await h.create('hourly');
  const [t1 = 0, t2 = 0] = ticks;
  h.clock.at = t1 - 30_000;
  const early = await h.reconcile('hourly');
  t.same(await h.childNames('hourly'), [], 'nothing before the first tick');
  t.equal(early?.requeueAfterMs, 30_100, 'back 100 ms after the tick');

  h.clock.at = t1 + 2_000;
  const result = await h.reconcile('hourly');
  t.equal(result?.requeueAfterMs, t2 - h.clock.at + 100, 'then back after the next tick');
  const [first, ...others] = await h.children('hourly');
  t.same(others, [], 'exactly one RayJob');
  t.equal(first?.metadata.name, child('hourly', t1), 'KubeRay v1.7 name: <cronjob>-<unix minutes>');
  t.same(first?.metadata.labels, { 'ray.io/cronjob-name': 'hourly' });
  t.same(first?.metadata.annotations, { 'ray.io/cronjob-scheduled-timestamp': rfc3339(t1) });
  t.same(first?.metadata.ownerReferences, [
    { apiVersion: 'ray.io/v1', kind: 'RayCronJob', name: 'hourly', uid: cronJob.metadata.uid, controller: true, blockOwnerDeletion: true },
  ]);
  t.same(first?.spec, TEMPLATE, 'the template as its spec');
  t.equal((await h.get('hourly')).status?.lastScheduleTime, rfc3339(t1), 'status.lastScheduleTime: the tick');

  await h.reconcile('hourly');
  h.restart();
  await h.reconcile('hourly');
  t.same(await h.childNames('hourly'), [child('hourly', t1)], 'again, and after a restart: still one');

  // kuberay #4849: the status write was lost (or a stale copy is read): the tick is due again, its
  // RayJob exists, nothing new is created and the status is put right.
  await h.setStatus('hourly', { lastScheduleTime: null });
  h.restart();
  await h.reconcile('hourly');
  t.same(await h.childNames('hourly'), [child('hourly', t1)], 'a repeated tick creates nothing');
  t.equal((await h.get('hourly')).status?.lastScheduleTime, rfc3339(t1), 'recorded again');

  h.clock.at = t2 + 500;
  await h.reconcile('hourly');
  t.same(await h.childNames('hourly'), [child('hourly', t1), child('hourly', t2)].sort(), 'the next tick: the second RayJob');
  const created = (await h.events('hourly')).filter((e) => e.reason === 'CreatedRayJob');
  t.same(
    created.map((e) => e.message).sort(),
    [`Created RayJob ${h.namespace}/${child('hourly', t1)}`, `Created RayJob ${h.namespace}/${child('hourly', t2)}`],
    'one Normal CreatedRayJob a RayJob',
  );
  t.match(await h.metrics.getSingleMetricAsString('raykeeper_raycronjob_rayjobs_created_total'), /outcome="created"\} 2/);
});

t.test('two replicas deciding the same tick at once (a split brain, a stale cache): one RayJob, both succeed', async (t) => {
  const h = await cronHarness(t);
  const { ticks } = await h.create('race');
  const [t1 = 0] = ticks;
  h.clock.at = t1 + 1_000;
  const replicas = [h.replica(), h.replica(), h.replica()];
  const results = await Promise.allSettled(replicas.map((r) => r.reconcile(`${h.namespace}/race`)));
  t.same(
    results.map((r) => r.status),
    ['fulfilled', 'fulfilled', 'fulfilled'],
    'AlreadyExists of our own RayJob is success; a conflicting status write is decided again',
  );
  t.same(await h.childNames('race'), [child('race', t1)], 'exactly one RayJob for the tick');
  t.equal((await h.get('race')).status?.lastScheduleTime, rfc3339(t1));
  t.match(await h.metrics.getSingleMetricAsString('raykeeper_raycronjob_rayjobs_created_total'), /outcome="created"\} 1/);
});

t.test('a controller down for three ticks starts ONE catch-up run, for the latest tick', async (t) => {
  const h = await cronHarness(t);
  const { ticks } = await h.create('catchup');
  const [t1 = 0, , , t4 = 0, t5 = 0] = ticks;
  h.clock.at = t1 + 1_000;
  await h.reconcile('catchup');
  // Down from just after t1 until after t4: t2, t3 and t4 were missed.
  h.restart();
  h.clock.at = t4 + 4 * 60_000;
  await h.reconcile('catchup');
  await h.reconcile('catchup');
  t.same(await h.childNames('catchup'), [child('catchup', t1), child('catchup', t4)].sort(), 't2 and t3 never run');
  t.equal((await h.get('catchup')).status?.lastScheduleTime, rfc3339(t4));
  h.clock.at = t5 + 1_000;
  await h.reconcile('catchup');
  t.equal((await h.childNames('catchup')).length, 3, 'then on schedule again');
});

t.test('startingDeadlineSeconds: a tick missed by more is skipped, with a MissSchedule Warning', async (t) => {
  const h = await cronHarness(t);
  const { ticks } = await h.create('deadline', { startingDeadlineSeconds: 60 });
  const [t1 = 0, t2 = 0] = ticks;
  h.clock.at = t1 + 61_000;
  await h.reconcile('deadline');
  t.same(await h.childNames('deadline'), [], 'too late for t1');
  t.match(await h.events('deadline'), [
    { type: 'Warning', reason: 'MissSchedule', message: `Missed scheduled time to start a RayJob: ${rfc3339(t1)}` },
  ]);
  h.clock.at = t2 + 59_000;
  await h.reconcile('deadline');
  t.same(await h.childNames('deadline'), [child('deadline', t2)], 'within the deadline for t2');
});

t.test('suspend: no RayJob for any tick while suspended; on resume one, for the latest tick', async (t) => {
  const h = await cronHarness(t);
  const { ticks } = await h.create('paused', { suspend: true });
  const [, , t3 = 0, t4 = 0] = ticks;
  for (const at of ticks.slice(0, 3)) {
    h.clock.at = at + 1_000;
    t.same(await h.reconcile('paused'), {}, 'no timed requeue while suspended');
  }
  t.same(await h.childNames('paused'), [], 'nothing across three ticks');
  t.match(await h.events('paused'), [
    { type: 'Normal', reason: 'SuspendedRayCronJob', message: 'RayCronJob suspended, no new RayJobs will be created' },
  ]);
  t.equal((await h.get('paused')).status?.lastScheduleTime, undefined);
  await h.patchSpec('paused', { suspend: false });
  h.clock.at = t3 + 5_000;
  await h.reconcile('paused');
  t.same(await h.childNames('paused'), [child('paused', t3)], 'resumed: the latest missed tick runs, once');
  h.clock.at = t4 + 1_000;
  await h.patchSpec('paused', { suspend: true });
  await h.reconcile('paused');
  t.equal((await h.childNames('paused')).length, 1, 'suspended again: t4 does not run');
});

t.test('Forbid: no new RayJob while one runs; the tick runs when it finishes', async (t) => {
  const h = await cronHarness(t);
  const { ticks } = await h.create('forbid', { concurrencyPolicy: 'Forbid' });
  const [t1 = 0, t2 = 0] = ticks;
  h.clock.at = t1 + 1_000;
  await h.reconcile('forbid');
  await h.finish(child('forbid', t1), 'Running');
  h.clock.at = t2 + 1_000;
  await h.reconcile('forbid');
  t.same(await h.childNames('forbid'), [child('forbid', t1)], 'still running: t2 waits');
  t.ok(
    (await h.events('forbid')).some((e) => e.reason === 'JobAlreadyActive'),
    'Normal JobAlreadyActive',
  );
  await h.finish(child('forbid', t1), 'Complete');
  h.clock.at = t2 + 90_000;
  await h.reconcile('forbid');
  t.same(await h.childNames('forbid'), [child('forbid', t1), child('forbid', t2)].sort(), 'finished: t2 runs, late');
});

t.test('Replace: the running RayJob is deleted, then the new one created, in one reconcile', async (t) => {
  const h = await cronHarness(t);
  const { ticks } = await h.create('replace', { concurrencyPolicy: 'Replace' });
  const [t1 = 0, t2 = 0, t3 = 0] = ticks;
  h.clock.at = t1 + 1_000;
  await h.reconcile('replace');
  h.clock.at = t2 + 1_000;
  await h.reconcile('replace');
  t.same(await h.childNames('replace'), [child('replace', t2)], 't1 replaced by t2');
  const events = await h.events('replace');
  t.ok(
    events.some(
      (e) =>
        e.reason === 'DeletedRayJob' && e.message === `Deleted RayJob ${h.namespace}/${child('replace', t1)} (concurrencyPolicy Replace)`,
    ),
  );
  // A finished RayJob is not replaced: it stays (history).
  await h.finish(child('replace', t2), 'Complete');
  h.clock.at = t3 + 1_000;
  await h.reconcile('replace');
  t.same(await h.childNames('replace'), [child('replace', t2), child('replace', t3)].sort());
});

t.test('history limits: the oldest finished RayJobs beyond the limits are deleted, running ones never', async (t) => {
  const h = await cronHarness(t);
  const { ticks } = await h.create('history', { successfulJobsHistoryLimit: 2, failedJobsHistoryLimit: 1 });
  const outcomes: Array<'Complete' | 'Failed' | 'Running'> = ['Complete', 'Failed', 'Complete', 'Failed', 'Complete', 'Running'];
  for (const [i, state] of outcomes.entries()) {
    h.clock.at = (ticks[i] ?? 0) + 1_000;
    await h.reconcile('history');
    await h.finish(child('history', ticks[i] ?? 0), state);
  }
  await h.reconcile('history');
  const kept = [ticks[2], ticks[3], ticks[4], ticks[5]].map((tick) => child('history', tick ?? 0)).sort();
  t.same(await h.childNames('history'), kept, 'two Complete (newest), one Failed (newest), the running one');
  t.match(await h.metrics.getSingleMetricAsString('raykeeper_raycronjob_rayjobs_deleted_total'), /reason="history"\} 2/);
});

t.test('an invalid schedule: nothing created, Warning InvalidRayCronJobSpec', async (t) => {
  const h = await cronHarness(t);
  const { cronJob } = await h.create('invalid', { schedule: '0 0 L * *' });
  h.clock.at = Date.parse(cronJob.metadata.creationTimestamp ?? '') + 40 * 86_400_000;
  t.same(await h.reconcile('invalid'), {});
  t.same(await h.childNames('invalid'), []);
  t.match(await h.events('invalid'), [{ type: 'Warning', reason: 'InvalidRayCronJobSpec', message: /day of month: "L" is not a number/ }]);
});

t.test('registered in controller/reconcilers.ts; in the real runtime a RayJob appears at the first tick (@every 20s)', async (t) => {
  t.ok(RECONCILER_MODULES.includes(rayCronJobModule), 'listed');
  const help = execFileSync(process.execPath, [join(REPO_ROOT, 'bin', 'raykeeper.js'), 'controller', '--help'], { encoding: 'utf8' });
  t.match(help, 'raycronjob');
  const h = await cronHarness(t);
  const logger = createLogger('raycronjob-controller-test', { level: process.env.LOG_LEVEL ?? 'warn' });
  const metrics = createMetricsRegistry();
  const controller = await startController({
    kubeConfig: h.kubeConfig,
    watchNamespace: h.namespace,
    modules: [rayCronJobModule],
    env: {},
    healthPort: 0,
    healthHost: '127.0.0.1',
    logger,
    metrics,
  });
  t.teardown(() => controller.stop().catch(() => undefined));
  const { ticks } = await h.create('every-20s', { schedule: '@every 20s' });
  const first = ticks[0] ?? 0;
  await until(async () => (await h.childNames('every-20s')).length > 0, 'the first RayJob', Math.max(0, first - Date.now()) + 10_000, 200);
  t.same(await h.childNames('every-20s'), [child('every-20s', first)], 'at the tick, by requeue-after alone');
  t.equal((await h.get('every-20s')).status?.lastScheduleTime, rfc3339(first));
  const text = await (await fetch(`http://127.0.0.1:${controller.port}/metrics`)).text();
  t.match(text, /raykeeper_raycronjob_rayjobs_created_total\{outcome="created"\} 1/);
  // A child's change reaches its owner through the RayJob watch: the history limit applies at once
  // (suspended, so no new tick interferes).
  await h.patchSpec('every-20s', { successfulJobsHistoryLimit: 0, suspend: true });
  await h.finish(child('every-20s', first), 'Complete');
  await until(async () => (await h.childNames('every-20s')).length === 0, 'the finished RayJob deleted', 20_000, 200);
  t.same(await h.childNames('every-20s'), [], 'deleted on the child event');
  t.equal(await controller.stop(), 'stopped');
});
