// Cached reads and the failover clock, on the real kube-apiserver: the RayJob reconciler reads its RayJob,
// RayCluster and submitter Job from the informer caches (a steady Running RayJob costs no API reads),
// and the dashboard-failure clock lives in an annotation, so a new leader continues it.
import t, { type Test } from 'tap';
import { InformerFactory } from '../../kube/informer.ts';
import { rayJobCaches } from '../../controller/rayjob/module.ts';
import { STATUS_CHECK_FAILING_SINCE_ANNOTATION } from '../../src/rayjob/constants.ts';
import { headSpec, inState, manifest, rayJobHarness } from './helpers/harness.ts';
import { countingClient } from './helpers/counting-client.ts';
import { operatorRayClusterInformer, rayClusterInformer } from '../../controller/raycluster/informers.ts';
import type { ControllerContext } from '../../kube/reconciler.ts';
import { RAYCLUSTERS, RAYJOBS } from '../../src/types.ts';
import { MERGE_PATCH } from '../../kube/client.ts';
import { sleep } from '../../kube/backoff.ts';

/** A harness and a replica reading the RayJob caches, its API requests recorded in `calls`. */
async function cachedReplica(t: Test) {
  const h = await rayJobHarness(t);
  const factory = new InformerFactory(h.kube, { namespace: h.namespace });
  const caches = rayJobCaches(factory);
  factory.start();
  t.teardown(() => factory.stop());
  t.ok(await factory.waitForSync(), 'caches synced');
  const { kube, calls } = countingClient(h.ns.kubeConfig);
  t.teardown(() => kube.close());
  return { h, caches, calls, kube, cached: h.replica({ kube, caches }) };
}

/** The RayCluster `shared` (what a clusterSelector names), created by hand and `ready`. */
async function readySelectedCluster(h: Awaited<ReturnType<typeof rayJobHarness>>): Promise<void> {
  await h.kube.create(
    { ...RAYCLUSTERS, namespace: h.namespace },
    {
      apiVersion: 'ray.io/v1',
      kind: 'RayCluster',
      metadata: { name: 'shared' },
      spec: { headGroupSpec: headSpec(), workerGroupSpecs: [] },
    },
  );
  await h.markReady('shared');
}

t.test('a Running RayJob is reconciled from the caches: no GET of the RayJob, its RayCluster or its submitter', async (t) => {
  const { h, caches, calls, cached } = await cachedReplica(t);

  await h.create(manifest('steady', { entrypoint: 'sleep 60' }));
  const key = `${h.namespace}/steady`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    await cached.reconcile(key).catch(() => undefined);
    const job = await h.get('steady');
    if (job?.status?.jobStatus === 'RUNNING') break;
    if (job?.status?.rayClusterName) {
      const c = await h.cluster(job.status.rayClusterName);
      if (c && c.status?.state !== 'ready') await h.markReady(job.status.rayClusterName);
    }
    if (Date.now() > deadline) throw new Error(`not running: ${JSON.stringify(job?.status)}`);
    await sleep(100);
  }
  const stored = (await h.get('steady'))!;
  // Wait for the fact that matters: the cache holds the stored version of all three objects.
  const cluster = await h.cluster(stored.status?.rayClusterName ?? '');
  const submitter = (await h.submitterJob('steady')) as { metadata: { resourceVersion: string } };
  const upToDate = () =>
    caches.rayJobs.getByName(h.namespace, 'steady')?.metadata?.resourceVersion === stored.metadata.resourceVersion &&
    caches.clusters.getByName(h.namespace, cluster?.metadata.name ?? '')?.metadata?.resourceVersion === cluster?.metadata.resourceVersion &&
    caches.submitters.getByName(h.namespace, 'steady')?.metadata?.resourceVersion === submitter.metadata.resourceVersion;
  while (!upToDate()) {
    if (Date.now() > deadline) throw new Error('caches never caught up');
    await sleep(20);
  }
  t.ok(
    calls.some((c) => c.startsWith('GET ')),
    'positive control: the way there did read from the API (misses, guards)',
  );
  calls.length = 0;
  const dashboardBefore = h.dashboard.requests.length;
  for (let i = 0; i < 5; i++) await cached.reconcile(key);
  t.same(calls, [], 'five reconciles of a steady Running RayJob: no API request at all');
  t.equal(h.dashboard.requests.length - dashboardBefore, 5, 'one dashboard GET each (the Ray job status is not in any cache)');
  t.equal((await h.get('steady'))?.metadata.resourceVersion, stored.metadata.resourceVersion, 'nothing written');
});

