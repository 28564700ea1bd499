// `raykeeper uninstall` as an admin runs it (a child process with a kubeconfig) against the real kube-apiserver
// and a real redis-server. The job runner stands in for the kubelet + job controller: the cleanup Job the
// command creates runs `raykeeper redis-cleanup` against that Redis. What each test proves:
// - dry run: says what it would do (read from the API and the controller's Deployment) and changes nothing;
// - the run: the webhook configurations are deleted and the controller scaled to 0; the deleting cluster's
//   Redis cleanup is finished as the controller would (its Job ran: its keys are gone, the live one's stay),
//   its finalizer released, it is gone; the live cluster's finalizer is removed with a Warning naming its
//   storage namespace, Redis and the by-hand command, and deleting it then completes at once; exit 0;
//   raykeeper's ray.io/rayjob-finalizer is removed from a RayJob with a Warning (one KubeRay's operator
//   wrote stays), and deleting that RayJob completes at once;
// - again: nothing left to do, exit 0 (idempotent);
// - the deadline: a cleanup that cannot end (no job runner) is given up at --timeout with a Warning naming
//   the timeout; a RayCluster outside --watch-namespace is not touched; controller pods that do not go are
//   waited for a bounded time and named.
import t from 'tap';
import { kubeconfigFile, testNamespace } from '../helpers/control-plane.ts';
import { createCluster, env, FINALIZER, getCluster, jobRunner, rayCluster, rayKeys, redis, seedRay } from '../helpers/harness.ts';
import { DEPLOYMENTS, MUTATING_WEBHOOK_CONFIGURATIONS, PODS, VALIDATING_WEBHOOK_CONFIGURATIONS } from '../../kube/resources.ts';
import { JSON_PATCH, KubeClient, MERGE_PATCH } from '../../kube/client.ts';
import { RAYJOB_FINALIZER } from '../../src/names.ts';
import { RAYCLUSTERS, RAYJOBS } from '../../src/types.ts';
import { cli, controllerDeployment, eventsOf, webhookConfigurations } from './helpers.ts';

const STORAGE_NS = 'ray.io/external-storage-namespace';

