// On the REAL kube-apiserver: a client with --qps/--burst holds requests past the burst, never a Lease's,
// and an aborted reconcile does not wait out its turn.
import t from 'tap';
import { KubeClient } from '../../kube/client.ts';
import { CONFIGMAPS, LEASES } from '../../kube/resources.ts';
import { testNamespace } from '../helpers/control-plane.ts';

t.test('requests past the burst wait for tokens; Lease requests do not', async (t) => {
  const ns = await testNamespace(t);
  const kube = new KubeClient(ns.kubeConfig, { rateLimit: { qps: 5, burst: 2 } });
  t.teardown(() => kube.close());
  const ref = { ...CONFIGMAPS, namespace: ns.name };
  // Two at once (the burst), then one every 200 ms: the 3rd to 5th wait 200 + 400 + 600 ms in all.
  await Promise.all(Array.from({ length: 5 }, () => kube.list(ref)));
  const waited = kube.throttledSeconds;
  t.ok(waited >= 1.1 && waited <= 1.3, `waited ${waited.toFixed(2)} s for tokens (expected 1.2)`);
  for (let i = 0; i < 5; i++) await kube.getOrUndefined({ ...LEASES, namespace: ns.name, name: 'none' });
  t.equal(kube.throttledSeconds, waited, 'Lease requests took no token');

  const unlimited = new KubeClient(ns.kubeConfig);
  t.teardown(() => unlimited.close());
  await Promise.all(Array.from({ length: 5 }, () => unlimited.list(ref)));
  t.equal(unlimited.throttledSeconds, 0, 'no cap by default');

  // Owe ~2 s of tokens, then abort: the request stops waiting at once.
  for (let i = 0; i < 10; i++) void kube.list(ref).catch(() => undefined);
  const abort = new AbortController();
  const pending = kube.list(ref, { signal: abort.signal }).then(
    () => 'sent',
    (err: Error) => err.name,
  );
  const aborted = performance.now();
  abort.abort();
  t.equal(await pending, 'AbortError', 'an aborted request does not wait for its token');
  t.ok(performance.now() - aborted < 500, 'it stopped at once, not after the ~2 s it owed');
});