t.test(
  'New to Running on the caches: the RayJob is not read again before creating its cluster or submitting, when the cache is our own last write',
  async (t) => {
    const { h, caches, calls, cached } = await cachedReplica(t);
    const rayJobGets = (name: string) => calls.filter((c) => c.startsWith('GET ') && c.endsWith(`/rayjobs/${name}`)).length;
    /** Reconciles `name` on caches that show its stored version, until it is RUNNING. */
    const drive = async (name: string, beforeEach: (pass: number) => Promise<void> = async () => undefined) => {
      const deadline = Date.now() + 30_000;
      for (let pass = 0; ; pass++) {
        const stored = await h.get(name);
        if (stored?.status?.jobStatus === 'RUNNING') return;
        while (caches.rayJobs.getByName(h.namespace, name)?.metadata.resourceVersion !== stored?.metadata.resourceVersion) {
          if (Date.now() > deadline) throw new Error('the cache never caught up');
          await sleep(20);
        }
        await beforeEach(pass);
        await cached.reconcile(`${h.namespace}/${name}`).catch(() => undefined);
        const job = await h.get(name);
        if (job?.status?.rayClusterName) {
          const c = await h.cluster(job.status.rayClusterName);
          if (c && c.status?.state !== 'ready') await h.markReady(job.status.rayClusterName);
        }
        if (Date.now() > deadline) throw new Error(`not running: ${JSON.stringify(job?.status)}`);
      }
    };

    await h.create(manifest('own', { entrypoint: 'sleep 60' }));
    await drive('own');
    t.equal(h.dashboard.submissions.length, 1, 'submitted once');
    t.equal((await h.clusters()).length, 1, 'one cluster');
    t.equal(rayJobGets('own'), 0, 'no GET of the RayJob on the way (the cluster create and the submission trusted our own write)');

    // Control: another writer changes the RayJob after each of our writes, so the cached copy is not ours.
    await h.create(manifest('touched', { entrypoint: 'sleep 60' }));
    let touches = 0;
    await drive('touched', async (pass) => {
      if (pass === 0) return; // New: the first pass writes (finalizer, status), nothing to guard
      await h.kube.patch(
        { ...RAYJOBS, namespace: h.namespace, name: 'touched' },
        { metadata: { annotations: { touched: String(++touches) } } },
        MERGE_PATCH,
      );
      const stored = await h.get('touched');
      while (caches.rayJobs.getByName(h.namespace, 'touched')?.metadata.resourceVersion !== stored?.metadata.resourceVersion)
        await sleep(20);
    });
    // Its cluster is created in the first reconcile, on our own write's answer (nothing to touch in between); the
    // submitter Job is created on the pass the ready cluster queues, decided on the cache: the copy is not ours.
    t.ok(rayJobGets('touched') >= 1, `the RayJob read before the submitter Job was created (${rayJobGets('touched')} GETs)`);
    t.equal(h.dashboard.submissions.length, 2, 'submitted once more (the second RayJob)');
  },
);

