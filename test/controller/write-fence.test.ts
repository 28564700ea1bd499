// The write fence against the REAL kube-apiserver: a fenced KubeClient sends no write while its guard
// says no (the object stays as it was on the server), reads still work, and the guard is asked as the
// request meets its socket, not only when it is called; the leader elector's `mayWrite()` by clock;
// the manager hands its reconcilers the fenced client only with leader election.
import t, { type Test } from 'tap';
import { isNotLeader, KubeClient, MERGE_PATCH, NotLeaderError } from '../../src/kube.ts';
import { LeaderElector } from '../../controller/runtime/leader.ts';
import { Manager } from '../../controller/runtime/manager.ts';
import { RetryNoLaterError } from '../../controller/runtime/reconciler.ts';
import { createLogger } from '../../src/logger.ts';
import { createMetricsRegistry } from '../../src/metrics.ts';
import { testNamespace } from '../helpers/control-plane.ts';
import { CONFIGMAPS } from '../../src/kube-resources.ts';

const quiet = createLogger('test', { level: 'silent' });

interface ConfigMap {
  metadata: { name: string; resourceVersion: string; managedFields?: unknown[] };
  data?: Record<string, string>;
}

/** Rejects with a NotLeaderError for `method`, else fails the test. */
async function refused(tt: Test, p: Promise<unknown>, method: string, what: string): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  tt.ok(err instanceof NotLeaderError, `${what}: NotLeaderError (got ${String(err)})`);
  tt.equal((err as NotLeaderError).method, method, `${what}: names the verb`);
}

t.test('fenced client: no write leaves while the guard says no, reads work, the unfenced client on the same pool still writes', async (tt) => {
  const ns = await testNamespace(tt);
  const base = new KubeClient(ns.kubeConfig);
  tt.teardown(() => base.close());
  let open = true;
  const fenced = base.fenced(() => open);
  const cm = { ...CONFIGMAPS, namespace: ns.name };
  await fenced.create(cm, { metadata: { name: 'held' }, data: { k: 'v' } });
  const before = await ns.kube.get<ConfigMap>({ ...cm, name: 'held' });

  open = false;
  tt.equal(fenced.mayWrite(), false);
  tt.equal(base.mayWrite(), true, 'the client it was made from has no guard');
  await refused(tt, fenced.patch({ ...cm, name: 'held' }, { data: { k: 'patched' } }, MERGE_PATCH), 'PATCH', 'patch');
  await refused(tt, fenced.replace({ ...cm, name: 'held' }, { ...before, data: { k: 'replaced' } }), 'PUT', 'replace');
  await refused(tt, fenced.create(cm, { metadata: { name: 'new' } }), 'POST', 'create');
  await refused(tt, fenced.delete({ ...cm, name: 'held' }), 'DELETE', 'delete');
  tt.same((await fenced.get<ConfigMap>({ ...cm, name: 'held' })).data, { k: 'v' }, 'a read through the fenced client works');
  tt.ok((await fenced.list<ConfigMap>(cm)).items.some((c) => c.metadata.name === 'held'), 'a list too');

  const after = await ns.kube.get<ConfigMap>({ ...cm, name: 'held' });
  tt.equal(after.metadata.resourceVersion, before.metadata.resourceVersion, 'the object is unchanged on the server');
  tt.same(after.data, { k: 'v' });
  tt.same(after.metadata.managedFields, before.metadata.managedFields, 'no field manager touched it');
  tt.equal(await ns.kube.getOrUndefined({ ...cm, name: 'new' }), undefined, 'the refused create made nothing');
  tt.same(Object.fromEntries(base.fencedCounts), { PATCH: 1, PUT: 1, POST: 1, DELETE: 1 }, 'refusals counted by verb (shared with the base client)');
  tt.same([...base.requestCounts.keys()].filter((k) => !k.startsWith('GET')), ['POST 201'], 'no refused write reached the API server: only the first create');

  await base.patch({ ...cm, name: 'held' }, { data: { k: 'by-base' } }, MERGE_PATCH);
  tt.same((await ns.kube.get<ConfigMap>({ ...cm, name: 'held' })).data, { k: 'by-base' }, 'the unfenced client (the Lease client) on the same connections still writes');
  open = true;
  await fenced.patch({ ...cm, name: 'held' }, { data: { k: 'reopened' } }, MERGE_PATCH);
  tt.same((await ns.kube.get<ConfigMap>({ ...cm, name: 'held' })).data, { k: 'reopened' }, 'open again: the fenced client writes');
});

