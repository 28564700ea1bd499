// The RayCluster operator on the real kube-apiserver where KubeRay's own e2e suite found it different
// (issue 47 items 6-8, embedded GCS storage): upgradeStrategy Recreate (TestRayClusterUpgradeStrategy), a
// status edited through /status left as written until a real trigger (e2erayjob "RayCluster status update
// propagates to RayJob"), a deleted head back under a fresh generated name, and backend rocksdb's claim (embedded GCS storage).
// No kubelet: the test plays it (marks pods Running / Ready; pods without a node vanish at once when deleted).
import t, { type Test } from 'tap';
import { startController } from '../../controller/main.ts';
import { gcsFtCleanupModule } from '../../controller/gcsft-cleanup/module.ts';
import { rayClusterOperatorModule } from '../../controller/raycluster/module.ts';
import type { Pod } from '../../kube/model.ts';
import { MERGE_PATCH } from '../../kube/client.ts';
import { PERSISTENTVOLUMECLAIMS, PODS } from '../../kube/resources.ts';
import type { RayClusterStatus } from '../../src/raycluster/status.ts';
import { clusterSpecHash, HASH_VERSION, KUBERAY_VERSION_ANNOTATION, RECREATE_HASH_ANNOTATION } from '../../src/raycluster/upgrade.ts';
import { RAYCLUSTERS, type RayCluster } from '../../src/types.ts';
import { env, events, getCluster, quiet, until, type Env } from '../helpers/harness.ts';
import { kuberaySample } from './samples.ts';

async function operator(tt: Test, e: Env): Promise<void> {
  const c = await startController({
    kubeConfig: e.ns.kubeConfig,
    watchNamespace: e.ns.name,
    workers: 2,
    modules: [gcsFtCleanupModule, rayClusterOperatorModule],
    env: {},
    logger: quiet,
    moduleFlags: { 'cleanup-image': 'raykeeper:test' },
    retry: { baseMs: 100, maxMs: 2000, jitter: 0.2 },
  });
  tt.teardown(() => c.stop());
}

async function pods(e: Env, selector: string): Promise<Pod[]> {
  return (await e.kube.list({ ...PODS, namespace: e.ns.name }, { labelSelector: selector })).items;
}

async function markReady(e: Env, p: Pod, ip: string): Promise<void> {
  await e.kube.patch(
    { ...PODS, namespace: e.ns.name, name: p.metadata.name!, subresource: 'status' },
    { status: { phase: 'Running', podIP: ip, conditions: [{ type: 'Ready', status: 'True' }] } },
    MERGE_PATCH,
  );
}

/** Both pods of `name` created, then run by the "kubelet"; the cluster ready. */
async function readyCluster(e: Env, name: string): Promise<{ head: Pod; worker: Pod }> {
  const [head, worker] = await until(async () => {
    const ps = await pods(e, `ray.io/cluster=${name}`);
    const h = ps.find((p) => p.metadata.labels?.['ray.io/node-type'] === 'head');
    const w = ps.find((p) => p.metadata.labels?.['ray.io/node-type'] === 'worker');
    return ps.length === 2 && h && w ? ([h, w] as const) : undefined;
  }, `${name}: head and worker`);
  await markReady(e, head, '10.9.0.1');
  await markReady(e, worker, '10.9.0.2');
  await until(async () => ((await getCluster(e, name))?.status as RayClusterStatus | undefined)?.state === 'ready', `${name}: ready`);
  return { head, worker };
}

function sample(name: string, strategy?: string): RayCluster {
  const c = kuberaySample();
  c.metadata.name = name;
  c.spec!.rayVersion = '2.52.0';
  if (strategy) (c.spec as Record<string, unknown>).upgradeStrategy = { type: strategy };
  return c;
}

/** TestRayClusterUpgradeStrategy's update: rayVersion and both images to 2.51.0. */
const upgrade = [
  { op: 'replace', path: '/spec/rayVersion', value: '2.51.0' },
  { op: 'replace', path: '/spec/headGroupSpec/template/spec/containers/0/image', value: 'rayproject/ray:2.51.0' },
  { op: 'replace', path: '/spec/workerGroupSpecs/0/template/spec/containers/0/image', value: 'rayproject/ray:2.51.0' },
];

