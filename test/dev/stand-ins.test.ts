// The pure decisions of dev's stand-ins, as tables: the dashboard proxy's route by path, the owner
// garbage collector's orphan test and its pvc-protection release; then the collector against the real
// kube-apiserver.
import t, { type Test } from 'tap';
import { routeOf } from '../../localcluster/dashboard-proxy.ts';
import { orphaned, protectionReleasable, startOwnerGarbageCollector } from '../../localcluster/owner-gc.ts';
import type { OwnerReference, Pod } from '../../kube/model.ts';
import { env, quiet, until } from '../helpers/harness.ts';
import { CONFIGMAPS, JOBS, PERSISTENTVOLUMECLAIMS, PODS, SERVICES } from '../../kube/resources.ts';

/** A test namespace with the collector on it, and `owner(name)`: a suspended Job to own things. */
async function collectorIn(tt: Test) {
  const e = await env(tt);
  const ns = e.ns.name;
  const gc = await startOwnerGarbageCollector({ kubeConfig: e.ns.kubeConfig, namespace: ns, logger: quiet });
  tt.teardown(() => gc.stop());
  const owner = (name: string) =>
    e.kube.create(JOBS.at(ns), {
      metadata: { name },
      spec: { suspend: true, template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'x', command: ['true'] }] } } },
    });
  return { e, ns, owner };
}

t.test('routeOf: /<namespace>/<cluster>/<rest> -> the head dashboard port and /<rest>', async (tt) => {
  const ports = (ns: string, c: string) => (ns === 'default' && c === 'rayjob-sample-x' ? 41000 : undefined);
  const rows: Array<[string, ReturnType<typeof routeOf>]> = [
    ['/default/rayjob-sample-x/api/jobs/abc', { port: 41000, path: '/api/jobs/abc' }],
    ['/default/rayjob-sample-x/api/jobs/abc/logs/tail', { port: 41000, path: '/api/jobs/abc/logs/tail' }],
    ['/default/rayjob-sample-x/api/jobs/?limit=1', { port: 41000, path: '/api/jobs/?limit=1' }],
    ['/default/rayjob-sample-x', { port: 41000, path: '/' }],
    ['/default/rayjob-sample-x?x=1', { port: 41000, path: '/?x=1' }],
    ['/other/rayjob-sample-x/api/version', 'no Ray head of RayCluster other/rayjob-sample-x runs in raykeeper dev'],
    ['/default', 'expected /<namespace>/<cluster>/..., got /default'],
    ['/', 'expected /<namespace>/<cluster>/..., got /'],
  ];
  for (const [url, want] of rows) tt.same(routeOf(url, ports), want, url);
});

t.test('orphaned: every owner of a known kind gone', async (tt) => {
  const job = (name: string, uid: string): OwnerReference => ({ apiVersion: 'ray.io/v1', kind: 'RayJob', name, uid });
  const cluster = (name: string, uid: string): OwnerReference => ({ apiVersion: 'ray.io/v1', kind: 'RayCluster', name, uid });
  const cron = (name: string, uid: string): OwnerReference => ({
    apiVersion: 'ray.io/v1',
    kind: 'RayCronJob',
    name,
    uid,
    controller: true,
  });
  const existing = new Set(['ns/live-uid']);
  const exists = (ns: string, o: OwnerReference) => existing.has(`${ns}/${o.uid}`);
  const obj = (ownerReferences: OwnerReference[] | undefined, deletionTimestamp?: string) => ({
    metadata: { name: 'x', namespace: 'ns', ownerReferences, deletionTimestamp },
  });
  const rows: Array<[string, ReturnType<typeof obj>, boolean]> = [
    ['no owners', obj(undefined), false],
    ['empty owners', obj([]), false],
    ['its RayCluster exists', obj([cluster('c', 'live-uid')]), false],
    ['its RayCluster is gone', obj([cluster('c', 'dead-uid')]), true],
    ['its RayJob is gone', obj([job('j', 'dead-uid')]), true],
    ['its RayCronJob is gone (a RayJob of a tick)', obj([cron('c', 'dead-uid')]), true],
    ['its RayCronJob exists', obj([cron('c', 'live-uid')]), false],
    ['a same-named owner with another uid counts as gone', obj([cluster('c', 'other-uid')]), true],
    ['one of two owners exists', obj([cluster('c', 'dead-uid'), job('j', 'live-uid')]), false],
    [
      'an owner of a kind we cannot look up',
      obj([cluster('c', 'dead-uid'), { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'r', uid: 'dead' }]),
      false,
    ],
    ['already being deleted', obj([cluster('c', 'dead-uid')], '2026-01-01T00:00:00Z'), false],
  ];
  for (const [name, o, want] of rows) tt.equal(orphaned(o, exists), want, name);
});

