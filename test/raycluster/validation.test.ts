// KubeRay v1.6.2's RayCluster rules as a table: cluster -> first problem (event reason, KubeRay's message).
// The webhook (src/admission/validate.ts) and the pod operator call validateRayCluster.
import t from 'tap';
import { validateRayCluster } from '../../src/raycluster/validation.ts';
import { validateRayJob } from '../../src/rayjob/validation.ts';
import type { RayCluster } from '../../src/types.ts';
import type { JsonObject } from '../../kube/model.ts';

type Patch = (c: { metadata: JsonObject; spec: JsonObject; status?: JsonObject }) => void;

function cluster(patch: Patch = () => {}): RayCluster {
  const c = {
    metadata: { name: 'demo', namespace: 'ray' } as JsonObject,
    spec: {
      rayVersion: '2.53.0',
      headGroupSpec: { rayStartParams: {}, template: { spec: { containers: [{ name: 'ray-head', image: 'rayproject/ray' }] } } },
      workerGroupSpecs: [
        { groupName: 'small', replicas: 1, rayStartParams: {}, template: { spec: { containers: [{ name: 'ray-worker' }] } } },
      ],
    } as JsonObject,
  };
  patch(c);
  return c as RayCluster;
}

// Typed accessors for the fixture's nested parts.
const head = (spec: JsonObject) => spec.headGroupSpec as JsonObject;
const headPod = (spec: JsonObject) => (head(spec).template as JsonObject).spec as JsonObject;
const headContainer = (spec: JsonObject) => (headPod(spec).containers as JsonObject[])[0] as JsonObject;
const worker = (spec: JsonObject) => (spec.workerGroupSpecs as JsonObject[])[0] as JsonObject;
const workerPod = (spec: JsonObject) => (worker(spec).template as JsonObject).spec as JsonObject;
const setHeadEnv = (spec: JsonObject, env: Array<{ name: string; value: string }>) => {
  headContainer(spec).env = env;
};

