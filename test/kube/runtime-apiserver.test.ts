// The runtime pieces against the REAL kube-apiserver: the REST client, informers, leader election on a
// coordination.k8s.io/v1 Lease, the Events recorder, the health server.
import t from 'tap';
import { metricValue } from '../helpers/harness.ts';
import { InformerFactory } from '../../kube/informer.ts';
import {
  isAlreadyExists,
  isConflict,
  isNamespaceTerminating,
  isNotFound,
  isPatchTestFailed,
  JSON_PATCH,
  KubeClient,
} from '../../kube/client.ts';
import { LeaderElector, microTime } from '../../kube/leader.ts';
import { KubeEventRecorder } from '../../kube/events.ts';
import { Manager } from '../../kube/manager.ts';
import { buildHealthServer, close, listen } from '../../kube/health-server.ts';
import { createLogger } from '../../kube/logger.ts';
import { createMetricsRegistry } from '../../kube/metrics.ts';
import { testNamespace } from '../helpers/control-plane.ts';
import { until } from '../helpers/until.ts';
import { CONFIGMAPS, EVENTS, LEASES, NAMESPACES } from '../../kube/resources.ts';

const quiet = createLogger('test', { level: 'silent' });

t.test('watch stream: events in order, a refused watch as KubeApiError, the inactivity timeout, abort', async (tt) => {
  const ns = await testNamespace(tt);
  const kube = new KubeClient(ns.kubeConfig);
  tt.teardown(() => kube.close());
  const cm = CONFIGMAPS.at(ns.name);
  const { resourceVersion } = await kube.list(cm);
  const events: string[] = [];
  let done: Error | null | undefined;
  const handle = await kube.watch(
    cm,
    { resourceVersion },
    (type, obj) => events.push(`${type} ${obj.metadata.name}`),
    (err) => (done = err),
  );
  await kube.create(cm, { metadata: { name: 'w1' }, data: { a: '1' } });
  await kube.patch({ ...cm, name: 'w1' }, { data: { a: '2' } }, 'application/merge-patch+json');
  await kube.delete({ ...cm, name: 'w1' });
  await until(() => events.length >= 3, 'three events');
  tt.same(events, ['ADDED w1', 'MODIFIED w1', 'DELETED w1']);
  handle.abort();
  await kube.create(cm, { metadata: { name: 'after-abort' } });
  // A witness watch from the same resourceVersion (its own client: the count below is this one's):
  // once it has the new ConfigMap, the API server has sent it to every watch still open.
  const witnessKube = new KubeClient(ns.kubeConfig);
  tt.teardown(() => witnessKube.close());
  const witnessed: string[] = [];
  const witness = await witnessKube.watch(
    cm,
    { resourceVersion },
    (type, obj) => witnessed.push(`${type} ${obj.metadata.name}`),
    () => {},
  );
  await until(() => witnessed.includes('ADDED after-abort'), 'the witness watch to see the ConfigMap created after abort()');
  witness.abort();
  tt.same(
    witnessed,
    ['ADDED w1', 'MODIFIED w1', 'DELETED w1', 'ADDED after-abort'],
    'the witness saw everything from the same resourceVersion',
  );
  tt.equal(done, undefined, 'abort() ends the stream without calling onDone');
  tt.notOk(events.includes('ADDED after-abort'), 'and delivers nothing more');
  tt.same(events, ['ADDED w1', 'MODIFIED w1', 'DELETED w1'], 'the aborted watch has only what came before abort()');

  let refused: unknown;
  await kube.watch(
    { group: 'example.com', version: 'v1', plural: 'nothings', namespace: ns.name },
    {},
    () => {},
    (err) => (refused = err),
  );
  await until(() => refused, 'the refused watch to end');
  tt.equal((refused as { statusCode?: number }).statusCode, 404, 'a non-200 answer ends the watch with its status code');
  tt.match((refused as Error).message, /^WATCH \/apis\/example.com/);

  let quiet: Error | null | undefined;
  const started = Date.now();
  await kube.watch(
    cm,
    { resourceVersion: (await kube.list(cm)).resourceVersion },
    () => {},
    (err) => (quiet = err),
    400,
  );
  await until(() => quiet, 'the inactivity timeout');
  tt.equal(quiet?.name, 'TimeoutError', 'nothing for inactivityMs: TimeoutError (the informer re-watches)');
  tt.ok(Date.now() - started >= 400, 'not before inactivityMs');
  tt.same(kube.requestCount('WATCH', 200), 2, 'watches are counted by verb WATCH');
});