t.test('the guard is asked as the request meets its socket: closed after the call, before the write, nothing is sent', async (tt) => {
  const ns = await testNamespace(tt);
  const cm = { ...CONFIGMAPS, namespace: ns.name };
  await ns.kube.create(cm, { metadata: { name: 'late' }, data: { k: 'v' } });
  const before = await ns.kube.get<ConfigMap>({ ...cm, name: 'late' });
  // A fresh client opens its connection (TLS handshake) for the write; a warmed one reuses a pooled one.
  for (const connection of ['a new connection', 'a pooled connection']) {
    const base = new KubeClient(ns.kubeConfig);
    tt.teardown(() => base.close());
    if (connection === 'a pooled connection') await base.get({ ...cm, name: 'late' });
    let open = true;
    let asked = 0;
    const fenced = base.fenced(() => {
      asked += 1;
      return open;
    });
    const write = fenced.patch({ ...cm, name: 'late' }, { data: { k: 'sent' } }, MERGE_PATCH);
    open = false; // the call has passed its first check; the bytes are not written yet
    await refused(tt, write, 'PATCH', connection);
    tt.equal(asked, 2, `${connection}: asked when called and again at the socket`);
    const after = await ns.kube.get<ConfigMap>({ ...cm, name: 'late' });
    tt.equal(after.metadata.resourceVersion, before.metadata.resourceVersion, `${connection}: the object is unchanged`);
    open = true;
    await fenced.get({ ...cm, name: 'late' });
    tt.pass(`${connection}: the client works on after the refusal`);
  }
});

t.test('isNotLeader: the error itself or a cause of it (a reconciler wrapping it)', async (tt) => {
  const refusal = new NotLeaderError('POST', '/apis/batch/v1/namespaces/x/jobs');
  const rows: Array<[string, unknown, boolean]> = [
    ['the refusal', refusal, true],
    ['wrapped as the cause of a RetryNoLaterError', new RetryNoLaterError('creating Job j: ...', 100, { cause: refusal }), true],
    ['two levels deep', new Error('outer', { cause: new Error('inner', { cause: refusal }) }), true],
    ['another error', new Error('POST: 500'), false],
    ['a string', 'not leader', false],
    ['undefined', undefined, false],
  ];
  for (const [name, err, want] of rows) tt.equal(isNotLeader(err), want, name);
});

t.test("the elector's mayWrite: by clock from the last renew (no timer needed), kept through a graceful stop until the release", async (tt) => {
  const ns = await testNamespace(tt);
  const kube = new KubeClient(ns.kubeConfig);
  tt.teardown(() => kube.close());
  let skew = 0;
  const elector = new LeaderElector({ kube, namespace: ns.name, name: 'fence', identity: 'solo', logger: quiet, leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300, now: () => Date.now() + skew });
  tt.equal(elector.mayWrite(), false, 'a candidate may not write');
  const stop = new AbortController();
  let started!: () => void;
  const leading = new Promise<void>((resolve) => (started = resolve));
  const run = elector.run(stop.signal, { onStartedLeading: () => started(), onStoppedLeading: () => undefined });
  await leading;
  tt.equal(elector.mayWrite(), true, 'the leader may write');
  skew = 2000; // the clock passes the renew deadline; no timer has run
  tt.equal(elector.mayWrite(), false, 'past the renew deadline: no write, at once');
  tt.equal(elector.isLeader(), false);
  skew = 0;
  tt.equal(elector.mayWrite(), true, 'back before the deadline');

  stop.abort(); // SIGTERM: the renew loop ends, the reconcilers finish
  await run;
  tt.equal(elector.isLeader(), false, 'no longer leads: no new reconcile');
  tt.equal(elector.mayWrite(), true, 'but the lease is still ours: in-flight reconciles may finish their writes');
  tt.equal(await elector.release(), true);
  tt.equal(elector.mayWrite(), false, 'released: another may lead at once');
});

t.test('the manager: reconcilers get the fenced client with leader election, the plain one without', async (tt) => {
  const ns = await testNamespace(tt);
  const cm = { ...CONFIGMAPS, namespace: ns.name };
  const elected = new Manager({ kubeConfig: ns.kubeConfig, logger: quiet, metrics: createMetricsRegistry(), watchNamespace: ns.name, leaderElection: { namespace: ns.name, name: 'mgr', identity: 'm1' } });
  tt.teardown(() => elected.kube.close());
  tt.not(elected.ctx.kube, elected.kube, 'a client of its own for the reconcilers');
  tt.equal(elected.ctx.kube.mayWrite(), false, 'fenced: not leading yet');
  tt.equal(elected.kube.mayWrite(), true, 'the Lease and informer client is not');
  await refused(tt, elected.ctx.kube.create(cm, { metadata: { name: 'from-candidate' } }), 'POST', 'a candidate reconciler');
  tt.equal(await ns.kube.getOrUndefined({ ...cm, name: 'from-candidate' }), undefined, 'nothing created');

  const single = new Manager({ kubeConfig: ns.kubeConfig, logger: quiet, metrics: createMetricsRegistry(), watchNamespace: ns.name });
  tt.teardown(() => single.kube.close());
  tt.equal(single.ctx.kube, single.kube, 'without leader election: the one client, unfenced');
  await single.ctx.kube.create(cm, { metadata: { name: 'single' } });
  tt.ok(await ns.kube.getOrUndefined({ ...cm, name: 'single' }));
});
