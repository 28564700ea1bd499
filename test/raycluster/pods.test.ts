// The pod and Service builders against KubeRay v1.6's own cases (common/pod_test.go, service_test.go):
// command line, env, ports, labels, names; and the GCS-FT wiring against the cleanup's own function.
import t from 'tap';
import {
  buildHeadPod,
  buildWorkerPod,
  rayEnv,
  rayStartCommand,
  renderParams,
  supportsUnifiedHealthCheck,
} from '../../src/raycluster/pods.ts';
import { checkLabel, headPodGenerateName, headServiceFqdn, podName, workerPodGenerateName } from '../../src/raycluster/names.ts';
import type { Pod } from '../../kube/model.ts';
import { buildHeadlessWorkerService, buildHeadService, headServicePorts } from '../../src/raycluster/service.ts';
import { cleanupEnv, effectiveStorageNamespace } from '../../src/gcsft/redis-env.ts';
import { parseQuantity, quantityValue } from '../../src/raycluster/quantity.ts';
import { kuberayPodTestInstance } from './samples.ts';

const instance = kuberayPodTestInstance;

const splitSort = (s: string) => s.split(/\s+/).filter(Boolean).sort();
const args = (p: Pod) => p.spec!.containers[0]!.args![0]!;
const env = (p: Pod, name: string) => rayEnv(p).get(name);

t.test('TestBuildPod: head and worker command lines, env, labels, volumes', async (t) => {
  const c = instance();
  const head = buildHeadPod(c);
  t.same(
    splitSort(args(head)),
    splitSort(
      'ulimit -n 65536; ray start --head --block --dashboard-agent-listen-port=52365 --memory=1073741824 --num-cpus=1 --metrics-export-port=8080 --dashboard-host=0.0.0.0',
    ),
  );
  t.same(head.spec!.containers[0]!.command, ['/bin/bash', '-c', '--']);
  t.equal(env(head, 'RAY_ADDRESS')?.value, '127.0.0.1:6379');
  t.equal(env(head, 'RAY_PORT')?.value, '6379');
  t.equal(env(head, 'RAY_USAGE_STATS_KUBERAY_IN_USE')?.value, '1');
  t.equal(env(head, 'RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE')?.value, '1');
  t.same(env(head, 'RAY_CLUSTER_NAME')?.valueFrom, { fieldRef: { apiVersion: 'v1', fieldPath: "metadata.labels['ray.io/cluster']" } });
  t.same(env(head, 'RAY_CLUSTER_NAMESPACE')?.valueFrom, { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } });
  t.same(env(head, 'RAY_NODE_TYPE_NAME')?.valueFrom, { fieldRef: { apiVersion: 'v1', fieldPath: "metadata.labels['ray.io/group']" } });
  t.same(env(head, 'RAY_CLOUD_INSTANCE_ID')?.valueFrom, { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } });
  t.match(env(head, 'KUBERAY_GEN_RAY_START_CMD')?.value, /^ray start --head /);
  t.equal(env(head, 'TEST_ENV_NAME')?.value, 'TEST_ENV_VALUE', "the template's env is kept, first");
  t.equal(head.spec!.containers[0]!.env![0]!.name, 'TEST_ENV_NAME');
  t.notOk(env(head, 'FQ_RAY_IP'), 'the head has no FQ_RAY_IP');
  t.match(head.metadata.labels, {
    'ray.io/cluster': 'raycluster-sample',
    'ray.io/node-type': 'head',
    'ray.io/group': 'headgroup',
    'ray.io/is-ray-node': 'yes',
    'ray.io/identifier': 'raycluster-sample-head',
  });
  t.same(head.spec!.volumes, [{ name: 'shared-mem', emptyDir: { medium: 'Memory', sizeLimit: '1Gi' } }]);
  t.same(head.spec!.containers[0]!.volumeMounts, [{ name: 'shared-mem', mountPath: '/dev/shm', readOnly: false }]);
  t.same(head.spec!.containers[0]!.ports, [{ name: 'metrics', containerPort: 8080 }]);
  t.equal(head.metadata.generateName, 'raycluster-sample-head-', "KubeRay's default: a generated head name");
  t.notOk(head.metadata.name);
  t.same(head.metadata.ownerReferences, [
    { apiVersion: 'ray.io/v1', kind: 'RayCluster', name: 'raycluster-sample', uid: 'uid-1', controller: true, blockOwnerDeletion: true },
  ]);
  t.equal(head.metadata.annotations?.['ray.io/ft-enabled'], 'false');

  const worker = buildWorkerPod(c, c.spec!.workerGroupSpecs![0]!);
  t.same(
    splitSort(args(worker)),
    splitSort(
      'ulimit -n 65536; ray start --block --dashboard-agent-listen-port=52365 --memory=1073741824 --num-cpus=1 --num-gpus=3 --address=raycluster-sample-head-svc.default.svc.cluster.local:6379 --port=6379 --metrics-export-port=8080',
    ),
  );
  t.equal(env(worker, 'RAY_ADDRESS')?.value, 'raycluster-sample-head-svc.default.svc.cluster.local:6379');
  t.equal(env(worker, 'FQ_RAY_IP')?.value, 'raycluster-sample-head-svc.default.svc.cluster.local');
  t.equal(env(worker, 'RAY_IP')?.value, 'raycluster-sample-head-svc');
  t.notOk(env(worker, 'RAY_USAGE_STATS_EXTRA_TAGS'), 'extra tags on the head only');
  t.same(worker.spec!.containers[0]!.resources!.limits, { cpu: '1', memory: '1Gi', 'nvidia.com/gpu': '3' }, 'resources untouched');
  t.equal(worker.metadata.generateName, 'raycluster-sample-small-group-worker-');
  t.notOk(worker.metadata.name);
  t.match(worker.metadata.labels, {
    'ray.io/node-type': 'worker',
    'ray.io/group': 'small-group',
    'ray.io/identifier': 'raycluster-sample-worker',
    'ray.io/worker-group-replica-index': '0',
  });
  const init = worker.spec!.initContainers![0]!;
  t.equal(init.name, 'wait-gcs-ready');
  t.match(init.args![0], /ray health-check --address raycluster-sample-head-svc\.default\.svc\.cluster\.local:6379/);
  t.same(
    init.env!.map((e) => e.name),
    ['TEST_ENV_NAME', 'FQ_RAY_IP', 'RAY_IP'],
  );
  t.same(init.resources, { limits: { cpu: '200m', memory: '256Mi' }, requests: { cpu: '200m', memory: '256Mi' } });
});

