// On the REAL kube-apiserver: the client marks the copy a successful write started from as stale
// (kube/superseded.ts), so a reconciler holding it skips instead of earning a 409; a refused write, or
// one that changed nothing, marks nothing, and a copy at the API's current version is never stale.
import t from 'tap';
import { JSON_PATCH, KubeClient, MERGE_PATCH, isConflict } from '../../kube/client.ts';
import { RAYCLUSTERS } from '../../src/types.ts';
import { testNamespace } from '../helpers/control-plane.ts';
import { rayCluster } from '../helpers/harness.ts';

t.test('own writes make the copy they replaced stale; the API copy after them is not', async (t) => {
  const ns = await testNamespace(t);
  const kube = new KubeClient(ns.kubeConfig);
  t.teardown(() => kube.close());
  const ref = { ...RAYCLUSTERS, namespace: ns.name, name: 'stale' };
  const a = await kube.create({ ...RAYCLUSTERS, namespace: ns.name }, rayCluster('stale', 'redis:6379'));
  t.equal(kube.isStale(ref, a.metadata.resourceVersion), false, 'a copy nobody replaced');

  // A /status PUT (what the pod operator and the RayJob reconciler send) from copy a.
  const b = await kube.replace({ ...ref, subresource: 'status' }, { ...a, status: { state: 'ready' } });
  t.not(b.metadata.resourceVersion, a.metadata.resourceVersion);
  t.equal(kube.isStale(ref, a.metadata.resourceVersion), true, 'the copy the status write started from');
  t.equal(kube.isStale(ref, a.metadata.resourceVersion), true, 'still, until the cache moves on');
  const fresh = await kube.get(ref);
  t.equal(kube.isStale(ref, fresh.metadata.resourceVersion), false, 'the API copy after the write');
  t.equal(kube.isStale(ref, a.metadata.resourceVersion), false, 'once caught up, the entries are gone');

  // A JSON patch computed from `fresh` (what the finalizer patcher sends).
  await kube.patch(ref, [{ op: 'add', path: '/metadata/labels', value: { x: 'y' } }], JSON_PATCH, {
    basedOn: fresh.metadata.resourceVersion,
  });
  t.equal(kube.isStale(ref, fresh.metadata.resourceVersion), true, 'the copy the patch started from');

  // A refused write marks nothing: the PUT from the old copy a conflicts.
  const now = await kube.get(ref);
  t.equal(kube.isStale(ref, now.metadata.resourceVersion), false);
  const err = await kube.replace({ ...ref, subresource: 'status' }, { ...a, status: { state: 'suspended' } }).catch((e: unknown) => e);
  t.ok(isConflict(err), 'the old copy conflicts');
  t.equal(kube.isStale(ref, now.metadata.resourceVersion), false, 'a 409 made no copy stale');
  t.equal(kube.isStale(ref, a.metadata.resourceVersion), false, 'not even the one it started from');

  // Writes that change nothing: the API server keeps the version and sends no watch event, so marking
  // the copy stale would skip the object for good.
  const same = await kube.replace({ ...ref, subresource: 'status' }, now);
  t.equal(same.metadata.resourceVersion, now.metadata.resourceVersion, 'a no-op status PUT keeps the version');
  t.equal(kube.isStale(ref, now.metadata.resourceVersion), false, 'a no-op PUT marks nothing');
  const patched = await kube.patch(ref, { metadata: { labels: { x: 'y' } } }, MERGE_PATCH, {
    basedOn: now.metadata.resourceVersion,
  });
  t.equal(patched.metadata.resourceVersion, now.metadata.resourceVersion, 'a no-op merge patch keeps the version');
  t.equal(kube.isStale(ref, now.metadata.resourceVersion), false, 'a no-op PATCH marks nothing');

  // Clients made with fenced() share what was written.
  const fenced = kube.fenced(() => true);
  await fenced.replace({ ...ref, subresource: 'status' }, { ...now, status: { state: 'suspended' } });
  t.equal(kube.isStale(ref, now.metadata.resourceVersion), true, 'a fenced client write is seen by its parent');
});