const rows: Array<[string, Patch, string | undefined, RegExp?]> = [
  ['a plain cluster is valid', () => {}, undefined],
  ['name of 53 characters is valid', (c) => (c.metadata.name = 'a'.repeat(53)), undefined],
  ['name of 54 characters', (c) => (c.metadata.name = 'a'.repeat(54)), 'InvalidRayClusterMetadata', /no more than 53 characters/],
  ['name with upper case', (c) => (c.metadata.name = 'Demo'), 'InvalidRayClusterMetadata', /valid DNS1035 label: \[a DNS-1035 label/],
  ['name starting with a digit', (c) => (c.metadata.name = '1demo'), 'InvalidRayClusterMetadata', /DNS1035/],
  [
    'generateName alone is checked as the name it becomes',
    (c) => {
      delete c.metadata.name;
      c.metadata.generateName = 'demo-';
    },
    undefined,
  ],
  [
    'head without containers',
    (c) => (headPod(c.spec).containers = []),
    'InvalidRayClusterSpec',
    /headGroupSpec should have at least one container/,
  ],
  [
    'worker without containers',
    (c) => (workerPod(c.spec).containers = []),
    'InvalidRayClusterSpec',
    /workerGroupSpec should have at least one/,
  ],
  [
    'head resources in both rayStartParams and resources',
    (c) => {
      head(c.spec).rayStartParams = { 'num-cpus': '1' };
      head(c.spec).resources = { CPU: '1' };
    },
    'InvalidRayClusterSpec',
    /should not be set in both rayStartParams and Resources for Head group/,
  ],
  [
    'rayStartParams labels',
    (c) => (worker(c.spec).rayStartParams = { labels: 'a=b' }),
    'InvalidRayClusterSpec',
    /rayStartParams\['labels'\] is not supported for small group/,
  ],
  [
    'a bad group label key',
    (c) => (head(c.spec).labels = { 'bad key': 'v' }),
    'InvalidRayClusterSpec',
    /invalid label key for Head group: 'bad key'/,
  ],
  [
    'a bad group label value',
    (c) => (head(c.spec).labels = { k: '-v' }),
    'InvalidRayClusterSpec',
    /invalid label value for key 'k' in Head group/,
  ],
  ['prefixed label key is fine', (c) => (head(c.spec).labels = { 'example.com/zone': 'a_b.c' }), undefined],
  [
    'negative minReplicas',
    (c) => (worker(c.spec).minReplicas = -1),
    'InvalidRayClusterSpec',
    /worker group small has negative minReplicas -1/,
  ],
  ['negative maxReplicas', (c) => (worker(c.spec).maxReplicas = -2), 'InvalidRayClusterSpec', /has negative maxReplicas -2/],
  [
    'minReplicas above maxReplicas',
    (c) => Object.assign(worker(c.spec), { minReplicas: 3, maxReplicas: 2 }),
    'InvalidRayClusterSpec',
    /minReplicas 3 greater than maxReplicas 2/,
  ],
  ['minReplicas alone reads maxReplicas as the CRD default', (c) => (worker(c.spec).minReplicas = 5), undefined],
  [
    'idleTimeoutSeconds without autoscaler v2',
    (c) => (worker(c.spec).idleTimeoutSeconds = 60),
    'InvalidRayClusterSpec',
    /autoscaler v2 is not enabled/,
  ],
  [
    'idleTimeoutSeconds with autoscaler v2',
    (c) => {
      worker(c.spec).idleTimeoutSeconds = 60;
      c.spec.enableInTreeAutoscaling = true;
      c.spec.autoscalerOptions = { version: 'v2' };
    },
    undefined,
  ],
  [
    'negative idleTimeoutSeconds',
    (c) => (worker(c.spec).idleTimeoutSeconds = -1),
    'InvalidRayClusterSpec',
    /idleTimeoutSeconds must be non-negative/,
  ],
  [
    'ft-enabled annotation with options',
    (c) => {
      c.metadata.annotations = { 'ray.io/ft-enabled': 'true' };
      c.spec.gcsFaultToleranceOptions = { redisAddress: 'r:6379' };
    },
    'InvalidRayClusterSpec',
    /ray.io\/ft-enabled annotation and GcsFaultToleranceOptions are both set/,
  ],
  [
    'RAY_REDIS_ADDRESS without GCS FT',
    (c) => setHeadEnv(c.spec, [{ name: 'RAY_REDIS_ADDRESS', value: 'r:6379' }]),
    'InvalidRayClusterSpec',
    /RAY_REDIS_ADDRESS is set which implicitly enables GCS fault tolerance/,
  ],
  [
    'redis-password in rayStartParams with options',
    (c) => {
      head(c.spec).rayStartParams = { 'redis-password': 'x' };
      c.spec.gcsFaultToleranceOptions = { redisAddress: 'r:6379' };
    },
    'InvalidRayClusterSpec',
    /cannot set `redis-password` in rayStartParams/,
  ],
  [
    'external-storage-namespace annotation with options',
    (c) => {
      c.metadata.annotations = { 'ray.io/external-storage-namespace': 'ns' };
      c.spec.gcsFaultToleranceOptions = { redisAddress: 'r:6379' };
    },
    'InvalidRayClusterSpec',
    /cannot set `ray.io\/external-storage-namespace` annotation/,
  ],
  [
    'redis username env',
    (c) => setHeadEnv(c.spec, [{ name: 'REDIS_USERNAME', value: 'u' }]),
    'InvalidRayClusterSpec',
    /cannot set redis username/,
  ],
  [
    'autoscaler v2 env without autoscaling',
    (c) => setHeadEnv(c.spec, [{ name: 'RAY_enable_autoscaler_v2', value: 'true' }]),
    'InvalidRayClusterSpec',
    /RAY_enable_autoscaler_v2 cannot be set to 'true' when enableInTreeAutoscaling is false/,
  ],
  [
    'suspended worker group with autoscaling',
    (c) => {
      c.spec.enableInTreeAutoscaling = true;
      worker(c.spec).suspend = true;
    },
    'InvalidRayClusterSpec',
    /worker group small cannot be suspended with Autoscaler enabled/,
  ],
  ['suspended worker group without autoscaling is fine (gate on in v1.6)', (c) => (worker(c.spec).suspend = true), undefined],
  [
    'autoscalerOptions.version and the v2 env both',
    (c) => {
      c.spec.enableInTreeAutoscaling = true;
      c.spec.autoscalerOptions = { version: 'v1' };
      setHeadEnv(c.spec, [{ name: 'RAY_enable_autoscaler_v2', value: '0' }]);
    },
    'InvalidRayClusterSpec',
    /both .spec.autoscalerOptions.version and head Pod env var/,
  ],
  [
    'autoscaler v2 with head restartPolicy Always',
    (c) => {
      c.spec.enableInTreeAutoscaling = true;
      c.spec.autoscalerOptions = { version: 'v2' };
      headPod(c.spec).restartPolicy = 'Always';
    },
    'InvalidRayClusterSpec',
    /restartPolicy for head Pod should be Never or unset when using autoscaler V2/,
  ],
  [
    'autoscaler v2 with worker restartPolicy OnFailure',
    (c) => {
      c.spec.enableInTreeAutoscaling = true;
      c.spec.autoscalerOptions = { version: 'v2' };
      workerPod(c.spec).restartPolicy = 'OnFailure';
    },
    'InvalidRayClusterSpec',
    /restartPolicy for worker group small should be Never/,
  ],
  [
    'negative autoscalerOptions.idleTimeoutSeconds',
    (c) => (c.spec.autoscalerOptions = { idleTimeoutSeconds: -5 }),
    'InvalidRayClusterSpec',
    /autoscalerOptions.idleTimeoutSeconds must be non-negative, got -5/,
  ],
  [
    'token auth without rayVersion',
    (c) => {
      delete c.spec.rayVersion;
      c.spec.authOptions = { mode: 'token' };
    },
    'InvalidRayClusterSpec',
    /RayVersion was not specified/,
  ],
  [
    'token auth on Ray 2.51',
    (c) => {
      c.spec.rayVersion = '2.51.0';
      c.spec.authOptions = { mode: 'token' };
    },
    'InvalidRayClusterSpec',
    /minimum Ray version is 2.52.0, got 2.51.0/,
  ],
  ['token auth on Ray 2.53', (c) => (c.spec.authOptions = { mode: 'token' }), undefined],
  [
    'k8s token auth below 2.55',
    (c) => (c.spec.authOptions = { mode: 'token', enableK8sTokenAuth: true }),
    'InvalidRayClusterSpec',
    /enableK8sTokenAuth is enabled but minimum Ray version is 2.55.0/,
  ],
  [
    'k8s token auth without token mode',
    (c) => (c.spec.authOptions = { enableK8sTokenAuth: true }),
    'InvalidRayClusterSpec',
    /enableK8sTokenAuth is enabled but authOptions.mode not set to 'token'/,
  ],
  [
    'upgradeStrategy type unknown',
    (c) => (c.spec.upgradeStrategy = { type: 'Rolling' }),
    'InvalidRayClusterSpec',
    /Spec.UpgradeStrategy.Type value Rolling is invalid/,
  ],
  [
    'upgradeStrategy on a RayJob-made cluster',
    (c) => {
      c.spec.upgradeStrategy = { type: 'Recreate' };
      c.metadata.labels = { 'ray.io/originated-from-crd': 'RayJob' };
    },
    'InvalidRayClusterSpec',
    /upgradeStrategy cannot be set when RayCluster is created by RayJob/,
  ],
];

t.test('RayCluster metadata and spec rules (KubeRay v1.6.2 messages)', async (t) => {
  for (const [name, patch, reason, message] of rows) {
    const problem = validateRayCluster(cluster(patch), { status: false });
    t.equal(problem?.eventReason, reason, `${name}: event reason`);
    if (message) t.match(problem?.message ?? '', message, `${name}: message`);
  }
});

t.test('status rule only when asked (the controller; never at admission)', async (t) => {
  const c = cluster((c) => {
    c.status = {
      conditions: [
        { type: 'RayClusterSuspending', status: 'True' },
        { type: 'RayClusterSuspended', status: 'True' },
      ],
    };
  });
  t.equal(validateRayCluster(c, { status: false }), undefined);
  t.equal(validateRayCluster(c, { status: true })?.eventReason, 'InvalidRayClusterStatus');
});

t.test('a RayJob rayClusterSpec goes through the same rules', async (t) => {
  const spec = cluster((c) => (worker(c.spec).minReplicas = -1)).spec;
  const problem = validateRayJob({ metadata: { name: 'job' }, spec: { entrypoint: 'python x.py', rayClusterSpec: spec } });
  t.equal(problem?.eventReason, 'InvalidRayJobSpec');
  t.match(problem?.message ?? '', /^The RayJob spec is invalid: worker group small has negative minReplicas -1/);
  const k8sAuth = cluster((c) => (c.spec.authOptions = { mode: 'token', enableK8sTokenAuth: true })).spec;
  t.match(
    validateRayJob({ metadata: { name: 'job' }, spec: { entrypoint: 'python x.py', rayClusterSpec: k8sAuth } })?.message ?? '',
    /K8s token auth mode is currently not supported for RayJob/,
  );
});