t.test('upgradeStrategy Recreate: a changed spec recreates every pod, the new head under a new name and hash', async (tt) => {
  const e = await env(tt);
  await operator(tt, e);
  await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, sample('recreate', 'Recreate'));
  const { head, worker } = await readyCluster(e, 'recreate');
  const stored = (await getCluster(e, 'recreate'))!;
  tt.equal(head.metadata.annotations?.[RECREATE_HASH_ANNOTATION], clusterSpecHash(stored), 'the head carries the spec hash');
  tt.equal(head.metadata.annotations?.[KUBERAY_VERSION_ANNOTATION], HASH_VERSION, 'and who computed it');

  // A scale change is not an upgrade: a new worker, the same head.
  await e.kube.patch(
    { ...RAYCLUSTERS, namespace: e.ns.name, name: 'recreate' },
    [{ op: 'replace', path: '/spec/workerGroupSpecs/0/replicas', value: 2 }],
    'application/json-patch+json',
  );
  await until(async () => (await pods(e, 'ray.io/cluster=recreate,ray.io/node-type=worker')).length === 2, 'scaled to two workers');
  tt.same(
    (await pods(e, 'ray.io/cluster=recreate,ray.io/node-type=head')).map((p) => p.metadata.uid),
    [head.metadata.uid],
    'replicas are not in the hash: the head stays',
  );
  await e.kube.patch(
    { ...RAYCLUSTERS, namespace: e.ns.name, name: 'recreate' },
    [{ op: 'replace', path: '/spec/workerGroupSpecs/0/replicas', value: 1 }],
    'application/json-patch+json',
  );
  await until(async () => (await pods(e, 'ray.io/cluster=recreate,ray.io/node-type=worker')).length === 1, 'back to one worker');

  await e.kube.patch({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'recreate' }, upgrade, 'application/json-patch+json');
  const [newHead] = await until(async () => {
    const hs = await pods(e, 'ray.io/cluster=recreate,ray.io/node-type=head');
    return hs.length === 1 && hs[0]!.metadata.uid !== head.metadata.uid ? hs : undefined;
  }, 'a new head');
  tt.not(newHead!.metadata.name, head.metadata.name, 'a new head name');
  tt.match(newHead!.metadata.name, /^recreate-head-[a-z0-9]{5}$/);
  tt.not(newHead!.metadata.annotations?.[RECREATE_HASH_ANNOTATION], head.metadata.annotations?.[RECREATE_HASH_ANNOTATION], 'a new hash');
  tt.equal(newHead!.metadata.annotations?.[RECREATE_HASH_ANNOTATION], clusterSpecHash((await getCluster(e, 'recreate'))!));
  tt.equal(newHead!.spec?.containers[0]?.image, 'rayproject/ray:2.51.0', 'built from the new spec');
  const workers = await until(async () => {
    const ws = await pods(e, 'ray.io/cluster=recreate,ray.io/node-type=worker');
    return ws.length === 1 && ws[0]!.metadata.uid !== worker.metadata.uid ? ws : undefined;
  }, 'one new worker');
  tt.equal(workers[0]!.spec?.containers[0]?.image, 'rayproject/ray:2.51.0', 'the worker too');
  const deleted = await events(e, 'DeletedPod');
  tt.match(
    deleted.map((x) => x.message),
    [`Deleted all Pods for RayCluster ${e.ns.name}/recreate due to spec change with Recreate upgradeStrategy`],
    "KubeRay's event, once",
  );
  tt.equal((await pods(e, 'ray.io/cluster=recreate,ray.io/node-type=head')).length, 1, 'never two heads');
});

t.test('upgradeStrategy absent (None): a changed spec recreates nothing', async (tt) => {
  const e = await env(tt);
  await operator(tt, e);
  await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, sample('keep'));
  const { head, worker } = await readyCluster(e, 'keep');
  tt.ok(head.metadata.annotations?.[RECREATE_HASH_ANNOTATION], 'stamped all the same, as KubeRay');
  await e.kube.patch({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'keep' }, upgrade, 'application/json-patch+json');
  // The spec change is seen (observedGeneration), and the pods are the same ones.
  await until(async () => {
    const c = await getCluster(e, 'keep');
    return (c?.status as RayClusterStatus | undefined)?.observedGeneration === c?.metadata.generation;
  }, 'the new generation observed');
  tt.same(
    (await pods(e, 'ray.io/cluster=keep')).map((p) => p.metadata.uid).sort(),
    [head.metadata.uid, worker.metadata.uid].sort(),
    'same pods',
  );
});