t.test('TestBuildPod_WithNoCPULimits: num-cpus falls back to the request', async (t) => {
  const c = instance();
  c.spec!.headGroupSpec!.template!.spec!.containers![0]!.resources = { requests: { cpu: '2', memory: '1Gi' }, limits: { memory: '1Gi' } };
  (c.spec!.workerGroupSpecs![0] as { template: { spec: { containers: Array<{ resources: unknown }> } } }).template.spec
    .containers[0]!.resources = { requests: { cpu: '2', memory: '1Gi' }, limits: { memory: '1Gi', 'nvidia.com/gpu': '3' } };
  t.same(
    splitSort(args(buildHeadPod(c))),
    splitSort(
      'ulimit -n 65536; ray start --head --block --dashboard-agent-listen-port=52365 --memory=1073741824 --num-cpus=2 --metrics-export-port=8080 --dashboard-host=0.0.0.0',
    ),
  );
  t.same(
    splitSort(args(buildWorkerPod(c, c.spec!.workerGroupSpecs![0]!))),
    splitSort(
      'ulimit -n 65536; ray start --block --dashboard-agent-listen-port=52365 --memory=1073741824 --num-cpus=2 --num-gpus=3 --address=raycluster-sample-head-svc.default.svc.cluster.local:6379 --port=6379 --metrics-export-port=8080',
    ),
  );
});

