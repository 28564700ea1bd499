// Ray for real on the real node (`raykeeper dev --kubelet`, root; `npm run test:cluster`), one node start
// for all of it: a GCS-FT RayCluster's head pod, made by our RayCluster operator running in-cluster from
// manifests/, writes its GCS tables into the in-cluster Redis and deleting the cluster removes exactly
// them; `kubectl apply -f manifests/samples/rayjob.yaml` ends Complete with Ray pods talking pod to pod
// through Services and cluster DNS; manifests/samples/rayjob-sidecar.yaml ends Complete with the submitter
// as a container of the head pod (no submitter Job); then charts/raykeeper installed with Helm does the webhook's job
// through the chart's Service, and `helm uninstall` leaves nothing of ours. Then the host is restored.
import { join } from 'node:path';
import { Redis } from 'ioredis';
import t from 'tap';
import { devSampleCluster } from '../../dev/dev.ts';
import { startKubeletDev, SYSTEM_NAMESPACE, waitForAdmission } from '../../dev/kubelet.ts';
import { Discovery, parseManifests } from '../../localcluster/apply.ts';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { isNotFound, KubeClient, type ResourceRef } from '../../kube/client.ts';
import type { Pod } from '../../kube/model.ts';
import { LEASES, MUTATING_WEBHOOK_CONFIGURATIONS, PODS } from '../../kube/resources.ts';
import { RAYCLUSTERS, RAYJOBS, type RayJob } from '../../src/types.ts';
import { APP_CREATED_BY_LABEL, GCS_FT_REDIS_CLEANUP_FINALIZER, RAY_CLUSTER_LABEL, RAY_NODE_TYPE_LABEL } from '../../src/names.ts';
import { RAY_IMAGE } from '../../src/ray-release.ts';
import { CHART_DIR, helmOk, key, requireHelm } from '../chart/helm.ts';
import { rayKeys, seedRay } from '../helpers/harness.ts';
import { assertCleanupJobRan, assertHostRestored, hostState, kubectl, until } from './helpers.ts';

interface Cluster {
  metadata: { name: string; finalizers?: string[]; annotations?: Record<string, string> };
  spec: {
    gcsFaultToleranceOptions: { externalStorageNamespace?: string };
    workerGroupSpecs: Array<{ replicas?: number; minReplicas?: number }>;
    suspend?: boolean;
  };
}
const before = await hostState();
const env = await startKubeletDev({ stateDir: t.testdir(), progress: (m) => t.comment(m) });
let stopped = false;
t.teardown(async () => {
  if (!stopped) await env.stop();
});
const kube = new KubeClient(env.cluster.controlPlane.kubeConfig());
const redis = new Redis({ host: env.redis.host, port: env.redis.port, lazyConnect: true, maxRetriesPerRequest: 3 });

const ready = (p: Pod): boolean => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
const podsOf = async (namespace: string, labelSelector: string): Promise<Pod[]> =>
  (await kube.list(PODS.at(namespace), { labelSelector })).items;
const gone = (ref: ResourceRef) => async (): Promise<boolean> =>
  kube.get(ref).then(
    () => false,
    (err: unknown) => isNotFound(err),
  );
/** What the pods of a namespace are doing, for a failure's diagnostics. */
const podSummary = async (namespace: string): Promise<unknown> =>
  (await kube.list(PODS.at(namespace))).items.map((p) => ({
    name: p.metadata.name,
    phase: p.status?.phase,
    containers: p.status?.containerStatuses,
  }));

/** Waits (10 min at most) until the RayJob is Complete or Failed; a timeout says where it and its pods were. */
const finished = (rayjob: ResourceRef<RayJob>): Promise<RayJob> =>
  until(
    async () => {
      const j = await kube.get(rayjob);
      return j.status?.jobDeploymentStatus === 'Complete' || j.status?.jobDeploymentStatus === 'Failed' ? j : undefined;
    },
    `the RayJob ${rayjob.name} to finish`,
    600_000,
    1000,
  ).catch(async (err: Error) => {
    throw new Error(`${err.message}: ${JSON.stringify({ job: (await kube.get(rayjob)).status, pods: await podSummary('default') })}`);
  });