t.test('a head stamped by KubeRay is re-stamped with our hash, not recreated', async (tt) => {
  const e = await env(tt);
  await operator(tt, e);
  await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, sample('taken', 'Recreate'));
  const { head } = await readyCluster(e, 'taken');
  // As KubeRay v1.6.2 would have left it: its version, its own hash of the spec.
  await e.kube.patch(
    { ...PODS, namespace: e.ns.name, name: head.metadata.name! },
    {
      metadata: {
        annotations: { [KUBERAY_VERSION_ANNOTATION]: 'v1.6.2', [RECREATE_HASH_ANNOTATION]: 'KUBERAYHASH0000000000000000000000' },
      },
    },
    MERGE_PATCH,
  );
  const restamped = await until(async () => {
    const [h] = await pods(e, 'ray.io/cluster=taken,ray.io/node-type=head');
    return h?.metadata.annotations?.[KUBERAY_VERSION_ANNOTATION] === HASH_VERSION ? h : undefined;
  }, 're-stamped');
  tt.equal(restamped.metadata.uid, head.metadata.uid, 'the same head: taking a cluster over never restarts it');
  tt.equal(restamped.metadata.annotations?.[RECREATE_HASH_ANNOTATION], clusterSpecHash((await getCluster(e, 'taken'))!));
  // Stamped, it follows Recreate from now on.
  await e.kube.patch({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'taken' }, upgrade, 'application/json-patch+json');
  await until(async () => {
    const hs = await pods(e, 'ray.io/cluster=taken,ray.io/node-type=head');
    return hs.length === 1 && hs[0]!.metadata.uid !== head.metadata.uid;
  }, 'recreated after the next spec change');
});

t.test('a status edited through /status stays as written until a real trigger, then is recomputed (KubeRay predicates)', async (tt) => {
  const e = await env(tt);
  await operator(tt, e);
  await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, sample('edited'));
  await readyCluster(e, 'edited');
  const computed = ((await getCluster(e, 'edited'))!.status as RayClusterStatus).maxWorkerReplicas!;
  // A pass already scheduled (2 s after each status write, as KubeRay) recomputes the status whenever it
  // runs, so each try first lets that one go by, and there are up to five: an operator that reacted to status
  // edits would undo every one, one kept is the proof. A later object in the same watch, once acted on, shows
  // the edit was seen.
  const kept: boolean[] = [];
  for (let i = 1; i <= 5 && !kept.includes(true); i++) {
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const before = (await getCluster(e, 'edited'))!;
    await e.kube.replace(
      { ...RAYCLUSTERS, namespace: e.ns.name, name: 'edited', subresource: 'status' },
      { ...before, status: { ...before.status, maxWorkerReplicas: computed + 2 } },
    );
    await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, sample(`later-${i}`));
    await until(async () => (await getCluster(e, `later-${i}`))?.status !== undefined, `the later cluster ${i} acted on`);
    kept.push(((await getCluster(e, 'edited'))!.status as RayClusterStatus).maxWorkerReplicas === computed + 2);
  }
  tt.ok(kept.includes(true), `the edit was not written back: a status-only change queues no pass (kept per try: ${kept.join(', ')})`);
  // A label (KubeRay's LabelChangedPredicate) queues one: the status is computed again.
  await e.kube.patch({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'edited' }, { metadata: { labels: { touched: 'yes' } } }, MERGE_PATCH);
  await until(
    async () => ((await getCluster(e, 'edited'))!.status as RayClusterStatus).maxWorkerReplicas === computed,
    'recomputed on the next pass',
  );
});

t.test('a deleted head comes back at once under a fresh name, never two', async (tt) => {
  const e = await env(tt);
  await operator(tt, e);
  await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, sample('headless'));
  const { head } = await readyCluster(e, 'headless');
  // A kubelet would keep the old pod Terminating for its grace period; here it goes at once, the create races the cache.
  await e.kube.delete({ ...PODS, namespace: e.ns.name, name: head.metadata.name! });
  const [next] = await until(async () => {
    const hs = await pods(e, 'ray.io/cluster=headless,ray.io/node-type=head');
    return hs.length === 1 && hs[0]!.metadata.uid !== head.metadata.uid ? hs : undefined;
  }, 'the new head');
  tt.not(next!.metadata.name, head.metadata.name);
  await until(async () => (await events(e, 'CreatedHeadPod')).length === 2, 'two CreatedHeadPod events');
  await markReady(e, next!, '10.9.0.3');
  await until(
    async () => ((await getCluster(e, 'headless'))!.status as RayClusterStatus).head?.podName === next!.metadata.name,
    'status names it',
  );
  tt.equal((await pods(e, 'ray.io/cluster=headless,ray.io/node-type=head')).length, 1, 'one head');
});