t.test('TestGenerateRayStartCommand (KubeRay table, byte for byte)', async (t) => {
  const cases: Array<[string, 'head' | 'worker', Record<string, string>, Record<string, string>, string]> = [
    ['WorkerNode with GPU', 'worker', {}, { 'nvidia.com/gpu': '1' }, 'ray start  --num-gpus=1 '],
    ['WorkerNode with MIG GPU', 'worker', {}, { 'nvidia.com/mig-2g.32gb': '1' }, 'ray start  --num-gpus=1 '],
    ['WorkerNode with TPU', 'worker', {}, { 'google.com/tpu': '4' }, `ray start  --resources='{"TPU":4}' `],
    ['HeadNode with Neuron Cores', 'head', {}, { 'aws.amazon.com/neuroncore': '4' }, `ray start --head  --resources='{"neuron_cores":4}' `],
    [
      'HeadNode with multiple accelerators',
      'head',
      {},
      { 'aws.amazon.com/neuroncore': '4', 'nvidia.com/gpu': '1' },
      `ray start --head  --num-gpus=1  --resources='{"neuron_cores":4}' `,
    ],
    [
      'HeadNode with multiple custom accelerators',
      'head',
      {},
      { 'google.com/tpu': '8', 'aws.amazon.com/neuroncore': '4', 'nvidia.com/gpu': '1' },
      `ray start --head  --num-gpus=1  --resources='{"neuron_cores":4}' `,
    ],
    [
      'HeadNode with existing resources',
      'head',
      { resources: '"{"custom_resource":2}"' },
      { 'aws.amazon.com/neuroncore': '4' },
      `ray start --head  --resources='{"custom_resource":2,"neuron_cores":4}' `,
    ],
    [
      'HeadNode with existing neuron_cores resources',
      'head',
      { resources: `'{"custom_resource":2,"neuron_cores":3}'` },
      { 'aws.amazon.com/neuroncore': '4' },
      `ray start --head  --resources='{"custom_resource":2,"neuron_cores":3}' `,
    ],
    [
      'HeadNode with existing TPU resources',
      'head',
      { resources: `'{"custom_resource":2,"TPU":4}'` },
      { 'google.com/tpu': '8' },
      `ray start --head  --resources='{"custom_resource":2,"TPU":4}' `,
    ],
    [
      'HeadNode with invalid resources string',
      'head',
      { resources: '{' },
      { 'aws.amazon.com/neuroncore': '4' },
      'ray start --head  --resources={ ',
    ],
  ];
  for (const [name, type, params, limits, want] of cases) t.equal(rayStartCommand(type, { ...params }, { limits }), want, name);
});

t.test('convertParamMap: booleans, log-color / include-dashboard keep their value, sorted', async (t) => {
  t.equal(
    renderParams({ 'num-cpus': '1', block: 'true', 'disable-usage-stats': 'false', 'log-color': 'true', 'include-dashboard': 'false' }),
    ' --block  --include-dashboard=false  --log-color=true  --num-cpus=1 ',
  );
});

t.test('names, labels, quantities', async (t) => {
  t.equal(podName('a'.repeat(60), 'head', true), `${'a'.repeat(50)}-head-`);
  t.equal(podName('MyCluster', 'worker', false), 'mycluster-worker');
  t.equal(headPodGenerateName(instance()), 'raycluster-sample-head-');
  const long = instance();
  long.metadata.name = `Ab${'c'.repeat(60)}`;
  t.equal(headPodGenerateName(long), `ab${'c'.repeat(48)}-head-`, 'the first 50 characters, lowercased (PodName)');
  t.equal(workerPodGenerateName(long, 'Gpu'), `ab${'c'.repeat(48)}-worker-`, 'cluster-group clipped to 50 before -worker-');
  t.equal(workerPodGenerateName(instance(), 'small-group'), 'raycluster-sample-small-group-worker-');
  t.equal(checkLabel(`-${'x'.repeat(10)}`), `r${'x'.repeat(10)}`);
  t.equal(checkLabel('y'.repeat(70)).length, 63);
  t.equal(headServiceFqdn(instance(), { clusterDomain: 'corp.local' }), 'raycluster-sample-head-svc.default.svc.corp.local');
  const table: Array<[string, number | undefined, number]> = [
    ['500m', 0.5, 1],
    ['1', 1, 1],
    ['2G', 2e9, 2e9],
    ['1.5Gi', 1.5 * 2 ** 30, 1.5 * 2 ** 30],
    ['1e3', 1000, 1000],
    ['abc', undefined, 0],
    ['5Gi', 5 * 2 ** 30, 5 * 2 ** 30],
  ];
  for (const [q, v, ceil] of table) {
    t.equal(parseQuantity(q), v, `parse ${q}`);
    t.equal(quantityValue(q), ceil, `value ${q}`);
  }
  t.ok(supportsUnifiedHealthCheck('2.53.0'));
  t.notOk(supportsUnifiedHealthCheck('2.52.0'));
  t.same(buildHeadPod({ ...instance(), spec: { ...instance().spec, rayVersion: '2.53.1' } }).spec!.containers[0]!.readinessProbe!.httpGet, {
    path: '/api/healthz',
    port: 52365,
  });
});

