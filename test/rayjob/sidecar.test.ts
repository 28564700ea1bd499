// SidecarMode's transitions as a table: (state, head pod and its submitter container, Ray job) ->
// (next state, reason, message, actions), and the RayCluster such a RayJob creates (KubeRay's
// constructRayClusterForRayJob: the submitter container in the head template, restartPolicy Never,
// the submission-mode label and ray.io/disable-provisioned-head-restart).
import t from 'tap';
import { decideRayJob } from '../../src/rayjob/machine/decide.ts';
import { defaultMachineConfig, type Observed, type RayJobStep } from '../../src/rayjob/machine/vocabulary.ts';
import type { Pod } from '../../kube/model.ts';
import type { RayJob } from '../../src/types.ts';
import { at, cluster, HEAD_IMAGE, info, iso, rayJob, type JobOptions } from './fixtures.ts';

function sidecarJob(state: string | undefined, options: JobOptions = {}): RayJob {
  return rayJob(state, { ...options, spec: { submissionMode: 'SidecarMode', ...options.spec } });
}

type Submitter = 'running' | { exitCode: number; finishedAt: number; reason?: string };

function headPod(submitter: Submitter, options: { deleting?: boolean } = {}): Pod {
  const state =
    submitter === 'running'
      ? { running: { startedAt: iso(1) } }
      : { terminated: { exitCode: submitter.exitCode, reason: submitter.reason ?? 'Completed', finishedAt: iso(submitter.finishedAt) } };
  const pod: Pod = {
    metadata: { name: 'demo-fghjk-head', namespace: 'ns1', labels: { 'ray.io/cluster': 'demo-fghjk', 'ray.io/node-type': 'head' } },
    status: {
      phase: 'Running',
      containerStatuses: [
        { name: 'ray-head', state: { running: {} } },
        { name: 'ray-job-submitter', state },
      ],
    },
  };
  if (options.deleting) pod.metadata.deletionTimestamp = iso(20);
  return pod;
}

function step(job: RayJob, observed: Observed, seconds: number): RayJobStep {
  const d = decideRayJob(job, observed, at(seconds), defaultMachineConfig({ random: () => 0 }));
  if (d.kind !== 'step') throw new Error(`expected a step, got ${d.note}`);
  return d;
}

interface Row {
  name: string;
  job: RayJob;
  observed: Observed;
  now: number;
  next: string;
  reason?: string;
  message?: string | RegExp;
  actions?: string[];
  status?: Record<string, unknown>;
}

const ready = cluster('ready');
const running: Submitter = 'running';
const exited = (exitCode: number, finishedAt = 10, reason = exitCode === 0 ? 'Completed' : 'Error'): Submitter => ({
  exitCode,
  finishedAt,
  reason,
});