t.test('REST client: CRUD, typed errors, JSON patch test failure, namespace terminating', async (tt) => {
  const ns = await testNamespace(tt);
  const kube = new KubeClient(ns.kubeConfig);
  tt.teardown(() => kube.close());
  const cm = { ...CONFIGMAPS, namespace: ns.name };
  await kube.create(cm, { metadata: { name: 'a' }, data: { k: 'v' } });
  await kube.create(cm, { metadata: { name: 'a' } }).then(
    () => tt.fail('duplicate create must fail'),
    (err) => tt.ok(isAlreadyExists(err), 'AlreadyExists'),
  );
  tt.equal(await kube.getOrUndefined({ ...cm, name: 'missing' }), undefined);
  await kube
    .patch(
      { ...cm, name: 'a' },
      [
        { op: 'test', path: '/data/k', value: 'other' },
        { op: 'replace', path: '/data/k', value: 'w' },
      ],
      JSON_PATCH,
    )
    .then(
      () => tt.fail('a failed test op must fail the patch'),
      (err) => tt.ok(isPatchTestFailed(err), `test op failure is recognised: ${(err as Error).message}`),
    );
  const patched = await kube.patch(
    { ...cm, name: 'a' },
    [
      { op: 'test', path: '/data/k', value: 'v' },
      { op: 'replace', path: '/data/k', value: 'w' },
    ],
    JSON_PATCH,
  );
  tt.equal(patched.data!.k, 'w');
  for (let i = 0; i < 7; i++) await kube.create(cm, { metadata: { name: `page-${i}` } });
  const listed = await kube.list(cm, { limit: 3 });
  tt.equal(listed.items.length, 8, 'pagination follows continue tokens');
  tt.ok(listed.resourceVersion);
  tt.equal(await kube.delete({ ...cm, name: 'a' }), true);
  tt.equal(await kube.delete({ ...cm, name: 'a' }), false, '404 on delete is fine');
  await kube.get({ ...cm, name: 'a' }).then(
    () => tt.fail(),
    (err) => tt.ok(isNotFound(err)),
  );
  await kube.delete({ ...NAMESPACES, name: ns.name });
  await kube.create(cm, { metadata: { name: 'late' } }).then(
    () => tt.fail('no new objects in a terminating namespace'),
    (err) => tt.ok(isNamespaceTerminating(err), 'NamespaceTerminating recognised'),
  );
});

t.test('informer against the API server: events, selectors, and a 410 relist', async (tt) => {
  const ns = await testNamespace(tt);
  const kube = new KubeClient(ns.kubeConfig);
  const factory = new InformerFactory(kube, { namespace: ns.name, timings: { backoff: { baseMs: 50, maxMs: 200 } } });
  tt.teardown(async () => {
    await factory.stop();
    kube.close();
  });
  const cm = { ...CONFIGMAPS, namespace: ns.name };
  await kube.create(cm, { metadata: { name: 'before', labels: { pick: 'yes' } } });
  await kube.create(cm, { metadata: { name: 'other', labels: { pick: 'no' } } });
  const inf = factory.get({ ...CONFIGMAPS, labelSelector: 'pick=yes' });
  tt.equal(factory.get({ ...CONFIGMAPS, labelSelector: 'pick=yes' }), inf, 'shared');
  const seen: string[] = [];
  inf.on((type, obj) => seen.push(`${type}:${obj.metadata?.name}`));
  factory.start();
  tt.equal(await factory.waitForSync(), true);
  tt.same(inf.keys(), [`${ns.name}/before`]);
  await kube.create(cm, { metadata: { name: 'after', labels: { pick: 'yes' } } });
  await until(() => inf.get(`${ns.name}/after`), 'watched add');
  await kube.delete({ ...cm, name: 'before' });
  await until(() => !inf.get(`${ns.name}/before`), 'watched delete');
  tt.same(seen, ['add:before', 'add:after', 'delete:before']);
  tt.equal(inf.get(`${ns.name}/after`)?.metadata?.managedFields, undefined, 'managedFields stripped');
  // Force a watch from an expired resourceVersion: the server answers 410 and the informer relists.
  (inf as unknown as { resourceVersion: string }).resourceVersion = '1';
  inf.relist();
  await until(() => inf.stats.relists >= 2, 'relist');
  tt.equal(inf.healthy(1000), true);
});

