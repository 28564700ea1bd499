// raykeeper installed on the real node as an admin installs it (`raykeeper dev --kubelet`): the webhook's
// pods Ready behind their Service and called by the API server through the MutatingWebhookConfiguration
// and the ValidatingWebhookConfiguration;
// a RayCluster's deletion runs our cleanup Job as a pod of our image against the in-cluster Redis; the
// controller's leadership moves when the leader pod is deleted. Needs root (`npm run test:cluster`).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import t from 'tap';
import { devSampleCluster } from '../../dev/dev.ts';
import { startKubeletDev, SYSTEM_NAMESPACE, WEBHOOK_SERVICE } from '../../dev/kubelet.ts';
import { KubeClient } from '../../kube/client.ts';
import { RAYCLUSTERS } from '../../src/types.ts';
import { DEPLOYMENTS, ENDPOINT_SLICES, LEASES, MUTATING_WEBHOOK_CONFIGURATIONS, NAMESPACES, PODS } from '../../kube/resources.ts';
import { GCS_FT_REDIS_CLEANUP_FINALIZER } from '../../src/names.ts';
import { rayKeys, seedRay } from '../helpers/harness.ts';
import { assertCleanupJobRan, kubectl, namespaceEvents, until } from './helpers.ts';

const env = await startKubeletDev({ stateDir: t.testdir(), progress: (m) => t.comment(m) });
t.teardown(() => env.stop());
const kube = new KubeClient(env.cluster.controlPlane.kubeConfig());
t.teardown(() => kube.close());
const redis = new Redis({ host: env.redis.host, port: env.redis.port, lazyConnect: true, maxRetriesPerRequest: 3 });
t.teardown(() => redis.disconnect());
const NS = 'ray-users';
const SYSTEM_PODS = { ...PODS, namespace: SYSTEM_NAMESPACE };

t.test('dev --kubelet prints its node Ready and installs from manifests/', async (t) => {
  t.equal(env.node, 'localhost Ready');
  const pods = await kube.list(SYSTEM_PODS);
  t.ok(pods.items.length >= 4, 'webhook and controller pods');
  for (const p of pods.items)
    t.equal(p.spec!.containers[0]?.image, 'docker.io/library/raykeeper:0.1.0', `${p.metadata.name} runs our image`);
});

