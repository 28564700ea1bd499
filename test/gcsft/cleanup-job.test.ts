import t from 'tap';
import fc from 'fast-check';
import {
  buildCleanupJob,
  cleanupJobName,
  cleanupTimeoutSeconds,
  cleanupCommandBudget,
  cleanupResources,
  cleanupSweep,
  clusterLabelValue,
  DEFAULT_CLEANUP_CONFIG,
  isDnsLabel,
  jobOutcome,
  manualCleanupCommand,
  remainingSeconds,
} from '../../src/gcsft/cleanup-job.ts';
import {
  cleanupEnv,
  describeStorageNamespace,
  effectiveStorageNamespace,
  storageNamespaceSource,
  tlsVolumes,
} from '../../src/gcsft/redis-env.ts';
import { describeTarget } from '../../src/gcsft/decide.ts';
import type { RayCluster } from '../../src/types.ts';
import { cluster, job, T0 } from './fixtures.ts';

const secretRef = (name: string, key: string) => ({ secretKeyRef: { name, key } });

t.test('job name: plain when it fits, hashed and cut otherwise', async (tt) => {
  tt.equal(cleanupJobName('demo'), 'demo-redis-cleanup');
  const n49 = 'a'.repeat(49);
  tt.equal(cleanupJobName(n49), `${n49}-redis-cleanup`, '49 + 14 = 63 still fits');
  const n50 = 'a'.repeat(50);
  const long = cleanupJobName(n50);
  tt.ok(long.length <= 63, long);
  tt.ok(isDnsLabel(long), long);
  tt.match(long, /^a+-[0-9a-f]{8}-redis-cleanup$/);
  tt.not(cleanupJobName('b'.repeat(60) + 'x'), cleanupJobName('b'.repeat(60) + 'y'), 'names sharing a long prefix do not collide');
  tt.equal(cleanupJobName(n50), long, 'deterministic');
});

t.test('job name: the cut never leaves a dangling dash, dots become dashes', async (tt) => {
  // 39 chars then '-' at position 40 (the cut keeps 40 chars): the '-' must go.
  const name = 'x'.repeat(39) + '-' + 'y'.repeat(30);
  const jobName = cleanupJobName(name);
  tt.ok(isDnsLabel(jobName), jobName);
  tt.notMatch(jobName, /--/);
  const dotted = cleanupJobName('my.cluster');
  tt.ok(isDnsLabel(dotted), dotted);
  tt.match(dotted, /^my-cluster-[0-9a-f]{8}-redis-cleanup$/);
  tt.not(dotted, cleanupJobName('my-cluster'), 'the hash keeps my.cluster and my-cluster apart');
  tt.match(cleanupJobName('-'.repeat(70)), /^[0-9a-f]{8}-redis-cleanup$/);
});

t.test('job name property: any DNS-subdomain cluster name gives a valid, stable DNS label', async (tt) => {
  const label = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,40}[a-z0-9])?$/);
  const subdomain = fc.array(label, { minLength: 1, maxLength: 6 }).map((parts) => parts.join('.').slice(0, 253));
  fc.assert(
    fc.property(subdomain, (name) => {
      const j = cleanupJobName(name);
      return isDnsLabel(j) && j.endsWith('-redis-cleanup') && cleanupJobName(name) === j;
    }),
    { numRuns: 500 },
  );
  tt.pass('500 names checked');
});

t.test('cluster label value stays <= 63 chars', async (tt) => {
  tt.equal(clusterLabelValue('demo'), 'demo');
  const v = clusterLabelValue('z'.repeat(100));
  tt.ok(v.length <= 63);
  tt.match(v, /-[0-9a-f]{8}$/);
});

t.test('storage namespace precedence: head env > options > annotation > UID', async (tt) => {
  tt.equal(effectiveStorageNamespace(cluster()), '0b7c1a52-5f7e-4b8e-9a43-2d1f0c2e9f10', 'UID by default');
  tt.equal(effectiveStorageNamespace(cluster({ annotations: { 'ray.io/external-storage-namespace': 'from-ann' } })), 'from-ann');
  tt.equal(effectiveStorageNamespace(cluster({ ft: 'options', options: { externalStorageNamespace: 'from-opt' } })), 'from-opt');
  tt.equal(
    effectiveStorageNamespace(
      cluster({
        annotations: { 'ray.io/external-storage-namespace': 'from-ann' },
        env: [
          { name: 'RAY_REDIS_ADDRESS', value: 'r:1' },
          { name: 'RAY_external_storage_namespace', value: 'from-env' },
        ],
      }),
    ),
    'from-env',
    'KubeRay leaves a user-set env alone, so the GCS used it',
  );
});

