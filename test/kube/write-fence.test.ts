// The write fence against the REAL kube-apiserver: a fenced KubeClient sends no write while its guard
// says no (the object stays as it was on the server), reads still work, and the guard is asked as the
// request meets its socket, not only when it is called; the leader elector's `mayWrite()` by clock;
// the manager hands its reconcilers the fenced client only with leader election; and a leader stalled
// inside a reconcile until another replica took the Lease does not send the write that follows.
import t, { type Test } from 'tap';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { startController } from '../../controller/main.ts';
import type { ReconcilerModule } from '../../kube/reconciler.ts';
import { isNotLeader, KubeClient, MERGE_PATCH, NotLeaderError } from '../../kube/client.ts';
import { LeaderElector } from '../../kube/leader.ts';
import { Manager } from '../../kube/manager.ts';
import { RetryNoLaterError } from '../../kube/reconciler.ts';
import { createLogger } from '../../kube/logger.ts';
import { createMetricsRegistry } from '../../kube/metrics.ts';
import { kubeconfigFile, testNamespace } from '../helpers/control-plane.ts';
import { CONFIGMAPS, LEASES } from '../../kube/resources.ts';
import type { ConfigMap } from '../../kube/model.ts';
import { metricValue } from '../helpers/harness.ts';

const quiet = createLogger('test', { level: 'silent' });

/** Rejects with a NotLeaderError for `method`, else fails the test. */
async function refused(tt: Test, p: Promise<unknown>, method: string, what: string): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  tt.ok(err instanceof NotLeaderError, `${what}: NotLeaderError (got ${String(err)})`);
  tt.equal((err as NotLeaderError).method, method, `${what}: names the verb`);
}

t.test(
  'fenced client: no write leaves while the guard says no, reads work, the unfenced client on the same pool still writes',
  async (tt) => {
    const ns = await testNamespace(tt);
    const base = new KubeClient(ns.kubeConfig);
    tt.teardown(() => base.close());
    let open = true;
    const fenced = base.fenced(() => open);
    const cm = { ...CONFIGMAPS, namespace: ns.name };
    await fenced.create(cm, { metadata: { name: 'held' }, data: { k: 'v' } });
    const before = await ns.kube.get({ ...cm, name: 'held' });

    open = false;
    tt.equal(fenced.mayWrite(), false);
    tt.equal(base.mayWrite(), true, 'the client it was made from has no guard');
    await refused(tt, fenced.patch({ ...cm, name: 'held' }, { data: { k: 'patched' } }, MERGE_PATCH), 'PATCH', 'patch');
    await refused(tt, fenced.replace({ ...cm, name: 'held' }, { ...before, data: { k: 'replaced' } }), 'PUT', 'replace');
    await refused(tt, fenced.create(cm, { metadata: { name: 'new' } }), 'POST', 'create');
    await refused(tt, fenced.delete({ ...cm, name: 'held' }), 'DELETE', 'delete');
    tt.same((await fenced.get({ ...cm, name: 'held' })).data, { k: 'v' }, 'a read through the fenced client works');
    tt.ok(
      (await fenced.list(cm)).items.some((c) => c.metadata.name === 'held'),
      'a list too',
    );

    const after = await ns.kube.get({ ...cm, name: 'held' });
    tt.equal(after.metadata.resourceVersion, before.metadata.resourceVersion, 'the object is unchanged on the server');
    tt.same(after.data, { k: 'v' });
    tt.same(after.metadata.managedFields, before.metadata.managedFields, 'no field manager touched it');
    tt.equal(await ns.kube.getOrUndefined({ ...cm, name: 'new' }), undefined, 'the refused create made nothing');
    tt.same(
      Object.fromEntries(base.fencedCounts),
      { PATCH: 1, PUT: 1, POST: 1, DELETE: 1 },
      'refusals counted by verb (shared with the base client)',
    );
    tt.same(
      [...base.requestCounts.keys()].filter((k) => !k.startsWith('GET')),
      ['POST 201 configmaps'],
      'no refused write reached the API server: only the first create',
    );

    await base.patch({ ...cm, name: 'held' }, { data: { k: 'by-base' } }, MERGE_PATCH);
    tt.same(
      (await ns.kube.get({ ...cm, name: 'held' })).data,
      { k: 'by-base' },
      'the unfenced client (the Lease client) on the same connections still writes',
    );
    open = true;
    await fenced.patch({ ...cm, name: 'held' }, { data: { k: 'reopened' } }, MERGE_PATCH);
    tt.same((await ns.kube.get({ ...cm, name: 'held' })).data, { k: 'reopened' }, 'open again: the fenced client writes');
  },
);

