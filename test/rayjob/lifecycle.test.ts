// The RayJob state machine end to end on the real kube-apiserver: the submitter Job really runs (the
// test job runner executes its bash script, which talks to the fake dashboard through a stand-in
// `ray`), the fake dashboard really runs the entrypoint. Happy path with ttl deletion, HTTPMode, and
// the failures: Ray FAILED, submitter failure, deadline, retries.
import t from 'tap';
import { RAYJOB_FINALIZER } from '../../src/names.ts';
import { inState, manifest, rayJobHarness } from './helpers/harness.ts';
import { sleep } from '../../kube/backoff.ts';

t.test('K8sJobMode: New -> Initializing -> Running -> Complete, then the RayCluster goes after ttl', async (t) => {
  const h = await rayJobHarness(t);
  await h.create(
    manifest(
      'happy',
      { entrypoint: 'sleep 0.3', ttlSecondsAfterFinished: 1 },
      { annotations: { 'ray.io/ft-enabled': 'true' }, labels: { team: 'blue' } },
    ),
  );

  const init = await h.drive('happy', inState('Initializing'));
  const started = init.job!;
  t.same(init.states, ['New', 'Initializing'], 'absent status read as New, one step to Initializing');
  t.ok(started.metadata.finalizers?.includes(RAYJOB_FINALIZER), 'finalizer added');
  t.match(started.status?.jobId, /^happy-[a-z0-9]{5}$/, 'jobId generated');
  const clusterName = started.status?.rayClusterName ?? '';
  t.match(clusterName, /^happy-[a-z0-9]{5}$/, 'cluster name generated');
  t.ok(started.status?.startTime, 'startTime set');

  // Not ready yet: stays Initializing with the cluster created, owned, GCS FT annotation carried.
  await h.reconciler.reconcile(`${h.namespace}/happy`);
  const cluster = await h.cluster(clusterName);
  t.ok(cluster, 'RayCluster created');
  t.equal(cluster?.metadata.annotations?.['ray.io/ft-enabled'], 'true', 'GCS FT annotation carried over');
  t.equal(cluster?.metadata.labels?.['team'], 'blue', 'labels carried over');
  t.match(cluster?.metadata.ownerReferences, [{ kind: 'RayJob', name: 'happy', uid: started.metadata.uid, controller: true }]);
  t.equal((await h.get('happy'))?.status?.jobDeploymentStatus, 'Initializing', 'waits while the cluster is not ready');
  t.equal(await h.submitterJob('happy'), undefined, 'no submitter before the cluster is ready');

  await h.markReady(clusterName);
  const running = await h.drive('happy', inState('Running'));
  t.equal(running.job?.status?.dashboardURL, h.dashboard.url.replace('http://', ''), 'status.dashboardURL in KubeRay form');
  const submitter = (await h.submitterJob('happy')) as { spec: { backoffLimit: number }; metadata: { ownerReferences: unknown[] } };
  t.equal(submitter.spec.backoffLimit, 2, 'submitter backoffLimit defaults to 2');
  t.match(submitter.metadata.ownerReferences, [{ kind: 'RayJob', name: 'happy' }]);

  const done = await h.drive('happy', inState('Complete', 'Failed'));
  t.equal(done.job?.status?.jobDeploymentStatus, 'Complete');
  t.equal(done.job?.status?.jobStatus, 'SUCCEEDED');
  t.equal(done.job?.status?.succeeded, 1);
  t.equal(done.job?.status?.failed, 0);
  t.ok(done.job?.status?.endTime, 'endTime set');
  t.ok((done.job?.status?.['rayJobInfo'] as { endTime?: string })?.endTime, 'Ray end time recorded');
  t.same(h.dashboard.submissions, [started.status?.jobId], 'exactly one submission, with the status jobId');
  const calls = await h.rayCalls();
  t.ok(
    calls.some((c) => c.startsWith('job submit')),
    'the submitter ran `ray job submit`',
  );
  t.ok(
    calls.some((c) => c.startsWith('job logs') && c.includes('--follow')),
    'and followed the logs',
    { calls },
  );

  // ttlSecondsAfterFinished: 1 -> the RayCluster is deleted about a second after endTime; the submitter stays.
  t.ok(await h.cluster(clusterName), 'cluster still there right after Complete');
  const deadline = Date.now() + 10_000;
  while ((await h.cluster(clusterName)) && Date.now() < deadline) {
    await h.reconciler.reconcile(`${h.namespace}/happy`);
    await sleep(200);
  }
  t.equal(await h.cluster(clusterName), undefined, 'RayCluster deleted after ttl');
  t.ok(await h.submitterJob('happy'), 'submitter Job kept (its logs)');
  t.equal((await h.get('happy'))?.status?.jobDeploymentStatus, 'Complete', 'still Complete');
  const reasons = (await h.events('happy')).map((e) => e.reason);
  for (const r of ['CreatedRayCluster', 'CreatedRayJobSubmitter', 'DeletedRayCluster']) t.ok(reasons.includes(r), `event ${r}`);
});