t.test('env from gcsFaultToleranceOptions: values stay values, secretKeyRefs stay secretKeyRefs', async (tt) => {
  const c = cluster({
    ft: 'options',
    options: {
      redisAddress: 'rediss://r.example:6380',
      redisPassword: { valueFrom: secretRef('redis-auth', 'password') },
      redisUsername: { value: 'ray' },
      externalStorageNamespace: 'ns1',
    },
  });
  const env = cleanupEnv(c);
  tt.same(env, [
    { name: 'RAY_external_storage_namespace', value: 'ns1' },
    { name: 'RAY_REDIS_ADDRESS', value: 'rediss://r.example:6380' },
    { name: 'REDIS_PASSWORD', valueFrom: secretRef('redis-auth', 'password') },
    { name: 'REDIS_USERNAME', value: 'ray' },
  ]);
});

t.test('env from the head container (annotation mode), plus TLS env and rayStartParams password', async (tt) => {
  const c = cluster({
    env: [
      { name: 'RAY_REDIS_ADDRESS', value: 'redis.team-a:6379' },
      { name: 'REDIS_PASSWORD', valueFrom: secretRef('s', 'k') },
      { name: 'RAY_REDIS_CA_CERT', value: '/etc/redis-tls/ca.crt' },
      { name: 'UNRELATED', value: 'x' },
    ],
  });
  const env = cleanupEnv(c);
  tt.same(
    env.map((e) => e.name),
    ['RAY_external_storage_namespace', 'RAY_REDIS_ADDRESS', 'REDIS_PASSWORD', 'RAY_REDIS_CA_CERT'],
  );
  tt.same(env.find((e) => e.name === 'REDIS_PASSWORD')?.valueFrom, secretRef('s', 'k'));

  const legacy = cluster();
  (legacy.spec!.headGroupSpec!.rayStartParams as Record<string, string>)['redis-password'] = 'pw-in-spec';
  tt.same(
    cleanupEnv(legacy).find((e) => e.name === 'REDIS_PASSWORD'),
    { name: 'REDIS_PASSWORD', value: 'pw-in-spec' },
  );
});

function tlsCluster(): RayCluster {
  const c = cluster({
    env: [
      { name: 'RAY_REDIS_ADDRESS', value: 'rediss://redis:6380' },
      { name: 'RAY_REDIS_CA_CERT', value: '/etc/redis-tls/ca.crt' },
      { name: 'RAY_REDIS_CLIENT_CERT', value: '/etc/client/tls.crt' },
      { name: 'RAY_REDIS_CLIENT_KEY', value: '/etc/client/tls.key' },
    ],
  });
  const spec = c.spec!.headGroupSpec!.template!.spec!;
  spec.containers![0]!.volumeMounts = [
    { name: 'tls-ca', mountPath: '/etc/redis-tls' },
    { name: 'client', mountPath: '/etc/client/' },
    { name: 'logs', mountPath: '/tmp/ray' },
  ];
  spec.volumes = [
    { name: 'tls-ca', secret: { secretName: 'redis-ca' } },
    {
      name: 'client',
      secret: {
        secretName: 'redis-client',
        items: [
          { key: 'crt', path: 'tls.crt' },
          { key: 'key', path: 'tls.key' },
        ],
      },
    },
    { name: 'logs', emptyDir: {} },
  ];
  return c;
}

t.test('TLS: only the volumes holding the TLS files are carried over, read-only', async (tt) => {
  const { volumeMounts, volumes } = tlsVolumes(tlsCluster());
  tt.same(
    volumeMounts.map((m) => m.name),
    ['tls-ca', 'client'],
  );
  tt.ok(volumeMounts.every((m) => m.readOnly === true));
  tt.same(
    volumes.map((v) => v.name),
    ['tls-ca', 'client'],
  );
  const j = buildCleanupJob(tlsCluster(), DEFAULT_CLEANUP_CONFIG, T0 + 300_000, T0);
  const pod = (
    j.spec!.template as { spec: { volumes: unknown[]; containers: Array<{ volumeMounts: unknown[]; env: Array<{ name: string }> }> } }
  ).spec;
  tt.equal(pod.volumes.length, 2);
  tt.equal(pod.containers[0]!.volumeMounts.length, 2);
  tt.ok(pod.containers[0]!.env.some((e) => e.name === 'RAY_REDIS_CLIENT_KEY'));
});