const rows: Row[] = [
  {
    name: 'Initializing, cluster ready -> Running with no submitter Job',
    job: sidecarJob('Initializing'),
    observed: { cluster: ready },
    now: 1,
    next: 'Running',
    actions: [],
  },
  {
    name: 'Initializing, cluster not ready, the submitter still running -> waits (KubeRay waits for ready)',
    job: sidecarJob('Initializing'),
    observed: { cluster: cluster('unhealthy'), headPod: headPod('running') },
    now: 1,
    next: 'Initializing',
    actions: [],
  },
  {
    name: 'Initializing, cluster never ready because the submitter already exited (a worker slower than the job) -> Running',
    job: sidecarJob('Initializing'),
    observed: { cluster: cluster('unhealthy'), headPod: headPod(exited(0)) },
    now: 12,
    next: 'Running',
    actions: [],
  },
  {
    name: 'Running: head pod gone -> Failed AppFailed, as KubeRay',
    job: sidecarJob('Running', { status: { jobStatus: 'RUNNING' } }),
    observed: { cluster: ready, headPod: null, dashboard: info('RUNNING') },
    now: 5,
    next: 'Failed',
    reason: 'AppFailed',
    message: 'Ray head pod not found.',
    status: { failed: 1, endTime: iso(5) },
  },
  {
    name: 'Running: head pod gone with backoffLimit 1 -> Retrying (a new cluster next try)',
    job: sidecarJob('Running', { spec: { backoffLimit: 1 } }),
    observed: { cluster: ready, headPod: null },
    now: 5,
    next: 'Retrying',
    reason: 'AppFailed',
  },
  {
    name: 'Running: submitter container exited 1, Ray job not FAILED -> Failed SubmissionFailed with the container message',
    job: sidecarJob('Running', { status: { jobStatus: 'PENDING' } }),
    observed: { cluster: ready, headPod: headPod(exited(1)), dashboard: info('PENDING') },
    now: 12,
    next: 'Failed',
    reason: 'SubmissionFailed',
    message: 'Ray head pod container ray-job-submitter terminated with exit code 1: Error',
  },
  {
    name: 'Running: submitter container exited 1, dashboard not answering -> Failed SubmissionFailed',
    job: sidecarJob('Running', { status: { jobStatus: 'RUNNING' } }),
    observed: { cluster: ready, headPod: headPod(exited(1)), dashboard: { kind: 'error', message: 'connection refused' } },
    now: 12,
    next: 'Failed',
    reason: 'SubmissionFailed',
  },
  {
    name: 'Running: submitter exited 1 after the Ray job FAILED -> Failed AppFailed with Ray message',
    job: sidecarJob('Running', { status: { jobStatus: 'RUNNING' } }),
    observed: { cluster: ready, headPod: headPod(exited(1)), dashboard: info('FAILED', { end: 9, message: 'boom' }) },
    now: 12,
    next: 'Failed',
    reason: 'AppFailed',
    message: 'boom',
    status: { jobStatus: 'FAILED' },
  },
  {
    name: 'Running: Ray job SUCCEEDED, submitter still following logs -> stays Running',
    job: sidecarJob('Running', { status: { jobStatus: 'RUNNING' } }),
    observed: { cluster: ready, headPod: headPod(running), dashboard: info('SUCCEEDED', { end: 9 }) },
    now: 10,
    next: 'Running',
    status: { jobStatus: 'SUCCEEDED' },
  },
  {
    name: 'Running: Ray job SUCCEEDED and submitter exited 0 -> Complete',
    job: sidecarJob('Running', { status: { jobStatus: 'RUNNING' } }),
    observed: { cluster: ready, headPod: headPod(exited(0)), dashboard: info('SUCCEEDED', { end: 9 }) },
    now: 11,
    next: 'Complete',
    status: { jobStatus: 'SUCCEEDED', succeeded: 1, endTime: iso(11) },
  },
  {
    name: 'Running: submitter exited 0, Ray job still RUNNING, within 30 s -> stays Running',
    job: sidecarJob('Running', { status: { jobStatus: 'RUNNING' } }),
    observed: { cluster: ready, headPod: headPod(exited(0, 10)), dashboard: info('RUNNING') },
    now: 20,
    next: 'Running',
  },
  {
    name: 'Running: submitter exited 0, Ray job still RUNNING after 30 s -> Failed (submitter finished timeout)',
    job: sidecarJob('Running', { status: { jobStatus: 'RUNNING' } }),
    observed: { cluster: ready, headPod: headPod(exited(0, 10)), dashboard: info('RUNNING') },
    now: 41,
    next: 'Failed',
    reason: 'JobDeploymentStatusTransitionGracePeriodExceeded',
  },
  {
    name: 'Running: submitter exited 0, dashboard does not know the job -> Failed AppFailed',
    job: sidecarJob('Running'),
    observed: { cluster: ready, headPod: headPod(exited(0)), dashboard: { kind: 'notFound' } },
    now: 12,
    next: 'Failed',
    reason: 'AppFailed',
    message: 'Submitter completed but Ray job not found in RayCluster.',
  },
  {
    name: 'Running: submitter still waiting for the dashboard, job not submitted yet -> stays Running',
    job: sidecarJob('Running'),
    observed: { cluster: ready, headPod: headPod(running), dashboard: { kind: 'notFound' } },
    now: 4,
    next: 'Running',
    actions: [],
  },
  {
    name: 'Running: the head pod is being deleted and its submitter got SIGTERM (143) -> Failed SubmissionFailed',
    job: sidecarJob('Running', { status: { jobStatus: 'RUNNING' } }),
    observed: { cluster: ready, headPod: headPod(exited(143, 20), { deleting: true }), dashboard: info('RUNNING') },
    now: 21,
    next: 'Failed',
    reason: 'SubmissionFailed',
    message: /exit code 143/,
  },
  {
    name: 'Running: the RayCluster gone -> Failed AppFailed (before the head pod is read)',
    job: sidecarJob('Running'),
    observed: { cluster: null, headPod: null },
    now: 5,
    next: 'Failed',
    reason: 'AppFailed',
    message: /RayCluster ns1\/demo-fghjk no longer exists/,
  },
  {
    name: 'Running: activeDeadlineSeconds passed -> Failed DeadlineExceeded (never retried)',
    job: sidecarJob('Running', { spec: { activeDeadlineSeconds: 30, backoffLimit: 3 } }),
    observed: { cluster: ready, headPod: headPod(running), dashboard: info('RUNNING') },
    now: 31,
    next: 'Failed',
    reason: 'DeadlineExceeded',
  },
  {
    name: 'Running: suspend -> Suspending',
    job: sidecarJob('Running', { spec: { suspend: true } }),
    observed: { cluster: ready },
    now: 5,
    next: 'Suspending',
  },
  {
    name: 'Suspending: deletes the RayCluster only (no submitter Job in SidecarMode)',
    job: sidecarJob('Suspending', { spec: { suspend: true } }),
    observed: { cluster: ready },
    now: 6,
    next: 'Suspending',
    actions: ['deleteCluster'],
  },
  {
    name: 'Suspending: the RayCluster gone -> Suspended, names reset',
    job: sidecarJob('Suspending', { spec: { suspend: true } }),
    observed: { cluster: null },
    now: 7,
    next: 'Suspended',
  },
  {
    name: 'Retrying: the RayCluster gone -> New (a new cluster name next)',
    job: sidecarJob('Retrying', { status: { failed: 1 } }),
    observed: { cluster: null },
    now: 7,
    next: 'New',
  },
];

