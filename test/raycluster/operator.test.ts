// The RayCluster operator (controller/raycluster/reconciler.ts) on the real kube-apiserver, with KubeRay's
// samples. Nothing runs pods in this world (no kubelet), so the test plays the kubelet: it marks pods
// Running / Ready through /status, and deletes them. Pods without a node vanish at once when deleted.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { parse } from 'yaml';
import { startController } from '../../controller/main.ts';
import { gcsFtCleanupModule } from '../../controller/gcsft-cleanup/module.ts';
import { rayClusterOperatorModule } from '../../controller/raycluster/module.ts';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { cleanupEnv } from '../../src/gcsft/redis-env.ts';
import type { Pod } from '../../kube/model.ts';
import type { RayClusterStatus } from '../../src/raycluster/status.ts';
import { RAYCLUSTERS, type RayCluster } from '../../src/types.ts';
import { env, events, getCluster, quiet, until, type Env } from '../helpers/harness.ts';
import { kuberaySample } from './samples.ts';
import { PODS, SERVICES } from '../../kube/resources.ts';

async function operator(tt: Test, e: Env, env: Record<string, string> = {}) {
  const c = await startController({
    kubeConfig: e.ns.kubeConfig,
    watchNamespace: e.ns.name,
    workers: 2,
    modules: [gcsFtCleanupModule, rayClusterOperatorModule],
    env,
    logger: quiet,
    moduleFlags: { 'cleanup-image': 'raykeeper:test' },
    retry: { baseMs: 100, maxMs: 2000, jitter: 0.2 },
  });
  tt.teardown(() => c.stop());
  return c;
}

async function pods(e: Env, selector = ''): Promise<Pod[]> {
  return (await e.kube.list({ ...PODS, namespace: e.ns.name }, { labelSelector: selector })).items;
}

/** What the kubelet would write once the container runs and its probes pass. */
async function markReady(e: Env, p: Pod, ip: string): Promise<void> {
  await e.kube.patch(
    { ...PODS, namespace: e.ns.name, name: p.metadata.name!, subresource: 'status' },
    { status: { phase: 'Running', podIP: ip, conditions: [{ type: 'Ready', status: 'True' }] } },
    'application/merge-patch+json',
  );
}

async function status(e: Env, name: string): Promise<RayClusterStatus> {
  return ((await getCluster(e, name))?.status ?? {}) as RayClusterStatus;
}

const rayEnv = (p: Pod) => new Map((p.spec?.containers[0]?.env ?? []).map((x) => [x.name, x]));
const splitSort = (s: string) => s.split(/\s+/).filter(Boolean).sort();