t.test('resources: defaults, flags, annotations, KubeRay fallback names, invalid values', async (tt) => {
  tt.same(cleanupResources(cluster(), DEFAULT_CLEANUP_CONFIG), { cpu: '250m', memory: '512Mi', problems: [] });
  tt.same(cleanupResources(cluster(), { ...DEFAULT_CLEANUP_CONFIG, cpu: '500m', memory: '1Gi' }), {
    cpu: '500m',
    memory: '1Gi',
    problems: [],
  });
  tt.same(
    cleanupResources(
      cluster({ annotations: { 'raykeeper.io/redis-cleanup-cpu': '1', 'raykeeper.io/redis-cleanup-memory': '768Mi' } }),
      DEFAULT_CLEANUP_CONFIG,
    ),
    {
      cpu: '1',
      memory: '768Mi',
      problems: [],
    },
  );
  tt.same(
    cleanupResources(cluster({ annotations: { 'ray.io/gcs-ft-redis-cleanup-job-cpu-resource': '300m' } }), DEFAULT_CLEANUP_CONFIG).cpu,
    '300m',
  );
  tt.same(
    cleanupResources(
      cluster({ annotations: { 'raykeeper.io/redis-cleanup-cpu': '400m', 'ray.io/gcs-ft-redis-cleanup-job-cpu-resource': '300m' } }),
      DEFAULT_CLEANUP_CONFIG,
    ).cpu,
    '400m',
    'ours wins',
  );
  const bad = cleanupResources(
    cluster({ annotations: { 'raykeeper.io/redis-cleanup-cpu': 'lots', 'raykeeper.io/redis-cleanup-memory': '0' } }),
    DEFAULT_CLEANUP_CONFIG,
  );
  tt.equal(bad.cpu, '250m');
  tt.equal(bad.memory, '512Mi');
  tt.equal(bad.problems.length, 2);
});

t.test('the Job: its shape', async (tt) => {
  const c = cluster({ deletedAt: T0, annotations: { 'raykeeper.io/redis-cleanup-memory': '256Mi' } });
  c.spec!.headGroupSpec!.template!.spec!.tolerations = [{ key: 'ray', operator: 'Exists' }];
  c.spec!.headGroupSpec!.template!.spec!.affinity = { podAntiAffinity: {} };
  const j = buildCleanupJob(c, { ...DEFAULT_CLEANUP_CONFIG, image: 'registry.example/raykeeper:1.2.3' }, T0 + 300_000, T0 + 120_400);
  tt.equal(j.metadata.name, 'demo-redis-cleanup');
  tt.equal(j.metadata.namespace, 'team-a');
  tt.same(j.metadata.labels?.['ray.io/cluster'], 'demo');
  tt.same(j.metadata.labels?.['ray.io/node-type'], 'redis-cleanup');
  tt.same(j.metadata.ownerReferences, [
    {
      apiVersion: 'ray.io/v1',
      kind: 'RayCluster',
      name: 'demo',
      uid: '0b7c1a52-5f7e-4b8e-9a43-2d1f0c2e9f10',
      controller: true,
      blockOwnerDeletion: false,
    },
  ]);
  const spec = j.spec as Record<string, any>;
  tt.equal(spec.backoffLimit, 0);
  tt.equal(spec.activeDeadlineSeconds, 180, 'ceil of the 179.6 s left');
  const pod = spec.template.spec;
  tt.same(spec.template.metadata.labels, j.metadata.labels);
  tt.equal(pod.restartPolicy, 'Never');
  tt.equal(pod.automountServiceAccountToken, false);
  tt.equal(pod.securityContext.runAsNonRoot, true);
  tt.ok(pod.securityContext.runAsUser > 0);
  tt.same(pod.tolerations, [{ key: 'ray', operator: 'Exists' }]);
  tt.equal(pod.affinity, undefined, 'anti-affinity is not copied');
  const container = pod.containers[0];
  tt.equal(container.image, 'registry.example/raykeeper:1.2.3');
  tt.same(container.command, ['raykeeper', 'redis-cleanup']);
  tt.same(container.resources, { requests: { cpu: '250m', memory: '256Mi' }, limits: { cpu: '250m', memory: '256Mi' } });
  tt.equal(container.securityContext.allowPrivilegeEscalation, false);
  tt.same(container.securityContext.capabilities, { drop: ['ALL'] });
});

