// Kubernetes behaviour our controller and webhook rely on, proven against the real kube-apiserver with
// our CRDs: round-trips keep unknown fields, /status is separate from the main resource, finalizers
// hold a deleted object with deletionTimestamp, stale resourceVersions get 409, schema rules.
import t from 'tap';
import { JSON_PATCH, KubeApiError, MERGE_PATCH, type ResourceRef, resourcePath } from '../../kube/client.ts';
import { RAYCLUSTERS, RAYJOBS, type RayCluster } from '../../src/types.ts';
import { testNamespace } from '../helpers/control-plane.ts';

const FINALIZER = 'ray.io/gcs-ft-redis-cleanup-finalizer';

function rayCluster(name: string, extra: Record<string, unknown> = {}): Record<string, any> {
  return {
    apiVersion: 'ray.io/v1',
    kind: 'RayCluster',
    metadata: { name },
    spec: {
      rayVersion: '2.46.0',
      gcsFaultToleranceOptions: {
        redisAddress: 'redis:6379',
        redisPassword: { valueFrom: { secretKeyRef: { name: 'redis-password-secret', key: 'password' } } },
      },
      headGroupSpec: {
        rayStartParams: { 'num-cpus': '0' },
        template: { spec: { containers: [{ name: 'ray-head', image: 'rayproject/ray:2.46.0', someFutureField: { x: 1 } }] } },
        futureHeadOption: true,
      },
      workerGroupSpecs: [
        { groupName: 'small', replicas: 1, template: { spec: { containers: [{ name: 'w', image: 'rayproject/ray:2.46.0' }] } } },
      ],
      aKubeRayFieldWeDoNotType: { nested: ['kept'] },
    },
    ...extra,
  };
}

async function status(p: Promise<unknown>): Promise<number> {
  return p.then(
    () => 200,
    (err: unknown) => (err instanceof KubeApiError ? err.statusCode : -1),
  );
}

t.test('RayCluster round-trips; unknown fields are kept where KubeRay has them, pruned at the root', async (t) => {
  const { kube, name: ns } = await testNamespace(t);
  const base = { ...RAYCLUSTERS, namespace: ns };
  const rc = { ...base, name: 'rc' };
  const created = await kube.create(base, { ...rayCluster('rc'), notInAnySchema: 1, status: { state: 'ready' } });
  t.same(created.spec, rayCluster('rc').spec, 'spec stored exactly as sent (typed + preserved fields)');
  t.equal(created.notInAnySchema, undefined, 'a root-level unknown field is pruned (structural schema)');
  t.equal(created.status, undefined, 'status on CREATE is dropped (status subresource)');
  const read = await kube.get(rc);
  t.same(read.spec, created.spec);

  // Typed fields are validated.
  const bad = rayCluster('bad');
  bad.spec.headGroupSpec.rayStartParams = { 'num-cpus': 0 };
  t.equal(await status(kube.create(base, bad)), 422, 'rayStartParams values must be strings (as in KubeRay)');
  t.equal(await status(kube.create(base, { ...rayCluster('nohead'), spec: { rayVersion: 'x' } })), 422, 'headGroupSpec is required');
  const badBackend = rayCluster('backend');
  badBackend.spec.gcsFaultToleranceOptions.backend = 'etcd';
  t.equal(await status(kube.create(base, badBackend)), 422, 'backend must be redis or rocksdb');
  // backend is immutable (CEL transition rule), other options are not.
  await kube.patch(rc, { spec: { gcsFaultToleranceOptions: { externalStorageNamespace: 'ns-1' } } }, MERGE_PATCH);
  const immut = await kube.patch(rc, { spec: { gcsFaultToleranceOptions: { backend: 'rocksdb' } } }, MERGE_PATCH).catch((e: unknown) => e);
  t.ok(
    immut instanceof KubeApiError && immut.statusCode === 422 && /backend is immutable/.test(immut.message),
    'changing the backend is refused',
  );
  t.equal(
    await status(kube.patch(rc, { spec: { gcsFaultToleranceOptions: { backend: 'redis' } } }, MERGE_PATCH)),
    200,
    'setting the default explicitly is no change',
  );
  // Embedded GCS storage's block (KubeRay v1.7's GcsEmbeddedStorage) is typed, so kept; deletionPolicy is an enum.
  const storage = { size: '2Gi', storageClassName: 'fast', accessModes: ['ReadWriteOnce'], subPath: 'gcs', deletionPolicy: 'Retain' };
  const rocks = rayCluster('rocks');
  rocks.spec.gcsFaultToleranceOptions = { backend: 'rocksdb', storage };
  t.same((await kube.create(base, rocks)).spec?.gcsFaultToleranceOptions, { backend: 'rocksdb', storage }, 'storage kept as sent');
  const claim = rayCluster('claim');
  claim.spec.gcsFaultToleranceOptions = { backend: 'rocksdb', storage: { claimName: 'mine' } };
  t.equal(await status(kube.create(base, claim)), 200, 'claimName');
  const badPolicy = rayCluster('policy');
  badPolicy.spec.gcsFaultToleranceOptions = { backend: 'rocksdb', storage: { deletionPolicy: 'Delete' } };
  t.equal(await status(kube.create(base, badPolicy)), 422, 'deletionPolicy must be DeleteWithCluster or Retain');
  const badSize = rayCluster('size');
  badSize.spec.gcsFaultToleranceOptions = { backend: 'rocksdb', storage: { size: 'lots' } };
  t.equal(await status(kube.create(base, badSize)), 422, 'size must be a quantity');
});

