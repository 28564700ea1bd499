// KubeRay's "Running for ever" reports, each reproduced on the real kube-apiserver and shown to end:
//   #3553  the Ray job failed but the submitter never finished      -> grace period -> Failed
//   #2154  the submitter pod died while the Ray job ran              -> retried pod re-attaches -> Complete
//   #1233  the head is gone (cluster deleted / dashboard unreachable) -> Failed
//   #3903  the head restarted and lost the job after the submitter finished -> Failed(AppFailed)
import t from 'tap';
import { join } from 'node:path';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { FAKE_RAY_COMMAND, inState, manifest, rayJobHarness } from './helpers/harness.ts';
import { RAYCLUSTERS } from '../../src/types.ts';

/** A submitterPodTemplate whose own command runs `script` (KubeRay keeps a user command as is). */
function customSubmitter(script: string) {
  return {
    spec: {
      restartPolicy: 'Never',
      containers: [{ name: 'submitter', image: 'rayproject/ray:2.40.0', command: ['/bin/bash', '-c', script] }],
    },
  };
}
const SUBMIT = `${FAKE_RAY_COMMAND} job submit --address "http://$RAY_DASHBOARD_ADDRESS" --no-wait --submission-id "$RAY_JOB_SUBMISSION_ID" --`;

t.test('#3553: the Ray job FAILED but the submitter hangs -> Failed after the grace period', async (t) => {
  const h = await rayJobHarness(t, { machine: { gracePeriodSeconds: 2 } });
  await h.create(manifest('hang', { entrypoint: 'exit 4', submitterPodTemplate: customSubmitter(`${SUBMIT} exit 4 ; sleep 120`) }));
  const seen = await h.drive('hang', (j) => j?.status?.jobStatus === 'FAILED', { autoReady: true });
  t.equal(seen.job?.status?.jobDeploymentStatus, 'Running', 'first: Ray says FAILED, the submitter still runs, so still Running');
  const done = await h.drive('hang', inState('Complete', 'Failed'), { timeoutMs: 15_000 });
  t.equal(done.job?.status?.jobDeploymentStatus, 'Failed');
  t.equal(done.job?.status?.reason, 'JobDeploymentStatusTransitionGracePeriodExceeded');
  const submitter = (await h.submitterJob('hang')) as { status?: { conditions?: unknown[] } };
  t.notOk(submitter.status?.conditions?.length, 'the submitter had indeed not finished');
});

t.test('#2154: the submitter pod dies while the Ray job runs -> the retried pod re-attaches, no double submission, Complete', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'raykeeper-failonce-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const h = await rayJobHarness(t, { submitterEnv: { FAKE_RAY_LOGS_FAIL_ONCE: join(dir, 'marker') } });
  await h.create(manifest('revive', { entrypoint: 'sleep 1' }));
  const done = await h.drive('revive', inState('Complete', 'Failed'), { autoReady: true, timeoutMs: 30_000 });
  t.equal(done.job?.status?.jobDeploymentStatus, 'Complete');
  t.equal(done.job?.status?.jobStatus, 'SUCCEEDED');
  const result = await h.runner.waitFor(h.namespace, 'revive', 5000);
  t.equal(result.attempts, 2, 'the first submitter pod died, the second finished');
  t.equal(h.dashboard.submissions.length, 1, 'the second pod did not submit again');
  const calls = await h.rayCalls();
  t.equal(calls.filter((c) => c.startsWith('job submit')).length, 1, 'one `ray job submit` in all');
  t.equal(calls.filter((c) => c.startsWith('job status')).length, 2, 'each pod asked first');
});

t.test('#1233: the RayCluster (and its head) is deleted while the job runs -> Failed(AppFailed)', async (t) => {
  const h = await rayJobHarness(t);
  await h.create(manifest('headless', { entrypoint: 'sleep 60' }));
  const running = await h.drive('headless', (j) => j?.status?.jobStatus === 'RUNNING', { autoReady: true });
  const cluster = running.job?.status?.rayClusterName ?? '';
  await h.kube.delete({ ...RAYCLUSTERS, namespace: h.namespace, name: cluster });
  const done = await h.drive('headless', inState('Complete', 'Failed'));
  t.equal(done.job?.status?.reason, 'AppFailed');
  t.match(done.job?.status?.message, new RegExp(`${cluster} no longer exists`));
});

t.test('#1233: the dashboard stops answering (HTTPMode, no submitter) -> Failed(JobStatusCheckTimeoutExceeded)', async (t) => {
  const h = await rayJobHarness(t, { machine: { statusCheckTimeoutSeconds: 2 } });
  await h.create(manifest('mute', { submissionMode: 'HTTPMode', entrypoint: 'sleep 60' }));
  await h.drive('mute', (j) => j?.status?.jobStatus === 'RUNNING', { autoReady: true });
  h.dashboard.down = true;
  const before = Date.now();
  const done = await h.drive('mute', inState('Complete', 'Failed'), { timeoutMs: 15_000 });
  t.equal(done.job?.status?.reason, 'JobStatusCheckTimeoutExceeded');
  t.match(done.job?.status?.message, /for 2s/);
  t.ok(Date.now() - before >= 1500, 'not before the timeout ran');
});

t.test('#3903: the submitter finished, then the head restarted and lost the job -> Failed(AppFailed)', async (t) => {
  // An old-style submitter that only submits (--no-wait) and exits: it finishes at once.
  const h = await rayJobHarness(t, { machine: { submitterFinishedTimeoutSeconds: 60 } });
  await h.create(manifest('amnesia', { entrypoint: 'sleep 60', submitterPodTemplate: customSubmitter(`${SUBMIT} sleep 60`) }));
  await h.drive('amnesia', (j) => j?.status?.jobStatus === 'RUNNING', { autoReady: true });
  await h.runner.waitFor(h.namespace, 'amnesia', 10_000);
  const still = await h.drive('amnesia', (j) => j?.status?.jobDeploymentStatus === 'Running', { timeoutMs: 2000 });
  t.equal(still.job?.status?.jobDeploymentStatus, 'Running', 'submitter done, Ray job running: keep waiting');
  h.dashboard.forget();
  const done = await h.drive('amnesia', inState('Complete', 'Failed'));
  t.equal(done.job?.status?.reason, 'AppFailed');
  t.match(done.job?.status?.message, /Ray job not found/);
});

t.test('the submitter finished but the Ray job never ends -> Failed after the submitter-finished timeout', async (t) => {
  const h = await rayJobHarness(t, { machine: { submitterFinishedTimeoutSeconds: 2 } });
  await h.create(manifest('orphan', { entrypoint: 'sleep 60', submitterPodTemplate: customSubmitter(`${SUBMIT} sleep 60`) }));
  const done = await h.drive('orphan', inState('Complete', 'Failed'), { autoReady: true, timeoutMs: 20_000 });
  t.equal(done.job?.status?.reason, 'JobDeploymentStatusTransitionGracePeriodExceeded');
  // KubeRay's words (rayjob_controller.go:1213), the finish time as Go's time.DateTime.
  t.match(
    done.job?.status?.message,
    /^The RayJob submitter finished at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d but the ray job did not reach terminal state within 2s$/,
  );
});
