// Suspend and resume, deletion of a running RayJob, and ValidationFailed, on the real kube-apiserver.
import t from 'tap';
import { RAYJOB_FINALIZER } from '../../src/names.ts';
import { inState, manifest, rayJobHarness } from './helpers/harness.ts';
import { RAYJOBS } from '../../src/types.ts';

t.test('suspend a running RayJob: Suspending deletes cluster and submitter, Suspended; resume: New and a new run', async (t) => {
  const h = await rayJobHarness(t);
  await h.create(manifest('sus', { entrypoint: 'sleep 60' }));
  const running = await h.drive('sus', (j) => j?.status?.jobStatus === 'RUNNING', { autoReady: true });
  const firstCluster = running.job?.status?.rayClusterName ?? '';
  t.ok(await h.cluster(firstCluster), 'cluster exists while running');
  t.ok(await h.submitterJob('sus'), 'submitter exists while running');

  await h.patchSpec('sus', { suspend: true });
  const suspended = await h.drive('sus', inState('Suspended'));
  t.same(suspended.states, ['Running', 'Suspending', 'Suspended']);
  t.equal(await h.cluster(firstCluster), undefined, 'cluster deleted');
  t.equal(await h.submitterJob('sus'), undefined, 'submitter deleted');
  const s = suspended.job?.status ?? {};
  for (const key of ['jobId', 'rayClusterName', 'dashboardURL', 'jobStatus']) t.notOk(s[key], `status.${key} reset`);
  const rv = suspended.job?.metadata.resourceVersion;
  await h.reconciler.reconcile(`${h.namespace}/sus`);
  t.equal((await h.get('sus'))?.metadata.resourceVersion, rv, 'Suspended and still suspended: nothing written');

  await h.patchSpec('sus', { suspend: false });
  const resumed = await h.drive('sus', (j) => j?.status?.jobStatus === 'RUNNING', { autoReady: true });
  t.same(resumed.states, ['Suspended', 'New', 'Initializing', 'Running'], 'resume starts over from New');
  t.not(resumed.job?.status?.rayClusterName, firstCluster, 'a new cluster');
  t.equal(h.dashboard.submissions.length, 2, 'submitted again after resume');
});

t.test('created suspended (as Kueue does): no cluster is ever created until resumed', async (t) => {
  const h = await rayJobHarness(t);
  await h.create(manifest('kueue', { suspend: true }));
  const done = await h.drive('kueue', inState('Suspended'));
  // Initializing is written in the first reconcile, and the suspend decided at once on that write (KubeRay's
  // New -> Initializing -> Suspending): a poll between reconciles sees New, then Suspending.
  t.same(done.states, ['New', 'Suspending', 'Suspended']);
  t.ok(done.job?.status?.startTime, 'Initializing was written on the way (it stamps startTime)');
  t.same(await h.clusters(), [], 'no RayCluster');
});

t.test('deleting a running RayJob stops the Ray job, then releases the finalizer', async (t) => {
  const h = await rayJobHarness(t);
  await h.create(manifest('del', { entrypoint: 'sleep 60' }));
  const running = await h.drive('del', (j) => j?.status?.jobStatus === 'RUNNING', { autoReady: true });
  const jobId = running.job?.status?.jobId ?? '';
  t.ok(running.job?.metadata.finalizers?.includes(RAYJOB_FINALIZER));
  await h.kube.delete({ ...RAYJOBS, namespace: h.namespace, name: 'del' });
  const pending = await h.get('del');
  t.ok(pending?.metadata.deletionTimestamp, 'held by the finalizer');
  const gone = await h.drive('del', (j) => j === undefined);
  t.same(gone.states.slice(-1), ['<deleted>']);
  t.same(h.dashboard.stops, [jobId], 'POST /api/jobs/<id>/stop called once');
  t.equal(h.dashboard.jobs.get(jobId)?.status, 'STOPPED', 'the Ray job is stopped');
  t.ok(
    (await h.events('del')).some((e) => e.reason === 'StoppedRayJob'),
    'event StoppedRayJob',
  );
});

t.test('deleting a RayJob whose dashboard is unreachable still releases the finalizer (best effort)', async (t) => {
  const h = await rayJobHarness(t);
  await h.create(manifest('del2', { entrypoint: 'sleep 60' }));
  await h.drive('del2', (j) => j?.status?.jobStatus === 'RUNNING', { autoReady: true });
  h.dashboard.down = true;
  await h.kube.delete({ ...RAYJOBS, namespace: h.namespace, name: 'del2' });
  await h.drive('del2', (j) => j === undefined);
  t.ok(
    (await h.events('del2')).some((e) => e.type === 'Warning' && e.reason === 'FailedToStopRayJob'),
    'Warning event FailedToStopRayJob',
  );
});

t.test('an invalid spec -> ValidationFailed with a Warning event, no retry storm; fixing it starts over', async (t) => {
  const h = await rayJobHarness(t);
  await h.create(manifest('bad', { suspend: true, shutdownAfterJobFinishes: false }));
  const failed = await h.drive('bad', inState('ValidationFailed'));
  t.same(failed.states, ['New', 'ValidationFailed']);
  t.equal(failed.job?.status?.reason, 'ValidationFailed');
  t.match(failed.job?.status?.message, /not allowed to be suspended/);
  t.notOk(failed.job?.metadata.finalizers?.includes(RAYJOB_FINALIZER), 'no finalizer on an invalid RayJob');
  const warnings = (await h.events('bad')).filter((e) => e.type === 'Warning');
  t.same(
    warnings.map((e) => e.reason),
    ['InvalidRayJobSpec'],
  );
  const rv = failed.job?.metadata.resourceVersion;
  for (let i = 0; i < 3; i++) {
    const result = await h.reconciler.reconcile(`${h.namespace}/bad`);
    t.equal(result?.requeueAfterMs, undefined, 'no requeue');
  }
  t.equal((await h.get('bad'))?.metadata.resourceVersion, rv, 'no further writes');
  t.equal((await h.events('bad')).filter((e) => e.type === 'Warning').length, 1, 'no further events');

  await h.patchSpec('bad', { suspend: false });
  const fixed = await h.drive('bad', inState('Initializing'));
  t.same(fixed.states, ['ValidationFailed', 'New', 'Initializing']);
});