t.test('/status is its own subresource', async (t) => {
  const { kube, name: ns } = await testNamespace(t);
  const rc = { ...RAYCLUSTERS, namespace: ns, name: 'rc' };
  const rcStatus = { ...rc, subresource: 'status' };
  await kube.create(rc, rayCluster('rc'));
  const afterStatus = await kube.patch(
    rcStatus,
    { status: { state: 'ready', desiredWorkerReplicas: 1 }, spec: { rayVersion: 'changed' } },
    MERGE_PATCH,
  );
  t.same(afterStatus.status, { state: 'ready', desiredWorkerReplicas: 1 }, 'status written through /status');
  t.equal(afterStatus.spec?.rayVersion, '2.46.0', 'a spec change sent to /status is ignored');
  const afterMain = await kube.patch(rc, { status: { state: 'suspended' }, metadata: { labels: { a: 'b' } } }, MERGE_PATCH);
  t.equal(afterMain.status?.state, 'ready', 'a status change sent to the main resource is ignored');
  t.equal(afterMain.metadata.labels?.a, 'b');
  t.equal(await status(kube.patch(rcStatus, { status: { desiredWorkerReplicas: 'many' } }, MERGE_PATCH)), 422, 'status is typed');

  // RayJob: the deployment status enum includes "" (KubeRay's encoding of New) and New.
  const jobStatus = { ...RAYJOBS, namespace: ns, name: 'j', subresource: 'status' };
  const job = await kube.create(
    { ...RAYJOBS, namespace: ns },
    {
      apiVersion: 'ray.io/v1',
      kind: 'RayJob',
      metadata: { name: 'j' },
      spec: { entrypoint: 'python -c "print(1)"', futureField: 'kept' },
      status: { jobDeploymentStatus: 'Running' },
    },
  );
  t.equal(job.status, undefined, 'a RayJob created with status is stored without it');
  t.equal(job.spec?.futureField, 'kept');
  for (const value of ['', 'New', 'Initializing', 'Complete']) {
    const r = await kube.patch(jobStatus, { status: { jobDeploymentStatus: value } }, MERGE_PATCH);
    t.equal(r.status?.jobDeploymentStatus, value, `jobDeploymentStatus ${JSON.stringify(value)} accepted`);
  }
  t.equal(
    await status(kube.patch(jobStatus, { status: { jobDeploymentStatus: 'Bogus' } }, MERGE_PATCH)),
    422,
    'an unknown deployment status is refused',
  );
  t.equal(await status(kube.patch(jobStatus, { status: { startTime: 'yesterday' } }, MERGE_PATCH)), 422, 'times are date-time');
  const times = await kube.patch(
    jobStatus,
    { status: { startTime: '2026-01-01T00:00:00Z', jobStatus: 'RUNNING', succeeded: 0, failed: 1 } },
    MERGE_PATCH,
  );
  t.match(times.status, { startTime: '2026-01-01T00:00:00Z', jobStatus: 'RUNNING', failed: 1 });
});

