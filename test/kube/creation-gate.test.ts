// The pod creation gate (kube/creation-gate.ts) as pure in-process ordering: once the
// cleanup closed a cluster's gate, no create of that cluster starts, and close() resolves only after the
// creates already under way have ended, so the cleanup's pod list that follows sees them. The gate stays
// closed for KEEP_CLOSED_MS, whatever happens to the cluster's name.
import t from 'tap';
import { CreationGate, KEEP_CLOSED_MS } from '../../kube/creation-gate.ts';
import type { KubeCredentials } from '../../kube/kubeconfig.ts';
import { Manager } from '../../kube/manager.ts';
import { createLogger, type Logger } from '../../kube/logger.ts';
import { createMetricsRegistry } from '../../kube/metrics.ts';

function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

t.test('open gate: the create runs and its value comes back', async (tt) => {
  const gate = new CreationGate();
  tt.same(await gate.create('uid-1', async () => 'pod'), { created: true, value: 'pod' });
  tt.same(await gate.create(undefined, async () => 'pod'), { created: true, value: 'pod' }, 'no UID: never gated');
});

t.test('closed gate: no create starts for that cluster', async (tt) => {
  const gate = new CreationGate();
  await gate.close('uid-1');
  let called = false;
  tt.same(await gate.create('uid-1', async () => ((called = true), 'pod')), { created: false });
  tt.notOk(called, 'the create function was not called');
  tt.ok(gate.isClosed('uid-1'));
  tt.notOk(gate.isClosed(undefined));
});

t.test('close waits for a create under way (it may land after the cleanup would list pods)', async (tt) => {
  const gate = new CreationGate();
  const api = deferred<string>();
  const creating = gate.create('uid-1', () => api.promise);
  let closed = false;
  const closing = gate.close('uid-1').then(() => (closed = true));
  await new Promise((r) => setImmediate(r));
  tt.notOk(closed, 'close() has not resolved while the create is in flight');
  api.resolve('pod');
  await closing;
  tt.ok(closed, 'close() resolves once the create ended');
  tt.same(await creating, { created: true, value: 'pod' });
});

t.test('close also waits for a create that fails, and does not fail itself', async (tt) => {
  const gate = new CreationGate();
  const api = deferred<string>();
  const creating = gate.create('uid-1', () => api.promise);
  const closing = gate.close('uid-1');
  api.reject(new Error('409 AlreadyExists'));
  await tt.rejects(creating, /AlreadyExists/);
  await tt.resolves(closing);
});

t.test('close does not wait for another cluster, nor stop its creates (a new cluster of the same name has another UID)', async (tt) => {
  const gate = new CreationGate();
  const other = deferred<string>();
  const creating = gate.create('uid-new', () => other.promise);
  await gate.close('uid-old');
  tt.same(await gate.create('uid-new', async () => 'pod'), { created: true, value: 'pod' });
  other.resolve('x');
  await creating;
});

t.test('a closed gate stays closed for KEEP_CLOSED_MS after its last close, then is dropped', async (tt) => {
  let now = 1_000_000;
  const gate = new CreationGate(() => now);
  await gate.close('uid-a');
  now += KEEP_CLOSED_MS / 2;
  await gate.close('uid-b');
  now += KEEP_CLOSED_MS / 2 - 1;
  await gate.close('uid-c');
  tt.ok(gate.isClosed('uid-a'), 'still closed just before its time');
  now += 1;
  await gate.close('uid-b'); // closing again renews it
  tt.notOk(gate.isClosed('uid-a'), 'dropped once KEEP_CLOSED_MS passed');
  now += KEEP_CLOSED_MS - 1; // uid-c closed KEEP_CLOSED_MS ago, uid-b one ms less
  await gate.close('uid-d');
  tt.ok(gate.isClosed('uid-b'), 'renewed by the second close');
  tt.notOk(gate.isClosed('uid-c'), 'uid-c expired');
  tt.equal(gate.size, 2, 'only uid-b and uid-d are kept');
});

t.test('one gate per manager, on the context every reconciler it runs is given; another manager has its own', async (tt) => {
  // Never contacted: the managers are only constructed.
  const kubeConfig: KubeCredentials = {
    getCurrentCluster: () => ({ name: 'none', server: 'https://127.0.0.1:1', skipTLSVerify: false }),
    getCurrentUser: () => null,
    applyToHTTPSOptions: async () => {},
  };
  const manager = (logger: Logger) => new Manager({ kubeConfig, logger, metrics: createMetricsRegistry() });
  const logger = createLogger('test', { level: 'silent' });
  const a = manager(logger);
  tt.ok(a.ctx.creationGate instanceof CreationGate);
  tt.not(a.ctx.creationGate, manager(logger).ctx.creationGate);
});

