// The RayJob status messages against KubeRay's, word for word. Each row holds, as facts copied from
// KubeRay v1.6.2 (ray-operator/controllers/ray/rayjob_controller.go, file:line below), the format string
// and the values Go renders into it; the test renders them as fmt.Sprintf would and compares our text.
// How Go renders a value is a fact too: a *metav1.Time read from the API is in the process's zone (UTC
// in KubeRay's image) and %v prints time.Time.String(); a time.Duration prints as "30s" / "1m30s";
// time.DateTime is "2006-01-02 15:04:05". test/kuberay/deletion-rules.test.ts holds the real operator's
// DeadlineExceeded message against ours.
import t from 'tap';
import {
  activeDeadlineMessage,
  GRACE_PERIOD_MESSAGE,
  goDateTime,
  goDuration,
  goTime,
  HEAD_POD_NOT_FOUND_MESSAGE,
  JOB_NOT_FOUND_AFTER_SUBMITTER_MESSAGE,
  preRunningDeadlineMessage,
  selectedClusterNotFoundMessage,
  sidecarSubmitterFailedMessage,
  submitterFinishedTimeoutMessage,
  submitterJobFailedMessage,
} from '../../src/rayjob/machine/messages.ts';
import { decideRayJob } from '../../src/rayjob/machine/decide.ts';
import { defaultMachineConfig, type RayJobStep } from '../../src/rayjob/machine/vocabulary.ts';
import { at, cluster, info, iso, rayJob, submitter } from './fixtures.ts';

/** fmt.Sprintf for the verbs KubeRay's messages use (%s, %d, %v), each argument already as Go renders it. */
function sprintf(format: string, ...args: Array<string | number>): string {
  let i = 0;
  const out = format.replace(/%[sdv]/g, () => String(args[i++]));
  if (i !== args.length) throw new Error(`${args.length} arguments for ${i} verbs in ${JSON.stringify(format)}`);
  return out;
}

interface Row {
  /** KubeRay's file:line (v1.6.2, ray-operator/controllers/ray/). */
  kuberay: string;
  /** KubeRay's format string, verbatim. */
  format: string;
  /** The values as Go renders them into it. */
  args: Array<string | number>;
  ours: string;
}

const T = Date.parse('2026-12-03T10:00:00Z');
const rows: Row[] = [
  {
    kuberay: 'rayjob_controller.go:1173 (DeadlineExceeded)',
    format: 'The RayJob has passed the activeDeadlineSeconds. StartTime: %v. ActiveDeadlineSeconds: %d',
    args: ['2026-12-03 10:00:00 +0000 UTC', 5],
    ours: activeDeadlineMessage('2026-12-03T10:00:00Z', 5),
  },
  {
    kuberay: 'rayjob_controller.go:1173, a startTime stored with an offset (Go reads it into UTC)',
    format: 'The RayJob has passed the activeDeadlineSeconds. StartTime: %v. ActiveDeadlineSeconds: %d',
    args: ['2026-12-03 08:00:00 +0000 UTC', 600],
    ours: activeDeadlineMessage('2026-12-03T10:00:00+02:00', 600),
  },
  {
    kuberay: 'rayjob_controller.go:1189 (PreRunningDeadlineExceeded)',
    format: 'The RayJob has passed the preRunningDeadlineSeconds. StartTime: %v. PreRunningDeadlineSeconds: %d',
    args: ['2026-12-03 10:00:00 +0000 UTC', 30],
    ours: preRunningDeadlineMessage('2026-12-03T10:00:00Z', 30),
  },
  {
    kuberay:
      'rayjob_controller.go:1213 (JobDeploymentStatusTransitionGracePeriodExceeded, DefaultSubmitterFinishedTimeout :41 = 30 * time.Second)',
    format: 'The RayJob submitter finished at %v but the ray job did not reach terminal state within %v',
    args: ['2026-12-03 10:00:07', '30s'],
    ours: submitterFinishedTimeoutMessage(T + 7_000, 30),
  },
  {
    kuberay: 'rayjob_controller.go:1213, a finish time with milliseconds (time.DateTime has none)',
    format: 'The RayJob submitter finished at %v but the ray job did not reach terminal state within %v',
    args: ['2026-12-03 10:00:07', '1m30s'],
    ours: submitterFinishedTimeoutMessage(T + 7_250, 90),
  },
  {
    kuberay: 'rayjob_controller.go:1242 (JobDeploymentStatusTransitionGracePeriodExceeded)',
    format:
      'JobDeploymentStatus does not transition to Complete or Failed within the grace period after JobStatus reaches a terminal state.',
    args: [],
    ours: GRACE_PERIOD_MESSAGE,
  },
  {
    kuberay: 'rayjob_controller.go:1111 (SubmissionFailed, K8sJobMode)',
    format: 'Job submission has failed. Reason: %s. Message: %s',
    args: ['BackoffLimitExceeded', 'Job has reached the specified backoff limit'],
    ours: submitterJobFailedMessage('BackoffLimitExceeded', 'Job has reached the specified backoff limit'),
  },
  {
    kuberay: 'rayjob_controller.go:1079 (SubmissionFailed, SidecarMode)',
    format: 'Ray head pod container %s terminated with exit code %d: %s',
    args: ['ray-job-submitter', 1, 'Error'],
    ours: sidecarSubmitterFailedMessage('ray-job-submitter', 1, 'Error'),
  },
  {
    kuberay: 'rayjob_controller.go:1063 (AppFailed, SidecarMode)',
    format: 'Ray head pod not found.',
    args: [],
    ours: HEAD_POD_NOT_FOUND_MESSAGE,
  },
  {
    kuberay: 'rayjob_controller.go:325 (AppFailed)',
    format: 'Submitter completed but Ray job not found in RayCluster.',
    args: [],
    ours: JOB_NOT_FOUND_AFTER_SUBMITTER_MESSAGE,
  },
  {
    kuberay: 'rayjob_controller.go:930 (the RayClusterNotFound event)',
    format: 'RayCluster %s/%s set in the clusterSelector is not found. It must be created manually',
    args: ['ns', 'shared'],
    ours: selectedClusterNotFoundMessage('ns', 'shared'),
  },
];