t.test('ray-cluster.sample.yaml: Service, head, worker, status; head deleted -> re-created once; scale; suspend', async (tt) => {
  const e = await env(tt);
  await operator(tt, e);
  const created = await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, kuberaySample());
  const all = await until(async () => {
    const ps = await pods(e, 'ray.io/cluster=raycluster-kuberay');
    return ps.length === 2 ? ps : undefined;
  }, 'head and one worker');
  const head = all.find((p) => p.metadata.labels?.['ray.io/node-type'] === 'head')!;
  const worker = all.find((p) => p.metadata.labels?.['ray.io/node-type'] === 'worker')!;
  tt.match(head.metadata.name, /^raycluster-kuberay-head-[a-z0-9]{5}$/, "KubeRay's generated head name");
  tt.match(worker.metadata.name, /^raycluster-kuberay-workergroup-worker-[a-z0-9]{5}$/);
  for (const p of [head, worker])
    tt.match(p.metadata.ownerReferences, [
      { kind: 'RayCluster', name: 'raycluster-kuberay', uid: created.metadata.uid, controller: true, blockOwnerDeletion: true },
    ]);
  tt.same(
    splitSort(head.spec!.containers[0]!.args![0]!),
    splitSort(
      'ulimit -n 65536; ray start --head --block --dashboard-agent-listen-port=52365 --dashboard-host=0.0.0.0 --memory=5368709120 --metrics-export-port=8080 --num-cpus=1',
    ),
  );
  tt.same(
    splitSort(worker.spec!.containers[0]!.args![0]!),
    splitSort(
      `ulimit -n 65536; ray start --address=raycluster-kuberay-head-svc.${e.ns.name}.svc.cluster.local:6379 --block --dashboard-agent-listen-port=52365 --memory=1073741824 --metrics-export-port=8080 --num-cpus=1`,
    ),
  );
  tt.same(
    head.spec!.containers[0]!.ports!.map((p) => [p.name, p.containerPort]),
    [
      ['gcs-server', 6379],
      ['dashboard', 8265],
      ['client', 10001],
      ['metrics', 8080],
    ],
  );
  tt.match(head.metadata.labels, {
    'ray.io/cluster': 'raycluster-kuberay',
    'ray.io/node-type': 'head',
    'ray.io/group': 'headgroup',
    'ray.io/is-ray-node': 'yes',
    'ray.io/identifier': 'raycluster-kuberay-head',
  });
  tt.match(worker.metadata.labels, {
    'ray.io/node-type': 'worker',
    'ray.io/group': 'workergroup',
    'ray.io/identifier': 'raycluster-kuberay-worker',
    'ray.io/worker-group-replica-index': '0',
  });
  tt.equal(rayEnv(worker).get('RAY_ADDRESS')?.value, `raycluster-kuberay-head-svc.${e.ns.name}.svc.cluster.local:6379`);
  tt.equal(worker.spec!.initContainers?.[0]?.name, 'wait-gcs-ready');

  const svc = await until(
    () => e.kube.getOrUndefined({ ...SERVICES, namespace: e.ns.name, name: 'raycluster-kuberay-head-svc' }),
    'head Service',
  );
  tt.equal(svc.spec!.clusterIP, 'None');
  tt.same(
    svc.spec!.ports!.map((p) => [p.name, p.port]),
    [
      ['client', 10001],
      ['dashboard', 8265],
      ['gcs-server', 6379],
      ['metrics', 8080],
    ],
  );
  tt.same(svc.spec!.selector, {
    'ray.io/cluster': 'raycluster-kuberay',
    'ray.io/node-type': 'head',
    'ray.io/identifier': 'raycluster-kuberay-head',
    'app.kubernetes.io/name': 'kuberay',
    'app.kubernetes.io/created-by': 'raykeeper',
  });

  const s0 = await until(async () => {
    const s = await status(e, 'raycluster-kuberay');
    return s.desiredWorkerReplicas === 1 && s.head?.podName === head.metadata.name ? s : undefined;
  }, 'status with the head pod');
  tt.equal(s0.state, undefined, 'not ready while nothing runs');
  tt.match(
    s0.conditions?.find((c) => c.type === 'RayClusterProvisioned'),
    { status: 'False', reason: 'RayClusterPodsProvisioning' },
  );
  tt.equal(s0.observedGeneration, created.metadata.generation);

  // The "kubelet" runs both pods.
  await markReady(e, head, '10.9.0.1');
  await markReady(e, worker, '10.9.0.2');
  const ready = await until(async () => {
    const s = await status(e, 'raycluster-kuberay');
    return s.state === 'ready' ? s : undefined;
  }, 'state ready');
  tt.equal(ready.readyWorkerReplicas, 1);
  tt.equal(ready.availableWorkerReplicas, 1);
  tt.same(ready.head, {
    podIP: '10.9.0.1',
    podName: head.metadata.name,
    serviceIP: '10.9.0.1',
    serviceName: 'raycluster-kuberay-head-svc',
  });
  tt.same(ready.endpoints, { client: '10001', dashboard: '8265', 'gcs-server': '6379', metrics: '8080' });
  tt.match(
    ready.conditions?.find((c) => c.type === 'HeadPodReady'),
    { status: 'True', reason: 'HeadPodRunningAndReady' },
  );
  tt.match(
    ready.conditions?.find((c) => c.type === 'RayClusterProvisioned'),
    { status: 'True' },
  );

  // The head pod is deleted: exactly one new head pod, under a fresh name.
  await e.kube.delete({ ...PODS, namespace: e.ns.name, name: head.metadata.name! });
  const again = await until(async () => {
    const hs = await pods(e, 'ray.io/cluster=raycluster-kuberay,ray.io/node-type=head');
    return hs.length === 1 && hs[0]!.metadata.uid !== head.metadata.uid ? hs[0] : undefined;
  }, 'a new head pod');
  tt.match(again.metadata.name, /^raycluster-kuberay-head-[a-z0-9]{5}$/);
  tt.not(again.metadata.name, head.metadata.name, 'a fresh name: nothing waits for the old one to be free');
  await until(
    async () => (await status(e, 'raycluster-kuberay')).conditions?.some((c) => c.type === 'HeadPodReady' && c.status === 'False'),
    'HeadPodReady False for the new head',
  );
  // The recorder folds repeats of one message into one Event's count.
  const createdHead = async () => (await events(e, 'CreatedHeadPod')).reduce((n, x) => n + (x.count ?? 1), 0);
  await until(async () => (await createdHead()) >= 2, 'the second CreatedHeadPod event');
  tt.equal(await createdHead(), 2, 'created twice in all: once at start, once after the deletion');
  tt.equal((await pods(e, 'ray.io/node-type=head')).length, 1, 'never two head pods');
  tt.equal((await status(e, 'raycluster-kuberay')).state, 'ready', "KubeRay's state stays ready once reached");

  // Scale up to 3, then past maxReplicas (5).
  const patch = (body: unknown) =>
    e.kube.patch({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'raycluster-kuberay' }, body, 'application/json-patch+json');
  await patch([{ op: 'replace', path: '/spec/workerGroupSpecs/0/replicas', value: 3 }]);
  const three = await until(async () => {
    const ws = await pods(e, 'ray.io/node-type=worker');
    return ws.length === 3 ? ws : undefined;
  }, 'three workers');
  tt.same(three.map((p) => p.metadata.labels!['ray.io/worker-group-replica-index']).sort(), ['0', '1', '2']);
  await patch([{ op: 'replace', path: '/spec/workerGroupSpecs/0/replicas', value: 10 }]);
  await until(async () => (await pods(e, 'ray.io/node-type=worker')).length === 5, 'clamped to maxReplicas 5');
  await until(async () => (await status(e, 'raycluster-kuberay')).desiredWorkerReplicas === 5, 'desiredWorkerReplicas 5');
  // workersToDelete names one; replicas 4: that one goes and is not replaced.
  const victim = (await pods(e, 'ray.io/node-type=worker'))[2]!.metadata.name!;
  await patch([
    { op: 'replace', path: '/spec/workerGroupSpecs/0/replicas', value: 4 },
    { op: 'add', path: '/spec/workerGroupSpecs/0/scaleStrategy', value: { workersToDelete: [victim] } },
  ]);
  const four = await until(async () => {
    const ws = await pods(e, 'ray.io/node-type=worker');
    return ws.length === 4 && !ws.some((p) => p.metadata.name === victim) ? ws : undefined;
  }, 'the named worker deleted, 4 left');
  tt.equal(four.length, 4);

  // Suspend: every pod goes, the object stays; resume: they come back.
  await patch([{ op: 'add', path: '/spec/suspend', value: true }]);
  const suspended = await until(async () => {
    const s = await status(e, 'raycluster-kuberay');
    return s.state === 'suspended' ? s : undefined;
  }, 'state suspended');
  tt.equal((await pods(e, 'ray.io/cluster=raycluster-kuberay')).length, 0, 'no pods while suspended');
  tt.match(
    suspended.conditions?.find((c) => c.type === 'RayClusterSuspended'),
    { status: 'True' },
  );
  tt.ok(await getCluster(e, 'raycluster-kuberay'), 'the RayCluster is kept');
  await patch([{ op: 'replace', path: '/spec/suspend', value: false }]);
  await until(async () => (await pods(e, 'ray.io/cluster=raycluster-kuberay')).length === 5, 'head and 4 workers again');
  await until(
    async () => (await status(e, 'raycluster-kuberay')).conditions?.some((c) => c.type === 'RayClusterSuspended' && c.status === 'False'),
    'not suspended',
  );
});

