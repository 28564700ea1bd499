// A head whose dashboard does not answer yet when its RayCluster reads ready: a slow head on a loaded
// machine, or a head pod replaced after the cluster was ready (the state `ready` never goes back, as in
// KubeRay). The submitter Job must not be started against it: its `ray job submit` fails at once, its
// attempts run out while the head is still coming up, and the RayJob ends Failed(SubmissionFailed) with
// an empty jobStatus, for no reason a user set and none Ray reported (issue 45: `npm test` on a loaded
// machine). The RayJob waits in Initializing, its message saying for what, and submits once the
// dashboard answers. The slowness is injected (the fake dashboard refuses, answers 503, or holds
// requests), and "a while" is counted in requests the dashboard refused, never in seconds.
import t from 'tap';
import { PODS } from '../../kube/resources.ts';
import { inState, manifest, rayJobHarness } from './helpers/harness.ts';

const ways = [
  { name: 'connection reset (no head process yet)', set: (d: { down: boolean }) => (d.down = true) },
  {
    name: '503 (a proxy or Service with no ready endpoint)',
    set: (d: { failing: 'unavailable' | 'stall' | undefined }) => (d.failing = 'unavailable'),
  },
  {
    name: 'no answer at all (a head too busy to reply)',
    set: (d: { failing: 'unavailable' | 'stall' | undefined }) => (d.failing = 'stall'),
  },
] as const;

for (const way of ways) {
  t.test(`a dashboard that does not answer yet (${way.name}): the RayJob waits, then succeeds`, async (t) => {
    const h = await rayJobHarness(t);
    way.set(h.dashboard as never);
    await h.create(manifest('slow', { entrypoint: 'true' }));
    // The dashboard refuses until it was asked three times while the RayJob waited in Initializing (a submitter
    // started against it instead would spend its attempts and fail the RayJob: the drive then stops at Failed).
    const waited = await h.drive(
      'slow',
      (j) => inState('Complete', 'Failed')(j) || (inState('Initializing')(j) && h.dashboard.refused >= 3),
      {
        autoReady: true,
        timeoutMs: 60_000,
      },
    );
    t.equal(waited.job?.status?.jobDeploymentStatus, 'Initializing', `still Initializing (${JSON.stringify(waited.job?.status)})`);
    t.match(waited.job?.status?.message, /^Waiting for the Ray dashboard to answer before submitting: /, 'the message says for what');
    t.equal(await h.submitterJob('slow'), undefined, 'no submitter Job was started against a dashboard that does not answer');

    h.dashboard.heal();
    const done = await h.drive('slow', inState('Complete', 'Failed'), { autoReady: true, timeoutMs: 60_000 });
    t.same(done.states.slice(-2), ['Running', 'Complete'], `states: ${[...waited.states, ...done.states].join(' -> ')}`);
    t.equal(done.job?.status?.jobStatus, 'SUCCEEDED');
    t.equal(done.job?.status?.message, 'Job finished successfully.', 'the waiting message is gone');
    const submitter = (await h.submitterJob('slow')) as { status?: { failed?: number; succeeded?: number } } | undefined;
    t.equal(submitter?.status?.failed ?? 0, 0, 'no submitter attempt was lost');
    t.equal(submitter?.status?.succeeded, 1);
    t.equal(h.dashboard.submissions.length, 1, 'submitted once');
  });
}

// When the submission itself fails (the dashboard answers, Ray refuses the job), the RayJob still ends
// Failed(SubmissionFailed) with an empty jobStatus: Ray never knew the job. Its message then says what
// the submitter's last attempt reported, read from the submitter's pod as the kubelet leaves it
// (terminationMessagePolicy FallbackToLogsOnError: the log's tail). The job runner makes no Pods, so
// the test plays the kubelet: it writes the pod of the last attempt with the output the runner kept.
t.test("a submission Ray refuses: Failed(SubmissionFailed), the message quoting the submitter's last attempt", async (t) => {
  const h = await rayJobHarness(t);
  const refusal = 'Failed to get head node agent within 10 seconds.';
  h.dashboard.rejectSubmissions = refusal;
  await h.create(manifest('refused', { entrypoint: 'true' }));
  await h.drive('refused', inState('Running', 'Complete', 'Failed'), { autoReady: true, timeoutMs: 60_000 });
  const result = await h.runner.waitFor(h.namespace, 'refused', 60_000);
  t.equal(result.outcome.kind, 'failed', 'the submitter Job failed');
  const job = (await h.submitterJob('refused')) as { metadata: { uid: string }; spec: { template: { spec: Record<string, unknown> } } };
  const container = (job.spec.template.spec.containers as Array<{ name: string; image: string; terminationMessagePolicy?: string }>)[0]!;
  t.equal(container.terminationMessagePolicy, 'FallbackToLogsOnError', "the submitter's log tail goes to its pod's status");
  const pod = await h.kube.create(PODS.at(h.namespace), {
    metadata: { name: 'refused-x7k2p', labels: { 'controller-uid': job.metadata.uid, 'job-name': 'refused' } },
    spec: { restartPolicy: 'Never', containers: [{ name: container.name, image: container.image }] },
  });
  // A pod's log holds its own attempt: the last line of the runner's output (one line per attempt here).
  const tail = result.output.trimEnd().split('\n').at(-1) ?? '';
  const finished = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  await h.kube.patch(
    { ...PODS.at(h.namespace, pod.metadata.name), subresource: 'status' },
    {
      status: {
        phase: 'Failed',
        containerStatuses: [
          {
            name: container.name,
            image: container.image,
            imageID: '',
            ready: false,
            restartCount: 0,
            state: { terminated: { exitCode: result.exitCode, reason: 'Error', message: tail, startedAt: finished, finishedAt: finished } },
          },
        ],
      },
    },
    'application/merge-patch+json',
  );
  const done = await h.drive('refused', inState('Complete', 'Failed'), { timeoutMs: 60_000 });
  t.equal(done.job?.status?.jobDeploymentStatus, 'Failed');
  t.equal(done.job?.status?.reason, 'SubmissionFailed');
  t.equal(done.job?.status?.jobStatus, '', 'Ray never knew the job');
  t.match(
    done.job?.status?.message,
    new RegExp(
      `^Job submission has failed\\. Reason: BackoffLimitExceeded\\. Message: Job has reached the specified backoff limit\\. The last attempt ended with exit code 1 \\(Error\\): .*submit failed: HTTP 500 ${refusal.replaceAll('.', '\\.')}$`,
      's',
    ),
    `the message says what the submitter reported: ${done.job?.status?.message}`,
  );
});