// The gate also says whether the pod cache shows this process's creates (the cleanup then trusts it).
const pod = (uid: string) => ({ metadata: { uid } });

t.test('cacheShowsCreates: a created child is unseen until the informer reports it', async (tt) => {
  const gate = new CreationGate();
  gate.trackCreates();
  tt.notOk(gate.cacheShowsCreates('owner'), 'nothing created by this process: not known (another process may have made its pods)');
  await gate.create('owner', async () => pod('p1'));
  await gate.create('owner', async () => pod('p2'));
  tt.notOk(gate.cacheShowsCreates('owner'), 'two creates the cache has not shown');
  gate.observe('owner', 'p1');
  tt.notOk(gate.cacheShowsCreates('owner'), 'one still unseen');
  gate.observe('other', 'p2');
  tt.notOk(gate.cacheShowsCreates('owner'), 'seen under another owner does not count');
  gate.observe('owner', 'p2');
  tt.ok(gate.cacheShowsCreates('owner'), 'both shown');
  tt.equal(gate.unseenOwners, 0, 'nothing kept once shown');
  tt.notOk(gate.cacheShowsCreates('elsewhere'), 'another owner is not known');
});

t.test('cacheShowsCreates: without trackCreates nothing is recorded, and nothing is trusted', async (tt) => {
  const gate = new CreationGate();
  await gate.create('owner', async () => pod('p1'));
  gate.observe('owner', 'p1');
  tt.notOk(gate.cacheShowsCreates('owner'));
  tt.equal(gate.unseenOwners, 0, 'no record kept when nobody observes');
});

t.test('cacheShowsCreates: the watch event may come before the create returns', async (tt) => {
  const gate = new CreationGate();
  gate.trackCreates();
  const api = deferred<{ metadata: { uid: string } }>();
  const creating = gate.create('owner', () => api.promise);
  tt.notOk(gate.cacheShowsCreates('owner'), 'a create under way: not shown yet');
  gate.observe('owner', 'p1'); // the informer saw the pod first
  api.resolve(pod('p1'));
  await creating;
  tt.ok(gate.cacheShowsCreates('owner'), 'the early observation counts');
  gate.observe('owner', 'p9'); // nothing under way: an observation of nothing expected is not kept
  await gate.create('owner', async () => pod('p9'));
  tt.notOk(gate.cacheShowsCreates('owner'), 'an observation before its create started does not count');
});

t.test('cacheShowsCreates: a failed create may have been committed, so its owner is never shown complete', async (tt) => {
  const gate = new CreationGate();
  gate.trackCreates();
  await tt.rejects(
    gate.create('owner', async () => {
      throw new Error('timeout');
    }),
  );
  tt.notOk(gate.cacheShowsCreates('owner'));
  gate.observe('owner', 'anything');
  tt.notOk(gate.cacheShowsCreates('owner'), 'no observation makes up for it');
  await gate.create('other', async () => 'no uid');
  tt.notOk(gate.cacheShowsCreates('other'), 'a created child without a UID cannot be matched: unseen');
});

t.test('cacheShowsCreates: unseen records go with the closed gate of their owner after KEEP_CLOSED_MS', async (tt) => {
  let now = 1_000_000;
  const gate = new CreationGate(() => now);
  gate.trackCreates();
  await gate.create('owner', async () => pod('p1'));
  await gate.close('owner');
  tt.notOk(gate.cacheShowsCreates('owner'));
  now += KEEP_CLOSED_MS;
  await gate.close('later');
  tt.equal(gate.unseenOwners, 0, 'dropped with the expired gate');
  gate.observe('owner', 'p1');
  tt.notOk(gate.cacheShowsCreates('owner'), 'and the owner is not known any more');
});

t.test('cacheShowsCreates: a record expires KEEP_CLOSED_MS after its LAST create, and then its owner is not trusted', async (tt) => {
  let now = 1_000_000;
  const gate = new CreationGate(() => now);
  gate.trackCreates();
  await tt.rejects(
    gate.create('x', async () => {
      throw new Error('quota');
    }),
  );
  now += KEEP_CLOSED_MS - 1;
  await gate.create('x', async () => pod('head')); // a later create renews the record
  now += 2;
  await gate.create('y', async () => pod('other')); // prunes what expired
  tt.equal(gate.unseenOwners, 2, "x's record kept: its last create is recent");
  gate.observe('x', 'head');
  tt.notOk(gate.cacheShowsCreates('x'), 'the failed create still counts');
  now += KEEP_CLOSED_MS;
  await gate.create('z', async () => pod('z1'));
  tt.notOk(gate.cacheShowsCreates('x'), 'expired: not known complete');
  gate.observe('z', 'z1');
  tt.ok(gate.cacheShowsCreates('z'), 'a fresh owner shown complete');
});
