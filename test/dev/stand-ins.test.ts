// The pure decisions of dev's stand-ins, as tables: the dashboard proxy's route by path and the owner
// garbage collector's orphan test; then the collector against the real kube-apiserver.
import t from 'tap';
import { routeOf } from '../../localcluster/dashboard-proxy.ts';
import { orphaned, startOwnerGarbageCollector } from '../../localcluster/owner-gc.ts';
import type { OwnerReference } from '../../kube/model.ts';
import { env, quiet, until } from '../helpers/harness.ts';
import { CONFIGMAPS, JOBS, SERVICES } from '../../kube/resources.ts';

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
    const e = await env(tt);
    const ns = e.ns.name;
    const gc = await startOwnerGarbageCollector({ kubeConfig: e.ns.kubeConfig, namespace: ns, logger: quiet });
    tt.teardown(() => gc.stop());
    const jobs = { ...JOBS, namespace: ns } as const;
    const services = { ...SERVICES, namespace: ns } as const;
    const configMaps = { ...CONFIGMAPS, namespace: ns } as const;
    const owner = await e.kube.create(jobs, {
      metadata: { name: 'owner' },
      spec: { suspend: true, template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'x', command: ['true'] }] } } },
    });
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