t.test('ray-cluster.external-redis (manifests/samples/raycluster-gcs-ft.yaml): finalizer first, then the GCS-FT wiring', async (tt) => {
  const e = await env(tt);
  await operator(tt, e);
  const sample = parse(readFileSync(join(REPO_ROOT, 'manifests/samples/raycluster-gcs-ft.yaml'), 'utf8')) as RayCluster;
  const created = await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, sample);
  const head = await until(async () => (await pods(e, 'ray.io/node-type=head'))[0], 'head pod');
  const cluster = (await getCluster(e, 'raycluster-external-redis'))!;
  tt.ok(cluster.metadata.finalizers?.includes('ray.io/gcs-ft-redis-cleanup-finalizer'), 'the cleanup finalizer was on before the head pod');
  tt.ok(Date.parse(head.metadata.creationTimestamp ?? '') >= Date.parse(created.metadata.creationTimestamp ?? ''));
  const env_ = rayEnv(head);
  tt.equal(env_.get('RAY_REDIS_ADDRESS')?.value, 'redis:6379');
  tt.same(
    env_.get('REDIS_PASSWORD')?.valueFrom,
    { secretKeyRef: { name: 'redis-password-secret', key: 'password' } },
    'the password stays a secretKeyRef',
  );
  tt.equal(env_.get('RAY_external_storage_namespace')?.value, created.metadata.uid, 'no annotation, no option: the UID');
  tt.same(
    env_.get('RAY_external_storage_namespace'),
    cleanupEnv(cluster).find((x) => x.name === 'RAY_external_storage_namespace'),
    'the namespace the cleanup Job will delete',
  );
  tt.equal(head.metadata.annotations?.['ray.io/ft-enabled'], 'true');
  tt.equal(head.metadata.annotations?.['ray.io/external-storage-namespace'], created.metadata.uid);
  const args = splitSort(head.spec!.containers[0]!.args![0]!);
  tt.ok(args.includes('--redis-password=$REDIS_PASSWORD'));
  tt.ok(args.includes('--num-cpus=0'), "rayStartParams' num-cpus wins over the limit");
  tt.ok(args.includes('--memory=2000000000'));
  tt.notOk(JSON.stringify(head).includes('5241590000000000'), 'no password value anywhere in the pod');
  const worker = await until(async () => (await pods(e, 'ray.io/node-type=worker'))[0], 'worker pod');
  tt.equal(rayEnv(worker).get('RAY_gcs_rpc_server_reconnect_timeout_s')?.value, '600');
  const svc = await until(
    () => e.kube.getOrUndefined({ ...SERVICES, namespace: e.ns.name, name: 'raycluster-external-redis-head-svc' }),
    'head Service',
  );
  tt.same(
    svc.spec!.ports!.map((p) => p.name),
    ['client', 'dashboard', 'gcs', 'metrics'],
  );

  // The head dies: its successor writes to the same storage namespace (what GCS FT is for).
  await e.kube.delete({ ...PODS, namespace: e.ns.name, name: head.metadata.name! });
  const next = await until(async () => {
    const hs = await pods(e, 'ray.io/node-type=head');
    return hs.length === 1 && hs[0]!.metadata.uid !== head.metadata.uid ? hs[0] : undefined;
  }, 'the re-created head');
  tt.same(
    rayEnv(next).get('RAY_external_storage_namespace'),
    env_.get('RAY_external_storage_namespace'),
    'same storage namespace: the GCS data is kept',
  );
  tt.equal((await pods(e, 'ray.io/node-type=worker')).length, 1, 'the worker is left alone');
});

