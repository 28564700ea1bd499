// The pod creation gate (controller/raycluster/pod-creation-gate.ts) as pure in-process ordering: once the
// cleanup closed a cluster's gate, no create of that cluster starts, and close() resolves only after the
// creates already under way have ended, so the cleanup's pod list that follows sees them.
import t from 'tap';
import { PodCreationGate, podCreationGate } from '../../controller/raycluster/pod-creation-gate.ts';

function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

t.test('open gate: the create runs and its value comes back', async (tt) => {
  const gate = new PodCreationGate();
  tt.same(await gate.create('ns/a', 'uid-1', async () => 'pod'), { created: true, value: 'pod' });
});

t.test('closed gate: no create starts for that cluster', async (tt) => {
  const gate = new PodCreationGate();
  await gate.close('ns/a', 'uid-1');
  let called = false;
  tt.same(await gate.create('ns/a', 'uid-1', async () => ((called = true), 'pod')), { created: false });
  tt.notOk(called, 'the create function was not called');
  tt.ok(gate.isClosed('ns/a', 'uid-1'));
});

t.test('close waits for a create under way (it may land after the cleanup would list pods)', async (tt) => {
  const gate = new PodCreationGate();
  const api = deferred<string>();
  const creating = gate.create('ns/a', 'uid-1', () => api.promise);
  let closed = false;
  const closing = gate.close('ns/a', 'uid-1').then(() => (closed = true));
  await new Promise((r) => setImmediate(r));
  tt.notOk(closed, 'close() has not resolved while the create is in flight');
  api.resolve('pod');
  await closing;
  tt.ok(closed, 'close() resolves once the create ended');
  tt.same(await creating, { created: true, value: 'pod' });
});

t.test('close also waits for a create that fails, and does not fail itself', async (tt) => {
  const gate = new PodCreationGate();
  const api = deferred<string>();
  const creating = gate.create('ns/a', 'uid-1', () => api.promise);
  const closing = gate.close('ns/a', 'uid-1');
  api.reject(new Error('409 AlreadyExists'));
  await tt.rejects(creating, /AlreadyExists/);
  await tt.resolves(closing);
});

t.test('close does not wait for another cluster, nor stop its creates', async (tt) => {
  const gate = new PodCreationGate();
  const other = deferred<string>();
  const creating = gate.create('ns/b', 'uid-2', () => other.promise);
  await gate.close('ns/a', 'uid-1');
  tt.same(await gate.create('ns/b', 'uid-2', async () => 'pod'), { created: true, value: 'pod' });
  other.resolve('x');
  await creating;
});

t.test('a new cluster with the same name (another UID) is not gated; forget() drops the entry', async (tt) => {
  const gate = new PodCreationGate();
  await gate.close('ns/a', 'uid-old');
  tt.same(await gate.create('ns/a', 'uid-new', async () => 'pod'), { created: true, value: 'pod' });
  gate.forget('ns/a');
  tt.notOk(gate.isClosed('ns/a', 'uid-old'));
  tt.notOk(gate.isClosed('ns/a', undefined), 'an unknown UID is never gated');
});

t.test('one gate per shared object: both reconcilers of a manager get the same one', async (tt) => {
  const factory = {};
  tt.equal(podCreationGate(factory), podCreationGate(factory));
  tt.not(podCreationGate(factory), podCreationGate({}));
});
