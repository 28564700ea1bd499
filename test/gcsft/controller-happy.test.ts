// The RayCluster reconciler end to end on the real API server, with the test job runner running
// `raykeeper redis-cleanup` against a real redis-server.
import t, { type Test } from 'tap';
import {
  controllerInProcess,
  createCluster,
  createPods,
  env,
  type Env,
  events,
  FINALIZER,
  getCluster,
  jobRunner,
  listJobs,
  metricValue,
  rayCluster,
  rayKeys,
  redis,
  seedRay,
  until,
} from '../helpers/harness.ts';
import { RAYCLUSTERS } from '../../src/types.ts';
import { PODS } from '../../kube/resources.ts';
import { sleep } from '../../kube/backoff.ts';
import type { RunningController } from '../../controller/main.ts';

t.test('happy path: webhook absent, finalizer added; on delete pods go, one Job cleans Redis, finalizer released', async (tt) => {
  const e = await env(tt);
  const { server, client } = await redis(tt);
  await jobRunner(tt, e);
  const controller = await controllerInProcess(tt, e);
  const reads = () => apiReads(controller);
  // Created without the finalizer (no webhook installed), and with another controller's finalizer.
  const created = await createCluster(e, rayCluster('happy', `127.0.0.1:${server.port}`, { finalizers: ['example.com/other'] }));
  const ours = await seedRay(client, created.metadata.uid!);
  const theirs = await seedRay(client, 'some-other-cluster');
  await createPods(e, created);

  const withFinalizer = await until(async () => {
    const c = await getCluster(e, 'happy');
    return c?.metadata.finalizers?.includes(FINALIZER) ? c : undefined;
  }, 'the controller adds the finalizer');
  tt.same(withFinalizer.metadata.finalizers, ['example.com/other', FINALIZER], "the other controller's finalizer is kept");

  const readsBefore = reads();
  await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'happy' });
  // Our finalizer goes; the other one keeps the object, so we can look at it afterwards.
  const released = await until(async () => {
    const c = await getCluster(e, 'happy');
    return c && !c.metadata.finalizers?.includes(FINALIZER) ? c : undefined;
  }, 'the finalizer is released');
  tt.same(released.metadata.finalizers, ['example.com/other']);
  const read = deltas(readsBefore, reads());
  // Without the operator here (as beside KubeRay, which makes the pods): the cluster read before the Job is
  // built from it, the pods listed before the Job is created and before the release: 3 reads (7 before
  // the caches were trusted); a timed requeue that beats a watch event may add one or two.
  const total = read.rayclusters + read.pods + read.jobs;
  tt.ok(read.pods >= 2, `the pods listed before the Job and before the release (${read.pods})`);
  tt.ok(total <= 5, `few reads: ${JSON.stringify(read)}`);

  tt.same(await rayKeys(client, created.metadata.uid!), [], "this cluster's GCS data is gone from Redis");
  tt.same(await rayKeys(client, 'some-other-cluster'), theirs.sort(), "another cluster's data is intact");
  tt.ok(ours.length > 0);
  const pods = (await e.kube.list({ ...PODS, namespace: e.ns.name })).items;
  tt.equal(pods.length, 0, 'head and worker pods were deleted before the cleanup');
  const jobs = await listJobs(e);
  tt.equal(jobs.length, 1, 'exactly one cleanup Job');
  tt.equal(jobs[0]!.metadata.name, 'happy-redis-cleanup');
  tt.ok(
    jobs[0]!.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True'),
    'the Job completed',
  );
  await until(async () => (await events(e, 'RedisCleanupSucceeded')).length === 1, 'success event');
  const created_ = await events(e, 'CreatedRedisCleanupJob');
  tt.equal(created_.length, 1);
  tt.match(created_[0]!.message, new RegExp(created.metadata.uid!));

  // Dropping the other finalizer lets the object go for good.
  const rest = await getCluster(e, 'happy');
  await e.kube.patch({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'happy' }, [
    { op: 'test', path: '/metadata/finalizers', value: rest!.metadata.finalizers },
    { op: 'remove', path: '/metadata/finalizers/0' },
  ]);
  await until(async () => (await getCluster(e, 'happy')) === undefined, 'the RayCluster is gone');
});

