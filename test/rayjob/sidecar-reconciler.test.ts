// SidecarMode in the RayJob reconciler, on the real kube-apiserver (the test plays the operator and the
// kubelet: it writes the head pod and its container statuses; the fake dashboard plays Ray): a Running
// SidecarMode RayJob reads its head pod from the pod cache the operator shares (no API request per
// poll; without that cache, one LIST per poll), and its submitter container terminating non-zero ends
// it Failed(SubmissionFailed) with KubeRay's message; suspend deletes its RayCluster and nothing else, and
// resume builds a new one with the submitter container. No submitter Job is ever created.
import t from 'tap';
import { InformerFactory } from '../../kube/informer.ts';
import { rayJobCaches } from '../../controller/rayjob/module.ts';
import { rayPodInformer } from '../../controller/raycluster/informers.ts';
import { MERGE_PATCH } from '../../kube/client.ts';
import { JOBS, PODS } from '../../kube/resources.ts';
import type { Pod } from '../../kube/model.ts';
import { sleep } from '../../kube/backoff.ts';
import { manifest, rayJobHarness } from './helpers/harness.ts';
import { countingClient } from './helpers/counting-client.ts';
import { until } from '../helpers/until.ts';
import { DashboardClient } from '../../controller/rayjob/dashboard.ts';

t.test('a Running SidecarMode RayJob: its head pod from the pod cache, its submitter container decides', async (t) => {
  const h = await rayJobHarness(t);
  const factory = new InformerFactory(h.kube, { namespace: h.namespace });
  const headPods = rayPodInformer(factory);
  const caches = { ...rayJobCaches(factory), headPods };
  factory.start();
  t.teardown(() => factory.stop());
  t.ok(await factory.waitForSync(), 'caches synced');
  const { kube, calls } = countingClient(h.ns.kubeConfig);
  t.teardown(() => kube.close());
  const cached = h.replica({ kube, caches });

  await h.create(manifest('side', { submissionMode: 'SidecarMode', entrypoint: 'sleep 60' }));
  const key = `${h.namespace}/side`;
  const deadline = Date.now() + 30_000;
  let pod: Pod | undefined;
  for (;;) {
    await cached.reconcile(key).catch(() => undefined);
    const job = await h.get('side');
    const clusterName = job?.status?.rayClusterName ?? '';
    const cluster = clusterName === '' ? undefined : await h.cluster(clusterName);
    if (cluster && pod === undefined) {
      // The operator's head pod and the kubelet's word on its two containers.
      pod = await h.kube.create(
        { ...PODS, namespace: h.namespace },
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: `${clusterName}-head`, labels: { 'ray.io/cluster': clusterName, 'ray.io/node-type': 'head' } },
          spec: {
            restartPolicy: 'Never',
            containers: cluster.spec?.headGroupSpec?.template?.spec?.containers?.map((c) => ({ name: c.name, image: 'ray' })) ?? [],
          },
        },
      );
      const running = { running: { startedAt: '2026-01-01T00:00:00Z' } };
      pod = await h.kube.patch(
        { ...PODS, namespace: h.namespace, name: pod.metadata.name ?? '', subresource: 'status' },
        {
          status: {
            phase: 'Running',
            containerStatuses: [
              { name: 'ray-head', ready: true, restartCount: 0, image: 'ray', imageID: '', state: running },
              { name: 'ray-job-submitter', ready: true, restartCount: 0, image: 'ray', imageID: '', state: running },
            ],
          },
        },
        MERGE_PATCH,
      );
      await h.markReady(clusterName);
    }
    if (job?.status?.jobDeploymentStatus === 'Running') break;
    if (Date.now() > deadline) throw new Error(`not running: ${JSON.stringify(job?.status)}`);
    await sleep(100);
  }
  t.same(
    pod?.spec?.containers.map((c) => c.name),
    ['ray-head', 'ray-job-submitter'],
    'the RayCluster it created carries the submitter container in the head template',
  );
  // The submitter's submission, as `ray job submit` would make it.
  const jobId = (await h.get('side'))?.status?.jobId ?? '';
  const submitted = await new DashboardClient({ timeoutMs: 5000 }).submitJob(h.dashboard.url, {
    entrypoint: 'sleep 60',
    submission_id: jobId,
  });
  t.equal(submitted.duplicate, false, 'submitted to the fake dashboard');
  await cached.reconcile(key);
  const stored = (await h.get('side'))!;
  t.equal(stored.status?.jobStatus, 'RUNNING');
  while (
    caches.rayJobs.getByName(h.namespace, 'side')?.metadata?.resourceVersion !== stored.metadata.resourceVersion ||
    headPods.getByName(h.namespace, pod?.metadata.name ?? '')?.metadata.resourceVersion !== pod?.metadata.resourceVersion ||
    caches.clusters.getByName(h.namespace, stored.status?.rayClusterName ?? '')?.status?.state !== 'ready'
  ) {
    if (Date.now() > deadline) throw new Error('caches never caught up');
    await sleep(20);
  }
  calls.length = 0;
  for (let i = 0; i < 5; i++) await cached.reconcile(key);
  t.same(calls, [], 'five reconciles of the Running SidecarMode RayJob: no API request (head pod from the cache)');

  // Positive control: without the pod cache, each poll LISTs the head pod by its labels.
  const uncached = h.replica({ kube, caches: rayJobCaches(factory) });
  for (let i = 0; i < 3; i++) await uncached.reconcile(key);
  t.equal(
    calls.filter((c) => c.startsWith(`GET /api/v1/namespaces/${h.namespace}/pods`)).length,
    3,
    'without the pod cache: one LIST of pods per poll',
  );

  // The kubelet reports the submitter container terminated with exit code 2.
  await h.kube.patch(
    { ...PODS, namespace: h.namespace, name: pod?.metadata.name ?? '', subresource: 'status' },
    {
      status: {
        containerStatuses: [
          {
            name: 'ray-head',
            ready: true,
            restartCount: 0,
            image: 'ray',
            imageID: '',
            state: { running: { startedAt: '2026-01-01T00:00:00Z' } },
          },
          {
            name: 'ray-job-submitter',
            ready: false,
            restartCount: 0,
            image: 'ray',
            imageID: '',
            state: { terminated: { exitCode: 2, reason: 'Error', startedAt: '2026-01-01T00:00:00Z', finishedAt: '2026-01-01T00:01:00Z' } },
          },
        ],
      },
    },
    MERGE_PATCH,
  );
  let failed = await h.get('side');
  while (failed?.status?.jobDeploymentStatus !== 'Failed') {
    if (Date.now() > deadline + 30_000) throw new Error(`not failed: ${JSON.stringify(failed?.status)}`);
    await cached.reconcile(key);
    await sleep(50);
    failed = await h.get('side');
  }
  t.equal(failed.status?.reason, 'SubmissionFailed');
  t.equal(failed.status?.message, 'Ray head pod container ray-job-submitter terminated with exit code 2: Error');
  t.equal(failed.status?.jobStatus, 'RUNNING', 'the Ray job was still running when its submitter died');
  const jobs = await h.kube.list({ ...JOBS, namespace: h.namespace });
  t.same(jobs.items, [], 'no submitter Job was ever created');
});