t.test('SidecarMode transitions', async (t) => {
  for (const row of rows) {
    const d = step(row.job, row.observed, row.now);
    t.equal(d.next, row.next, `${row.name}: next state`);
    if (row.reason !== undefined) t.equal(d.status.reason, row.reason, `${row.name}: reason`);
    if (typeof row.message === 'string') t.equal(d.status.message, row.message, `${row.name}: message`);
    else if (row.message) t.match(d.status.message ?? '', row.message, `${row.name}: message`);
    if (row.actions)
      t.same(
        d.actions.map((a) => a.type),
        row.actions,
        `${row.name}: actions`,
      );
    t.notOk(
      d.actions.some((a) => a.type === 'createSubmitter' || a.type === 'deleteSubmitter'),
      `${row.name}: never a submitter Job`,
    );
    if (row.status) t.match(d.status, row.status, `${row.name}: status`);
  }
});

t.test('the RayCluster of a SidecarMode RayJob carries the submitter container, as KubeRay builds it', async (t) => {
  const job = sidecarJob('Initializing', {
    spec: {
      runtimeEnvYAML: 'env_vars:\n  A: "$HOME"\n',
      entrypointNumCpus: 0.5,
      entrypoint: '  python -c "print(1)"  ',
    },
  });
  const d = step(job, { cluster: null }, 1);
  t.equal(d.next, 'Initializing');
  const create = d.actions[0];
  if (create?.type !== 'createCluster') throw new Error('expected createCluster');
  const c = create.cluster;
  t.equal(c.metadata.labels?.['ray.io/job-submission-mode'], 'SidecarMode');
  t.equal(c.metadata.annotations?.['ray.io/disable-provisioned-head-restart'], 'true');
  const podSpec = c.spec?.headGroupSpec?.template?.spec;
  t.equal(podSpec?.['restartPolicy'], 'Never', 'the head never restarts a container');
  t.same(
    podSpec?.containers?.map((x) => x.name),
    ['ray-head', 'ray-job-submitter'],
    'the submitter is appended after the Ray container',
  );
  const sub = podSpec?.containers?.[1];
  t.equal(sub?.image, HEAD_IMAGE, 'the head image');
  t.same(sub?.['resources'], { requests: { cpu: '500m', memory: '200Mi' }, limits: { cpu: '1', memory: '1Gi' } });
  t.same(sub?.['command'], ['/bin/bash', '-ce', '--']);
  t.same(sub?.env, [
    { name: 'PYTHONUNBUFFERED', value: '1' },
    { name: 'RAY_DASHBOARD_ADDRESS', value: '' },
    { name: 'RAY_JOB_SUBMISSION_ID', value: 'demo-abcde' },
  ]);
  const args = (sub?.['args'] as string[])[0] ?? '';
  t.equal(
    args,
    `until python -c "import urllib.request; r=urllib.request.urlopen('http://localhost:8265/api/gcs_healthz', timeout=10); exit(0 if b'success' in r.read() else 1)" >/dev/null 2>&1 ; ` +
      `do echo "Waiting for Ray Dashboard GCS to become healthy at http://127.0.0.1:8265 ..." ; sleep 2 ; done ; ` +
      `ray job submit --address http://127.0.0.1:8265 --runtime-env-json '{"env_vars":{"A":"$HOME"}}' --submission-id demo-abcde ` +
      `--entrypoint-num-cpus 0.500000 -- python -c "print(1)" ;`,
    "KubeRay's command: wait for GCS, submit and follow (no --no-wait), the entrypoint trimmed",
  );
  t.notMatch(args, '--no-wait');
  t.equal(job.spec?.rayClusterSpec?.headGroupSpec?.template?.spec?.containers?.length, 1, "the RayJob's own spec is not changed");
});

t.test('the submitter reaches the dashboard on the head container port named dashboard', async (t) => {
  const job = sidecarJob('Initializing');
  const head = job.spec?.rayClusterSpec?.headGroupSpec?.template?.spec?.containers?.[0];
  if (head) head['ports'] = [{ name: 'dashboard', containerPort: 9265 }];
  const d = step(job, { cluster: null }, 1);
  if (d.actions[0]?.type !== 'createCluster') throw new Error('expected createCluster');
  const args = d.actions[0].cluster.spec?.headGroupSpec?.template?.spec?.containers?.[1]?.['args'] as string[];
  t.match(args[0], "urlopen('http://localhost:9265/api/gcs_healthz'");
  t.match(args[0], 'ray job submit --address http://127.0.0.1:9265 ');
});