t.test('a cluster deleted while its head pod is still terminating waits for it, then cleans up', async (tt) => {
  const e = await env(tt);
  const { server, client } = await redis(tt);
  await jobRunner(tt, e);
  const controller = await controllerInProcess(tt, e);
  const created = await createCluster(e, rayCluster('slowhead', `127.0.0.1:${server.port}`, { finalizers: [FINALIZER] }));
  await seedRay(client, created.metadata.uid!);
  // A scheduled head pod: without a kubelet it stays Terminating after DELETE (grace period).
  await createPods(e, created, { headNodeName: 'node-1' });
  await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'slowhead' });
  const head = await until(async () => {
    const p = await e.kube.getOrUndefined({
      ...PODS,
      namespace: e.ns.name,
      name: 'slowhead-head',
    });
    return p?.metadata.deletionTimestamp ? p : undefined;
  }, 'the head pod is being deleted');
  tt.ok(head);
  // Meanwhile no Job: GCS could still be writing. The control: the controller has seen the terminating
  // head and decided to wait for it.
  const waits = async () =>
    metricValue(
      await controller.manager.ctx.metrics.getSingleMetricAsString('raykeeper_raycluster_actions_total'),
      'raykeeper_raycluster_actions_total',
      'action="waitForHeadGone"',
    ) ?? 0;
  await until(async () => (await waits()) >= 1, 'the controller to decide to wait for the head pod');
  tt.equal((await listJobs(e)).length, 0, 'no cleanup while a head pod exists');
  tt.ok(await getCluster(e, 'slowhead'), 'cluster still there');
  // The "kubelet" finishes the pod.
  await e.kube.delete({ ...PODS, namespace: e.ns.name, name: 'slowhead-head' }, { gracePeriodSeconds: 0 });
  await until(async () => (await getCluster(e, 'slowhead')) === undefined, 'cluster gone after the cleanup', 60_000);
  tt.same(await rayKeys(client, created.metadata.uid!), []);
  tt.equal((await listJobs(e)).length, 1);
});

t.test(
  'a head pod that appears after the cleanup Job was created (an operator on a stale cache): cleaned again once it is gone',
  async (tt) => {
    const e = await env(tt);
    const { server, client } = await redis(tt);
    await controllerInProcess(tt, e);
    const created = await createCluster(e, rayCluster('late', `127.0.0.1:${server.port}`, { finalizers: [FINALIZER] }));
    const uid = created.metadata.uid!;
    await seedRay(client, uid);
    await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'late' });
    // No job runner yet, so the Job waits while the late pods appear.
    await until(async () => (await listJobs(e)).length === 1, 'the cleanup Job');
    await createPods(e, created);
    // Its "GCS" writes into the cluster's storage namespace for as long as the head pod exists.
    let writes = 0;
    let stop = false;
    const headRef = { ...PODS, namespace: e.ns.name, name: 'late-head' };
    const gcs = (async () => {
      while (!stop && (await e.kube.getOrUndefined(headRef))) {
        await client.hset(`RAY${uid}@KV`, 'session_name', `s${writes++}`);
        await sleep(20);
      }
    })();
    await jobRunner(tt, e);
    await until(async () => (await getCluster(e, 'late')) === undefined, 'the cluster to be gone', 60_000);
    stop = true;
    await gcs;
    tt.ok(writes > 0, `the late head wrote (${writes} writes)`);
    tt.same(await rayKeys(client, uid), [], "nothing is left, not even what the late head's GCS wrote after the first cleanup");
    const rerun = await events(e, 'RedisCleanupRerun');
    tt.equal(rerun.length, 1, 'one Warning: cleaning again');
    tt.equal(rerun[0]?.count ?? 1, 1, 'written once (not once per reconcile)');
    tt.equal(rerun[0]?.type, 'Warning');
    tt.match(rerun[0]?.message ?? '', /late-head/);
    tt.equal(
      (await e.kube.list({ ...PODS, namespace: e.ns.name }, { labelSelector: 'ray.io/cluster=late,ray.io/node-type in (head,worker)' }))
        .items.length,
      0,
      'the late pods were deleted',
    );
    tt.equal(
      (await events(e, 'CreatedRedisCleanupJob')).reduce((n, x) => n + (x.count ?? 1), 0),
      2,
      'two cleanup Jobs were created',
    );
  },
);