t.test(
  'each decision that waits only on our own write is made at once on its answer: New to the cluster created, and Running to the submission, in one reconcile each',
  async (t) => {
    const { h, caches, calls, cached } = await cachedReplica(t);
    const key = `${h.namespace}/quick`;
    const clusterPosts = () => calls.filter((c) => c.startsWith('POST ') && c.endsWith('/rayclusters')).length;
    /** Until the caches show the stored RayJob and `also()` holds. */
    const cachesShow = async (also: () => boolean = () => true) => {
      const stored = await h.get('quick');
      const deadline = Date.now() + 30_000;
      while (caches.rayJobs.getByName(h.namespace, 'quick')?.metadata.resourceVersion !== stored?.metadata.resourceVersion || !also()) {
        if (Date.now() > deadline) throw new Error('the caches never caught up');
        await sleep(20);
      }
    };
    await h.create(manifest('quick', { submissionMode: 'HTTPMode', entrypoint: 'sleep 60' }));
    await cachesShow();
    await cached.reconcile(key);
    const initializing = (await h.get('quick'))!;
    t.equal(initializing.status?.jobDeploymentStatus, 'Initializing', 'one reconcile: New with its names, then Initializing');
    t.equal((await h.clusters()).length, 1, 'and its RayCluster created, in the same reconcile');
    const clusterName = initializing.status?.rayClusterName ?? '';

    await h.markReady(clusterName);
    await cachesShow(() => caches.clusters.getByName(h.namespace, clusterName)?.status?.state === 'ready');
    await cached.reconcile(key);
    t.equal((await h.get('quick'))?.status?.jobDeploymentStatus, 'Running', 'the ready cluster: Running written');
    t.equal(h.dashboard.submissions.length, 1, 'and the Ray job submitted in the same reconcile');

    // The watch events of those writes queue it again: nothing is done twice.
    await cachesShow();
    for (let i = 0; i < 3; i++) await cached.reconcile(key);
    t.equal(clusterPosts(), 1, 'one cluster create');
    t.equal(h.dashboard.submissions.length, 1, 'one submission');
    t.equal(
      calls.filter((c) => c.startsWith('GET ') && c.endsWith('/rayjobs/quick')).length,
      0,
      'no GET of the RayJob: each decision was made on our own write',
    );
  },
);

t.test('a selected cluster already ready: New to the submission in one reconcile (the longest chain)', async (t) => {
  const { h, caches, cached } = await cachedReplica(t);
  await readySelectedCluster(h);
  await h.create(
    manifest('picky', {
      submissionMode: 'HTTPMode',
      entrypoint: 'sleep 60',
      clusterSelector: { 'ray.io/cluster': 'shared' },
      rayClusterSpec: undefined,
    }),
  );
  const stored = (await h.get('picky'))!;
  const deadline = Date.now() + 30_000;
  while (caches.rayJobs.getByName(h.namespace, 'picky')?.metadata.resourceVersion !== stored.metadata.resourceVersion) {
    if (Date.now() > deadline) throw new Error('the cache never caught up');
    await sleep(20);
  }
  await cached.reconcile(`${h.namespace}/picky`);
  t.equal((await h.get('picky'))?.status?.jobDeploymentStatus, 'Running', 'New, Initializing and Running written in one reconcile');
  t.equal(h.dashboard.submissions.length, 1, 'and the Ray job submitted in it');
});

t.test('Initializing written by someone else: the RayJob is read from the API before its cluster is created', async (t) => {
  const { h, caches, calls, cached } = await cachedReplica(t);
  await h.create(manifest('theirs', { submissionMode: 'HTTPMode', entrypoint: 'sleep 60' }));
  const created = (await h.get('theirs'))!;
  // Another controller (an earlier leader) named it and moved it to Initializing: not our write.
  const status = {
    jobDeploymentStatus: 'Initializing',
    jobId: 'theirs-aaaaa',
    rayClusterName: 'theirs-aaaaa',
    jobStatus: '',
    startTime: new Date().toISOString(),
  };
  await h.kube.replace({ ...RAYJOBS, namespace: h.namespace, name: 'theirs', subresource: 'status' }, { ...created, status });
  const stored = (await h.get('theirs'))!;
  const deadline = Date.now() + 30_000;
  while (caches.rayJobs.getByName(h.namespace, 'theirs')?.metadata.resourceVersion !== stored.metadata.resourceVersion) {
    if (Date.now() > deadline) throw new Error('the cache never caught up');
    await sleep(20);
  }
  calls.length = 0;
  await cached.reconcile(`${h.namespace}/theirs`);
  const get = calls.findIndex((c) => c.startsWith('GET ') && c.endsWith('/rayjobs/theirs'));
  const post = calls.findIndex((c) => c.startsWith('POST ') && c.endsWith('/rayclusters'));
  t.ok(post >= 0, 'the cluster was created');
  t.ok(get >= 0 && get < post, `the RayJob was read before (${calls.join(', ')})`);
});

