// Kubernetes behaviour our controller and webhook rely on, proven against the real kube-apiserver with
// our CRDs: round-trips keep unknown fields, /status is separate from the main resource, finalizers
// hold a deleted object with deletionTimestamp, stale resourceVersions get 409, schema rules.
import t from 'tap';
import { ApiError, JSON_PATCH, type KubeRest } from '../../localcluster/rest.ts';
import { testNamespace } from '../helpers/control-plane.ts';

const FINALIZER = 'ray.io/gcs-ft-redis-cleanup-finalizer';

function rayCluster(name: string, extra: Record<string, unknown> = {}): Record<string, any> {
  return {
    apiVersion: 'ray.io/v1',
    kind: 'RayCluster',
    metadata: { name },
    spec: {
      rayVersion: '2.46.0',
      gcsFaultToleranceOptions: { redisAddress: 'redis:6379', redisPassword: { valueFrom: { secretKeyRef: { name: 'redis-password-secret', key: 'password' } } } },
      headGroupSpec: {
        rayStartParams: { 'num-cpus': '0' },
        template: { spec: { containers: [{ name: 'ray-head', image: 'rayproject/ray:2.46.0', someFutureField: { x: 1 } }] } },
        futureHeadOption: true,
      },
      workerGroupSpecs: [{ groupName: 'small', replicas: 1, template: { spec: { containers: [{ name: 'w', image: 'rayproject/ray:2.46.0' }] } } }],
      aKubeRayFieldWeDoNotType: { nested: ['kept'] },
    },
    ...extra,
  };
}

async function status(p: Promise<unknown>): Promise<number> {
  return p.then(
    () => 200,
    (err: unknown) => (err instanceof ApiError ? err.status : -1),
  );
}

t.test('RayCluster round-trips; unknown fields are kept where KubeRay has them, pruned at the root', async (t) => {
  const { rest, name: ns } = await testNamespace(t);
  const base = `/apis/ray.io/v1/namespaces/${ns}/rayclusters`;
  const created = await rest.post(base, { ...rayCluster('rc'), notInAnySchema: 1, status: { state: 'ready' } });
  t.same(created.spec, rayCluster('rc').spec, 'spec stored exactly as sent (typed + preserved fields)');
  t.equal(created.notInAnySchema, undefined, 'a root-level unknown field is pruned (structural schema)');
  t.equal(created.status, undefined, 'status on CREATE is dropped (status subresource)');
  const read = await rest.get(`${base}/rc`);
  t.same(read.spec, created.spec);

  // Typed fields are validated.
  const bad = rayCluster('bad');
  bad.spec.headGroupSpec.rayStartParams = { 'num-cpus': 0 };
  t.equal(await status(rest.post(base, bad)), 422, 'rayStartParams values must be strings (as in KubeRay)');
  t.equal(await status(rest.post(base, { ...rayCluster('nohead'), spec: { rayVersion: 'x' } })), 422, 'headGroupSpec is required');
  const badBackend = rayCluster('backend');
  badBackend.spec.gcsFaultToleranceOptions.backend = 'etcd';
  t.equal(await status(rest.post(base, badBackend)), 422, 'backend must be redis or rocksdb');
  // backend is immutable (CEL transition rule), other options are not.
  await rest.patch(`${base}/rc`, { spec: { gcsFaultToleranceOptions: { externalStorageNamespace: 'ns-1' } } });
  const immut = await rest.patch(`${base}/rc`, { spec: { gcsFaultToleranceOptions: { backend: 'rocksdb' } } }).catch((e: ApiError) => e);
  t.ok(immut instanceof ApiError && immut.status === 422 && /backend is immutable/.test(immut.message), 'changing the backend is refused');
  t.equal(await status(rest.patch(`${base}/rc`, { spec: { gcsFaultToleranceOptions: { backend: 'redis' } } })), 200, 'setting the default explicitly is no change');
});

t.test('/status is its own subresource', async (t) => {
  const { rest, name: ns } = await testNamespace(t);
  const base = `/apis/ray.io/v1/namespaces/${ns}/rayclusters`;
  await rest.post(base, rayCluster('rc'));
  const afterStatus = await rest.patch(`${base}/rc/status`, { status: { state: 'ready', desiredWorkerReplicas: 1 }, spec: { rayVersion: 'changed' } });
  t.same(afterStatus.status, { state: 'ready', desiredWorkerReplicas: 1 }, 'status written through /status');
  t.equal(afterStatus.spec.rayVersion, '2.46.0', 'a spec change sent to /status is ignored');
  const afterMain = await rest.patch(`${base}/rc`, { status: { state: 'suspended' }, metadata: { labels: { a: 'b' } } });
  t.equal(afterMain.status.state, 'ready', 'a status change sent to the main resource is ignored');
  t.equal(afterMain.metadata.labels.a, 'b');
  t.equal(await status(rest.patch(`${base}/rc/status`, { status: { desiredWorkerReplicas: 'many' } })), 422, 'status is typed');

  // RayJob: the deployment status enum includes "" (KubeRay's encoding of New) and New.
  const jobs = `/apis/ray.io/v1/namespaces/${ns}/rayjobs`;
  const job = await rest.post(jobs, { apiVersion: 'ray.io/v1', kind: 'RayJob', metadata: { name: 'j' }, spec: { entrypoint: 'python -c "print(1)"', futureField: 'kept' }, status: { jobDeploymentStatus: 'Running' } });
  t.equal(job.status, undefined, 'a RayJob created with status is stored without it');
  t.equal(job.spec.futureField, 'kept');
  for (const value of ['', 'New', 'Initializing', 'Complete']) {
    const r = await rest.patch(`${jobs}/j/status`, { status: { jobDeploymentStatus: value } });
    t.equal(r.status.jobDeploymentStatus, value, `jobDeploymentStatus ${JSON.stringify(value)} accepted`);
  }
  t.equal(await status(rest.patch(`${jobs}/j/status`, { status: { jobDeploymentStatus: 'Bogus' } })), 422, 'an unknown deployment status is refused');
  t.equal(await status(rest.patch(`${jobs}/j/status`, { status: { startTime: 'yesterday' } })), 422, 'times are date-time');
  const times = await rest.patch(`${jobs}/j/status`, { status: { startTime: '2026-01-01T00:00:00Z', jobStatus: 'RUNNING', succeeded: 0, failed: 1 } });
  t.match(times.status, { startTime: '2026-01-01T00:00:00Z', jobStatus: 'RUNNING', failed: 1 });
});