t.test('feature gate off: no finalizer on new clusters; a deleting cluster with ours is released, no Job', async (tt) => {
  const e = await env(tt);
  const { server, client } = await redis(tt);
  await controllerInProcess(tt, e, { env: { ENABLE_GCS_FT_REDIS_CLEANUP: 'false' } });
  await createCluster(e, rayCluster('plain', `127.0.0.1:${server.port}`));
  const marked = await createCluster(e, rayCluster('marked', `127.0.0.1:${server.port}`, { finalizers: [FINALIZER] }));
  await seedRay(client, marked.metadata.uid!);
  await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'marked' });
  await until(async () => (await getCluster(e, 'marked')) === undefined, 'the deleting cluster is not stuck');
  const disabled = await until(async () => (await events(e, 'RedisCleanupDisabled'))[0], 'warning event');
  tt.equal(disabled.type, 'Warning');
  tt.match(disabled.message, new RegExp(marked.metadata.uid!), 'names the storage namespace left behind');
  tt.match(disabled.message, /raykeeper redis-cleanup/);
  tt.equal((await rayKeys(client, marked.metadata.uid!)).length, 5, 'Redis untouched');
  tt.equal((await listJobs(e)).length, 0, 'no Job');
  const plain = await getCluster(e, 'plain');
  tt.notOk(plain?.metadata.finalizers?.includes(FINALIZER), 'no finalizer added while the gate is off');
});

t.test('clusters without Redis FT (FT off, rocksdb) get no finalizer', async (tt) => {
  const e = await env(tt);
  await controllerInProcess(tt, e);
  const off = rayCluster('noft', '127.0.0.1:1');
  off.metadata.annotations = {};
  off.spec!.headGroupSpec!.template!.spec!.containers![0]!.env = [];
  await createCluster(e, off);
  const rocks = rayCluster('rocks', '127.0.0.1:1');
  rocks.metadata.annotations = {};
  rocks.spec!.headGroupSpec!.template!.spec!.containers![0]!.env = [];
  rocks.spec!.gcsFaultToleranceOptions = { backend: 'rocksdb' };
  await createCluster(e, rocks);
  const redisOpts = rayCluster('opts', '127.0.0.1:1');
  redisOpts.metadata.annotations = {};
  redisOpts.spec!.headGroupSpec!.template!.spec!.containers![0]!.env = [];
  redisOpts.spec!.gcsFaultToleranceOptions = { redisAddress: '127.0.0.1:1' };
  await createCluster(e, redisOpts);
  // The options cluster is the positive control: once it has the finalizer, the others were seen too.
  await until(async () => (await getCluster(e, 'opts'))?.metadata.finalizers?.includes(FINALIZER), 'finalizer on the options cluster');
  tt.notOk((await getCluster(e, 'noft'))?.metadata.finalizers?.length);
  tt.notOk((await getCluster(e, 'rocks'))?.metadata.finalizers?.length);
});

