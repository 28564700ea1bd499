// KubeRay's RayJob spec rules as a table: (spec / metadata / status) -> first problem and its event reason.
import t from 'tap';
import { validateRayJob } from '../../src/rayjob/validation.ts';
import { clusterSpec, rayJob, type JobOptions } from './fixtures.ts';

const withHeadEnv = (env: Array<{ name: string; value: string }>) => {
  const spec = clusterSpec();
  const head = spec.headGroupSpec?.template?.spec?.containers?.[0];
  if (head) head.env = env;
  return spec;
};

const withHeadRestartPolicy = (restartPolicy: string) => {
  const spec = clusterSpec();
  const template = spec.headGroupSpec?.template;
  if (template?.spec) template.spec['restartPolicy'] = restartPolicy;
  return spec;
};

const rows: Array<[string, JobOptions, string | undefined, RegExp?]> = [
  ['a plain K8sJobMode job is valid', {}, undefined],
  ['name of 47 characters is valid', { metadata: { name: 'a'.repeat(47) } }, undefined],
  [
    'name of 48 characters (TestRayJob "RayJob name too long with 48 characters")',
    { metadata: { name: 'a'.repeat(48) } },
    'InvalidRayJobMetadata',
    /^The RayJob metadata is invalid: RayJob name should be no more than 47 characters$/,
  ],
  [
    "name not a DNS-1035 label (starts with a digit): Go's %v of IsDNS1035Label's errors",
    { metadata: { name: '1job' } },
    'InvalidRayJobMetadata',
    /^The RayJob metadata is invalid: RayJob name should be a valid DNS1035 label: \[a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character \(e\.g\. 'my-name',  or 'abc-123', regex used for validation is '\[a-z\]\(\[-a-z0-9\]\*\[a-z0-9\]\)\?'\)\]$/,
  ],
  ['CREATE with generateName only (the webhook sees no name yet)', { metadata: { name: undefined, generateName: 'job-' } }, undefined],
  [
    'generateName too long for the name it becomes',
    { metadata: { name: undefined, generateName: 'a'.repeat(43) } },
    'InvalidRayJobMetadata',
    /no more than 47/,
  ],
  ['name with upper case', { metadata: { name: 'Job' } }, 'InvalidRayJobMetadata'],
  [
    'suspend without shutdownAfterJobFinishes',
    { spec: { suspend: true, shutdownAfterJobFinishes: false } },
    'InvalidRayJobSpec',
    /not allowed to be suspended/,
  ],
  ['suspend with shutdownAfterJobFinishes', { spec: { suspend: true } }, undefined],
  ['negative ttl', { spec: { ttlSecondsAfterFinished: -1 } }, 'InvalidRayJobSpec', /TTLSecondsAfterFinished/],
  ['ttl 0 is fine', { spec: { ttlSecondsAfterFinished: 0 } }, undefined],
  [
    'suspend with clusterSelector',
    { spec: { suspend: true, clusterSelector: { 'ray.io/cluster': 'c' }, rayClusterSpec: undefined } },
    'InvalidRayJobSpec',
    /ClusterSelector mode/,
  ],
  [
    'neither rayClusterSpec nor clusterSelector',
    { spec: { rayClusterSpec: undefined } },
    'InvalidRayJobSpec',
    /one of RayClusterSpec or ClusterSelector/,
  ],
  [
    'clusterSelector without ray.io/cluster',
    { spec: { clusterSelector: { team: 'x' }, rayClusterSpec: undefined } },
    'InvalidRayJobSpec',
    /^cluster name in ClusterSelector should not be empty$/,
  ],
  [
    'clusterSelector with retries',
    { spec: { clusterSelector: { 'ray.io/cluster': 'c' }, rayClusterSpec: undefined, backoffLimit: 1 } },
    'InvalidRayJobSpec',
    /^The RayJob spec is invalid: BackoffLimit is incompatible with ClusterSelector mode$/,
  ],
  ['clusterSelector alone is valid', { spec: { clusterSelector: { 'ray.io/cluster': 'c' }, rayClusterSpec: undefined } }, undefined],
  [
    'InteractiveMode with backoffLimit',
    { spec: { submissionMode: 'InteractiveMode', backoffLimit: 1 } },
    'InvalidRayJobSpec',
    /InteractiveMode/,
  ],
  ['InteractiveMode without entrypoint is valid', { spec: { submissionMode: 'InteractiveMode', entrypoint: undefined } }, undefined],
  ['SidecarMode is valid', { spec: { submissionMode: 'SidecarMode' } }, undefined],
  [
    'SidecarMode with a clusterSelector',
    { spec: { submissionMode: 'SidecarMode', clusterSelector: { 'ray.io/cluster': 'c' }, rayClusterSpec: undefined } },
    'InvalidRayJobSpec',
    /^ClusterSelector is not supported in SidecarMode$/,
  ],
  [
    'SidecarMode with a submitterPodTemplate',
    { spec: { submissionMode: 'SidecarMode', submitterPodTemplate: { spec: { containers: [{ name: 's', image: 'i' }] } } } },
    'InvalidRayJobSpec',
    /^Currently, SidecarMode doesn't support SubmitterPodTemplate$/,
  ],
  [
    'SidecarMode with a submitterConfig',
    { spec: { submissionMode: 'SidecarMode', submitterConfig: { backoffLimit: 1 } } },
    'InvalidRayJobSpec',
    /^Currently, SidecarMode doesn't support SubmitterConfig$/,
  ],
  [
    'SidecarMode with head restartPolicy OnFailure',
    { spec: { submissionMode: 'SidecarMode', rayClusterSpec: withHeadRestartPolicy('OnFailure') } },
    'InvalidRayJobSpec',
    /^restartPolicy for head Pod should be Never or unset when using SidecarMode$/,
  ],
  [
    'SidecarMode with head restartPolicy Never',
    { spec: { submissionMode: 'SidecarMode', rayClusterSpec: withHeadRestartPolicy('Never') } },
    undefined,
  ],
  ['K8sJobMode with head restartPolicy Always', { spec: { rayClusterSpec: withHeadRestartPolicy('Always') } }, undefined],
  ['SidecarMode with retries', { spec: { submissionMode: 'SidecarMode', backoffLimit: 2 } }, undefined],
  // KubeRay v1.6.2 has no entrypoint rule in any mode (its PreRunningDeadlineSeconds e2e tests create such RayJobs).
  ['SidecarMode without entrypoint is accepted', { spec: { submissionMode: 'SidecarMode', entrypoint: ' ' } }, undefined],
  ['unknown submission mode', { spec: { submissionMode: 'Carrier' } }, 'InvalidRayJobSpec', /unknown submissionMode/],
  ['K8sJobMode without entrypoint is accepted', { spec: { entrypoint: '' } }, undefined],
  ['K8sJobMode with no entrypoint field is accepted', { spec: { entrypoint: undefined } }, undefined],
  ['HTTPMode without entrypoint is accepted', { spec: { submissionMode: 'HTTPMode', entrypoint: undefined } }, undefined],
  ['activeDeadlineSeconds 0', { spec: { activeDeadlineSeconds: 0 } }, 'InvalidRayJobSpec', /activeDeadlineSeconds/],
  ['preRunningDeadlineSeconds 0', { spec: { preRunningDeadlineSeconds: 0 } }, 'InvalidRayJobSpec', /preRunningDeadlineSeconds/],
  [
    'backoffLimit -1',
    { spec: { backoffLimit: -1 } },
    'InvalidRayJobSpec',
    /^The RayJob spec is invalid: backoffLimit must be a positive integer$/,
  ],
  ['submitterConfig.backoffLimit -1', { spec: { submitterConfig: { backoffLimit: -1 } } }, 'InvalidRayJobSpec', /submitterConfig/],
  // KubeRay's UnmarshalRuntimeEnvYAML error, word for word (no "spec is invalid" prefix: KubeRay returns it bare).
  [
    'runtimeEnvYAML a plain string (TestRayJob "RuntimeEnvYAML is not a valid YAML string")',
    { spec: { runtimeEnvYAML: 'invalid_yaml_string' } },
    'InvalidRayJobSpec',
    /^failed to unmarshal RuntimeEnvYAML: invalid_yaml_string: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string into Go value of type types\.RuntimeEnvType$/,
  ],
  [
    'runtimeEnvYAML a list',
    { spec: { runtimeEnvYAML: '- a\n- b\n' } },
    'InvalidRayJobSpec',
    /: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type types\.RuntimeEnvType$/,
  ],
  ['runtimeEnvYAML a number', { spec: { runtimeEnvYAML: '42' } }, 'InvalidRayJobSpec', /cannot unmarshal number into Go value/],
  ['runtimeEnvYAML a boolean', { spec: { runtimeEnvYAML: 'true' } }, 'InvalidRayJobSpec', /cannot unmarshal bool into Go value/],
  [
    'runtimeEnvYAML not YAML',
    { spec: { runtimeEnvYAML: 'a: [1, 2' } },
    'InvalidRayJobSpec',
    /^failed to unmarshal RuntimeEnvYAML: a: \[1, 2: error converting YAML to JSON: yaml: /,
  ],
  ['runtimeEnvYAML a mapping', { spec: { runtimeEnvYAML: 'pip:\n  - requests\n' } }, undefined],
  ['runtimeEnvYAML empty', { spec: { runtimeEnvYAML: '' } }, undefined],
  ['runtimeEnvYAML null', { spec: { runtimeEnvYAML: 'null' } }, undefined],
  [
    'head group without containers',
    { spec: { rayClusterSpec: { headGroupSpec: { template: { spec: { containers: [] } } } } } },
    'InvalidRayJobSpec',
    /at least one container/,
  ],
  [
    'ft-enabled annotation together with gcsFaultToleranceOptions',
    {
      metadata: { annotations: { 'ray.io/ft-enabled': 'true' } },
      spec: { rayClusterSpec: { ...clusterSpec(), gcsFaultToleranceOptions: { redisAddress: 'redis:6379' } } },
    },
    'InvalidRayJobSpec',
    /both set/,
  ],
  [
    'even ft-enabled "false" next to the options (KubeRay checks non-empty)',
    {
      metadata: { annotations: { 'ray.io/ft-enabled': 'false' } },
      spec: { rayClusterSpec: { ...clusterSpec(), gcsFaultToleranceOptions: {} } },
    },
    'InvalidRayJobSpec',
    /both set/,
  ],
  [
    'RAY_REDIS_ADDRESS without GCS FT',
    { spec: { rayClusterSpec: withHeadEnv([{ name: 'RAY_REDIS_ADDRESS', value: 'r:6379' }]) } },
    'InvalidRayJobSpec',
    /implicitly enables/,
  ],
  [
    'RAY_REDIS_ADDRESS with the annotation is fine',
    {
      metadata: { annotations: { 'ray.io/ft-enabled': 'true' } },
      spec: { rayClusterSpec: withHeadEnv([{ name: 'RAY_REDIS_ADDRESS', value: 'r:6379' }]) },
    },
    undefined,
  ],
  [
    'options with REDIS_PASSWORD env',
    {
      spec: {
        rayClusterSpec: { ...withHeadEnv([{ name: 'REDIS_PASSWORD', value: 'x' }]), gcsFaultToleranceOptions: { redisAddress: 'r:6379' } },
      },
    },
    'InvalidRayJobSpec',
    /REDIS_PASSWORD/,
  ],
  [
    'options with the external-storage-namespace annotation',
    {
      metadata: { annotations: { 'ray.io/external-storage-namespace': 'ns' } },
      spec: { rayClusterSpec: { ...clusterSpec(), gcsFaultToleranceOptions: { redisAddress: 'r:6379' } } },
    },
    'InvalidRayJobSpec',
    /external-storage-namespace/,
  ],
  [
    'redis username in env',
    { spec: { rayClusterSpec: withHeadEnv([{ name: 'REDIS_USERNAME', value: 'u' }]) } },
    'InvalidRayJobSpec',
    /redis username/,
  ],
];

t.test('spec and metadata rules', async (t) => {
  for (const [name, options, reason, message] of rows) {
    const problem = validateRayJob(rayJob(undefined, options));
    t.equal(problem?.eventReason, reason, `${name}: event reason`);
    if (message) t.match(problem?.message ?? '', message, `${name}: message`);
  }
});

t.test('status rule: Waiting only in InteractiveMode', async (t) => {
  t.equal(validateRayJob(rayJob('Waiting'))?.eventReason, 'InvalidRayJobStatus');
  t.equal(validateRayJob(rayJob('Waiting', { spec: { submissionMode: 'InteractiveMode' } })), undefined);
});

t.test('metadata is checked before spec, spec before status (the first problem wins)', async (t) => {
  const job = rayJob('Waiting', { metadata: { name: 'X' }, spec: { backoffLimit: -1 } });
  t.equal(validateRayJob(job)?.eventReason, 'InvalidRayJobMetadata');
  job.metadata.name = 'x';
  t.equal(validateRayJob(job)?.eventReason, 'InvalidRayJobSpec');
  if (job.spec) job.spec.backoffLimit = 0;
  t.equal(validateRayJob(job)?.eventReason, 'InvalidRayJobStatus');
});