t.test('the cleanup gets a timeout shorter than the Job deadline', async (tt) => {
  tt.equal(cleanupTimeoutSeconds(300), 270);
  tt.equal(cleanupTimeoutSeconds(30), 20);
  tt.equal(cleanupTimeoutSeconds(1), 1);
  const j = buildCleanupJob(cluster({ deletedAt: T0 }), DEFAULT_CLEANUP_CONFIG, T0 + 300_000, T0);
  tt.same(
    (j.spec as any).template.spec.containers[0].args,
    ['--timeout', '270', '--sweep', 'never'],
    'and, for Ray 2.40.0, no keyspace sweep',
  );
});

t.test('the cleanup sweeps the keyspace unless the Ray version is known and not newer than the tables', async (tt) => {
  const withVersion = (rayVersion: string | undefined, image: string | undefined): RayCluster => {
    const c = cluster({ deletedAt: T0 });
    if (rayVersion !== undefined) c.spec!.rayVersion = rayVersion;
    const head = c.spec!.headGroupSpec!.template!.spec!.containers![0]!;
    if (image === undefined) delete head.image;
    else head.image = image;
    return c;
  };
  const table: Array<[string, RayCluster, 'auto' | 'always' | undefined, 'never' | 'always', RegExp]> = [
    ['rayVersion 2.40.0', withVersion('2.40.0', 'example.com/custom:7'), undefined, 'never', /^Ray 2\.40\.0 \(spec\.rayVersion\) <= /],
    [
      'image tag 2.60.0',
      withVersion(undefined, 'rayproject/ray:2.60.0'),
      'auto',
      'never',
      /^Ray 2\.60\.0 \(head image tag\) <= 2\.60\.0: tables known$/,
    ],
    ['rayVersion 2.61.0', withVersion('2.61.0', 'rayproject/ray:2.40.0'), 'auto', 'always', /^Ray 2\.61\.0 \(spec\.rayVersion\) > /],
    [
      'no version (a digest-pinned Ray image)',
      withVersion(undefined, 'rayproject/ray@sha256:0123abcd'),
      'auto',
      'always',
      /^a Ray image without a version \(head image tag\)/,
    ],
    [
      'stale rayVersion beside rayproject/ray:latest',
      withVersion('2.40.0', 'rayproject/ray:latest'),
      'auto',
      'always',
      /^a Ray image without a version/,
    ],
    ['no image at all', withVersion(undefined, undefined), undefined, 'always', /^Ray version unknown/],
    ['operator forces the sweep', withVersion('2.40.0', 'rayproject/ray:2.40.0'), 'always', 'always', /^forced by --cleanup-sweep always$/],
  ];
  for (const [name, c, policy, mode, reason] of table) {
    const config = { ...DEFAULT_CLEANUP_CONFIG, sweep: policy };
    const d = cleanupSweep(c, config);
    tt.equal(d.mode, mode, `${name}: --sweep ${mode}`);
    tt.match(d.reason, reason, `${name}: ${d.reason}`);
    const args = (buildCleanupJob(c, config, T0 + 300_000, T0).spec as any).template.spec.containers[0].args as string[];
    const arg = /^(Ray version unknown|a Ray image without a version)/.test(d.reason) ? 'auto' : mode;
    tt.same(args.slice(-2), ['--sweep', arg], `${name}: the Job's args say it (auto: from the version the head recorded)`);
  }
});