t.test(
  'embedded GCS storage (backend rocksdb): the claim before the head, owned per deletionPolicy; claimName creates none',
  async (tt) => {
    const e = await env(tt);
    await operator(tt, e);
    const withStorage = (name: string, storage: Record<string, unknown>): RayCluster => {
      const c = sample(name);
      (c.spec as Record<string, unknown>).gcsFaultToleranceOptions = { backend: 'rocksdb', storage };
      return c;
    };
    const claim = (name: string) => e.kube.getOrUndefined({ ...PERSISTENTVOLUMECLAIMS, namespace: e.ns.name, name });
    // Owned (DeleteWithCluster, the default): the claim exists when the head is created.
    await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, withStorage('rocks', { size: '2Gi' }));
    const [head] = await until(async () => {
      const hs = await pods(e, 'ray.io/cluster=rocks,ray.io/node-type=head');
      return hs.length === 1 ? hs : undefined;
    }, 'the head');
    const owned = await claim('rocks-gcs-pvc');
    const cluster = (await getCluster(e, 'rocks'))!;
    tt.ok(owned, 'the claim was there before the head');
    tt.same(
      owned?.metadata.ownerReferences?.map((o) => [o.kind, o.name, o.uid, o.controller]),
      [['RayCluster', 'rocks', cluster.metadata.uid, true]],
      'owned by the cluster',
    );
    tt.same(owned?.metadata.labels, { 'ray.io/cluster': 'rocks' });
    tt.match((owned as { spec?: unknown } | undefined)?.spec, {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '2Gi' } },
    });
    tt.same(
      head!.spec?.volumes?.find((v) => v.name === 'gcs-storage'),
      { name: 'gcs-storage', persistentVolumeClaim: { claimName: 'rocks-gcs-pvc' } },
      'the head mounts it',
    );
    const [created] = await until(async () => {
      const ev = (await events(e, 'CreatedPVC')).filter((x) => x.involvedObject.name === 'rocks');
      return ev.length > 0 ? ev : undefined;
    }, 'the CreatedPVC event');
    tt.equal(created?.message, `Created PersistentVolumeClaim ${e.ns.name}/rocks-gcs-pvc for the GCS storage`);
    tt.notOk(cluster.metadata.finalizers?.length, 'no Redis, so no Redis cleanup finalizer');
    tt.equal((await events(e, 'UnsupportedRayClusterFields')).length, 0, 'nothing unsupported');

    // Retain: no owner. A claim already there under that name (retained earlier) is adopted as it is.
    await e.kube.create(
      { ...PERSISTENTVOLUMECLAIMS, namespace: e.ns.name },
      {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: 'kept-gcs-pvc', labels: { mine: 'yes' } },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '3Gi' } } },
      },
    );
    await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, withStorage('kept', { deletionPolicy: 'Retain' }));
    await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, withStorage('retained', { deletionPolicy: 'Retain' }));
    // claimName: the user's claim, none created.
    await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, withStorage('byo', { claimName: 'mine' }));
    for (const name of ['kept', 'retained', 'byo'])
      await until(async () => (await pods(e, `ray.io/cluster=${name},ray.io/node-type=head`)).length === 1, `${name}: head`);
    const retained = await claim('retained-gcs-pvc');
    tt.same(retained?.metadata.ownerReferences ?? [], [], 'Retain: no owner reference');
    const kept = await claim('kept-gcs-pvc');
    tt.same([kept?.metadata.labels, kept?.metadata.ownerReferences], [{ mine: 'yes' }, undefined], 'an existing claim is left as it was');
    const [drift] = await until(async () => {
      const ev = (await events(e, 'FailedToCreatePVC')).filter((x) => x.involvedObject.name === 'kept');
      return ev.length > 0 ? ev : undefined;
    }, 'the drift warning');
    tt.equal(drift?.type, 'Warning');
    tt.match(
      drift?.message,
      /kept-gcs-pvc differs from spec.gcsFaultToleranceOptions.storage \(size 3Gi, spec 1Gi\) and cannot be reconfigured in place/,
    );
    tt.equal((await events(e, 'FailedToCreatePVC')).filter((x) => x.involvedObject.name !== 'kept').length, 0, 'no warning for the others');
    const all = (await e.kube.list({ ...PERSISTENTVOLUMECLAIMS, namespace: e.ns.name })).items.map((c) => c.metadata.name).sort();
    tt.same(all, ['kept-gcs-pvc', 'retained-gcs-pvc', 'rocks-gcs-pvc'], 'claimName: nothing created');
    const [byoHead] = await pods(e, 'ray.io/cluster=byo,ray.io/node-type=head');
    tt.same(
      byoHead?.spec?.volumes?.find((v) => v.name === 'gcs-storage'),
      { name: 'gcs-storage', persistentVolumeClaim: { claimName: 'mine' } },
    );
  },
);