t.test('raykeeper uninstall: a dry run, the run, and the run again', async (t) => {
  const e = await env(t);
  const ns = e.ns.name;
  const { server, client } = await redis(t);
  const address = `${server.host}:${server.port}`;
  const kubeconfig = await kubeconfigFile(t, e.ns.cp, ns);
  const webhooks = `rk-uninstall-${ns}`;
  await webhookConfigurations(e.kube, webhooks);
  t.teardown(async () => {
    await e.kube.delete({ ...MUTATING_WEBHOOK_CONFIGURATIONS, name: webhooks });
    await e.kube.delete({ ...VALIDATING_WEBHOOK_CONFIGURATIONS, name: webhooks });
  });
  await controllerDeployment(
    e.kube,
    ns,
    [`--watch-namespace=${ns}`, '--cleanup-image=raykeeper:test'],
    [{ name: 'RAYKEEPER_IMAGE', value: 'raykeeper:test' }],
  );
  const live = await createCluster(e, rayCluster('live', address, { finalizers: [FINALIZER], annotations: { [STORAGE_NS]: 'live-data' } }));
  await createCluster(e, rayCluster('going', address, { finalizers: [FINALIZER], annotations: { [STORAGE_NS]: 'going-data' } }));
  await createCluster(e, { ...rayCluster('plain', address), metadata: { name: 'plain' } });
  const liveKeys = await seedRay(client, 'live-data');
  await seedRay(client, 'going-data');
  await e.kube.delete({ ...RAYCLUSTERS, namespace: ns, name: 'going' });
  // A RayJob as raykeeper's RayJob reconciler leaves it in New (names chosen, nothing created), and one further on.
  for (const [name, status] of [
    ['fresh', { jobDeploymentStatus: 'New', jobId: 'fresh-abcde', rayClusterName: 'fresh-raycluster-xyz12', jobStatus: '' }],
    [
      'running',
      { jobDeploymentStatus: 'Running', jobId: 'running-abcde', rayClusterName: 'running-raycluster-xyz12', jobStatus: 'RUNNING' },
    ],
  ] as const) {
    await e.kube.create(
      { ...RAYJOBS, namespace: ns },
      {
        apiVersion: 'ray.io/v1',
        kind: 'RayJob',
        metadata: { name },
        spec: { entrypoint: 'python -c "print(1)"', clusterSelector: { 'ray.io/cluster': 'live' } },
      },
    );
    await e.kube.patch({ ...RAYJOBS, namespace: ns, name, subresource: 'status' }, { status }, MERGE_PATCH);
  }
  // ray.io/rayjob-finalizer as raykeeper's controller adds it (field manager raykeeper), and one KubeRay's
  // operator added (another manager: left to it).
  await e.kube.patch(
    { ...RAYJOBS, namespace: ns, name: 'running' },
    [{ op: 'add', path: '/metadata/finalizers', value: [RAYJOB_FINALIZER] }],
    JSON_PATCH,
  );
  const kuberay = new KubeClient(e.kube.kubeConfig, { fieldManager: 'kuberay-operator' });
  t.teardown(() => kuberay.close());
  await kuberay.create(
    { ...RAYJOBS, namespace: ns },
    { apiVersion: 'ray.io/v1', kind: 'RayJob', metadata: { name: 'kuberays' }, spec: { entrypoint: 'python -c "print(1)"' } },
  );
  await kuberay.patch(
    { ...RAYJOBS, namespace: ns, name: 'kuberays' },
    [{ op: 'add', path: '/metadata/finalizers', value: [RAYJOB_FINALIZER] }],
    JSON_PATCH,
  );
  const args = ['uninstall', '--namespace', ns, '--webhook-configuration', webhooks, '--timeout', '90'];

  const dry = await cli([...args, '--dry-run'], kubeconfig);
  t.equal(dry.code, 0, `dry run exit 0 (${dry.stderr})`);
  t.match(dry.stdout, new RegExp(`would delete MutatingWebhookConfiguration ${webhooks}`));
  t.match(dry.stdout, new RegExp(`would scale Deployment ${ns}/raykeeper-controller from 2 to 0 replicas`));
  t.match(dry.stdout, new RegExp(`scope: namespace ${ns}`), "the scope is the controller's --watch-namespace, read from its Deployment");
  t.match(
    dry.stdout,
    new RegExp(`${ns}/live  would-release  live: its data stays \\(storage namespace "live-data" in Redis at ${address}\\)`),
  );
  t.match(dry.stdout, new RegExp(`${ns}/going  would-finish`));
  t.notMatch(dry.stdout, /plain/, 'a cluster without the finalizer is not in it');
  t.match(dry.stdout, new RegExp(`${ns}/fresh: RayJob: would set jobDeploymentStatus "New" to ""`));
  t.notMatch(dry.stdout, /running: RayJob: would set/, 'a RayJob past New is not reset');
  t.match(dry.stdout, new RegExp(`${ns}/running: RayJob: would remove ray.io/rayjob-finalizer`));
  t.notMatch(dry.stdout, /kuberays: RayJob/, "KubeRay's finalizer is not in it");
  t.ok(await e.kube.getOrUndefined({ ...MUTATING_WEBHOOK_CONFIGURATIONS, name: webhooks }), 'dry run: the webhook configuration stays');
  t.equal((await e.kube.get({ ...DEPLOYMENTS, namespace: ns, name: 'raykeeper-controller' })).spec!.replicas, 2);
  t.same((await getCluster(e, 'live'))?.metadata.finalizers, [FINALIZER], 'dry run: the finalizers stay');
  t.ok(await getCluster(e, 'going'));

  await jobRunner(t, e);
  const run = await cli(args, kubeconfig);
  t.equal(run.code, 0, `exit 0\n${run.stdout}${run.stderr}`);
  for (const line of [
    new RegExp(`deleted MutatingWebhookConfiguration ${webhooks}`),
    new RegExp(`deleted ValidatingWebhookConfiguration ${webhooks}`),
    new RegExp(`scaled Deployment ${ns}/raykeeper-controller from 2 to 0 replicas`),
    /pass 1: 2 RayClusters carry ray\.io\/gcs-ft-redis-cleanup-finalizer \(1 live, 1 being deleted\)/,
    new RegExp(`${ns}/going: being deleted: finishing its Redis cleanup as the controller would`),
    new RegExp(`${ns}/going: Normal CreatedRedisCleanupJob`),
    new RegExp(`${ns}/going: finished: finalizer released by the cleanup \\(RedisCleanupSucceeded`),
    new RegExp(`${ns}/live: Warning FinalizerReleasedForUninstall`),
    /1 cleaned up as the controller would, 1 live, released with their data kept, 0 released at the deadline, 0 added back by another operator, 0 still stuck: exit 0/,
  ])
    t.match(run.stdout, line, `progress: ${line.source}`);
  t.equal(await e.kube.getOrUndefined({ ...MUTATING_WEBHOOK_CONFIGURATIONS, name: webhooks }), undefined, 'the mutating webhook is gone');
  t.equal(await e.kube.getOrUndefined({ ...VALIDATING_WEBHOOK_CONFIGURATIONS, name: webhooks }), undefined, 'and the validating one');
  t.equal((await e.kube.get({ ...DEPLOYMENTS, namespace: ns, name: 'raykeeper-controller' })).spec!.replicas, 0);

  t.equal(await getCluster(e, 'going'), undefined, 'the deleting cluster is gone');
  t.same(await rayKeys(client, 'going-data'), [], 'its GCS data was cleaned by the cleanup Job');
  t.same(await rayKeys(client, 'live-data'), liveKeys.sort(), "the live cluster's data is untouched");
  const goingEvents = await eventsOf(e.kube, ns, 'going');
  t.ok(
    goingEvents.some((x) => x.reason === 'CreatedRedisCleanupJob'),
    "the controller's Event: the Job",
  );
  t.match(
    goingEvents.find((x) => x.reason === 'RedisCleanupSucceeded'),
    {
      type: 'Normal',
      message: /deleted storage namespace "going-data" in Redis at /,
      source: { component: 'raykeeper-uninstall' },
    },
  );

  const after = await getCluster(e, 'live');
  t.equal(after?.metadata.uid, live.metadata.uid, 'the live cluster stays');
  t.notOk(after?.metadata.finalizers?.includes(FINALIZER), 'without our finalizer');
  const released = (await eventsOf(e.kube, ns, 'live')).filter((x) => x.reason === 'FinalizerReleasedForUninstall');
  t.equal(released.length, 1, 'one Warning on it');
  t.match(released[0], {
    type: 'Warning',
    message: new RegExp(
      `Nothing was cleaned: the cluster is live, and its GCS data \\(storage namespace "live-data" in Redis at ${address}\\) stays.*RAY_external_storage_namespace=live-data RAY_REDIS_ADDRESS=${address} raykeeper redis-cleanup`,
    ),
  });
  await e.kube.delete({ ...RAYCLUSTERS, namespace: ns, name: 'live' });
  t.equal(await getCluster(e, 'live'), undefined, 'deleting the live cluster now completes at once: nothing holds it');
  t.same(await rayKeys(client, 'live-data'), liveKeys.sort(), 'and its data stays, as its Event said');

  const fresh = await e.kube.get({ ...RAYJOBS, namespace: ns, name: 'fresh' });
  t.match(
    fresh.status,
    { jobDeploymentStatus: '', jobId: 'fresh-abcde', rayClusterName: 'fresh-raycluster-xyz12' },
    'New became "", the names kept',
  );
  t.match(
    (await eventsOf(e.kube, ns, 'fresh')).find((x) => x.reason === 'RayJobStatusNewCleared'),
    { type: 'Normal' },
  );
  t.equal(
    (await e.kube.get({ ...RAYJOBS, namespace: ns, name: 'running' })).status?.jobDeploymentStatus,
    'Running',
    'a Running one untouched',
  );
  t.match(run.stdout, new RegExp(`RayJobs whose "New" became "": ${ns}/fresh`));
  t.same(
    (await e.kube.get({ ...RAYJOBS, namespace: ns, name: 'running' })).metadata.finalizers ?? [],
    [],
    "raykeeper's ray.io/rayjob-finalizer removed",
  );
  t.match(
    (await eventsOf(e.kube, ns, 'running')).find((x) => x.reason === 'FinalizerReleasedForUninstall'),
    {
      type: 'Warning',
      message: /removed the finalizer ray\.io\/rayjob-finalizer.*no longer stops its Ray job on the RayCluster it selected/,
    },
  );
  t.same((await e.kube.get({ ...RAYJOBS, namespace: ns, name: 'kuberays' })).metadata.finalizers, [RAYJOB_FINALIZER], "KubeRay's stays");
  t.match(run.stdout, new RegExp(`RayJobs whose ray.io/rayjob-finalizer was removed: ${ns}/running$`, 'm'));
  await e.kube.delete({ ...RAYJOBS, namespace: ns, name: 'running' });
  t.equal(await e.kube.getOrUndefined({ ...RAYJOBS, namespace: ns, name: 'running' }), undefined, 'deleting that RayJob completes at once');
  await kuberay.patch({ ...RAYJOBS, namespace: ns, name: 'kuberays' }, [{ op: 'remove', path: '/metadata/finalizers' }], JSON_PATCH);

  const again = await cli(args, kubeconfig);
  t.equal(again.code, 0, 'again: exit 0');
  t.match(again.stdout, new RegExp(`MutatingWebhookConfiguration ${webhooks}: already gone`));
  t.match(again.stdout, /already at 0 replicas/);
  t.match(again.stdout, /no RayCluster in scope carries the finalizer/);
});