t.test('command budget: the annotation goes to the Job as --command-budget-ms; an invalid one is reported and left out', async (tt) => {
  const ann = 'raykeeper.io/redis-cleanup-command-budget-ms';
  const argsOf = (c: RayCluster) =>
    (buildCleanupJob(c, DEFAULT_CLEANUP_CONFIG, T0 + 300_000, T0).spec as any).template.spec.containers[0].args;
  tt.same(cleanupCommandBudget(cluster({ deletedAt: T0 })), { problems: [] });
  tt.same(argsOf(cluster({ deletedAt: T0 })), ['--timeout', '270', '--sweep', 'never'], 'none set: the cleanup default');
  const set = cluster({ deletedAt: T0, annotations: { [ann]: '2.5' } });
  tt.same(cleanupCommandBudget(set), { ms: 2.5, problems: [] });
  tt.same(argsOf(set), ['--timeout', '270', '--command-budget-ms', '2.5', '--sweep', 'never']);
  for (const bad of ['0', 'fast', '5000', '']) {
    const c = cluster({ deletedAt: T0, annotations: { [ann]: bad } });
    const b = cleanupCommandBudget(c);
    tt.equal(b.ms, undefined, JSON.stringify(bad));
    tt.match(b.problems, [new RegExp(`annotation ${ann} must be a number of milliseconds.*using the default`)]);
    tt.same(argsOf(c), ['--timeout', '270', '--sweep', 'never'], `${JSON.stringify(bad)}: not passed on`);
  }
});