t.test("embedded GCS storage: no head until its claim can be used (made, not being deleted, not another cluster's)", async (tt) => {
  const e = await env(tt);
  await operator(tt, e);
  const rocks = (name: string): RayCluster => {
    const c = sample(name);
    (c.spec as Record<string, unknown>).gcsFaultToleranceOptions = { backend: 'rocksdb' };
    return c;
  };
  const pvc = (name: string, metadata: Record<string, unknown> = {}) => ({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, ...metadata },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
  });
  const warning = (cluster: string, pattern: RegExp) =>
    until(async () => {
      const ev = (await events(e, 'FailedToCreatePVC')).filter((x) => x.involvedObject.name === cluster && pattern.test(x.message ?? ''));
      return ev[0];
    }, `${cluster}: ${pattern}`);
  const heads = (cluster: string) => pods(e, `ray.io/cluster=${cluster},ray.io/node-type=head`);
  const quota = {
    apiVersion: 'v1',
    kind: 'ResourceQuota',
    metadata: { name: 'no-claims' },
    spec: { hard: { persistentvolumeclaims: '0' } },
  };
  const QUOTAS = { group: '', version: 'v1', plural: 'resourcequotas' };

  // The claim cannot be made (a quota of none): a Warning, no head; once it can, the claim and then the head.
  await e.kube.create({ ...QUOTAS, namespace: e.ns.name }, quota);
  // Quota admission enforces what the status says; no kube-controller-manager here to write it.
  const none = { persistentvolumeclaims: '0' };
  await e.kube.patch(
    { ...QUOTAS, namespace: e.ns.name, name: 'no-claims', subresource: 'status' },
    { status: { hard: none, used: none } },
    MERGE_PATCH,
  );
  await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, rocks('quota'));
  const refused = await warning('quota', /^Failed creating PersistentVolumeClaim .*\/quota-gcs-pvc, /);
  tt.equal(refused.type, 'Warning');
  tt.same(await heads('quota'), [], 'no head while the claim cannot be made');
  await e.kube.delete({ ...QUOTAS, namespace: e.ns.name, name: 'no-claims' });
  await until(async () => (await heads('quota')).length === 1, 'quota: the head once the claim is made');
  tt.ok(await e.kube.getOrUndefined({ ...PERSISTENTVOLUMECLAIMS, namespace: e.ns.name, name: 'quota-gcs-pvc' }), 'the claim');

  // A claim of that name controlled by another RayCluster: never used.
  await e.kube.create(
    { ...PERSISTENTVOLUMECLAIMS, namespace: e.ns.name },
    pvc('other-gcs-pvc', {
      ownerReferences: [
        { apiVersion: 'ray.io/v1', kind: 'RayCluster', name: 'other', uid: '00000000-0000-0000-0000-000000000001', controller: true },
      ],
    }),
  );
  await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, rocks('other'));
  await warning('other', /other-gcs-pvc belongs to another RayCluster \(other, uid 00000000-0000-0000-0000-000000000001\)/);

  // A claim being deleted (the old cluster's, held by a finalizer): the head waits; once it is gone, a new claim and the head.
  await e.kube.create(
    { ...PERSISTENTVOLUMECLAIMS, namespace: e.ns.name },
    pvc('going-gcs-pvc', { finalizers: ['raykeeper.io/test-hold'] }),
  );
  await e.kube.delete({ ...PERSISTENTVOLUMECLAIMS, namespace: e.ns.name, name: 'going-gcs-pvc' });
  await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, rocks('going'));
  await warning('going', /going-gcs-pvc is being deleted; the head waits for a new one/);
  tt.same(await heads('going'), [], 'no head on a claim being deleted');
  tt.same(await heads('other'), [], "no head on another cluster's claim");
  await e.kube.patch(
    { ...PERSISTENTVOLUMECLAIMS, namespace: e.ns.name, name: 'going-gcs-pvc' },
    { metadata: { finalizers: null } },
    MERGE_PATCH,
  );
  await until(async () => (await heads('going')).length === 1, 'going: the head on a new claim');
  const fresh = await e.kube.get({ ...PERSISTENTVOLUMECLAIMS, namespace: e.ns.name, name: 'going-gcs-pvc' });
  tt.equal(fresh.metadata.deletionTimestamp, undefined, 'a new claim, not the one deleted');
  tt.equal(fresh.metadata.ownerReferences?.[0]?.name, 'going');
});