t.test('template labels merge (except ray.io/cluster, node-type, group); group labels and resources reach ray start', async (t) => {
  const c = instance();
  c.spec!.headGroupSpec!.template!.metadata = { labels: { 'ray.io/cluster': 'evil', team: 'a', 'ray.io/node-type': 'worker' } };
  (c.spec!.headGroupSpec as Record<string, unknown>).labels = { zone: 'z1', accel: 'a100' };
  (c.spec!.headGroupSpec as Record<string, unknown>).resources = { CPU: '3', memory: '2Gi', 'custom/thing': '2' };
  const head = buildHeadPod(c);
  t.equal(head.metadata.labels!['ray.io/cluster'], 'raycluster-sample');
  t.equal(head.metadata.labels!['ray.io/node-type'], 'head');
  t.equal(head.metadata.labels!.team, 'a');
  t.equal(head.metadata.labels!.zone, 'z1');
  const a = splitSort(args(head));
  t.ok(a.includes('--labels=accel=a100,zone=z1'));
  t.ok(a.includes('--num-cpus=3'));
  t.ok(a.includes(`--memory=${2 * 2 ** 30}`));
  t.ok(a.includes(`--resources='{"custom/thing":2}'`));
});

t.test('a command in the template runs before ray start; one with `ray start` or the overwrite annotation is kept', async (t) => {
  const c = instance();
  c.spec!.headGroupSpec!.template!.spec!.containers![0]!.command = ['echo', 'hi'];
  t.match(args(buildHeadPod(c)), /^ echo {2}hi {2}&& ulimit -n 65536; ray start --head/);
  c.spec!.headGroupSpec!.template!.spec!.containers![0]!.command = ['ray start --head --block'];
  t.same(buildHeadPod(c).spec!.containers[0]!.command, ['ray start --head --block']);
  const d = instance();
  d.metadata.annotations = { 'ray.io/overwrite-container-cmd': 'true' };
  d.spec!.headGroupSpec!.template!.spec!.containers![0]!.command = ['python', 'serve.py'];
  const p = buildHeadPod(d);
  t.same(p.spec!.containers[0]!.command, ['python', 'serve.py']);
  t.match(env(p, 'KUBERAY_GEN_RAY_START_CMD')?.value, /^ray start --head /, 'the generated line is still in the env');
});