t.test('a finalizer holds a deleted object; removing it lets the object go', async (t) => {
  const { rest, name: ns } = await testNamespace(t);
  const path = `/apis/ray.io/v1/namespaces/${ns}/rayclusters/rc`;
  await rest.post(`/apis/ray.io/v1/namespaces/${ns}/rayclusters`, rayCluster('rc', { metadata: { name: 'rc', finalizers: [FINALIZER] } }));
  const deleted = await rest.delete(path);
  t.ok(deleted.metadata.deletionTimestamp, 'DELETE answers with the object, deletionTimestamp set');
  const held = await rest.get(path);
  t.ok(held.metadata.deletionTimestamp, 'the object is still there, marked for deletion');
  t.same(held.metadata.finalizers, [FINALIZER]);
  t.equal(await status(rest.patch(path, { metadata: { finalizers: [FINALIZER, 'other/finalizer'] } })), 422, 'no new finalizer on a deleting object');
  // Release with a JSON patch guarded by a test op (how our controller removes it).
  const guard = [
    { op: 'test', path: '/metadata/finalizers', value: ['someone-else'] },
    { op: 'remove', path: '/metadata/finalizers/0' },
  ];
  t.equal(await status(rest.patch(path, guard, JSON_PATCH)), 422, 'a failed test op changes nothing');
  await rest.patch(
    path,
    [
      { op: 'test', path: '/metadata/finalizers', value: [FINALIZER] },
      { op: 'remove', path: '/metadata/finalizers/0' },
    ],
    JSON_PATCH,
  );
  t.equal(await status(rest.get(path)), 404, 'gone once the last finalizer is removed');
});

t.test('a stale resourceVersion is a 409 Conflict', async (t) => {
  const { rest, name: ns } = await testNamespace(t);
  const base = `/apis/ray.io/v1/namespaces/${ns}/rayclusters`;
  const v1 = await rest.post(base, rayCluster('rc'));
  const v2 = await rest.put(`${base}/rc`, { ...v1, metadata: { ...v1.metadata, labels: { step: '2' } } });
  t.not(v2.metadata.resourceVersion, v1.metadata.resourceVersion);
  const stale = await rest.put(`${base}/rc`, { ...v1, metadata: { ...v1.metadata, labels: { step: 'stale' } } }).catch((e: unknown) => e);
  t.ok(stale instanceof ApiError, 'refused');
  t.equal((stale as ApiError).status, 409);
  t.equal((stale as ApiError).reason, 'Conflict');
  t.equal(await status(rest.patch(`${base}/rc/status`, { metadata: { resourceVersion: v1.metadata.resourceVersion }, status: { state: 'x' } })), 409, 'also for a guarded status patch');
  t.equal((await rest.get(`${base}/rc`)).metadata.labels.step, '2', 'the stale write changed nothing');
});

t.test('printer columns', async (t) => {
  const { rest, name: ns } = await testNamespace(t);
  // The server-side table kubectl prints.
  const table = (r: KubeRest, path: string) => r.request('GET', path, { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' });
  await rest.post(`/apis/ray.io/v1/namespaces/${ns}/rayclusters`, rayCluster('rc'));
  await rest.patch(`/apis/ray.io/v1/namespaces/${ns}/rayclusters/rc/status`, { status: { state: 'ready', desiredWorkerReplicas: 3 } });
  const rc = await table(rest, `/apis/ray.io/v1/namespaces/${ns}/rayclusters`);
  t.same(
    rc.columnDefinitions.map((c: { name: string }) => c.name),
    ['Name', 'desired workers', 'available workers', 'status', 'age'],
  );
  t.same(rc.rows[0].cells.slice(0, 4), ['rc', 3, null, 'ready']);
  await rest.post(`/apis/ray.io/v1/namespaces/${ns}/rayjobs`, { apiVersion: 'ray.io/v1', kind: 'RayJob', metadata: { name: 'j' }, spec: {} });
  await rest.patch(`/apis/ray.io/v1/namespaces/${ns}/rayjobs/j/status`, { status: { jobDeploymentStatus: 'Running', jobStatus: 'RUNNING', rayClusterName: 'j-abc' } });
  const rj = await table(rest, `/apis/ray.io/v1/namespaces/${ns}/rayjobs`);
  t.same(
    rj.columnDefinitions.map((c: { name: string }) => c.name),
    ['Name', 'job status', 'deployment status', 'ray cluster name', 'start time', 'end time', 'age'],
  );
  t.same(rj.rows[0].cells.slice(0, 4), ['j', 'RUNNING', 'Running', 'j-abc']);
});
