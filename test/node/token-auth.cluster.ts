// Ray token authentication on the real node (`raykeeper dev --kubelet`, root; `npm run test:cluster`):
// a RayCluster with `authOptions.mode: token` (Ray 2.60 image) made by our in-cluster operator gets its
// generated Secret; its worker joins the authenticated GCS; the dashboard refuses a request without the
// token (401) and takes one with it; an HTTPMode RayJob (our controller's dashboard client, with the
// default install's RBAC: get on Secrets, no optional reader) and a
// K8sJobMode RayJob (the submitter pod's `ray job submit`, token by secretKeyRef) against it both end
// Complete; a SidecarMode RayJob's own token-auth cluster gets its Secret and its submitter container
// authenticates. The token is in none of the namespace's events. Then the host is restored.
import t from 'tap';
import { RAYCLUSTERS, RAYJOBS, type RayJob } from '../../src/types.ts';
import type { Pod } from '../../kube/model.ts';
import { PODS, SECRETS } from '../../kube/resources.ts';
import { RAY_CLUSTER_LABEL, RAY_NODE_TYPE_LABEL } from '../../src/names.ts';
import { RAY_RELEASE } from '../../src/ray-release.ts';
import { tokenOf } from '../../src/raycluster/auth.ts';
import { kubectl, namespaceEvents, nodeUnderTest, rayContainer, readyPods, until } from './helpers.ts';

const { env, kube, stopAndAssertRestored } = await nodeUnderTest(t);
const NS = 'ray-token';
const NAME = 'token-auth';

const podsOf = async (labelSelector: string): Promise<Pod[]> => (await kube.list(PODS.at(NS), { labelSelector })).items;

/** The status code of a dashboard GET made inside the head pod (over 127.0.0.1), with or without the token. */
function dashboardStatus(head: string, path: string, withToken: boolean): string {
  const header = withToken ? "{'x-ray-authorization': 'Bearer ' + os.environ['RAY_AUTH_TOKEN']}" : '{}';
  const script = [
    'import os, urllib.request, urllib.error',
    `req = urllib.request.Request('http://127.0.0.1:8265${path}', headers=${header})`,
    'try:\n  print(urllib.request.urlopen(req, timeout=10).status)\nexcept urllib.error.HTTPError as e:\n  print(e.code)',
  ].join('\n');
  const r = kubectl(env.kubeconfig, ['exec', '-n', NS, head, '-c', 'ray-head', '--', 'python', '-c', script]);
  if (r.status !== 0) throw new Error(`kubectl exec: ${r.stderr}`);
  return r.stdout.trim();
}

const finished = (name: string): Promise<RayJob> =>
  until(
    async () => {
      const j = await kube.get({ ...RAYJOBS, namespace: NS, name });
      return j.status?.jobDeploymentStatus === 'Complete' || j.status?.jobDeploymentStatus === 'Failed' ? j : undefined;
    },
    `the RayJob ${name} to finish`,
    600_000,
    1000,
  );