t.test('leader election: one leader, takeover after it dies, prompt takeover after release', async (tt) => {
  const ns = await testNamespace(tt);
  const kubes = [new KubeClient(ns.kubeConfig), new KubeClient(ns.kubeConfig), new KubeClient(ns.kubeConfig)];
  tt.teardown(() => kubes.forEach((k) => k.close()));
  const timing = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };
  const make = (i: number) =>
    new LeaderElector({ kube: kubes[i]!, namespace: ns.name, name: 'lock', identity: `r${i}`, logger: quiet, ...timing });
  const leading = new Set<string>();
  const stopped: string[] = [];
  const run = (e: LeaderElector) => {
    const ctl = new AbortController();
    const done = e.run(ctl.signal, {
      onStartedLeading: () => leading.add(e.identity),
      onStoppedLeading: (why) => {
        leading.delete(e.identity);
        stopped.push(`${e.identity}:${why}`);
      },
    });
    return { ctl, done };
  };
  const leaseRef = { ...LEASES, namespace: ns.name, name: 'lock' };
  const renewTime = async () => (await kubes[2]!.get(leaseRef)).spec!.renewTime;
  /** Resolves once the holder has renewed the Lease `times` more times (its renewTime moved on). */
  const renewals = async (times: number) => {
    let last = await renewTime();
    for (let i = 0; i < times; i++) {
      await until(
        async () => {
          const now = await renewTime();
          if (now === last) return false;
          last = now;
          return true;
        },
        `renewal ${i + 1} of ${times}`,
      );
    }
  };
  const a = make(0);
  const b = make(1);
  const ra = run(a);
  await until(() => leading.has('r0'), 'r0 leads');
  const rb = run(b);
  // The control: r1 has read the Lease held by r0, and r0 renewed it twice since (r1 retried meanwhile).
  await until(() => b.observedLeader === 'r0', 'r1 sees r0 holding the Lease');
  await renewals(2);
  tt.same([...leading], ['r0'], 'only one leader while it renews');
  tt.equal(b.observedLeader, 'r0');
  const lease = await kubes[2]!.get({
    ...LEASES,
    namespace: ns.name,
    name: 'lock',
  });
  tt.equal(lease.spec!.holderIdentity, 'r0');
  tt.equal(lease.spec!.leaseDurationSeconds, 3);

  // r0 "dies": it stops renewing without releasing (simulated by cutting its loop and its connection).
  ra.ctl.abort();
  await ra.done;
  leading.delete('r0');
  const died = Date.now();
  // Generous bound (2 cores, shared CI): the figure itself is reported, not asserted.
  await until(() => leading.has('r1'), 'r1 takes over', 20_000);
  tt.comment(`takeover ${Date.now() - died} ms after the leader stopped renewing (lease duration ${timing.leaseDurationMs} ms)`);
  tt.equal(b.isLeader(), true);

  // r1 releases on shutdown; a third candidate takes over at its next retry, not after 3 s.
  const c = make(2);
  const rc = run(c);
  await until(() => c.observedLeader === 'r1', 'r2 sees r1 holding the Lease');
  await renewals(2);
  tt.notOk(leading.has('r2'), 'r2 waits while r1 holds the lease');
  rb.ctl.abort();
  await rb.done;
  tt.equal(await b.release(), true, `released (terms ended so far: ${stopped.join('; ') || 'none'})`);
  await until(() => leading.has('r2'), 'r2 takes over after the release', 5000);
  const after = await kubes[2]!.get({
    ...LEASES,
    namespace: ns.name,
    name: 'lock',
  });
  tt.equal(after.spec!.holderIdentity, 'r2');
  tt.ok(after.spec!.leaseTransitions! >= 2);
  rc.ctl.abort();
  await rc.done;
  await c.release();
});

