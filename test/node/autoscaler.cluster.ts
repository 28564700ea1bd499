// The Ray autoscaler (v2) for real on the real node (`raykeeper dev --kubelet`, root; `npm run test:cluster`):
// raykeeper installed from manifests/ runs an autoscaling RayCluster standalone. Its worker group starts
// at 0 and alone offers the custom resource `special`; a task needing it makes the autoscaler (the head
// pod's `autoscaler` container, through the ServiceAccount / Role / RoleBinding our operator created)
// raise replicas, our operator adds the worker, the task runs there; idleTimeoutSeconds later the
// autoscaler lists the worker in workersToDelete and lowers replicas, our operator deletes exactly it and
// the autoscaler clears the list. Pod count 1 -> 2 -> 1, read from the API server, and the autoscaler's
// own log lines as evidence. Then the host is restored.
import { requireKubeCommand } from '../../localcluster/binaries.ts';
import { run } from '../../localcluster/node/host.ts';
import t from 'tap';
import { RAYCLUSTERS } from '../../src/types.ts';
import { NAMESPACES, PODS, ROLEBINDINGS, ROLES, SERVICEACCOUNTS, type Resource } from '../../kube/resources.ts';
import type { ApiObject } from '../../kube/model.ts';
import { RAY_IMAGE, RAY_RELEASE } from '../../src/ray-release.ts';
import { nodeUnderTest, until } from './helpers.ts';

interface Pod {
  metadata: { name: string; labels?: Record<string, string>; deletionTimestamp?: string };
  spec: { restartPolicy?: string; serviceAccountName?: string; containers: Array<{ name: string }> };
  status?: { conditions?: Array<{ type: string; status: string }> };
}

const NS = 'ray-autoscale';
const NAME = 'autoscale';
const GROUP = 'special-group';
const IDLE_SECONDS = 20;

const { env, kube, stopAndAssertRestored } = await nodeUnderTest(t);
const kubectl = (args: string[], timeoutMs = 120_000) =>
  run(requireKubeCommand('kubectl'), ['--kubeconfig', env.kubeconfig, '-n', NS, ...args], { timeoutMs });

const ready = (p: Pod): boolean => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
const rayPods = async (): Promise<Pod[]> =>
  ((await kube.list({ ...PODS, namespace: NS }, { labelSelector: `ray.io/cluster=${NAME}` })).items as Pod[]).filter(
    (p) => !p.metadata.deletionTimestamp,
  );
const cluster = () => kube.get({ ...RAYCLUSTERS, namespace: NS, name: NAME });

// Small requests: the machine has 2 cores for the node, raykeeper, Redis and these three containers.
const container = (name: string, cpu: string, memory: string) => ({
  name,
  image: RAY_IMAGE,
  imagePullPolicy: 'Never',
  resources: { requests: { cpu, memory }, limits: { cpu: '1', memory: '2Gi' } },
});

