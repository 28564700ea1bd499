// A REAL Ray head plays the RayCluster's dashboard: the submitter Job (run by the test job runner)
// really runs `ray job submit` / `ray job logs --follow`, Ray really runs the entrypoint, and the
// controller reads Ray's real JobDetails. One entrypoint succeeds, one fails; each RayJob must end in
// the right state. Needs Ray (tools/install-ray.sh; found by localcluster/ray.ts). Without Ray the file fails, naming the set-up command (test/helpers/parts.ts).
import t from 'tap';
import { inState, manifest, rayJobHarness } from './helpers/harness.ts';
import { rayCommand, startRayHead, type RayHead } from './helpers/ray-head.ts';
import { sleep } from '../../kube/backoff.ts';
import { RAYJOBS } from '../../src/types.ts';
import { missingPart } from '../helpers/parts.ts';
import { startDashboardProxy } from '../../localcluster/dashboard-proxy.ts';

const ray = rayCommand();
if ('missing' in ray) {
  t.fail(missingPart(ray.missing));
} else {
  // One head for the file (start-up costs tens of seconds); each test has its own namespace.
  let started: Promise<RayHead> | undefined;
  const sharedHead = (): Promise<RayHead> => {
    if (!started) {
      started = startRayHead(ray.argv, (l) => t.comment(l));
      t.teardown(async () => (await started)?.stop());
    }
    return started;
  };

  t.test('a real Ray head runs a succeeding and a failing RayJob', async (t) => {
    const head = await sharedHead();
    const h = await rayJobHarness(t, {
      noFakeDashboard: true,
      dashboardUrl: head.dashboardUrl,
      rayCommand: ray.command,
      machine: { gracePeriodSeconds: 120, statusCheckTimeoutSeconds: 120, submitterFinishedTimeoutSeconds: 60 },
    });
    await h.create(manifest('real-ok', { entrypoint: 'echo hello-from-ray' }));
    await h.create(manifest('real-fail', { entrypoint: 'exit 3' }));
    const [ok, failed] = await Promise.all([
      h.drive('real-ok', inState('Complete', 'Failed'), { autoReady: true, timeoutMs: 240_000, maxSleepMs: 1000 }),
      h.drive('real-fail', inState('Complete', 'Failed'), { autoReady: true, timeoutMs: 240_000, maxSleepMs: 1000 }),
    ]);
    t.same(ok.states, ['New', 'Initializing', 'Running', 'Complete'], 'the succeeding entrypoint');
    t.equal(ok.job?.status?.jobStatus, 'SUCCEEDED', 'Ray says SUCCEEDED');
    t.same(failed.states, ['New', 'Initializing', 'Running', 'Failed'], 'the failing entrypoint');
    t.equal(failed.job?.status?.jobStatus, 'FAILED', 'Ray says FAILED');
    t.equal(failed.job?.status?.reason, 'AppFailed');
    t.match(failed.job?.status?.message, /exit code 3|exited with code 3|failed/i, `Ray's message: ${failed.job?.status?.message}`);
    const output = h.runner.output(h.namespace, 'real-ok');
    t.match(output, /hello-from-ray/, 'the submitter followed the real job logs');
    const info = (await (await fetch(`${head.dashboardUrl}/api/jobs/${ok.job?.status?.jobId}`)).json()) as {
      status: string;
      submission_id: string;
    };
    t.equal(info.submission_id, ok.job?.status?.jobId, 'Ray knows the job by the RayJob status jobId');
  });

  // A head that is up but whose dashboard cannot be reached yet when its RayCluster reads ready (a slow
  // start on a loaded machine, a head pod being replaced): `raykeeper dev`'s dashboard proxy answers 503
  // for it, as a Service with no ready endpoint would. The real `ray job submit` fails on that at once;
  // the RayJob waits in Initializing instead of starting its submitter, then runs once the proxy routes.
  t.test('real Ray behind a dashboard that answers 503 for a while: the RayJob waits, then SUCCEEDS', async (t) => {
    const head = await sharedHead();
    const headPort = Number(new URL(head.dashboardUrl).port);
    let open = false;
    let refused = 0;
    const proxy = await startDashboardProxy(() => {
      if (open) return headPort;
      refused++;
      return undefined;
    });
    t.teardown(() => proxy.stop());
    const h = await rayJobHarness(t, { noFakeDashboard: true, dashboardUrl: proxy.urlTemplate, rayCommand: ray.command });
    await h.create(manifest('real-slow', { entrypoint: 'echo after-the-wait' }));
    const waited = await h.drive('real-slow', (j) => inState('Complete', 'Failed')(j) || (inState('Initializing')(j) && refused >= 3), {
      autoReady: true,
      timeoutMs: 120_000,
      maxSleepMs: 1000,
    });
    t.equal(waited.job?.status?.jobDeploymentStatus, 'Initializing', `waiting (${waited.job?.status?.message})`);
    t.match(waited.job?.status?.message, /^Waiting for the Ray dashboard to answer before submitting: .*HTTP 503/);
    t.equal(await h.submitterJob('real-slow'), undefined, 'no submitter yet');
    open = true;
    const done = await h.drive('real-slow', inState('Complete', 'Failed'), { autoReady: true, timeoutMs: 240_000, maxSleepMs: 1000 });
    t.equal(done.job?.status?.jobDeploymentStatus, 'Complete', `${done.job?.status?.reason} ${done.job?.status?.message}`);
    t.equal(done.job?.status?.jobStatus, 'SUCCEEDED');
    const submitter = (await h.submitterJob('real-slow')) as { status?: { failed?: number } } | undefined;
    t.equal(submitter?.status?.failed ?? 0, 0, 'no submitter attempt was lost');
    t.match(h.runner.output(h.namespace, 'real-slow'), /after-the-wait/, 'the submitter followed the job through the proxy');
  });

  t.test('real Ray, HTTPMode: the controller submits over REST; deleting a running RayJob stops it in Ray', async (t) => {
    const head = await sharedHead();
    const h = await rayJobHarness(t, { noFakeDashboard: true, dashboardUrl: head.dashboardUrl, rayCommand: ray.command });
    await h.create(manifest('real-http', { submissionMode: 'HTTPMode', entrypoint: 'echo via-http' }));
    await h.create(manifest('real-stop', { submissionMode: 'HTTPMode', entrypoint: 'sleep 300' }));
    const [done, running] = await Promise.all([
      h.drive('real-http', inState('Complete', 'Failed'), { autoReady: true, timeoutMs: 180_000, maxSleepMs: 1000 }),
      h.drive('real-stop', (j) => j?.status?.jobStatus === 'RUNNING', { autoReady: true, timeoutMs: 180_000, maxSleepMs: 1000 }),
    ]);
    t.equal(done.job?.status?.jobDeploymentStatus, 'Complete');
    t.equal(done.job?.status?.jobStatus, 'SUCCEEDED');
    const jobId = running.job?.status?.jobId ?? '';
    await h.kube.delete({ ...RAYJOBS, namespace: h.namespace, name: 'real-stop' });
    await h.drive('real-stop', (j) => j === undefined, { timeoutMs: 60_000 });
    let status = '';
    for (let i = 0; i < 60 && status !== 'STOPPED'; i++) {
      status = ((await (await fetch(`${head.dashboardUrl}/api/jobs/${jobId}`)).json()) as { status: string }).status;
      if (status !== 'STOPPED') await sleep(500);
    }
    t.equal(status, 'STOPPED', 'Ray stopped the job when its RayJob was deleted');
  });
}