t.test(
  'suspend and resume a Running SidecarMode RayJob: its RayCluster goes (no submitter Job to delete), a new one on resume',
  async (t) => {
    const h = await rayJobHarness(t);
    await h.create(manifest('pause', { submissionMode: 'SidecarMode', entrypoint: 'sleep 60', shutdownAfterJobFinishes: true }));
    const init = await h.drive(
      'pause',
      (j) => (j?.status?.rayClusterName ?? '') !== '' && j?.status?.jobDeploymentStatus === 'Initializing',
    );
    const first = init.job?.status?.rayClusterName ?? '';
    const created = async (name: string) => {
      await h.reconciler.reconcile(`${h.namespace}/pause`);
      return h.cluster(name);
    };
    t.ok(await until(() => created(first), 'the RayCluster created', 10_000), 'the RayCluster exists');
    await h.kube.create(
      { ...PODS, namespace: h.namespace },
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `${first}-head`, labels: { 'ray.io/cluster': first, 'ray.io/node-type': 'head' } },
        spec: {
          restartPolicy: 'Never',
          containers: [
            { name: 'ray-head', image: 'ray' },
            { name: 'ray-job-submitter', image: 'ray' },
          ],
        },
      },
    );
    await h.markReady(first);
    await h.drive('pause', (j) => j?.status?.jobDeploymentStatus === 'Running');

    await h.patchSpec('pause', { suspend: true });
    const suspended = await h.drive('pause', (j) => j?.status?.jobDeploymentStatus === 'Suspended');
    t.match(suspended.states, ['Running', 'Suspending', 'Suspended'], `states: ${suspended.states.join(' -> ')}`);
    t.equal(await h.cluster(first), undefined, 'the RayCluster is gone');
    t.equal(suspended.job?.status?.rayClusterName, undefined, 'names reset');
    const reasons = (await h.events('pause')).map((e) => e.reason);
    t.ok(reasons.includes('DeletedRayCluster'), `events: ${reasons.join(', ')}`);
    t.notOk(
      reasons.some((r) => r.includes('Submitter') || r.includes('Job')),
      'nothing about a submitter Job',
    );

    await h.patchSpec('pause', { suspend: false });
    const resumed = await h.drive(
      'pause',
      (j) => j?.status?.jobDeploymentStatus === 'Initializing' && (j.status.rayClusterName ?? '') !== '',
    );
    const second = resumed.job?.status?.rayClusterName ?? '';
    t.not(second, first, 'a new RayCluster name on resume');
    t.same(
      (await until(() => created(second), 'the new RayCluster created', 10_000)).spec?.headGroupSpec?.template?.spec?.containers?.map(
        (c) => c.name,
      ),
      ['ray-head', 'ray-job-submitter'],
      'the new cluster carries the submitter container again',
    );
    t.same((await h.kube.list({ ...JOBS, namespace: h.namespace })).items, [], 'no submitter Job');
  },
);