t.test(
  "a GCS-FT RayCluster: our operator's Ray head pod writes its GCS tables into the in-cluster Redis; deletion removes exactly them",
  async (t) => {
    const ns = 'ray-gcs';
    const name = 'gcs-ft';
    await kube.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } } });
    const sample = structuredClone(devSampleCluster(env.redisInCluster)) as Cluster;
    t.notOk('annotations' in sample.metadata, 'metadata.annotations absent');
    // The head alone: the GCS is the head's.
    sample.spec.workerGroupSpecs[0] = { ...sample.spec.workerGroupSpecs[0], replicas: 0, minReplicas: 0 };
    const created = await kube.create(RAYCLUSTERS.at(ns), { ...sample, metadata: { name } });
    t.same(created.metadata.finalizers, [GCS_FT_REDIS_CLEANUP_FINALIZER], 'finalizer added at admission');
    const storage = created.spec?.gcsFaultToleranceOptions?.externalStorageNamespace!;
    t.match(storage, /^[0-9a-f-]{36}$/, 'storage namespace pinned at admission');
    const neighbour = await seedRay(redis, 'neighbour-cluster');

    const selector = `${RAY_CLUSTER_LABEL}=${name},${RAY_NODE_TYPE_LABEL}=head`;
    const head = await until(
      async () => (await podsOf(ns, selector)).find(ready),
      'the head pod Ready (its probes ask the dashboard agent)',
      300_000,
      1000,
    ).catch(async (err: Error) => {
      throw new Error(`${err.message}: ${JSON.stringify(await podSummary(ns))}`);
    });
    t.equal(head.metadata.labels?.[APP_CREATED_BY_LABEL], 'raykeeper', 'made by our RayCluster operator');
    t.equal(head.spec?.nodeName, 'localhost', 'scheduled on the real node');
    t.equal(head.spec?.containers?.[0]?.image, RAY_IMAGE, 'the Ray image');
    t.equal(
      head.spec?.containers?.[0]?.env?.find((e) => e.name === 'RAY_external_storage_namespace')?.value,
      storage,
      'the head writes under the pinned namespace',
    );
    const keys = await until(
      async () => {
        const k = await rayKeys(redis, storage);
        return k.includes(`RAY${storage}@NODE`) && k.includes(`RAY${storage}@KV`) ? k : undefined;
      },
      "the head's GCS tables (NODE, KV) in the in-cluster Redis",
      180_000,
      1000,
    );
    t.ok(keys.length >= 2, `the head wrote ${keys.map((k) => k.slice(k.indexOf('@') + 1)).join(' ')}`);

    await kube.request('DELETE', `/apis/ray.io/v1/namespaces/${ns}/rayclusters/${name}`);
    await until(gone({ ...RAYCLUSTERS, namespace: ns, name }), 'the RayCluster to be gone (finalizer released)', 240_000, 500);
    t.same(await rayKeys(redis, storage), [], 'its keys are gone');
    t.same(await rayKeys(redis, 'neighbour-cluster'), neighbour.sort(), "a neighbour's keys are intact");
    await assertCleanupJobRan(t, kube, ns, name);
    await until(async () => (await podsOf(ns, `${RAY_CLUSTER_LABEL}=${name}`)).length === 0, 'the Ray pods to be gone', 120_000, 500);
  },
);

t.test(
  'kubectl apply -f manifests/samples/rayjob.yaml ends Complete (SUCCEEDED): Ray pods, dashboard and submitter pod to pod',
  async (t) => {
    const r = kubectl(env.kubeconfig, ['apply', '-f', join(REPO_ROOT, 'manifests', 'samples', 'rayjob.yaml')]);
    t.equal(r.status, 0, r.stderr);
    const rayjob = { ...RAYJOBS, namespace: 'default', name: 'rayjob-sample' };
    const done = await finished(rayjob);
    t.equal(done.status?.jobDeploymentStatus, 'Complete', 'jobDeploymentStatus', { status: done.status });
    t.equal(done.status?.jobStatus, 'SUCCEEDED', 'jobStatus');
    t.equal(
      done.status?.dashboardURL,
      `${done.status?.rayClusterName}-head-svc.default.svc.cluster.local:8265`,
      'the head Service by its cluster DNS name',
    );
    const rayPods = await podsOf('default', `${RAY_CLUSTER_LABEL}=${done.status?.rayClusterName}`);
    t.same(rayPods.map((p) => p.metadata.labels?.[RAY_NODE_TYPE_LABEL]).sort(), ['head', 'worker'], 'a head and a worker pod');
    t.ok(
      rayPods.every((p) => p.spec?.containers?.[0]?.image === RAY_IMAGE && p.spec?.nodeName === 'localhost'),
      'of the Ray image, on the node',
    );
    // The submitter pod's `ray job submit` followed the entrypoint's output: the cluster's resources,
    // head and worker, one CPU each (limits 1).
    const logs = kubectl(env.kubeconfig, ['logs', 'job/rayjob-sample']);
    t.equal(logs.status, 0, logs.stderr);
    t.match(logs.stdout, /'CPU': 2\.0/, 'the entrypoint saw the head and the worker');

    const d = kubectl(env.kubeconfig, ['delete', 'rayjob', 'rayjob-sample', '--wait=false']);
    t.equal(d.status, 0, d.stderr);
    await until(gone(rayjob), 'the RayJob to be gone', 180_000, 500);
    await until(async () => (await podsOf('default', RAY_CLUSTER_LABEL)).length === 0, 'its Ray pods to be gone', 180_000, 500);
  },
);