t.test(
  'the owner garbage collector on the real kube-apiserver: dependents of a deleted owner go, others stay',
  { timeout: 60_000 },
  async (tt) => {
    const { e, ns, owner: makeOwner } = await collectorIn(tt);
    const jobs = { ...JOBS, namespace: ns } as const;
    const services = { ...SERVICES, namespace: ns } as const;
    const configMaps = { ...CONFIGMAPS, namespace: ns } as const;
    const owner = await makeOwner('owner');
    const other = await e.kube.create(configMaps, { metadata: { name: 'not-an-owner-kind' } });
    const svc = (name: string, ref: OwnerReference) => ({ metadata: { name, ownerReferences: [ref] }, spec: { ports: [{ port: 80 }] } });
    await e.kube.create(services, svc('owned-by-job', { apiVersion: 'batch/v1', kind: 'Job', name: 'owner', uid: owner.metadata.uid! }));
    await e.kube.create(
      services,
      svc('owned-by-configmap', { apiVersion: 'v1', kind: 'ConfigMap', name: other.metadata.name!, uid: 'gone-but-unknown-kind' }),
    );
    await e.kube.create(
      services,
      svc('owner-already-gone', { apiVersion: 'batch/v1', kind: 'Job', name: 'never-was', uid: 'no-such-uid' }),
    );
    await until(
      async () => !(await e.kube.getOrUndefined({ ...services, name: 'owner-already-gone' })),
      'a dependent whose owner never existed to be collected',
      30_000,
    );
    tt.ok(await e.kube.getOrUndefined({ ...services, name: 'owned-by-job' }), 'a dependent of a live owner stays');
    await e.kube.delete({ ...jobs, name: 'owner' }, { propagationPolicy: 'Background' });
    await until(
      async () => !(await e.kube.getOrUndefined({ ...services, name: 'owned-by-job' })),
      "the deleted Job's Service to be collected",
      30_000,
    );
    tt.ok(
      await e.kube.getOrUndefined({ ...services, name: 'owned-by-configmap' }),
      'an owner of a kind the collector does not know keeps its dependent',
    );
  },
);

t.test('protectionReleasable: a claim being deleted, no pod that has not ended mounts it', async (tt) => {
  const claim = (deleting: boolean, finalizers = ['kubernetes.io/pvc-protection']) => ({
    metadata: { name: 'c', namespace: 'ns', finalizers, ...(deleting ? { deletionTimestamp: '2026-12-06T12:00:00Z' } : {}) },
  });
  const pod = (claimName: string, phase = 'Running', namespace = 'ns') =>
    ({
      metadata: { name: 'p', namespace },
      spec: { containers: [], volumes: [{ name: 'v', persistentVolumeClaim: { claimName } }] },
      status: { phase },
    }) as Pod;
  const rows: Array<[string, ReturnType<typeof claim>, Pod[], boolean]> = [
    ['deleted, unused', claim(true), [], true],
    ['deleted, used by a running pod', claim(true), [pod('c')], false],
    ['deleted, used by a pending pod', claim(true), [pod('c', 'Pending')], false],
    ['deleted, its pod ended', claim(true), [pod('c', 'Succeeded'), pod('c', 'Failed')], true],
    ['deleted, another claim used', claim(true), [pod('d')], true],
    ['deleted, a pod of another namespace', claim(true), [pod('c', 'Running', 'other')], true],
    ['not being deleted', claim(false), [], false],
    ['no protection finalizer', claim(true, ['example.com/hold']), [], false],
  ];
  for (const [name, c, pods, want] of rows) tt.equal(protectionReleasable(c, pods), want, name);
});

t.test(
  'the collector: a claim owned by a deleted owner goes once no pod mounts it (pvc-protection released)',
  { timeout: 60_000 },
  async (tt) => {
    const { e, ns, owner: makeOwner } = await collectorIn(tt);
    const owner = await makeOwner('claim-owner');
    await e.kube.create(PERSISTENTVOLUMECLAIMS.at(ns), {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data', ownerReferences: [{ apiVersion: 'batch/v1', kind: 'Job', name: 'claim-owner', uid: owner.metadata.uid! }] },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    });
    await e.kube.create(PODS.at(ns), {
      metadata: { name: 'user' },
      spec: { containers: [{ name: 'c', image: 'x' }], volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'data' } }] },
    });
    await e.kube.delete(JOBS.at(ns, 'claim-owner'), { propagationPolicy: 'Background' });
    const held = await until(
      async () => {
        const c = await e.kube.getOrUndefined(PERSISTENTVOLUMECLAIMS.at(ns, 'data'));
        return c?.metadata.deletionTimestamp ? c : undefined;
      },
      'the claim deleted (its owner gone)',
      30_000,
    );
    tt.ok(held.metadata.finalizers?.includes('kubernetes.io/pvc-protection'), 'held by pvc-protection while a pod mounts it');
    await e.kube.delete(PODS.at(ns, 'user'));
    await until(
      async () => !(await e.kube.getOrUndefined(PERSISTENTVOLUMECLAIMS.at(ns, 'data'))),
      'the claim gone once no pod mounts it',
      30_000,
    );
  },
);