t.test('release on shutdown: after a renew whose answer was lost, and never a lease taken since', async (tt) => {
  const ns = await testNamespace(tt);
  const kube = new KubeClient(ns.kubeConfig);
  const other = new KubeClient(ns.kubeConfig);
  tt.teardown(() => (kube.close(), other.close()));
  /** Leads on `name`, then stops its loop as the manager's shutdown does (the lease stays held). */
  const ledThenStopped = async (name: string) => {
    // client-go's default timing: the first attempt takes the free Lease, and no stall on a loaded machine
    // reaches the 10 s renew deadline before the loop is stopped.
    const e = new LeaderElector({ kube, namespace: ns.name, name, identity: 'me', logger: quiet });
    const ctl = new AbortController();
    let led = false;
    const done = e.run(ctl.signal, { onStartedLeading: () => (led = true), onStoppedLeading: () => {} });
    await until(() => led, `${name}: leads`);
    ctl.abort();
    await done;
    return e;
  };
  const ref = (name: string) => ({ ...LEASES, namespace: ns.name, name });
  const later = () => microTime(Date.now() + 50);

  // A renew that reached the API server while its answer was cut off by the shutdown: the Lease is
  // still ours, with a resourceVersion the elector never saw.
  const a = await ledThenStopped('renewed-behind');
  const seen = await other.get(ref('renewed-behind'));
  const renewed = await other.replace(ref('renewed-behind'), { ...seen, spec: { ...seen.spec, renewTime: later() } });
  tt.not(renewed.metadata.resourceVersion, seen.metadata.resourceVersion, 'the control: the Lease changed behind the elector');
  tt.equal(await a.release(), true, 'released despite the newer resourceVersion');
  const freed = await other.get(ref('renewed-behind'));
  tt.equal(freed.spec!.holderIdentity ?? '', '', 'no holder: a standby takes it at its next retry');
  tt.equal(freed.spec!.leaseDurationSeconds, 1);
  tt.equal(freed.spec!.leaseTransitions, renewed.spec!.leaseTransitions, 'transitions kept');
  tt.equal(await a.release(), false, 'a second release has nothing to give back');

  // The Lease was taken by another replica meanwhile: the release must not touch it.
  const b = await ledThenStopped('taken');
  const held = await other.get(ref('taken'));
  const taken = await other.replace(ref('taken'), {
    ...held,
    spec: { ...held.spec, holderIdentity: 'successor', renewTime: later(), leaseTransitions: held.spec!.leaseTransitions! + 1 },
  });
  tt.equal(await b.release(), false, 'not released');
  const after = await other.get(ref('taken'));
  tt.equal(after.spec!.holderIdentity, 'successor', 'the successor still holds it');
  tt.equal(after.metadata.resourceVersion, taken.metadata.resourceVersion, 'not written');

  // The Lease is gone (deleted by an admin): the release fails without creating one.
  const c = await ledThenStopped('deleted');
  await other.delete(ref('deleted'));
  tt.equal(await c.release(), false, 'not released');
  tt.equal(
    await other.get(ref('deleted')).then(
      () => 'found',
      (err) => (isNotFound(err) ? 'not found' : String(err)),
    ),
    'not found',
    'no Lease was created',
  );
});