t.test('the guard is asked as the request meets its socket: closed after the call, before the write, nothing is sent', async (tt) => {
  const ns = await testNamespace(tt);
  const cm = { ...CONFIGMAPS, namespace: ns.name };
  await ns.kube.create(cm, { metadata: { name: 'late' }, data: { k: 'v' } });
  const before = await ns.kube.get({ ...cm, name: 'late' });
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
    const after = await ns.kube.get({ ...cm, name: 'late' });
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

t.test(
  "the elector's mayWrite: by clock from the last renew (no timer needed), kept through a graceful stop until the release",
  async (tt) => {
    const ns = await testNamespace(tt);
    const kube = new KubeClient(ns.kubeConfig);
    tt.teardown(() => kube.close());
    let skew = 0;
    const elector = new LeaderElector({
      kube,
      namespace: ns.name,
      name: 'fence',
      identity: 'solo',
      logger: quiet,
      leaseDurationMs: 3000,
      renewDeadlineMs: 2000,
      retryPeriodMs: 300,
      now: () => Date.now() + skew,
    });
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
  },
);

t.test('the manager: reconcilers get the fenced client with leader election, the plain one without', async (tt) => {
  const ns = await testNamespace(tt);
  const cm = { ...CONFIGMAPS, namespace: ns.name };
  const elected = new Manager({
    kubeConfig: ns.kubeConfig,
    logger: quiet,
    metrics: createMetricsRegistry(),
    watchNamespace: ns.name,
    leaderElection: { namespace: ns.name, name: 'mgr', identity: 'm1' },
  });
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

t.test(
  'a leader stalled inside a reconcile until another took the Lease: the write that follows is not sent, no retry, it stops',
  async (tt) => {
    const ns = await testNamespace(tt);
    const cm = { ...CONFIGMAPS, namespace: ns.name, name: 'trigger' };
    await ns.kube.create(cm, { metadata: { name: 'trigger' }, data: { k: 'v' } });
    const kubeconfig = await kubeconfigFile(tt, ns.cp, ns.name);
    let before: ConfigMap | undefined;
    let takeover: ReturnType<typeof spawnSync> | undefined;
    // Reads the object, stalls the whole process (no timer, no I/O runs: a paused process, as seen from
    // inside) until a second replica holds the Lease, then writes at once on a pooled connection: nothing
    // between the end of the stall and the write lets the renew loop notice first (without the fence the
    // PATCH reaches the API server: checked by hand with the fence taken out of the manager).
    const stall: ReconcilerModule = {
      name: 'stall',
      summary: 'test',
      create: (ctx) => ({
        name: 'stall',
        workers: 1,
        watches: [{ informer: ctx.informers.get({ ...CONFIGMAPS }) }],
        reconciler: {
          reconcile: async (key) => {
            if (key !== `${ns.name}/trigger` || takeover) return;
            before = await ctx.kube.get(cm);
            await new Promise((resolve) => setImmediate(resolve)); // the read's connection is back in the pool
            takeover = spawnSync(
              process.execPath,
              [join(REPO_ROOT, 'test', 'helpers', 'take-lease.ts'), kubeconfig, ns.name, 'stall', 'two'],
              { timeout: 60_000, encoding: 'utf8' },
            );
            await ctx.kube.patch(cm, { data: { k: 'written after the stall' } }, MERGE_PATCH);
          },
        },
      }),
    };
    const metrics = createMetricsRegistry();
    const one = await startController({
      kubeConfig: ns.kubeConfig,
      watchNamespace: ns.name,
      modules: [stall],
      logger: quiet,
      metrics,
      leaderElect: true,
      leaseNamespace: ns.name,
      leaseName: 'stall',
      identity: 'one',
      leaseDurationMs: 3000,
      renewDeadlineMs: 2000,
      retryPeriodMs: 400,
    });
    tt.teardown(() => one.stop());
    tt.equal(await one.done, 'lost-leadership', 'one stops: lost leadership (the CLI exits 1)');
    tt.equal(
      takeover?.status,
      0,
      `two took the lease during the stall (${String(takeover?.stdout).trim()} ${String(takeover?.stderr).trim()})`,
    );
    tt.equal((await ns.kube.get({ ...LEASES, namespace: ns.name, name: 'stall' })).spec!.holderIdentity, 'two');
    const after = await ns.kube.get(cm);
    tt.equal(after.metadata.resourceVersion, before?.metadata.resourceVersion, 'the object is unchanged on the server');
    tt.same(after.data, { k: 'v' });
    const text = await metrics.metrics();
    tt.equal(metricValue(text, 'raykeeper_kube_writes_fenced', 'verb="PATCH"'), 1, 'the fence refused the PATCH');
    tt.equal(
      metricValue(text, 'raykeeper_controller_reconcile_total', 'controller="stall",result="fenced"'),
      1,
      'the reconcile ended as fenced',
    );
    tt.equal(
      metricValue(text, 'raykeeper_controller_reconcile_total', 'controller="stall",result="error"'),
      undefined,
      'not as an error to retry',
    );
    tt.equal(metricValue(text, 'raykeeper_controller_queue_retries_total', 'controller="stall"'), undefined, 'no retry scheduled');
  },
);