t.test(
  'fields we do not implement: an event and a condition; K8s token auth refused, enableIngress ignored; managedBy respected',
  async (tt) => {
    const e = await env(tt);
    await operator(tt, e);
    const auth = kuberaySample();
    auth.metadata.name = 'auth';
    auth.spec!.rayVersion = '2.60.0';
    (auth.spec as Record<string, unknown>).authOptions = { mode: 'token', enableK8sTokenAuth: true };
    const scaler = kuberaySample();
    scaler.metadata.name = 'scaler';
    (scaler.spec!.headGroupSpec as Record<string, unknown>).enableIngress = true;
    const foreign = kuberaySample();
    foreign.metadata.name = 'foreign';
    foreign.spec!.managedBy = 'kueue.x-k8s.io/multikueue';
    for (const c of [auth, scaler, foreign]) await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, c);
    const refused = await until(
      async () => (await status(e, 'auth')).conditions?.find((c) => c.type === 'raykeeper.io/UnsupportedFields'),
      'auth: condition',
    );
    tt.match(refused, { status: 'True', reason: 'Refused', message: /spec\.authOptions\.enableK8sTokenAuth/ });
    const ignored = await until(
      async () => (await status(e, 'scaler')).conditions?.find((c) => c.type === 'raykeeper.io/UnsupportedFields'),
      'scaler: condition',
    );
    tt.match(ignored, { status: 'True', reason: 'Ignored', message: /spec\.headGroupSpec\.enableIngress/ });
    await until(async () => (await pods(e, 'ray.io/cluster=scaler')).length === 2, 'the Ingress cluster runs without one');
    const warned = await until(async () => {
      const ev = await events(e, 'UnsupportedRayClusterFields');
      return ev.length >= 2 ? ev : undefined;
    }, 'warning events');
    tt.ok(warned.every((x) => x.type === 'Warning'));
    tt.match(warned.find((x) => x.involvedObject.name === 'auth')?.message, /^not started: spec\.authOptions\.enableK8sTokenAuth/);
    tt.equal((await pods(e, 'ray.io/cluster=auth')).length, 0, 'no unauthenticated cluster in place of a token-auth one');
    tt.equal((await pods(e, 'ray.io/cluster=foreign')).length, 0, 'managedBy MultiKueue: hands off');
    tt.same((await getCluster(e, 'foreign'))?.status ?? {}, {}, 'and no status written');
  },
);