/** GETs (and LISTs) the controller sent so far, by resource. */
function apiReads(c: RunningController): Record<'rayclusters' | 'pods' | 'jobs', number> {
  const count = (resource: string) =>
    [...c.manager.kube.requestCounts].filter(([k]) => k.startsWith('GET ') && k.endsWith(` ${resource}`)).reduce((n, [, v]) => n + v, 0);
  return { rayclusters: count('rayclusters'), pods: count('pods'), jobs: count('jobs') };
}

function deltas(before: ReturnType<typeof apiReads>, after: ReturnType<typeof apiReads>): ReturnType<typeof apiReads> {
  return { rayclusters: after.rayclusters - before.rayclusters, pods: after.pods - before.pods, jobs: after.jobs - before.jobs };
}

/** A GCS-FT cluster `name` (its GCS data seeded in a real Redis) whose pods the operator of an in-process controller made, and its finalizer. */
async function clusterWithPods(tt: Test, e: Env, name: string) {
  const { server, client } = await redis(tt);
  await jobRunner(tt, e);
  const controller = await controllerInProcess(tt, e, { withOperator: true });
  const created = await createCluster(e, rayCluster(name, `127.0.0.1:${server.port}`));
  await seedRay(client, created.metadata.uid!);
  // The operator makes the head and worker pods (no node here: they stay Pending, and go at once when deleted).
  await until(async () => (await e.kube.list({ ...PODS, namespace: e.ns.name })).items.length === 2, 'the operator made 2 pods');
  await until(async () => (await getCluster(e, name))?.metadata.finalizers?.includes(FINALIZER), 'the finalizer');
  return { controller, client, created };
}

t.test(
  'with the pod operator in the process (standalone): a deletion reads nothing from the API (the pod cache shows every pod it made)',
  async (tt) => {
    const e = await env(tt);
    const { controller, client, created } = await clusterWithPods(tt, e, 'alone');
    await until(
      async () => controller.manager.ctx.creationGate.cacheShowsCreates(created.metadata.uid!),
      'the gate: the pod cache shows both creates',
    );
    const before = apiReads(controller);
    await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'alone' });
    await until(async () => (await listJobs(e)).length === 1, 'the cleanup Job', 60_000);
    const toJob = deltas(before, apiReads(controller));
    await until(async () => (await getCluster(e, 'alone')) === undefined, 'the cluster to be gone', 60_000);
    const read = deltas(before, apiReads(controller));
    tt.same(await rayKeys(client, created.metadata.uid!), [], 'its GCS data is gone');
    tt.equal((await listJobs(e)).length, 1, 'one cleanup Job');
    tt.same(toJob, { rayclusters: 0, pods: 0, jobs: 0 }, 'the Job created without a read: pods decided on the cache');
    tt.same({ rayclusters: read.rayclusters, jobs: read.jobs }, { rayclusters: 0, jobs: 0 }, 'no cluster or Job read from the API');
    // A pod list only when a timed requeue beat the Job's watch event (the fresh path).
    tt.ok(read.pods <= 1, `at most one pod list (${read.pods})`);
  },
);

t.test('pods another process made (an earlier leader, a restart): the pods are listed from the API before the Job', async (tt) => {
  const e = await env(tt);
  const { controller: earlier, client, created } = await clusterWithPods(tt, e, 'handed');
  await earlier.stop();
  const later = await controllerInProcess(tt, e, { withOperator: true });
  tt.notOk(later.manager.ctx.creationGate.cacheShowsCreates(created.metadata.uid!), 'the new process made none of its pods');
  const before = apiReads(later);
  await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'handed' });
  await until(async () => (await listJobs(e)).length === 1, 'the cleanup Job', 60_000);
  const toJob = deltas(before, apiReads(later));
  tt.ok(toJob.pods >= 1, `the pods listed from the API before the Job (${toJob.pods})`);
  await until(async () => (await getCluster(e, 'handed')) === undefined, 'the cluster to be gone', 60_000);
  tt.same(await rayKeys(client, created.metadata.uid!), [], 'its GCS data is gone');
});