t.test(
  'kubectl apply -f manifests/samples/rayjob-sidecar.yaml ends Complete (SUCCEEDED): the submitter is a container of the head pod, no Job',
  async (t) => {
    const r = kubectl(env.kubeconfig, ['apply', '-f', join(REPO_ROOT, 'manifests', 'samples', 'rayjob-sidecar.yaml')]);
    t.equal(r.status, 0, r.stderr);
    const rayjob = { ...RAYJOBS, namespace: 'default', name: 'rayjob-sidecar' };
    const done = await finished(rayjob);
    t.equal(done.status?.jobDeploymentStatus, 'Complete', 'jobDeploymentStatus', { status: done.status });
    t.equal(done.status?.jobStatus, 'SUCCEEDED', 'jobStatus');
    const jobs = kubectl(env.kubeconfig, ['get', 'jobs', '-n', 'default', '-o', 'name']);
    t.equal(jobs.status, 0, jobs.stderr);
    t.notMatch(jobs.stdout, /rayjob-sidecar/, 'no submitter Job');
    const [head] = await podsOf('default', `${RAY_CLUSTER_LABEL}=${done.status?.rayClusterName},${RAY_NODE_TYPE_LABEL}=head`);
    t.same(
      head?.spec?.containers?.map((c) => [c.name, c.image]),
      [
        ['ray-head', RAY_IMAGE],
        ['ray-job-submitter', RAY_IMAGE],
      ],
      'the submitter container beside ray-head, of the head image',
    );
    t.equal(head?.spec?.restartPolicy, 'Never');
    t.equal(
      head?.status?.containerStatuses?.find((c) => c.name === 'ray-job-submitter')?.state?.terminated?.exitCode,
      0,
      "the kubelet's word: the submitter container exited 0",
    );
    // `ray job submit` in the head pod followed the entrypoint to its end, over 127.0.0.1. SidecarMode submits
    // as soon as the head's dashboard answers (KubeRay's rule), not when the cluster is ready, so the worker
    // may not have joined yet: the entrypoint sees the head's CPU, or the head's and the worker's.
    const logs = kubectl(env.kubeconfig, ['logs', '-n', 'default', head?.metadata.name ?? '', '-c', 'ray-job-submitter']);
    t.equal(logs.status, 0, logs.stderr);
    t.match(logs.stdout, /'CPU': [12]\.0/, 'the entrypoint ran in the cluster and printed its resources');
    t.match(logs.stdout, /succeeded/i, "ray job submit reported the job's success");

    const d = kubectl(env.kubeconfig, ['delete', 'rayjob', 'rayjob-sidecar', '--wait=false']);
    t.equal(d.status, 0, d.stderr);
    await until(gone(rayjob), 'the RayJob to be gone', 180_000, 500);
    await until(async () => (await podsOf('default', RAY_CLUSTER_LABEL)).length === 0, 'its Ray pods to be gone', 180_000, 500);
  },
);

