// The objects a RayJob creates, and the names it derives.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { buildRayCluster, buildSubmitRequest, buildSubmitterJob, submitterScript } from '../../src/rayjob/builders.ts';
import { shellQuote } from '../../src/shell.ts';
import {
  fromStatusDashboardUrl,
  generateClusterName,
  generateJobId,
  defaultHeadServiceName,
  randomSuffix,
  renderDashboardUrl,
  toStatusDashboardUrl,
} from '../../src/rayjob/ids.ts';
import { HEAD_IMAGE, cluster, rayJob } from './fixtures.ts';

t.test('ids follow KubeRay', async (t) => {
  const id = generateJobId('demo');
  t.match(id, /^demo-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  t.match(generateClusterName('demo'), /^demo-[a-z0-9]{5}$/);
  t.equal(
    randomSuffix(5, () => 0),
    'bbbbb',
  );
  t.equal(
    randomSuffix(3, () => 0.9999),
    '999',
  );
  t.not(generateJobId('demo'), generateJobId('demo'), 'random each time');
  const longest = generateClusterName('a'.repeat(47));
  t.ok(defaultHeadServiceName(longest).length <= 63, 'a 47-character RayJob keeps the head service within 63 characters');
  t.equal(defaultHeadServiceName('c1'), 'c1-head-svc');
});

t.test('dashboard URLs', async (t) => {
  const target = { namespace: 'team', cluster: 'c1' };
  t.equal(renderDashboardUrl('http://{service}.{namespace}.svc:{port}', target), 'http://c1-head-svc.team.svc:8265');
  t.equal(renderDashboardUrl('http://127.0.0.1:9999/', target), 'http://127.0.0.1:9999', 'no placeholders, trailing slash dropped');
  t.equal(renderDashboardUrl('https://gw/{namespace}/{cluster}', target), 'https://gw/team/c1');
  t.equal(toStatusDashboardUrl('http://x.ns.svc.cluster.local:8265'), 'x.ns.svc.cluster.local:8265', 'KubeRay form for http');
  t.equal(toStatusDashboardUrl('https://gw/x'), 'https://gw/x', 'other schemes kept');
  t.equal(fromStatusDashboardUrl('x.ns.svc:8265'), 'http://x.ns.svc:8265');
  t.equal(fromStatusDashboardUrl('https://gw/x'), 'https://gw/x');
});

t.test('the RayCluster: owned by the RayJob, GCS FT settings carried over', async (t) => {
  const job = rayJob('Initializing', {
    metadata: {
      labels: { team: 'a' },
      annotations: {
        'ray.io/ft-enabled': 'true',
        'ray.io/external-storage-namespace': 'store-1',
        'ray.io/gcs-ft-deletion-timeout': '60',
        'kubectl.kubernetes.io/last-applied-configuration': '{"huge":true}',
      },
    },
  });
  job.spec!.rayClusterSpec!.gcsFaultToleranceOptions = {
    redisAddress: 'redis:6379',
    redisPassword: { valueFrom: { secretKeyRef: { name: 's', key: 'p' } } },
  };
  const c = buildRayCluster(job, 'demo-fghjk');
  t.equal(c.apiVersion, 'ray.io/v1');
  t.equal(c.kind, 'RayCluster');
  t.equal(c.metadata.name, 'demo-fghjk');
  t.equal(c.metadata.namespace, 'ns1');
  t.same(c.metadata.labels, {
    team: 'a',
    'ray.io/originated-from-cr-name': 'demo',
    'ray.io/originated-from-crd': 'RayJob',
    'ray.io/job-submission-mode': 'K8sJobMode',
  });
  t.same(c.metadata.annotations, {
    'ray.io/ft-enabled': 'true',
    'ray.io/external-storage-namespace': 'store-1',
    'ray.io/gcs-ft-deletion-timeout': '60',
  });
  t.same(c.metadata.ownerReferences, [
    { apiVersion: 'ray.io/v1', kind: 'RayJob', name: 'demo', uid: 'uid-demo', controller: true, blockOwnerDeletion: true },
  ]);
  t.same(c.spec?.gcsFaultToleranceOptions, job.spec?.rayClusterSpec?.gcsFaultToleranceOptions, 'options travel in the spec');
  c.spec!.headGroupSpec!.rayStartParams!['x'] = 'y';
  t.notOk(job.spec?.rayClusterSpec?.headGroupSpec?.rayStartParams?.['x'], 'a deep copy');
  t.equal(buildRayCluster(rayJob('Initializing'), 'x').metadata.annotations, undefined, 'no annotations key when there are none');
});

t.test('the submitter Job', async (t) => {
  const job = rayJob('Initializing', {
    status: { dashboardURL: 'demo-fghjk-head-svc.ns1.svc.cluster.local:8265' },
    spec: { submitterConfig: { backoffLimit: 5 } },
  });
  const sub = buildSubmitterJob(job, cluster('ready'));
  t.equal(sub.metadata.name, 'demo', 'named after the RayJob');
  t.equal(sub.spec?.backoffLimit, 5, 'submitterConfig.backoffLimit');
  t.match(sub.metadata.labels, {
    'ray.io/originated-from-cr-name': 'demo',
    'ray.io/originated-from-crd': 'RayJob',
    'app.kubernetes.io/created-by': 'raykeeper',
  });
  t.match(sub.metadata.ownerReferences, [{ kind: 'RayJob', uid: 'uid-demo', controller: true }]);
  const pod = sub.spec?.template?.spec;
  t.equal(pod?.['restartPolicy'], 'Never');
  const c = pod?.containers?.[0];
  t.equal(c?.name, 'ray-job-submitter');
  t.equal(c?.image, HEAD_IMAGE, 'the head image');
  t.same(c?.['command'], ['/bin/bash', '-ce', '--']);
  t.equal(
    (c?.['args'] as string[])[0],
    'if ! ray job status --address http://demo-fghjk-head-svc.ns1.svc.cluster.local:8265 demo-abcde >/dev/null 2>&1 ; then ' +
      'ray job submit --address http://demo-fghjk-head-svc.ns1.svc.cluster.local:8265 --no-wait --submission-id demo-abcde -- python main.py ; fi ; ' +
      'ray job logs --address http://demo-fghjk-head-svc.ns1.svc.cluster.local:8265 --follow demo-abcde',
  );
  t.equal(buildSubmitterJob(rayJob('Initializing'), cluster('ready')).spec?.backoffLimit, 2, 'default backoffLimit 2');
  const custom = buildSubmitterJob(job, cluster('ready'), { rayCommand: '/opt/fake-ray', image: 'mine:1' });
  t.equal(custom.spec?.template?.spec?.containers?.[0]?.image, 'mine:1');
  t.match((custom.spec?.template?.spec?.containers?.[0]?.['args'] as string[])[0], /^if ! \/opt\/fake-ray job status/);
});

t.test('a user submitterPodTemplate is kept; its own command wins', async (t) => {
  const job = rayJob('Initializing', {
    status: { dashboardURL: 'd:8265' },
    spec: {
      submitterPodTemplate: {
        spec: {
          restartPolicy: 'OnFailure',
          containers: [{ name: 'mine', image: 'img', command: ['echo', 'hi'], env: [{ name: 'A', value: '1' }] }],
        },
      },
    },
  });
  const c = buildSubmitterJob(job, cluster('ready')).spec?.template?.spec?.containers?.[0];
  t.same(c?.['command'], ['echo', 'hi']);
  t.equal(c?.['args'], undefined);
  t.same(
    c?.env?.map((e) => e.name),
    ['A', 'PYTHONUNBUFFERED', 'RAY_DASHBOARD_ADDRESS', 'RAY_JOB_SUBMISSION_ID'],
  );
  const noCommand = rayJob('Initializing', {
    status: { dashboardURL: 'd:8265' },
    spec: { submitterPodTemplate: { spec: { containers: [{ name: 'mine' }] } } },
  });
  const c2 = buildSubmitterJob(noCommand, cluster('ready')).spec?.template?.spec?.containers?.[0];
  t.equal(c2?.image, HEAD_IMAGE, 'image defaults to the head image');
  t.match((c2?.['args'] as string[])[0], /ray job submit --address http:\/\/d:8265/);
});

t.test(
  "the submitter container's log tail reaches its pod's status when it fails (FallbackToLogsOnError); a template's own policy wins",
  async (t) => {
    const container = (job: ReturnType<typeof rayJob>) => buildSubmitterJob(job, cluster('ready')).spec?.template?.spec?.containers?.[0];
    t.equal(container(rayJob('Initializing'))?.['terminationMessagePolicy'], 'FallbackToLogsOnError', 'default template');
    const own = rayJob('Initializing', {
      spec: { submitterPodTemplate: { spec: { containers: [{ name: 'mine', terminationMessagePolicy: 'File' }] } } },
    });
    t.equal(container(own)?.['terminationMessagePolicy'], 'File', "the user's choice");
    const unset = rayJob('Initializing', { spec: { submitterPodTemplate: { spec: { containers: [{ name: 'mine' }] } } } });
    t.equal(container(unset)?.['terminationMessagePolicy'], 'FallbackToLogsOnError', 'a template without one');
  },
);

t.test('submission options reach both submission paths', async (t) => {
  const job = rayJob('Running', {
    spec: {
      entrypoint: "python -c 'print(1)'",
      runtimeEnvYAML: 'env_vars:\n  GREETING: "it\'s me"\n',
      metadata: { owner: 'a' },
      entrypointNumCpus: 1.5,
      entrypointNumGpus: 1,
      entrypointResources: '{"tpu": 2}',
    },
  });
  const script = submitterScript(job, 'http://h:8265', 'id-1');
  t.match(script, `--runtime-env-json '{"env_vars":{"GREETING":"it'\\''s me"}}'`);
  t.match(script, `--metadata-json '{"owner":"a"}'`);
  // KubeRay's order and Go's %f, the same options as the SidecarMode script's.
  t.match(script, `--submission-id id-1 --entrypoint-num-cpus 1.500000 --entrypoint-num-gpus 1.000000`);
  t.match(script, `--entrypoint-resources '{"tpu":2}' -- python -c 'print(1)'`);
  t.same(buildSubmitRequest(job), {
    entrypoint: "python -c 'print(1)'",
    submission_id: 'demo-abcde',
    runtime_env: { env_vars: { GREETING: "it's me" } },
    metadata: { owner: 'a' },
    entrypoint_num_cpus: 1.5,
    entrypoint_num_gpus: 1,
    entrypoint_resources: { tpu: 2 },
  });
});

t.test('shellQuote survives bash', async (t) => {
  for (const value of ['plain', "it's", '$HOME `id` "q"', 'a b\nc', '']) {
    const out = execFileSync('/bin/bash', ['-c', `printf %s ${shellQuote(value)}`], { encoding: 'utf8' });
    t.equal(out, value, JSON.stringify(value));
  }
});

t.test('token auth: both submitters get RAY_AUTH_MODE and RAY_AUTH_TOKEN from the Secret, after their own env', async (t) => {
  const ref = (name: string) => ({ name: 'RAY_AUTH_TOKEN', valueFrom: { secretKeyRef: { name, key: 'auth_token' } } });
  const names = (env: Array<{ name: string }> | undefined) => (env ?? []).map((e) => e.name);
  const rows: Array<[string, Record<string, unknown> | undefined, string | undefined]> = [
    ['generated Secret', { mode: 'token' }, 'demo-fghjk'],
    ['secretName', { mode: 'token', secretName: 'mine' }, 'mine'],
    ['disabled', { mode: 'disabled' }, undefined],
    ['none', undefined, undefined],
  ];
  for (const [name, auth, secret] of rows) {
    const c = cluster('ready');
    if (auth) (c.spec as Record<string, unknown>).authOptions = auth;
    const k8sJob = buildSubmitterJob(rayJob('Initializing'), c).spec?.template?.spec?.containers?.[0];
    const job = rayJob('New', { spec: { submissionMode: 'SidecarMode', rayClusterSpec: c.spec } });
    const sidecar = buildRayCluster(job, 'demo-fghjk').spec?.headGroupSpec?.template?.spec?.containers?.[1];
    for (const [mode, container] of [
      ['K8sJobMode', k8sJob],
      ['SidecarMode', sidecar],
    ] as const) {
      const base = ['PYTHONUNBUFFERED', 'RAY_DASHBOARD_ADDRESS', 'RAY_JOB_SUBMISSION_ID'];
      if (secret === undefined) {
        t.same(names(container?.env), base, `${name} ${mode}: no auth env`);
        continue;
      }
      t.same(names(container?.env), [...base, 'RAY_AUTH_MODE', 'RAY_AUTH_TOKEN'], `${name} ${mode}: KubeRay's order`);
      t.same(container?.env?.at(-2), { name: 'RAY_AUTH_MODE', value: 'token' });
      t.same(container?.env?.at(-1), ref(secret), `${name} ${mode}: by secretKeyRef`);
    }
  }
});
