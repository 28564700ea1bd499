// A REAL Ray head (2.60, from the test venv) with token authentication (RAY_AUTH_MODE=token): an
// unauthenticated dashboard request is refused (401), a wrong token too (403); our dashboard client,
// with the token from the cluster's auth Secret, is accepted; an HTTPMode RayJob (the controller submits
// over REST) and a K8sJobMode RayJob (the submitter's `ray job submit` gets RAY_AUTH_MODE / RAY_AUTH_TOKEN
// from the Secret) both reach Complete. The token is in no event of the RayJobs.
import t from 'tap';
import { DashboardClient } from '../../controller/rayjob/dashboard.ts';
import { SECRETS } from '../../kube/resources.ts';
import { generateAuthToken } from '../../src/raycluster/auth.ts';
import { missingPart } from '../helpers/parts.ts';
import { headSpec, inState, manifest, rayJobHarness } from './helpers/harness.ts';
import { rayCommand, startRayHead } from './helpers/ray-head.ts';

const ray = rayCommand();
if ('missing' in ray) {
  t.fail(missingPart(ray.missing));
} else {
  t.test('real Ray with token auth: refused without the token, our client and both submitters get in', async (t) => {
    const token = generateAuthToken();
    const head = await startRayHead(ray.argv, (l) => t.comment(l), { env: { RAY_AUTH_MODE: 'token', RAY_AUTH_TOKEN: token }, token });
    t.teardown(() => head.stop());
    const jobs = `${head.dashboardUrl}/api/jobs/`;

    const anonymous = await fetch(jobs);
    t.equal(anonymous.status, 401, `no token: refused (${await anonymous.text()})`);
    const wrong = await fetch(jobs, { headers: { 'x-ray-authorization': 'Bearer not-the-token' } });
    t.equal(wrong.status, 403, 'a wrong token: refused');
    const client = new DashboardClient({ timeoutMs: 10_000 });
    t.same(await client.getJob({ url: head.dashboardUrl, token }, 'unknown-id'), { kind: 'notFound' }, 'our client: accepted');
    t.match(await client.getJob(head.dashboardUrl, 'unknown-id'), { kind: 'error', message: /HTTP 401/ }, 'without the token: 401');

    const h = await rayJobHarness(t, {
      noFakeDashboard: true,
      dashboardUrl: head.dashboardUrl,
      rayCommand: ray.command,
      machine: { gracePeriodSeconds: 120, statusCheckTimeoutSeconds: 120, submitterFinishedTimeoutSeconds: 60 },
    });
    await h.kube.create({ ...SECRETS, namespace: h.namespace }, { metadata: { name: 'ray-token' }, stringData: { auth_token: token } });
    const clusterSpec = {
      rayVersion: '2.60.0',
      authOptions: { mode: 'token', secretName: 'ray-token' },
      headGroupSpec: headSpec('rayproject/ray:2.60.0'),
      workerGroupSpecs: [],
    };
    await h.create(manifest('token-http', { submissionMode: 'HTTPMode', entrypoint: 'echo via-http', rayClusterSpec: clusterSpec }));
    await h.create(manifest('token-k8sjob', { entrypoint: 'echo via-submitter', rayClusterSpec: clusterSpec }));
    const [http, k8sJob] = await Promise.all([
      h.drive('token-http', inState('Complete', 'Failed'), { autoReady: true, timeoutMs: 240_000, maxSleepMs: 1000 }),
      h.drive('token-k8sjob', inState('Complete', 'Failed'), { autoReady: true, timeoutMs: 240_000, maxSleepMs: 1000 }),
    ]);
    for (const [name, run] of [
      ['HTTPMode', http],
      ['K8sJobMode', k8sJob],
    ] as const) {
      t.equal(run.job?.status?.jobDeploymentStatus, 'Complete', `${name}: Complete (${run.job?.status?.message ?? ''})`);
      t.equal(run.job?.status?.jobStatus, 'SUCCEEDED', `${name}: Ray says SUCCEEDED`);
    }
    t.match(h.runner.output(h.namespace, 'token-k8sjob'), /via-submitter/, 'the submitter followed the logs with the token');
    const info = await fetch(`${jobs}${http.job?.status?.jobId}`, { headers: { 'x-ray-authorization': `Bearer ${token}` } });
    t.equal(((await info.json()) as { status: string }).status, 'SUCCEEDED', 'Ray ran the HTTPMode job');
    const events = JSON.stringify([...(await h.events('token-http')), ...(await h.events('token-k8sjob'))]);
    t.notOk(events.includes(token), 'the token is in no event');
  });
}