t.test(
  'an invalid cluster (admitted while the validating webhook was down): KubeRay event, no pods, no status; fixed, it runs',
  async (tt) => {
    const e = await env(tt);
    await operator(tt, e);
    const bad = kuberaySample();
    bad.metadata.name = 'invalid';
    const group = bad.spec!.workerGroupSpecs![0]!;
    group.minReplicas = 3;
    group.maxReplicas = 1;
    await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, bad);
    const [event] = await until(async () => {
      const ev = await events(e, 'InvalidRayClusterSpec');
      return ev.length > 0 ? ev : undefined;
    }, 'the InvalidRayClusterSpec event');
    tt.equal(event?.type, 'Warning');
    tt.equal(event?.message, 'The RayCluster spec is invalid: worker group workergroup has minReplicas 3 greater than maxReplicas 1');
    tt.equal((await pods(e, 'ray.io/cluster=invalid')).length, 0, 'no pods');
    tt.same((await getCluster(e, 'invalid'))?.status ?? {}, {}, 'no status written');
    await e.kube.patch(
      { ...RAYCLUSTERS, namespace: e.ns.name, name: 'invalid' },
      [{ op: 'replace', path: '/spec/workerGroupSpecs/0/minReplicas', value: 1 }],
      'application/json-patch+json',
    );
    await until(async () => (await pods(e, 'ray.io/cluster=invalid')).length === 2, 'head and worker once the spec is valid');
    tt.equal((await events(e, 'InvalidRayClusterSpec')).length, 1, 'one event for the problem');
  },
);