t.test('a leader that cannot renew steps down (renew deadline)', async (tt) => {
  const ns = await testNamespace(tt);
  const kube = new KubeClient(ns.kubeConfig);
  tt.teardown(() => kube.close());
  const e = new LeaderElector({
    kube,
    namespace: ns.name,
    name: 'lock2',
    identity: 'solo',
    logger: quiet,
    leaseDurationMs: 3000,
    renewDeadlineMs: 1000,
    retryPeriodMs: 200,
  });
  let why = '';
  const ctl = new AbortController();
  let started = false;
  const done = e.run(ctl.signal, {
    onStartedLeading: () => (started = true),
    onStoppedLeading: (reason) => {
      why = reason;
      ctl.abort();
    },
  });
  await until(() => started, 'leading');
  // Someone else overwrites the lease (e.g. an admin, or a replica that saw it expire).
  const ref = { ...LEASES, namespace: ns.name, name: 'lock2' };
  // The leader renews every 200 ms: a read-then-replace can lose that race (409); read again and retry.
  for (;;) {
    const lease = await kube.get(ref);
    try {
      await kube.replace(ref, {
        ...lease,
        spec: { ...lease.spec, holderIdentity: 'intruder', renewTime: new Date().toISOString().replace('Z', '000Z') },
      });
      break;
    } catch (err) {
      if (!isConflict(err)) throw err;
    }
  }
  await done;
  tt.match(why, /taken by another replica|could not renew/);
  tt.equal(e.isLeader(), false);
});

t.test('events: written as core/v1 Events, repeats counted on one Event', async (tt) => {
  const ns = await testNamespace(tt);
  const kube = new KubeClient(ns.kubeConfig);
  tt.teardown(() => kube.close());
  const cm = await kube.create({ ...CONFIGMAPS, namespace: ns.name }, { metadata: { name: 'target' } });
  const rec = new KubeEventRecorder({ kube, component: 'raykeeper-test', instance: 'i1', logger: quiet });
  const obj = { ...cm, apiVersion: 'v1', kind: 'ConfigMap' };
  rec.event(obj, 'Warning', 'SomethingBroke', 'the same message');
  await rec.flush();
  rec.event(obj, 'Warning', 'SomethingBroke', 'the same message');
  rec.event(obj, 'Normal', 'Other', 'different');
  await rec.flush();
  const events = (
    await kube.list({
      ...EVENTS,
      namespace: ns.name,
    })
  ).items;
  const broke = events.filter((e) => e.reason === 'SomethingBroke');
  tt.equal(broke.length, 1, 'deduplicated');
  tt.equal(broke[0]!.count, 2);
  tt.equal(broke[0]!.type, 'Warning');
  tt.equal(broke[0]!.involvedObject.uid, cm.metadata.uid);
  tt.equal(broke[0]!.involvedObject.kind, 'ConfigMap');
  tt.equal(events.filter((e) => e.reason === 'Other').length, 1);
  tt.equal(rec.writeFailures, 0);
});