t.test(
  "helm install of charts/raykeeper: pods Ready, the API server calls the webhook through the chart's Service; uninstall leaves nothing of ours",
  async (t) => {
    requireHelm(); // a missing helm fails this test, not the file
    // The manifests/ install steps aside (its webhook configuration goes, its pods scale to 0); CRDs stay.
    for (const args of [
      ['delete', 'mutatingwebhookconfiguration', 'raykeeper'],
      ['delete', 'validatingwebhookconfiguration', 'raykeeper'],
      ['-n', SYSTEM_NAMESPACE, 'scale', 'deployment', 'raykeeper-webhook', 'raykeeper-controller', '--replicas=0'],
    ]) {
      const r = kubectl(env.kubeconfig, args);
      t.equal(r.status, 0, r.stderr);
    }
    const ns = 'raykeeper-helm';
    const release = 'rk';
    const fullname = `${release}-raykeeper`;
    await kube.request('POST', '/api/v1/namespaces', {
      body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } },
    });
    const helm = (...args: string[]) => helmOk([...args, '--namespace', ns, '--kubeconfig', env.kubeconfig]);
    helm('install', release, CHART_DIR, '--wait', '--timeout', '5m');
    const manifest = parseManifests(helm('get', 'manifest', release));

    const pods = await podsOf(ns, 'app.kubernetes.io/name=raykeeper');
    t.same(
      pods
        .filter(ready)
        .map((p) => p.metadata.labels?.['app.kubernetes.io/component'])
        .sort(),
      ['controller', 'controller', 'webhook', 'webhook'],
      'two Ready webhook and two Ready controller pods',
    );
    t.ok(
      pods.every((p) => p.spec?.containers?.[0]?.image === 'raykeeper:0.1.0'),
      'of our image',
    );
    const config = await kube.get(MUTATING_WEBHOOK_CONFIGURATIONS.at(undefined, fullname));
    for (const w of config.webhooks ?? [])
      t.same(
        w.clientConfig.service && { name: w.clientConfig.service.name, namespace: w.clientConfig.service.namespace },
        { name: `${fullname}-webhook`, namespace: ns },
        "by the chart's Service, no url",
      );
    await waitForAdmission(kube);

    // Only the chart's webhook is registered now: the CREATE's answer is what it made of the object.
    const users = 'helm-users';
    const name = 'helm-gcs-ft';
    await kube.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: users } } });
    const sample = devSampleCluster(env.redisInCluster) as Cluster;
    const created = await kube.create(RAYCLUSTERS.at(users), { ...sample, metadata: { name }, spec: { ...sample.spec, suspend: true } });
    t.same(created.metadata.finalizers, [GCS_FT_REDIS_CLEANUP_FINALIZER], 'finalizer added at admission');
    t.match(created.spec?.gcsFaultToleranceOptions?.externalStorageNamespace, /^[0-9a-f-]{36}$/, 'storage namespace pinned at admission');
    await kube.request('DELETE', `/apis/ray.io/v1/namespaces/${users}/rayclusters/${name}`);
    await until(
      gone({ ...RAYCLUSTERS, namespace: users, name }),
      "the chart's controller to clean up and release the finalizer",
      240_000,
      500,
    );
    await assertCleanupJobRan(t, kube, users, name);

    helm('uninstall', release, '--wait', '--timeout', '3m');
    const discovery = new Discovery(kube);
    for (const o of manifest) t.ok(await gone(await discovery.refOf(o, ns))(), `${key(o)} removed`);
    await until(async () => (await kube.list(PODS.at(ns))).items.length === 0, 'the release pods to be gone', 120_000, 500);
    const left: string[] = [];
    for (const [path, keep] of [
      ['/api/v1/namespaces/NS/secrets', []],
      ['/api/v1/namespaces/NS/configmaps', ['kube-root-ca.crt']],
      ['/api/v1/namespaces/NS/serviceaccounts', ['default']],
      ['/api/v1/namespaces/NS/services', []],
      ['/apis/apps/v1/namespaces/NS/deployments', []],
      ['/apis/apps/v1/namespaces/NS/replicasets', []],
      ['/apis/batch/v1/namespaces/NS/jobs', []],
      ['/apis/policy/v1/namespaces/NS/poddisruptionbudgets', []],
    ] as Array<[string, string[]]>) {
      const items = (await kube.request<{ items: Array<{ metadata: { name: string } }> }>('GET', path.replace('NS', ns))).items;
      left.push(...items.map((i) => `${path.split('/').at(-1)}/${i.metadata.name}`).filter((n) => !keep.some((k) => n.endsWith(`/${k}`))));
    }
    for (const path of [
      '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations',
      '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations',
      '/apis/rbac.authorization.k8s.io/v1/clusterroles',
      '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
    ]) {
      const items = (
        await kube.request<{ items: Array<{ metadata: { name: string } }> }>('GET', path, {
          query: { labelSelector: `app.kubernetes.io/instance=${release}` },
        })
      ).items;
      left.push(...items.map((i) => `${path.split('/').at(-1)}/${i.metadata.name}`));
    }
    t.same(left, [], 'nothing of the release is left in its namespace or cluster-wide');
    // The controller's leader Lease is not Helm's: it stays until the namespace goes (not handed back:
    // Helm deletes the leader-election Role together with the Deployment, before the pod can write it).
    const leases = (await kube.list(LEASES.at(ns))).items;
    t.same(
      leases.map((l) => l.metadata.name),
      ['raykeeper-controller'],
      'only the leader Lease stays',
    );
    t.equal(
      await kube.request('GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/rayclusters.ray.io').then(
        () => 200,
        () => 404,
      ),
      200,
      'CRDs stay (Helm never deletes crds/)',
    );
  },
);

t.test('stopping the node restores the host', async (t) => {
  redis.disconnect();
  kube.close();
  await env.stop();
  stopped = true;
  await assertHostRestored(t, before);
});