t.test(
  'a token-auth RayCluster: Secret, authenticated workers, 401 without the token; HTTPMode and K8sJobMode RayJobs Complete',
  async (t) => {
    await kube.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } } });
    await kube.create(
      { ...RAYCLUSTERS, namespace: NS },
      {
        apiVersion: 'ray.io/v1',
        kind: 'RayCluster',
        metadata: { name: NAME },
        spec: {
          rayVersion: RAY_RELEASE,
          authOptions: { mode: 'token' },
          headGroupSpec: {
            rayStartParams: {},
            template: {
              spec: {
                containers: [{ ...rayContainer('ray-head', '500m', '2G'), ports: [{ containerPort: 8265, name: 'dashboard' }] }],
              },
            },
          },
          workerGroupSpecs: [
            {
              groupName: 'small',
              replicas: 1,
              minReplicas: 1,
              maxReplicas: 1,
              rayStartParams: {},
              template: { spec: { containers: [rayContainer('ray-worker', '300m', '1G')] } },
            },
          ],
        },
      },
    );
    const secret = await until(() => kube.getOrUndefined({ ...SECRETS, namespace: NS, name: NAME }), 'the generated Secret', 60_000, 500);
    const token = tokenOf(secret) ?? '';
    t.ok(token.length >= 40, 'a generated token');
    const pods = await readyPods(kube, NS, `${RAY_CLUSTER_LABEL}=${NAME}`, 2, 420_000);
    const head = (await podsOf(`${RAY_CLUSTER_LABEL}=${NAME},${RAY_NODE_TYPE_LABEL}=head`))[0]!.metadata.name!;
    t.equal(pods.length, 2);
    t.equal(dashboardStatus(head, '/api/jobs/', false), '401', 'no token: refused');
    t.equal(dashboardStatus(head, '/api/jobs/', true), '200', 'with the token from the Secret: answered');
    t.equal(dashboardStatus(head, '/api/gcs_healthz', false), '200', "health stays open (the pods' probes)");

    // The dashboard token of every RayJob (HTTPMode's requests, and the status reads of both): the controller
    // GETs the Secret with the default install's RBAC (manifests/base), as KubeRay's default install does.
    const entrypoint = `python -c "import ray; ray.init(); print('resources', ray.cluster_resources())"`;
    for (const [name, mode] of [
      ['token-http', 'HTTPMode'],
      ['token-k8sjob', 'K8sJobMode'],
    ] as const) {
      await kube.create(
        { ...RAYJOBS, namespace: NS },
        {
          apiVersion: 'ray.io/v1',
          kind: 'RayJob',
          metadata: { name },
          spec: { entrypoint, submissionMode: mode, clusterSelector: { [RAY_CLUSTER_LABEL]: NAME } },
        },
      );
      const done = await finished(name);
      t.equal(done.status?.jobDeploymentStatus, 'Complete', `${mode}: Complete`, { status: done.status });
      t.equal(done.status?.jobStatus, 'SUCCEEDED', `${mode}: Ray says SUCCEEDED`);
    }
    const logs = kubectl(env.kubeconfig, ['logs', '-n', NS, 'job/token-k8sjob']);
    t.equal(logs.status, 0, logs.stderr);
    t.match(logs.stdout, /'CPU': 2\.0/, 'the submitter followed the job: head and worker both joined the authenticated cluster');
    const events = JSON.stringify(await namespaceEvents(kube, NS));
    t.notOk(events.includes(token), 'the token is in no event');
    // Room on the 2-CPU node for the next test's cluster.
    await kube.delete({ ...RAYCLUSTERS, namespace: NS, name: NAME });
    await until(async () => (await podsOf(`${RAY_CLUSTER_LABEL}=${NAME}`)).length === 0, 'its pods gone', 180_000, 1000);
  },
);

t.test(
  'a SidecarMode RayJob with token auth: its own cluster gets a generated Secret; the submitter container authenticates',
  async (t) => {
    const name = 'token-sidecar';
    await kube.create(
      { ...RAYJOBS, namespace: NS },
      {
        apiVersion: 'ray.io/v1',
        kind: 'RayJob',
        metadata: { name },
        spec: {
          submissionMode: 'SidecarMode',
          entrypoint: `python -c "import ray; ray.init(); print('resources', ray.cluster_resources())"`,
          rayClusterSpec: {
            rayVersion: RAY_RELEASE,
            authOptions: { mode: 'token' },
            headGroupSpec: {
              rayStartParams: {},
              template: {
                spec: { containers: [{ ...rayContainer('ray-head', '500m', '2G'), ports: [{ containerPort: 8265, name: 'dashboard' }] }] },
              },
            },
            workerGroupSpecs: [],
          },
        },
      },
    );
    const done = await finished(name);
    t.equal(done.status?.jobDeploymentStatus, 'Complete', 'SidecarMode: Complete', { status: done.status });
    t.equal(done.status?.jobStatus, 'SUCCEEDED', 'SidecarMode: Ray says SUCCEEDED');
    const cluster = done.status?.rayClusterName ?? '';
    const secret = await kube.getOrUndefined({ ...SECRETS, namespace: NS, name: cluster });
    t.ok(tokenOf(secret), `the generated Secret ${cluster}`);
    const [head] = await podsOf(`${RAY_CLUSTER_LABEL}=${cluster},${RAY_NODE_TYPE_LABEL}=head`);
    const logs = kubectl(env.kubeconfig, ['logs', '-n', NS, head?.metadata.name ?? '', '-c', 'ray-job-submitter']);
    t.equal(logs.status, 0, logs.stderr);
    t.match(logs.stdout, /succeeded/i, "ray job submit in the head pod, with the token, reported the job's success");
  },
);

t.test('stopping the node restores the host', stopAndAssertRestored);