t.test('health server and manager readiness / liveness / metrics', async (tt) => {
  const ns = await testNamespace(tt);
  const metrics = createMetricsRegistry();
  const manager = new Manager({ kubeConfig: ns.kubeConfig, logger: quiet, metrics, watchNamespace: ns.name });
  const inf = manager.informers.get(CONFIGMAPS);
  const keys: string[] = [];
  manager.add({
    name: 'probe',
    reconciler: {
      reconcile: async (key) => {
        // One answered request through the controllers' client: timed in raykeeper_kube_request_duration_seconds.
        await manager.ctx.kube.get({ ...CONFIGMAPS, namespace: ns.name, name: key.split('/')[1]! });
        keys.push(key);
      },
    },
    watches: [{ informer: inf }],
  });
  const app = buildHealthServer({ live: () => manager.liveness(), ready: () => manager.readiness(), metrics });
  const port = await listen(app, 0, '127.0.0.1');
  tt.teardown(() => close(app));
  const get = async (path: string) => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`);
    return { statusCode: res.status, body: await res.text() };
  };
  tt.equal((await get('/readyz')).statusCode, 503, 'not ready before the caches sync');
  const ctl = new AbortController();
  const done = manager.run(ctl.signal);
  tt.teardown(async () => {
    ctl.abort();
    await done;
  });
  await until(async () => (await get('/readyz')).statusCode === 200, 'ready');
  tt.equal((await get('/healthz')).statusCode, 200);
  tt.equal((await get('/nothing')).statusCode, 404);
  await new KubeClient(ns.kubeConfig).create(CONFIGMAPS.at(ns.name), { metadata: { name: 'ping' } });
  await until(() => keys.includes(`${ns.name}/ping`), 'reconciled');
  const text = (await get('/metrics')).body;
  tt.match(text, /raykeeper_controller_reconcile_total\{controller="probe",result="success"\} \d+/);
  tt.match(text, /raykeeper_informer_last_event_age_seconds\{informer="configmaps.core@/);
  tt.match(text, /raykeeper_informer_reconnects\{/);
  tt.match(text, /raykeeper_leader 1/);
  tt.ok(
    (metricValue(text, 'raykeeper_kube_request_duration_seconds_count', 'verb="GET",resource="configmaps"') ?? 0) >= 1,
    'the reconciler’s GET timed, by verb and resource',
  );
  tt.match(text, /raykeeper_kube_request_duration_seconds_bucket\{le="0.005",verb="GET",resource="configmaps"\} \d+/);
  tt.notMatch(text, /raykeeper_kube_request_duration_seconds_count\{verb="WATCH"/, 'watches are not timed');
  ctl.abort();
  tt.equal(await done, 'stopped');
  tt.equal((await get('/readyz')).statusCode, 503, 'not ready while stopping');
});

t.test(
  'graceful stop (SIGTERM): an in-flight reconcile keeps its signal and may still write; one still running at the shutdown timeout is aborted',
  async (tt) => {
    const ns = await testNamespace(tt);
    const cm = { ...CONFIGMAPS, namespace: ns.name };
    const manager = new Manager({
      kubeConfig: ns.kubeConfig,
      logger: quiet,
      metrics: createMetricsRegistry(),
      watchNamespace: ns.name,
      shutdownTimeoutMs: 1500,
      leaderElection: {
        namespace: ns.name,
        name: 'graceful',
        identity: 'g1',
        leaseDurationMs: 15_000,
        renewDeadlineMs: 10_000,
        retryPeriodMs: 2_000,
      },
    });
    const started = new Set<string>();
    const abortedAt = new Map<string, number>();
    let finishFirst: () => void = () => {};
    const firstMayFinish = new Promise<void>((resolve) => (finishFirst = resolve));
    manager.add({
      name: 'slow',
      workers: 2,
      watches: [{ informer: manager.informers.get(CONFIGMAPS) }],
      reconciler: {
        reconcile: async (key, signal) => {
          const name = key.split('/')[1]!;
          if (name !== 'finishes' && name !== 'stuck') return;
          started.add(name);
          signal?.addEventListener('abort', () => abortedAt.set(name, Date.now()), { once: true });
          if (name === 'finishes') {
            await firstMayFinish;
            // A write after SIGTERM, through the fenced client: still allowed (the last renew's deadline lasts).
            await manager.ctx.kube.create(cm, { metadata: { name: 'written-after-sigterm' } });
            return;
          }
          await new Promise<void>((resolve) => signal?.addEventListener('abort', () => resolve(), { once: true }));
        },
      },
    });
    const ctl = new AbortController();
    const done = manager.run(ctl.signal);
    let finished = false;
    void done.then(() => (finished = true));
    await until(() => manager.isLeader(), 'leading');
    await ns.kube.create(cm, { metadata: { name: 'finishes' } });
    await ns.kube.create(cm, { metadata: { name: 'stuck' } });
    await until(() => started.has('finishes') && started.has('stuck'), 'both reconciles running');

    const sigtermAt = Date.now();
    ctl.abort();
    // The run cannot end while a reconcile is in flight: let the first one write and finish now.
    finishFirst();
    await until(
      async () => (await ns.kube.getOrUndefined({ ...cm, name: 'written-after-sigterm' })) !== undefined,
      'the in-flight reconcile wrote after SIGTERM',
    );
    tt.notOk(abortedAt.has('finishes'), 'the reconcile that finished in time was never aborted');
    tt.equal(await done, 'stopped');
    tt.ok(finished);
    tt.ok(abortedAt.has('stuck'), 'the one still running at the shutdown timeout was aborted');
    tt.ok(
      abortedAt.get('stuck')! - sigtermAt >= 1400,
      `aborted at the shutdown timeout, not at SIGTERM (${abortedAt.get('stuck')! - sigtermAt} ms)`,
    );
  },
);