t.test("each message is KubeRay's format string rendered as Go renders it", async (t) => {
  for (const row of rows) t.equal(row.ours, sprintf(row.format, ...row.args), row.kuberay);
});

t.test('Go renderings: time.Time.String() in UTC, time.DateTime, time.Duration.String()', async (t) => {
  const times: Array<[number, string]> = [
    [T, '2026-12-03 10:00:00 +0000 UTC'],
    [T + 500, '2026-12-03 10:00:00.5 +0000 UTC'],
    [T + 123, '2026-12-03 10:00:00.123 +0000 UTC'],
    [Date.parse('2027-01-09T03:04:05Z'), '2027-01-09 03:04:05 +0000 UTC'],
  ];
  for (const [ms, want] of times) t.equal(goTime(ms), want, `time.Time %v of ${new Date(ms).toISOString()}`);
  t.equal(goDateTime(T + 999), '2026-12-03 10:00:00', 'time.DateTime drops the fraction');
  const durations: Array<[number, string]> = [
    [0, '0s'],
    [500, '500ms'],
    [2_000, '2s'],
    [30_000, '30s'],
    [60_000, '1m0s'],
    [90_000, '1m30s'],
    [1_500, '1.5s'],
    [3_600_000, '1h0m0s'],
    [3_723_000, '1h2m3s'],
  ];
  for (const [ms, want] of durations) t.equal(goDuration(ms), want, `time.Duration %v of ${ms} ms`);
});

t.test('the machine writes these messages (KubeRay text first; our detail only after it)', async (t) => {
  const config = defaultMachineConfig();
  const step = (job: Parameters<typeof decideRayJob>[0], observed: Parameters<typeof decideRayJob>[1], now: number) =>
    decideRayJob(job, observed, now, config) as RayJobStep;

  const deadline = step(rayJob('Running', { spec: { activeDeadlineSeconds: 60 } }), { cluster: cluster('ready') }, at(61));
  t.equal(deadline.status.message, activeDeadlineMessage(iso(0), 60), 'DeadlineExceeded');
  t.match(deadline.status.message, /StartTime: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0000 UTC\. /, 'StartTime as Go prints it');

  const preRunning = step(rayJob('Initializing', { spec: { preRunningDeadlineSeconds: 30 } }), { cluster: cluster('') }, at(31));
  t.equal(preRunning.status.message, preRunningDeadlineMessage(iso(0), 30), 'PreRunningDeadlineExceeded');

  const stuck = step(
    rayJob('Running', { status: { jobStatus: 'RUNNING' } }),
    { cluster: cluster('ready'), submitter: submitter('complete', 10), dashboard: info('RUNNING') },
    at(41),
  );
  t.equal(stuck.status.reason, 'JobDeploymentStatusTransitionGracePeriodExceeded');
  t.equal(stuck.status.message, submitterFinishedTimeoutMessage(at(10), 30), 'the submitter-finished timeout, KubeRay words');
  t.match(stuck.status.message, / but the ray job did not reach terminal state within 30s$/);

  const failed = step(
    rayJob('Running', { status: { jobStatus: 'RUNNING' } }),
    {
      cluster: cluster('ready'),
      submitter: submitter('failed'),
      submitterAttempt: { exitCode: 1, reason: 'Error', message: 'boom' },
      dashboard: info('RUNNING'),
    },
    at(20),
  );
  t.equal(failed.status.reason, 'SubmissionFailed');
  t.ok(
    failed.status.message?.startsWith('Job submission has failed. Reason: '),
    `KubeRay's text first, our attempt report after it: ${failed.status.message}`,
  );
  t.match(failed.status.message, /\. The last attempt ended with exit code 1 \(Error\): boom$/);
});