t.test("GCS FT (options form): env, params, annotations; the namespace is the cleanup Job's", async (t) => {
  const table: Array<[string, Record<string, string> | undefined, string | undefined, string]> = [
    ['UID by default', undefined, undefined, 'uid-1'],
    ['annotation', { 'ray.io/external-storage-namespace': 'from-annotation' }, undefined, 'from-annotation'],
    ['options win', { 'ray.io/external-storage-namespace': 'from-annotation' }, 'from-options', 'from-options'],
  ];
  for (const [name, annotations, optNs, want] of table) {
    const c = instance();
    if (annotations) c.metadata.annotations = annotations;
    c.spec!.gcsFaultToleranceOptions = {
      redisAddress: 'redis:6379',
      redisPassword: { valueFrom: { secretKeyRef: { name: 's', key: 'password' } } },
      redisUsername: { value: 'u' },
      ...(optNs ? { externalStorageNamespace: optNs } : {}),
    };
    const head = buildHeadPod(c);
    t.equal(env(head, 'RAY_external_storage_namespace')?.value, want, `${name}: head env`);
    t.equal(head.metadata.annotations?.['ray.io/external-storage-namespace'], want, `${name}: head annotation`);
    t.same(
      cleanupEnv(c).find((e) => e.name === 'RAY_external_storage_namespace'),
      env(head, 'RAY_external_storage_namespace'),
      `${name}: the cleanup Job deletes what the head writes`,
    );
    t.equal(effectiveStorageNamespace(c), want);
    t.equal(env(head, 'RAY_REDIS_ADDRESS')?.value, 'redis:6379');
    t.same(
      env(head, 'REDIS_PASSWORD'),
      { name: 'REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: 's', key: 'password' } } },
      'password stays a secretKeyRef',
    );
    t.equal(env(head, 'REDIS_USERNAME')?.value, 'u');
    const a = splitSort(args(head));
    t.ok(
      a.includes('--redis-password=$REDIS_PASSWORD') && a.includes('--redis-username=$REDIS_USERNAME'),
      'ray start reads them from the env',
    );
    t.equal(head.metadata.annotations?.['ray.io/ft-enabled'], 'true');
    const worker = buildWorkerPod(c, c.spec!.workerGroupSpecs![0]!);
    t.equal(env(worker, 'RAY_gcs_rpc_server_reconnect_timeout_s')?.value, '600');
    t.notOk(env(worker, 'RAY_REDIS_ADDRESS'), 'workers do not talk to Redis');
  }
});

t.test('GCS FT (annotation form): own env kept; redis-password param reaches REDIS_PASSWORD', async (t) => {
  const c = instance();
  c.metadata.annotations = { 'ray.io/ft-enabled': 'true' };
  c.spec!.headGroupSpec!.rayStartParams = { 'redis-password': '5241590000000000' };
  c.spec!.headGroupSpec!.template!.spec!.containers![0]!.env!.push(
    { name: 'RAY_REDIS_ADDRESS', value: 'redis:6379' },
    { name: 'RAY_external_storage_namespace', value: 'mine' },
  );
  const head = buildHeadPod(c);
  t.equal(env(head, 'RAY_external_storage_namespace')?.value, 'mine', "the template's own namespace wins (KubeRay keeps it)");
  t.equal(head.metadata.annotations?.['ray.io/external-storage-namespace'], 'mine');
  t.same(
    cleanupEnv(c).find((e) => e.name === 'RAY_external_storage_namespace'),
    { name: 'RAY_external_storage_namespace', value: 'mine' },
  );
  t.equal(env(head, 'REDIS_PASSWORD')?.value, '5241590000000000');
  t.equal((head.spec!.containers[0]!.env ?? []).filter((e) => e.name === 'RAY_REDIS_ADDRESS').length, 1);
});

t.test('head Service: KubeRay default ports, container ports, headless, custom headService', async (t) => {
  const c = instance();
  const svc = buildHeadService(c);
  t.equal(svc.metadata.name, 'raycluster-sample-head-svc');
  t.same(svc.spec!.ports, [
    { name: 'client', port: 10001, appProtocol: 'tcp' },
    { name: 'dashboard', port: 8265, appProtocol: 'tcp' },
    { name: 'gcs-server', port: 6379, appProtocol: 'tcp' },
    { name: 'metrics', port: 8080, appProtocol: 'tcp' },
    { name: 'serve', port: 8000, appProtocol: 'tcp' },
  ]);
  t.equal(svc.spec!.clusterIP, 'None');
  t.equal(svc.spec!.publishNotReadyAddresses, true);
  t.same(svc.spec!.selector, {
    'ray.io/cluster': 'raycluster-sample',
    'ray.io/node-type': 'head',
    'ray.io/identifier': 'raycluster-sample-head',
    'app.kubernetes.io/name': 'kuberay',
    'app.kubernetes.io/created-by': 'raykeeper',
  });
  t.same(svc.metadata.labels, svc.spec!.selector);
  c.spec!.headGroupSpec!.template!.spec!.containers![0]!.ports = [{ containerPort: 6379, name: 'gcs' }, { containerPort: 8265 }];
  t.same(
    [...headServicePorts(c)],
    [
      ['gcs', 6379],
      ['8265-port', 8265],
      ['metrics', 8080],
    ],
    'TestGetPortsFromCluster + metrics',
  );
  (c.spec!.headGroupSpec as Record<string, unknown>).serviceType = 'NodePort';
  t.notOk(buildHeadService(c).spec!.clusterIP, 'not headless for NodePort');
  t.equal(buildHeadService(c).spec!.type, 'NodePort');
  const d = instance();
  (d.spec!.headGroupSpec as Record<string, unknown>).headService = {
    metadata: { name: 'custom-svc', labels: { a: 'b' }, namespace: 'elsewhere' },
    spec: { selector: { x: 'y' }, ports: [{ name: 'extra', port: 9999 }] },
  };
  const custom = buildHeadService(d);
  t.equal(custom.metadata.name, 'custom-svc');
  t.equal(custom.metadata.namespace, 'default');
  t.equal(custom.metadata.labels!.a, 'b');
  t.same(custom.spec!.selector!['ray.io/cluster'], 'raycluster-sample');
  t.notOk(custom.spec!.selector!.x);
  t.equal(custom.spec!.ports![0]!.name, 'extra');
  t.equal(
    env(buildWorkerPod(d, d.spec!.workerGroupSpecs![0]!), 'FQ_RAY_IP')?.value,
    'custom-svc.default.svc.cluster.local',
    'workers join the custom Service',
  );
  const hl = buildHeadlessWorkerService(d);
  t.same(hl.metadata.name, 'raycluster-sample-headless');
  t.same(hl.spec, {
    clusterIP: 'None',
    selector: { 'ray.io/cluster': 'raycluster-sample', 'ray.io/node-type': 'worker' },
    type: 'ClusterIP',
    publishNotReadyAddresses: true,
  });
});