t.test("command budget: the operator's --cleanup-command-budget-ms for every cluster, the annotation over it", async (tt) => {
  const ann = 'raykeeper.io/redis-cleanup-command-budget-ms';
  const operator = { ...DEFAULT_CLEANUP_CONFIG, commandBudgetMs: 1 };
  const argsOf = (c: RayCluster) => (buildCleanupJob(c, operator, T0 + 300_000, T0).spec as any).template.spec.containers[0].args;
  const plain = cluster({ deletedAt: T0 });
  tt.same(cleanupCommandBudget(plain, operator), { ms: 1, problems: [] });
  tt.same(argsOf(plain), ['--timeout', '270', '--command-budget-ms', '1', '--sweep', 'never']);
  const own = cluster({ deletedAt: T0, annotations: { [ann]: '3' } });
  tt.same(cleanupCommandBudget(own, operator), { ms: 3, problems: [] }, 'the annotation wins');
  const bad = cleanupCommandBudget(cluster({ deletedAt: T0, annotations: { [ann]: 'fast' } }), operator);
  tt.equal(bad.ms, 1, "an invalid annotation falls back to the operator's");
  tt.match(bad.problems, [/using the operator's 1 ms/]);
});

t.test('remaining seconds is at least 1', async (tt) => {
  tt.equal(remainingSeconds(T0, T0 + 5000), 1);
  tt.equal(remainingSeconds(T0 + 1001, T0), 2);
});

t.test('job outcome from conditions', async (tt) => {
  tt.equal(jobOutcome(job()), undefined);
  tt.same(jobOutcome(job({ condition: 'Complete' })), { outcome: 'complete' });
  tt.same(jobOutcome(job({ condition: 'Failed', reason: 'DeadlineExceeded', message: 'm' })), {
    outcome: 'failed',
    reason: 'DeadlineExceeded',
    message: 'm',
  });
  const notTrue = job();
  notTrue.status = { conditions: [{ type: 'Failed', status: 'False' }] };
  tt.equal(jobOutcome(notTrue), undefined);
});

t.test('manual command: shows where secrets live, never a plain password', async (tt) => {
  const c = cluster({ ft: 'options', options: { redisPassword: { value: 's3cr3t' }, externalStorageNamespace: 'ns with space' } });
  const cmd = manualCleanupCommand(c);
  tt.notMatch(cmd, /s3cr3t/);
  tt.match(cmd, /REDIS_PASSWORD='?<password>'?/);
  tt.match(cmd, /RAY_external_storage_namespace='ns with space'/);
  tt.match(cmd, / raykeeper redis-cleanup$/);
  const fromSecret = manualCleanupCommand(
    cluster({ ft: 'options', options: { redisPassword: { valueFrom: secretRef('redis-auth', 'pw') } } }),
  );
  tt.match(fromSecret, /REDIS_PASSWORD='<secret redis-auth key pw>'/);
});

t.test('one rule for the storage namespace: the Job env, its annotations, the by-hand command and the events agree', async (tt) => {
  const address = { name: 'RAY_REDIS_ADDRESS', value: 'redis:6379' };
  const rows: Array<{
    name: string;
    c: RayCluster;
    source: ReturnType<typeof storageNamespaceSource>;
    env: unknown;
    annotations: Record<string, string>;
    command: RegExp;
    described: string;
  }> = [
    {
      name: 'a Secret key in the head env (KubeRay keeps it): the reference everywhere, never its content',
      c: cluster({ env: [address, { name: 'RAY_external_storage_namespace', valueFrom: secretRef('gcs', 'ns') }] }),
      source: { from: 'head-ref', ref: { kind: 'secret', name: 'gcs', key: 'ns' } },
      env: { name: 'RAY_external_storage_namespace', valueFrom: secretRef('gcs', 'ns') },
      annotations: { 'raykeeper.io/storage-namespace-from': 'secret gcs key ns' },
      command: /^RAY_external_storage_namespace='<secret gcs key ns>' /,
      described: 'from secret gcs key ns',
    },
    {
      name: 'a ConfigMap key, with an annotation that would otherwise name another namespace',
      c: cluster({
        annotations: { 'ray.io/external-storage-namespace': 'from-ann' },
        env: [address, { name: 'RAY_external_storage_namespace', valueFrom: { configMapKeyRef: { name: 'cm', key: 'k' } } }],
      }),
      source: { from: 'head-ref', ref: { kind: 'configMap', name: 'cm', key: 'k' } },
      env: { name: 'RAY_external_storage_namespace', valueFrom: { configMapKeyRef: { name: 'cm', key: 'k' } } },
      annotations: { 'raykeeper.io/storage-namespace-from': 'configmap cm key k' },
      command: /^RAY_external_storage_namespace='<configmap cm key k>' /,
      described: 'from configmap cm key k',
    },
    {
      name: 'a value in the head env wins over options',
      c: cluster({
        ft: 'options',
        options: { externalStorageNamespace: 'from-opt' },
        env: [{ name: 'RAY_external_storage_namespace', value: 'from-env' }],
      }),
      source: { from: 'head', value: 'from-env' },
      env: { name: 'RAY_external_storage_namespace', value: 'from-env' },
      annotations: { 'raykeeper.io/storage-namespace': 'from-env' },
      command: /^RAY_external_storage_namespace=from-env /,
      described: '"from-env"',
    },
    {
      name: 'the options',
      c: cluster({ ft: 'options', options: { externalStorageNamespace: 'from-opt' } }),
      source: { from: 'options', value: 'from-opt' },
      env: { name: 'RAY_external_storage_namespace', value: 'from-opt' },
      annotations: { 'raykeeper.io/storage-namespace': 'from-opt' },
      command: /^RAY_external_storage_namespace=from-opt /,
      described: '"from-opt"',
    },
    {
      name: 'the UID by default',
      c: cluster(),
      source: { from: 'uid', value: '0b7c1a52-5f7e-4b8e-9a43-2d1f0c2e9f10' },
      env: { name: 'RAY_external_storage_namespace', value: '0b7c1a52-5f7e-4b8e-9a43-2d1f0c2e9f10' },
      annotations: { 'raykeeper.io/storage-namespace': '0b7c1a52-5f7e-4b8e-9a43-2d1f0c2e9f10' },
      command: /^RAY_external_storage_namespace=0b7c1a52-5f7e-4b8e-9a43-2d1f0c2e9f10 /,
      described: '"0b7c1a52-5f7e-4b8e-9a43-2d1f0c2e9f10"',
    },
  ];
  for (const r of rows) {
    tt.same(storageNamespaceSource(r.c), r.source, `${r.name}: the source`);
    tt.same(
      cleanupEnv(r.c).find((e) => e.name === 'RAY_external_storage_namespace'),
      r.env,
      `${r.name}: the Job's env`,
    );
    const annotations = buildCleanupJob(r.c, DEFAULT_CLEANUP_CONFIG, T0 + 300_000, T0).metadata.annotations ?? {};
    const { 'raykeeper.io/cluster-name': _name, ...ns } = annotations;
    tt.same(ns, r.annotations, `${r.name}: the Job's annotations`);
    tt.match(manualCleanupCommand(r.c), r.command, `${r.name}: the by-hand command`);
    tt.equal(describeStorageNamespace(r.c), r.described, `${r.name}: the events`);
    tt.match(describeTarget(r.c), `storage namespace ${r.described} in Redis`);
  }
  tt.equal(
    effectiveStorageNamespace(cluster({ env: [address, { name: 'RAY_external_storage_namespace', valueFrom: secretRef('gcs', 'ns') }] })),
    undefined,
    'a reference is not a namespace known here (it used to be taken for the UID)',
  );
});