t.test('a finalizer holds a deleted object; removing it lets the object go', async (t) => {
  const { kube, name: ns } = await testNamespace(t);
  const rc = { ...RAYCLUSTERS, namespace: ns, name: 'rc' };
  await kube.create(rc, rayCluster('rc', { metadata: { name: 'rc', finalizers: [FINALIZER] } }));
  const deleted = await kube.request<RayCluster>('DELETE', resourcePath(rc)); // held by a finalizer: the answer is the object
  t.ok(deleted.metadata.deletionTimestamp, 'DELETE answers with the object, deletionTimestamp set');
  const held = await kube.get(rc);
  t.ok(held.metadata.deletionTimestamp, 'the object is still there, marked for deletion');
  t.same(held.metadata.finalizers, [FINALIZER]);
  t.equal(
    await status(kube.patch(rc, { metadata: { finalizers: [FINALIZER, 'other/finalizer'] } }, MERGE_PATCH)),
    422,
    'no new finalizer on a deleting object',
  );
  // Release with a JSON patch guarded by a test op (how our controller removes it).
  const guard = [
    { op: 'test', path: '/metadata/finalizers', value: ['someone-else'] },
    { op: 'remove', path: '/metadata/finalizers/0' },
  ];
  t.equal(await status(kube.patch(rc, guard, JSON_PATCH)), 422, 'a failed test op changes nothing');
  await kube.patch(
    rc,
    [
      { op: 'test', path: '/metadata/finalizers', value: [FINALIZER] },
      { op: 'remove', path: '/metadata/finalizers/0' },
    ],
    JSON_PATCH,
  );
  t.equal(await status(kube.get(rc)), 404, 'gone once the last finalizer is removed');
});

t.test('a stale resourceVersion is a 409 Conflict', async (t) => {
  const { kube, name: ns } = await testNamespace(t);
  const rc = { ...RAYCLUSTERS, namespace: ns, name: 'rc' };
  const v1 = await kube.create(rc, rayCluster('rc'));
  const v2 = await kube.replace(rc, { ...v1, metadata: { ...v1.metadata, labels: { step: '2' } } });
  t.not(v2.metadata.resourceVersion, v1.metadata.resourceVersion);
  const stale = await kube.replace(rc, { ...v1, metadata: { ...v1.metadata, labels: { step: 'stale' } } }).catch((e: unknown) => e);
  t.ok(stale instanceof KubeApiError, 'refused');
  t.equal((stale as KubeApiError).statusCode, 409);
  t.equal((stale as KubeApiError).reason, 'Conflict');
  t.equal(
    await status(
      kube.patch(
        { ...rc, subresource: 'status' },
        { metadata: { resourceVersion: v1.metadata.resourceVersion }, status: { state: 'x' } },
        MERGE_PATCH,
      ),
    ),
    409,
    'also for a guarded status patch',
  );
  t.equal((await kube.get(rc)).metadata.labels?.step, '2', 'the stale write changed nothing');
});

t.test('printer columns', async (t) => {
  const { kube, name: ns } = await testNamespace(t);
  // The server-side table kubectl prints (a meta.k8s.io Table, not the resource's kind: a raw request).
  const table = (ref: ResourceRef) =>
    kube.request<{ columnDefinitions: Array<{ name: string }>; rows: Array<{ cells: unknown[] }> }>('GET', resourcePath(ref), {
      accept: 'application/json;as=Table;v=v1;g=meta.k8s.io',
    });
  await kube.create({ ...RAYCLUSTERS, namespace: ns }, rayCluster('rc'));
  await kube.patch(
    { ...RAYCLUSTERS, namespace: ns, name: 'rc', subresource: 'status' },
    { status: { state: 'ready', desiredWorkerReplicas: 3 } },
    MERGE_PATCH,
  );
  const rc = await table({ ...RAYCLUSTERS, namespace: ns });
  t.same(
    rc.columnDefinitions.map((c: { name: string }) => c.name),
    ['Name', 'desired workers', 'available workers', 'status', 'age'],
  );
  t.same(rc.rows[0]?.cells.slice(0, 4), ['rc', 3, null, 'ready']);
  await kube.create({ ...RAYJOBS, namespace: ns }, { apiVersion: 'ray.io/v1', kind: 'RayJob', metadata: { name: 'j' }, spec: {} });
  await kube.patch(
    { ...RAYJOBS, namespace: ns, name: 'j', subresource: 'status' },
    { status: { jobDeploymentStatus: 'Running', jobStatus: 'RUNNING', rayClusterName: 'j-abc' } },
    MERGE_PATCH,
  );
  const rj = await table({ ...RAYJOBS, namespace: ns });
  t.same(
    rj.columnDefinitions.map((c: { name: string }) => c.name),
    ['Name', 'job status', 'deployment status', 'ray cluster name', 'start time', 'end time', 'age'],
  );
  t.same(rj.rows[0]?.cells.slice(0, 4), ['j', 'RUNNING', 'Running', 'j-abc']);
});