t.test('a cluster this process created that the cluster cache has not shown yet is looked up, not created again', async (t) => {
  const { h, caches, calls, kube } = await cachedReplica(t);
  // The cluster cache lags behind our create: it shows no cluster at all.
  const hidden = new Proxy(caches.clusters, {
    get(target, p) {
      if (p === 'getByName') return () => undefined;
      if (p === 'list') return () => [];
      const v = Reflect.get(target, p) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  const lagging = h.replica({ kube, caches: { ...caches, clusters: hidden } });
  const key = `${h.namespace}/lag`;
  const cacheShowsStored = async () => {
    const stored = await h.get('lag');
    const deadline = Date.now() + 30_000;
    while (caches.rayJobs.getByName(h.namespace, 'lag')?.metadata.resourceVersion !== stored?.metadata.resourceVersion) {
      if (Date.now() > deadline) throw new Error('the cache never caught up');
      await sleep(20);
    }
  };
  await h.create(manifest('lag', { submissionMode: 'HTTPMode', entrypoint: 'sleep 60' }));
  await cacheShowsStored();
  await lagging.reconcile(key);
  const name = (await h.get('lag'))?.status?.rayClusterName ?? '';
  t.equal((await h.clusters()).length, 1, 'the first reconcile created the cluster');
  // The watch event of our Initializing write queues it again; the cluster cache still has not shown the cluster.
  await cacheShowsStored();
  await lagging.reconcile(key);
  t.equal(
    calls.filter((c) => c.startsWith('POST ') && c.endsWith('/rayclusters')).length,
    1,
    'no second create (it would be answered AlreadyExists)',
  );
  t.ok(
    calls.some((c) => c.startsWith('GET ') && c.endsWith(`/rayclusters/${name}`)),
    'the miss was looked up with a GET',
  );
  t.equal((await h.get('lag'))?.status?.jobDeploymentStatus, 'Initializing', 'waiting for the cluster to be ready');
});

t.test('the dashboard-failure clock survives a failover: a new leader continues it from the annotation', async (t) => {
  const h = await rayJobHarness(t, { machine: { statusCheckTimeoutSeconds: 30 } });
  await h.create(manifest('mute', { submissionMode: 'HTTPMode', entrypoint: 'sleep 60' }));
  await h.drive('mute', (j) => j?.status?.jobStatus === 'RUNNING', { autoReady: true });
  h.dashboard.down = true;
  await h.reconciler.reconcile(`${h.namespace}/mute`);
  const started = (await h.get('mute'))!;
  const since = started.metadata.annotations?.[STATUS_CHECK_FAILING_SINCE_ANNOTATION];
  t.ok(since, 'the first failing answer starts the clock in the annotation');
  t.equal(started.status?.jobDeploymentStatus, 'Running');
  const at = Date.parse(since ?? '');

  // A new leader 10 s later (its own clock, no memory of the old one): the clock keeps its start.
  const early = h.replica({ now: () => at + 10_000 });
  await early.reconcile(`${h.namespace}/mute`);
  const still = (await h.get('mute'))!;
  t.equal(still.status?.jobDeploymentStatus, 'Running', 'before the timeout: still Running');
  t.equal(still.metadata.annotations?.[STATUS_CHECK_FAILING_SINCE_ANNOTATION], since, 'the clock was not restarted');

  // Another new leader 31 s after the first failure: the timeout counts from the annotation, not from
  // when this replica started (in memory, it would start a fresh 30 s).
  const late = h.replica({ now: () => at + 31_000 });
  await late.reconcile(`${h.namespace}/mute`);
  const failed = (await h.get('mute'))!;
  t.equal(failed.status?.jobDeploymentStatus, 'Failed');
  t.equal(failed.status?.reason, 'JobStatusCheckTimeoutExceeded');
  t.equal(failed.metadata.annotations?.[STATUS_CHECK_FAILING_SINCE_ANNOTATION], undefined, 'cleared when Running ends');
});

t.test('the clock is cleared when the dashboard answers again', async (t) => {
  const h = await rayJobHarness(t, { machine: { statusCheckTimeoutSeconds: 30 } });
  await h.create(manifest('blip', { submissionMode: 'HTTPMode', entrypoint: 'sleep 60' }));
  await h.drive('blip', (j) => j?.status?.jobStatus === 'RUNNING', { autoReady: true });
  h.dashboard.down = true;
  await h.reconciler.reconcile(`${h.namespace}/blip`);
  t.ok((await h.get('blip'))?.metadata.annotations?.[STATUS_CHECK_FAILING_SINCE_ANNOTATION], 'clock started');
  h.dashboard.down = false;
  const back = await h.drive('blip', (j) => j?.metadata.annotations?.[STATUS_CHECK_FAILING_SINCE_ANNOTATION] === undefined, {
    timeoutMs: 10_000,
  });
  t.equal(back.job?.status?.jobDeploymentStatus, 'Running', 'still Running, clock gone');
  t.ok(inState('Running')(back.job));
});

t.test(
  "with the RayCluster operator in the process, a clusterSelector RayJob reads its cluster from the operator's cache: no GET per poll",
  async (t) => {
    const h = await rayJobHarness(t);
    const factory = new InformerFactory(h.kube, { namespace: h.namespace });
    const ctx = { informers: factory, reconcilers: ['raycluster', 'raycluster-pods', 'rayjob'] } as unknown as ControllerContext;
    const operatorCache = operatorRayClusterInformer(ctx);
    t.ok(operatorCache, 'the operator runs: its cache is offered');
    const caches = rayJobCaches(factory, operatorCache);
    t.equal(caches.clusters, rayClusterInformer(ctx), 'the RayJob reads the one RayCluster cache the operator and the cleanup share');
    t.equal(factory.all().filter((i) => i.spec.plural === RAYCLUSTERS.plural).length, 1, 'one RayCluster watch, not a second labelled one');
    t.equal(
      operatorRayClusterInformer({ ...ctx, reconcilers: ['raycluster', 'rayjob'] } as ControllerContext),
      undefined,
      'without the operator: none (the labelled cache and a GET for a selected cluster)',
    );
    factory.start();
    t.teardown(() => factory.stop());
    t.ok(await factory.waitForSync(), 'caches synced');

    await readySelectedCluster(h);
    const { kube, calls } = countingClient(h.ns.kubeConfig);
    t.teardown(() => kube.close());
    const cached = h.replica({ kube, caches });
    await h.create(
      manifest('selects', { entrypoint: 'sleep 60', clusterSelector: { 'ray.io/cluster': 'shared' }, rayClusterSpec: undefined }),
    );
    const key = `${h.namespace}/selects`;
    const deadline = Date.now() + 30_000;
    for (;;) {
      await cached.reconcile(key).catch(() => undefined);
      if ((await h.get('selects'))?.status?.jobStatus === 'RUNNING') break;
      if (Date.now() > deadline) throw new Error(`not running: ${JSON.stringify((await h.get('selects'))?.status)}`);
      await sleep(100);
    }
    const stored = (await h.get('selects'))!;
    t.equal(stored.status?.rayClusterName, 'shared', 'the selected cluster');
    while (
      caches.rayJobs.getByName(h.namespace, 'selects')?.metadata?.resourceVersion !== stored.metadata.resourceVersion ||
      caches.clusters.getByName(h.namespace, 'shared')?.status === undefined
    ) {
      if (Date.now() > deadline) throw new Error('caches never caught up');
      await sleep(20);
    }
    calls.length = 0;
    for (let i = 0; i < 5; i++) await cached.reconcile(key);
    t.same(calls, [], 'five reconciles of the Running RayJob: no API request (the selected cluster came from the cache)');

    // Positive control: the labelled cache of RayJob-made clusters misses the selected one, so each poll GETs it.
    const labelled = rayJobCaches(factory);
    t.ok(await factory.waitForSync(), 'the labelled cache synced');
    const uncached = h.replica({ kube, caches: labelled });
    calls.length = 0;
    await uncached.reconcile(key);
    t.ok(
      calls.some((c) => c.startsWith('GET ') && c.includes('/rayclusters/shared')),
      `without the operator's cache the selected cluster is a GET (${calls.join(', ')})`,
    );
  },
);