t.test('HTTPMode: the controller submits through POST /api/jobs/ and follows it to Complete', async (t) => {
  const h = await rayJobHarness(t);
  await h.create(manifest('http', { submissionMode: 'HTTPMode', entrypoint: 'exit 0', runtimeEnvYAML: 'env_vars:\n  X: "1"\n' }));
  const done = await h.drive('http', inState('Complete', 'Failed'), { autoReady: true });
  t.same(done.states, ['New', 'Initializing', 'Running', 'Complete']);
  t.equal(done.job?.status?.jobStatus, 'SUCCEEDED');
  t.equal(h.dashboard.submissions.length, 1, 'submitted once');
  t.same(h.dashboard.jobs.get(done.job?.status?.jobId ?? '')?.runtime_env, { env_vars: { X: '1' } }, 'runtime env from runtimeEnvYAML');
  t.equal(await h.submitterJob('http'), undefined, 'no submitter Job in HTTPMode');
});

t.test('Failed by Ray FAILED: the app exits non-zero -> Failed(AppFailed)', async (t) => {
  const h = await rayJobHarness(t);
  await h.create(manifest('appfail', { entrypoint: 'exit 3' }));
  const done = await h.drive('appfail', inState('Complete', 'Failed'), { autoReady: true });
  t.same(done.states, ['New', 'Initializing', 'Running', 'Failed']);
  t.equal(done.job?.status?.reason, 'AppFailed');
  t.equal(done.job?.status?.jobStatus, 'FAILED');
  t.match(done.job?.status?.message, /exit code 3/);
  t.equal(done.job?.status?.failed, 1);
  const warnings = (await h.events('appfail')).filter((e) => e.type === 'Warning').map((e) => e.reason);
  t.ok(warnings.includes('RayJobFailed'), 'Warning event RayJobFailed');
});

t.test('Failed by submitter failure: the submitter cannot submit -> Failed(SubmissionFailed)', async (t) => {
  // The submitter's `ray` talks to a port where nothing listens; the controller's own reads still work.
  const h = await rayJobHarness(t, { rayCommand: `${process.execPath} -e "process.exit(1)" --` });
  await h.create(manifest('subfail', { entrypoint: 'true', submitterConfig: { backoffLimit: 1 } }));
  const done = await h.drive('subfail', inState('Complete', 'Failed'), { autoReady: true });
  t.equal(done.job?.status?.jobDeploymentStatus, 'Failed');
  t.equal(done.job?.status?.reason, 'SubmissionFailed');
  t.match(done.job?.status?.message, /BackoffLimitExceeded/);
  t.equal(h.dashboard.submissions.length, 0, 'nothing reached Ray');
  const result = await h.runner.waitFor(h.namespace, 'subfail', 1000);
  t.equal(result.attempts, 2, 'the submitter ran backoffLimit + 1 times');
});

t.test('Failed by deadline: activeDeadlineSeconds -> Failed(DeadlineExceeded), not retried', async (t) => {
  const h = await rayJobHarness(t);
  await h.create(manifest('deadline', { entrypoint: 'sleep 30', activeDeadlineSeconds: 3, backoffLimit: 2 }));
  const done = await h.drive('deadline', inState('Complete', 'Failed', 'Retrying'), { autoReady: true, timeoutMs: 20_000 });
  t.same(done.states, ['New', 'Initializing', 'Running', 'Failed'], 'no Retrying after DeadlineExceeded');
  t.equal(done.job?.status?.reason, 'DeadlineExceeded');
  t.equal(done.job?.status?.failed, 1);
});

t.test('Retry with backoffLimit: two attempts on two clusters, then Failed for good', async (t) => {
  const h = await rayJobHarness(t);
  await h.create(manifest('retry', { entrypoint: 'exit 1', backoffLimit: 1 }));
  const first = await h.drive('retry', inState('Running'), { autoReady: true });
  const firstCluster = first.job?.status?.rayClusterName;
  const firstId = first.job?.status?.jobId;
  const done = await h.drive('retry', (j) => j?.status?.jobDeploymentStatus === 'Failed', { autoReady: true, timeoutMs: 40_000 });
  t.same(done.states, ['Running', 'Retrying', 'New', 'Initializing', 'Running', 'Failed'], 'Failed -> Retrying -> New -> ... -> Failed');
  t.equal(done.job?.status?.failed, 2, 'two failures counted');
  t.equal(done.job?.status?.reason, 'AppFailed', 'reason', { status: done.job?.status });
  t.not(done.job?.status?.rayClusterName, firstCluster, 'the retry got a new cluster');
  t.not(done.job?.status?.jobId, firstId, 'and a new submission id');
  t.equal(await h.cluster(firstCluster ?? ''), undefined, 'the first cluster was deleted before the retry');
  t.same(h.dashboard.submissions, [firstId, done.job?.status?.jobId], 'one submission per attempt');
});