t.test('a task needing a resource only a worker at 0 offers: the autoscaler adds it, then removes it when idle', async (t) => {
  await kube.create(NAMESPACES, { metadata: { name: NS } });
  await kube.create(
    { ...RAYCLUSTERS, namespace: NS },
    {
      apiVersion: 'ray.io/v1',
      kind: 'RayCluster',
      metadata: { name: NAME },
      spec: {
        rayVersion: RAY_RELEASE,
        enableInTreeAutoscaling: true,
        autoscalerOptions: {
          version: 'v2',
          imagePullPolicy: 'Never',
          resources: { requests: { cpu: '100m', memory: '256Mi' }, limits: { cpu: '500m', memory: '512Mi' } },
        },
        headGroupSpec: { rayStartParams: { 'num-cpus': '0' }, template: { spec: { containers: [container('ray-head', '300m', '1Gi')] } } },
        workerGroupSpecs: [
          {
            groupName: GROUP,
            replicas: 0,
            minReplicas: 0,
            maxReplicas: 1,
            idleTimeoutSeconds: IDLE_SECONDS,
            resources: { special: '1' },
            rayStartParams: {},
            template: { spec: { containers: [container('ray-worker', '200m', '768Mi')] } },
          },
        ],
      },
    },
  );

  // What the operator made for the autoscaler: its ServiceAccount, Role and RoleBinding, owned by the cluster.
  for (const ref of [SERVICEACCOUNTS, ROLES, ROLEBINDINGS] as Resource<ApiObject>[]) {
    const o = await until(
      () => kube.get({ ...ref, namespace: NS, name: NAME }).catch(() => undefined),
      `${ref.plural}/${NAME}`,
      60_000,
      500,
    );
    t.match(o.metadata.ownerReferences, [{ kind: 'RayCluster', controller: true }], `${ref.plural}/${NAME} owned by the cluster`);
  }
  const head = await until(
    async () => (await rayPods()).find((p) => p.metadata.labels?.['ray.io/node-type'] === 'head' && ready(p)),
    'the head pod Ready',
    300_000,
    1000,
  );
  t.same(
    head.spec.containers.map((c) => c.name),
    ['ray-head', 'autoscaler'],
    'the autoscaler container beside ray-head',
  );
  t.equal(head.spec.serviceAccountName, NAME);
  t.equal(head.spec.restartPolicy, 'Never', 'autoscaler v2: head restartPolicy Never');
  t.equal((await rayPods()).length, 1, 'the head alone');

  // The pod count over time, read every second while the task runs and the worker idles away.
  const counts: number[] = [];
  let watching = true;
  const sample = async () => {
    const n = (await rayPods().catch(() => undefined))?.length;
    if (n !== undefined && counts.at(-1) !== n) counts.push(n);
  };
  const watcher = (async () => {
    while (watching) {
      await sample();
      await new Promise((r) => setTimeout(r, 1000));
    }
  })();
  t.teardown(() => {
    watching = false;
  });

  const script = [
    'import ray, socket',
    'ray.init()',
    "@ray.remote(num_cpus=0, resources={'special': 1})",
    'def where():',
    '    return socket.gethostname()',
    "print('ran on', ray.get(where.remote(), timeout=420))",
  ].join('\n');
  const out = await kubectl(['exec', head.metadata.name, '-c', 'ray-head', '--', 'python', '-c', script], 480_000);
  const ranOn = /ran on (\S+)/.exec(out)?.[1];
  t.match(ranOn, new RegExp(`^${NAME}-${GROUP}-worker-`), `the task ran on the added worker (${ranOn})`, { out });
  const worker = (await rayPods()).find((p) => p.metadata.name === ranOn);
  t.ok(worker, 'a pod of the cluster');
  t.equal(worker?.spec.restartPolicy, 'Never', 'autoscaler v2: worker restartPolicy Never');

  await until(async () => (await rayPods()).length === 1, `the idle worker removed after ${IDLE_SECONDS} s`, 300_000, 1000);
  // The autoscaler lowered replicas and named exactly that worker; v2 clears the list with its next scale
  // request (cloud_provider.py: worker_groups_without_pending_deletes), so it may still name the gone pod.
  const group = await until(
    async () => {
      const g = (await cluster()).spec!.workerGroupSpecs![0];
      return g?.replicas === 0 ? g : undefined;
    },
    'replicas 0 (written by the autoscaler)',
    120_000,
    1000,
  );
  t.ok(
    (group.scaleStrategy?.workersToDelete ?? []).every((w) => w === ranOn),
    `workersToDelete named only that worker: ${JSON.stringify(group.scaleStrategy?.workersToDelete ?? [])}`,
  );
  watching = false;
  await watcher;
  await sample();
  t.same(counts, [1, 2, 1], 'pod count 1 -> 2 -> 1');
  t.notOk(
    (await rayPods()).some((p) => p.metadata.name === ranOn),
    'the worker that ran the task is the one deleted',
  );
  await new Promise((r) => setTimeout(r, 10_000));
  t.equal((await rayPods()).length, 1, 'and none comes back');

  const log = await kubectl(['logs', head.metadata.name, '-c', 'autoscaler']);
  t.comment(
    log
      .split('\n')
      .filter((l) => /event_logger|Terminating worker pods|idle for|Submitting a scale request/.test(l))
      .join('\n'),
  );
  t.match(log, `Adding 1 node(s) of type ${GROUP}.`, "the autoscaler's own line: the worker added for the demand");
  t.match(log, `Removing 1 nodes of type ${GROUP} (idle).`, 'and removed when idle');
  t.match(log, new RegExp(`idle for [\\d.]+ secs > timeout=${IDLE_SECONDS}\\.0 secs`), "after the group's idleTimeoutSeconds");
  t.match(log, `Terminating worker pods: ['${ranOn}']`, 'naming the pod our operator then deleted');
});

t.test('stopping the node restores the host', stopAndAssertRestored);