t.test('the webhook pods are Ready behind their Service and the API server calls them by it', async (t) => {
  const config = await kube.get({
    ...MUTATING_WEBHOOK_CONFIGURATIONS,
    name: 'raykeeper',
  });
  for (const w of config.webhooks!)
    t.same(
      w.clientConfig.service && { name: w.clientConfig.service.name, namespace: w.clientConfig.service.namespace },
      { name: WEBHOOK_SERVICE, namespace: SYSTEM_NAMESPACE },
      'by Service, no url',
    );
  const pods = await kube.list(SYSTEM_PODS, { labelSelector: 'app.kubernetes.io/component=webhook' });
  const ready = pods.items.filter((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
  t.equal(ready.length, 2, 'two Ready webhook pods');
  const readyAddresses = async () => {
    const slices = await kube.list(
      { ...ENDPOINT_SLICES, namespace: SYSTEM_NAMESPACE },
      { labelSelector: `kubernetes.io/service-name=${WEBHOOK_SERVICE}` },
    );
    return slices.items
      .flatMap((s) => s.endpoints ?? [])
      .filter((e) => e.conditions?.ready)
      .flatMap((e) => e.addresses)
      .sort();
  };
  const podIPs = ready.map((p) => p.status?.podIP).sort();
  // The EndpointSlice controller marks an endpoint ready a moment after its pod's Ready condition: wait
  // for it (30 s at most; the assertion below then shows what the Service routes to).
  let addresses: string[] = [];
  await until(
    async () => JSON.stringify((addresses = await readyAddresses())) === JSON.stringify(podIPs),
    'the Service to route to the Ready webhook pods',
    30_000,
    500,
  ).catch(() => {});
  t.same(addresses, podIPs, 'the Service routes to exactly those pods');

  await kube.create(NAMESPACES, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  const sample = devSampleCluster(env.redisInCluster) as { metadata: Record<string, unknown> };
  t.notOk('annotations' in sample.metadata, 'metadata.annotations absent');
  // The object the CREATE returns is the admitted one: only the webhook can have changed it.
  const created = await kube.create({ ...RAYCLUSTERS, namespace: NS }, { ...sample, metadata: { name: 'pinned' } });
  t.same(created.metadata.finalizers, [GCS_FT_REDIS_CLEANUP_FINALIZER], 'finalizer added at admission');
  t.match(created.spec!.gcsFaultToleranceOptions!.externalStorageNamespace, /^[0-9a-f-]{36}$/, 'storage namespace pinned at admission');

  // The validating webhook, by the same Service: kubectl sees KubeRay's reason, a warning, a refused UPDATE.
  const invalid = structuredClone(sample) as {
    metadata: Record<string, unknown>;
    spec: { workerGroupSpecs?: Array<Record<string, unknown>> };
  };
  invalid.metadata = { name: 'invalid', namespace: NS };
  const worker = invalid.spec.workerGroupSpecs?.[0];
  if (worker) Object.assign(worker, { minReplicas: 3, maxReplicas: 1 });
  const refused = kubectl(env.kubeconfig, ['create', '-f', '-'], JSON.stringify(invalid));
  t.not(refused.status, 0, 'kubectl create of an invalid RayCluster fails');
  t.match(
    refused.stderr,
    /admission webhook "raycluster.validate.raykeeper.io" denied the request: The RayCluster spec is invalid: worker group/,
  );
  const warned = structuredClone(sample) as { metadata: Record<string, unknown>; spec: Record<string, unknown> };
  warned.metadata = { name: 'warned', namespace: NS };
  warned.spec.autoscalerOptions = { version: 'v2' };
  delete warned.spec.gcsFaultToleranceOptions; // no Redis data, no cleanup to wait for
  const accepted = kubectl(env.kubeconfig, ['create', '-f', '-'], JSON.stringify(warned));
  t.equal(accepted.status, 0, accepted.stderr);
  t.match(
    accepted.stderr,
    /Warning: spec.autoscalerOptions is set but spec.enableInTreeAutoscaling is not true/,
    'kubectl prints the warning',
  );
  const moved = kubectl(env.kubeconfig, [
    '-n',
    NS,
    'patch',
    'raycluster',
    'pinned',
    '--type=merge',
    '-p',
    '{"spec":{"gcsFaultToleranceOptions":{"externalStorageNamespace":"elsewhere"}}}',
  ]);
  t.not(moved.status, 0, 'a storage namespace change is refused');
  t.match(moved.stderr, /cannot change the storage namespace/);
  t.equal(kubectl(env.kubeconfig, ['-n', NS, 'delete', 'raycluster', 'warned', '--wait=false']).status, 0);
});

// Before the load test below: its hundreds of RayClusters fill the node, and the webhook pods scaled
// back up here would not schedule.
t.test(
  'with the webhook down the API server admits an invalid RayCluster (failurePolicy Ignore) and the controller refuses it',
  async (t) => {
    const scale = (replicas: number) =>
      kubectl(env.kubeconfig, ['-n', SYSTEM_NAMESPACE, 'scale', 'deployment', 'raykeeper-webhook', `--replicas=${replicas}`]);
    const webhookPods = async () => (await kube.list(SYSTEM_PODS, { labelSelector: 'app.kubernetes.io/component=webhook' })).items.length;
    t.equal(scale(0).status, 0, 'webhook scaled to 0');
    t.teardown(async () => {
      scale(2);
      await until(
        async () => (await kube.get(DEPLOYMENTS.at(SYSTEM_NAMESPACE, 'raykeeper-webhook'))).status?.availableReplicas === 2,
        'two available webhook pods again',
        180_000,
        500,
      );
    });
    await until(async () => (await webhookPods()) === 0, 'no webhook pod left', 120_000, 500);

    const invalid = structuredClone(devSampleCluster(env.redisInCluster)) as {
      metadata: Record<string, unknown>;
      spec: Record<string, unknown> & { workerGroupSpecs?: Array<Record<string, unknown>> };
    };
    invalid.metadata = { name: 'admitted-invalid', namespace: NS };
    delete invalid.spec.gcsFaultToleranceOptions; // no Redis data: nothing to clean when it goes
    const worker = invalid.spec.workerGroupSpecs?.[0];
    if (worker) Object.assign(worker, { minReplicas: 3, maxReplicas: 1 });
    const created = kubectl(env.kubeconfig, ['create', '-f', '-'], JSON.stringify(invalid));
    t.equal(created.status, 0, `admitted while the webhook is down: ${created.stderr}`);

    let refusal: { reason: string; message: string } | undefined;
    await until(
      async () =>
        (refusal = (await namespaceEvents(kube, NS)).find(
          (e) =>
            e.involvedObject.kind === 'RayCluster' && e.involvedObject.name === 'admitted-invalid' && e.reason === 'InvalidRayClusterSpec',
        )) !== undefined,
      "the controller's InvalidRayClusterSpec event",
      60_000,
      500,
    );
    t.match(refusal?.message, /The RayCluster spec is invalid: worker group/, "KubeRay's message, as the webhook would have said it");
    const pods = await kube.list({ ...PODS, namespace: NS }, { labelSelector: 'ray.io/cluster=admitted-invalid' });
    t.same(
      pods.items.map((p) => p.metadata.name),
      [],
      'no pod started for it',
    );
    t.equal(kubectl(env.kubeconfig, ['-n', NS, 'delete', 'raycluster', 'admitted-invalid', '--wait=false']).status, 0);
  },
);

t.test('deleting a RayCluster runs our cleanup Job as a pod of our image against the in-cluster Redis', async (t) => {
  const name = 'pinned';
  const ref = { ...RAYCLUSTERS, namespace: NS, name };
  const rc = await kube.get(ref);
  const storage = rc.spec!.gcsFaultToleranceOptions!.externalStorageNamespace!;
  const seeded = await seedRay(redis, storage);
  const neighbour = await seedRay(redis, 'neighbour-cluster');
  t.same(await rayKeys(redis, storage), seeded.sort(), 'the cluster has GCS data in the in-cluster Redis');

  await kube.delete(ref);
  await until(async () => (await kube.getOrUndefined(ref)) === undefined, 'the RayCluster to be gone (finalizer released)', 240_000, 500);
  const left = await rayKeys(redis, storage);
  if (left.length > 0) {
    // What happened, for the log: the cluster's events in order.
    const events = await namespaceEvents(kube, NS);
    for (const e of events.sort((a, b) => (a.lastTimestamp ?? '').localeCompare(b.lastTimestamp ?? '')))
      t.comment(`${e.lastTimestamp} ${e.involvedObject.kind}/${e.involvedObject.name} ${e.reason}: ${e.message}`);
  }
  t.same(left, [], 'its keys are gone');
  t.same(await rayKeys(redis, 'neighbour-cluster'), neighbour.sort(), "a neighbour's keys are intact");

  await assertCleanupJobRan(t, kube, NS, name);
});

t.test('controller leader failover: deleting the leader pod moves the Lease to another live controller pod', async (t) => {
  const lease = () => kube.get({ ...LEASES, namespace: SYSTEM_NAMESPACE, name: 'raykeeper-controller' });
  const leader = await until(
    async () => (await lease().catch(() => undefined))?.spec?.holderIdentity ?? undefined,
    'a controller leader',
    120_000,
    500,
  );
  const pods = await kube.list(SYSTEM_PODS, { labelSelector: 'app.kubernetes.io/component=controller' });
  const leaderPod = pods.items.find((p) => leader.startsWith(p.metadata.name!));
  t.ok(leaderPod, `the leader ${leader} is one of the controller pods`);
  const r = kubectl(env.kubeconfig, ['-n', SYSTEM_NAMESPACE, 'delete', 'pod', leaderPod!.metadata.name!, '--wait=false']);
  t.equal(r.status, 0, r.stderr);
  const next = await until(
    async () => {
      const h = (await lease()).spec?.holderIdentity;
      return h && !h.startsWith(leaderPod!.metadata.name!) ? h : undefined;
    },
    'a new leader',
    180_000,
    500,
  );
  // The standby, or the ReplicaSet's replacement when it starts first after the old leader released the Lease.
  const now = await kube.list(SYSTEM_PODS, { labelSelector: 'app.kubernetes.io/component=controller' });
  const holder = now.items.find((p) => next.startsWith(`${p.metadata.name}_`));
  t.ok(holder && holder.metadata.name !== leaderPod!.metadata.name, `a live controller pod leads now (${next})`);
});

t.test('a webhook pod deleted under load: every RayCluster created meanwhile is admitted and defaulted', async (t) => {
  const ns = 'webhook-load';
  await kube.create(NAMESPACES, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  const sample = devSampleCluster(env.redisInCluster) as object;
  type Created = {
    metadata: { name: string; finalizers?: string[] };
    spec: { gcsFaultToleranceOptions: { externalStorageNamespace?: string } };
  };
  const created: Created[] = [];
  const failures: string[] = [];
  let running = true;
  let n = 0;
  const loader = async (): Promise<void> => {
    while (running) {
      const name = `load-${n++}`;
      try {
        created.push((await kube.create({ ...RAYCLUSTERS, namespace: ns }, { ...sample, metadata: { name } })) as Created);
      } catch (err) {
        failures.push(`${name}: ${(err as Error).message}`);
      }
    }
  };
  const loaders = [loader(), loader(), loader()];
  await until(() => created.length >= 30, '30 creates before the deletion', 120_000);
  const pods = await kube.list(SYSTEM_PODS, { labelSelector: 'app.kubernetes.io/component=webhook' });
  const victim = pods.items[0]!.metadata.name!;
  const r = kubectl(env.kubeconfig, ['-n', SYSTEM_NAMESPACE, 'delete', 'pod', victim, '--wait=false']);
  t.equal(r.status, 0, r.stderr);
  await until(
    async () => (await kube.getOrUndefined({ ...SYSTEM_PODS, name: victim })) === undefined,
    `the deleted webhook pod ${victim} to be gone`,
    180_000,
    250,
  );
  await until(
    async () => {
      const d = await kube.get(DEPLOYMENTS.at(SYSTEM_NAMESPACE, 'raykeeper-webhook'));
      return d.status?.availableReplicas === 2;
    },
    'two available webhook pods again',
    180_000,
    250,
  );
  const mark = created.length;
  await until(() => created.length >= mark + 30, '30 creates after the replacement', 120_000);
  running = false;
  await Promise.all(loaders);
  t.same(failures, [], 'no create failed');
  const undefaulted = created
    .filter(
      (c) => !c.metadata.finalizers?.includes(GCS_FT_REDIS_CLEANUP_FINALIZER) || !c.spec.gcsFaultToleranceOptions.externalStorageNamespace,
    )
    .map((c) => c.metadata.name);
  // The API server logs each call it failed open on: the reason, when there is one.
  const failedOpen = readFileSync(join(env.cluster.controlPlane.info.dir, 'kube-apiserver.log'), 'utf8')
    .split('\n')
    .filter((l) => /failing open|Failed calling webhook/.test(l));
  t.same(
    undefaulted,
    [],
    `every one of ${created.length} RayClusters was mutated by the webhook (failurePolicy Ignore would hide a failed call)`,
    { apiserver: failedOpen.slice(0, 5) },
  );
});
