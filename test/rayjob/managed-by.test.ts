// spec.managedBy on the real kube-apiserver: a RayJob managed by a controller we do not stand in for
// (MultiKueue) is left untouched by the RayJob reconciler (no finalizer, no status, no RayCluster, no
// submitter); absent or KubeRay's own value is reconciled as usual.
import t from 'tap';
import { manifest, rayJobHarness } from './helpers/harness.ts';

t.test('managedBy kueue.x-k8s.io/multikueue: untouched; ray.io/kuberay-operator: reconciled', async (t) => {
  const h = await rayJobHarness(t);
  await h.create(manifest('kueue', { managedBy: 'kueue.x-k8s.io/multikueue' }));
  await h.create(manifest('ours', { managedBy: 'ray.io/kuberay-operator' }));
  const before = (await h.get('kueue'))!;

  // The positive control first: the same reconciler, the same number of passes, moves `ours` on.
  const ours = await h.drive('ours', (j) => j?.status?.rayClusterName !== undefined && (j.metadata.finalizers ?? []).length > 0);
  t.ok(ours.job?.status?.jobDeploymentStatus, "the RayJob managed by KubeRay's name got a status from us");

  for (let i = 0; i < 3; i++) {
    const result = await h.reconciler.reconcile(`${h.namespace}/kueue`);
    t.same(result ?? {}, {}, 'no requeue for a RayJob that is not ours');
  }
  const after = (await h.get('kueue'))!;
  t.equal(after.metadata.resourceVersion, before.metadata.resourceVersion, 'never written');
  t.same(after.metadata.finalizers ?? [], [], 'no finalizer');
  t.equal(after.status, undefined, 'no status');
  t.same(
    (await h.clusters()).map((c) => c.metadata.ownerReferences?.[0]?.name),
    Array((await h.clusters()).length).fill('ours'),
    'no RayCluster for it',
  );
  t.equal(await h.submitterJob('kueue'), undefined, 'no submitter');
  t.same(await h.events('kueue'), [], 'no events');
});