t.test('at --timeout an unfinished cleanup is given up with a Warning; other namespaces are not touched', async (t) => {
  const e = await env(t);
  const ns = e.ns.name;
  const other = await testNamespace(t);
  const kubeconfig = await kubeconfigFile(t, e.ns.cp, ns);
  const address = '127.0.0.1:9'; // no Redis: no cleanup runs anyway (no job runner)
  const { selector } = await controllerDeployment(e.kube, ns, ['--cleanup-image=raykeeper:test']);
  // A controller pod that never goes (no kubelet): the wait for it is bounded.
  await e.kube.create(
    { ...PODS, namespace: ns },
    {
      metadata: { name: 'raykeeper-controller-0', labels: selector },
      spec: { containers: [{ name: 'controller', image: 'raykeeper:test' }] },
    },
  );
  await createCluster(e, rayCluster('stuck', address, { finalizers: [FINALIZER], annotations: { [STORAGE_NS]: 'stuck-data' } }));
  await e.kube.delete({ ...RAYCLUSTERS, namespace: ns, name: 'stuck' });
  const elsewhere = await other.kube.create(
    { ...RAYCLUSTERS, namespace: other.name },
    rayCluster('elsewhere', address, { finalizers: [FINALIZER] }),
  );

  const run = await cli(
    ['uninstall', '--namespace', ns, '--watch-namespace', ns, '--webhook-configuration', '', '--timeout', '12'],
    kubeconfig,
  );
  t.equal(run.code, 0, `exit 0: nothing is left stuck\n${run.stdout}${run.stderr}`);
  t.match(run.stdout, /webhook configurations: left alone/);
  t.match(run.stdout, /controller pods still there after the wait: raykeeper-controller-0/);
  t.match(run.stdout, new RegExp(`${ns}/stuck: Normal CreatedRedisCleanupJob`), 'the cleanup Job was created, as the controller does');
  t.match(run.stdout, new RegExp(`${ns}/stuck: released-at-deadline: its cleanup had not ended: storage namespace "stuck-data"`));
  t.equal(await getCluster(e, 'stuck'), undefined, 'the cluster is gone');
  const warning = (await eventsOf(e.kube, ns, 'stuck')).find((x) => x.reason === 'FinalizerReleasedForUninstall');
  t.match(warning, {
    type: 'Warning',
    message: /\(raykeeper uninstall --timeout 12 s\).*storage namespace "stuck-data" in Redis at 127\.0\.0\.1:9 may remain/,
  });
  const kept = await other.kube.get({ ...RAYCLUSTERS, namespace: other.name, name: 'elsewhere' });
  t.same(kept.metadata.finalizers, [FINALIZER], 'a cluster outside --watch-namespace keeps its finalizer');
  t.equal(kept.metadata.resourceVersion, elsewhere.metadata.resourceVersion, 'and is not written at all');
});

t.test('bad arguments exit 2 naming them', async (t) => {
  const r = await cli(['uninstall', '--timeout', 'soon'], '/nonexistent');
  t.equal(r.code, 2);
  t.match(r.stderr, /--timeout must be a positive number, got "soon"/);
  const u = await cli(['uninstall', '--no-such-flag'], '/nonexistent');
  t.equal(u.code, 2);
  t.match(u.stderr, /unknown option --no-such-flag/);
  const h = await cli(['uninstall', '--help'], '/nonexistent');
  t.equal(h.code, 0);
  t.match(h.stdout, /Exit status: 0 no RayCluster in scope carries the finalizer/);
});
