// The RayJob transition table, tested as DATA: (state, spec, observed cluster / submitter / Ray job,
// clock) -> (next state, reason, actions, events, requeue). A second table lists every exit each state
// has; the test fails if a state or one of its exits has no row.
import t from 'tap';
import { JOB_DEPLOYMENT_STATUSES } from '../../src/types.ts';
import { decideRayJob } from '../../src/rayjob/machine/decide.ts';
import {
  defaultMachineConfig,
  isRepeatableCreate,
  isSelfGuarded,
  type RayJobAction,
  type RayJobDecision,
  type RayJobStep,
  type Observed,
} from '../../src/rayjob/machine/vocabulary.ts';
import { initializingNeedsDashboard } from '../../src/rayjob/machine/starting.ts';
import { observationPlan, clusterMissIsAbsent, type ObservationPlan } from '../../src/rayjob/machine/observe.ts';
import { rayJobStatusChanged } from '../../src/rayjob/machine/status.ts';
import { at, cluster, info, iso, rayJob, submitter } from './fixtures.ts';
import type { RayJob } from '../../src/types.ts';

interface Expect {
  next: string;
  /** The RayJob is not ours to move: no step at all. */
  leftAlone?: true;
  reason?: string;
  actions?: string[];
  events?: string[];
  /** true: some requeue; false: none; a number: exactly that many ms. */
  requeue?: boolean | number;
  statusCheck?: 'ok' | 'failing';
  /** The next decision is made at once on this one's write (default false: through the work queue). */
  decideAgain?: true;
  /** Fields the written status must have (t.match). */
  status?: Record<string, unknown>;
  /** Keys the written status must NOT have. */
  absent?: string[];
}

interface Row {
  name: string;
  job: RayJob;
  observed?: Observed;
  /** Seconds after T0 (the RayJob's startTime). */
  now?: number;
  config?: Parameters<typeof defaultMachineConfig>[0];
  expect: Expect;
}

const ready = cluster('ready');
const running = submitter('running');

const rows: Row[] = [
  // ---------------------------------------------------------------- New
  {
    name: 'New (status absent): finalizer and generated ids stored WITH the state New, no startTime yet',
    job: rayJob(undefined),
    now: 0,
    expect: {
      next: 'New',
      decideAgain: true,
      actions: ['addFinalizer'],
      requeue: true,
      status: { jobId: 'demo-bbbbb', rayClusterName: 'demo-bbbbb', jobStatus: '', jobDeploymentStatus: 'New' },
      absent: ['startTime'],
    },
  },
  {
    name: 'New recorded (names and finalizer stored) -> Initializing, startTime stamped',
    job: rayJob('New', {
      status: { jobId: 'demo-abcde', rayClusterName: 'demo-fghjk', jobStatus: '' },
      metadata: { finalizers: ['ray.io/rayjob-finalizer'] },
    }),
    now: 2,
    expect: {
      next: 'Initializing',
      decideAgain: true,
      actions: [],
      requeue: true,
      status: {
        jobId: 'demo-abcde',
        rayClusterName: 'demo-fghjk',
        startTime: iso(2),
        jobDeploymentStatus: 'Initializing',
        failed: 0,
        succeeded: 0,
      },
    },
  },
  {
    name: 'New ("" as KubeRay writes it) reads as New and is stored as New',
    job: rayJob(''),
    expect: { next: 'New', decideAgain: true, actions: ['addFinalizer'], status: { jobDeploymentStatus: 'New' } },
  },
  {
    name: 'New with names but stored as "": written once as New before moving on',
    job: rayJob('', {
      status: { jobId: 'demo-abcde', rayClusterName: 'demo-fghjk' },
      metadata: { finalizers: ['ray.io/rayjob-finalizer'] },
    }),
    expect: { next: 'New', decideAgain: true, actions: [], status: { jobDeploymentStatus: 'New', jobId: 'demo-abcde' } },
  },
  {
    name: 'New (named) with the finalizer already there and spec.jobId: no patch, the user id',
    job: rayJob('New', { spec: { jobId: 'my-id' }, metadata: { finalizers: ['ray.io/rayjob-finalizer'] } }),
    expect: { next: 'New', decideAgain: true, actions: [], status: { jobId: 'my-id' } },
  },
  {
    name: 'New with clusterSelector: the cluster name comes from ray.io/cluster',
    job: rayJob('New', { spec: { clusterSelector: { 'ray.io/cluster': 'shared' }, rayClusterSpec: undefined } }),
    expect: { next: 'New', decideAgain: true, status: { rayClusterName: 'shared' } },
  },
  {
    name: 'New in InteractiveMode: no jobId yet',
    job: rayJob('New', { spec: { submissionMode: 'InteractiveMode' } }),
    expect: { next: 'New', decideAgain: true, absent: ['jobId'] },
  },
  {
    name: 'New in InteractiveMode, cluster name recorded -> Initializing without a jobId',
    job: rayJob('New', {
      spec: { submissionMode: 'InteractiveMode' },
      status: { rayClusterName: 'demo-fghjk' },
      metadata: { finalizers: ['ray.io/rayjob-finalizer'] },
    }),
    expect: { next: 'Initializing', decideAgain: true, absent: ['jobId'] },
  },
  {
    name: 'New with a status-check clock left from an earlier run: cleared',
    job: rayJob('New', { metadata: { annotations: { 'raykeeper.io/status-check-failing-since': iso(0) } } }),
    expect: { next: 'New', decideAgain: true, actions: ['addFinalizer', 'setStatusCheckClock'] },
  },
  {
    name: 'New, invalid spec (suspend without shutdownAfterJobFinishes) -> ValidationFailed, Warning event, no requeue',
    job: rayJob('New', { spec: { suspend: true, shutdownAfterJobFinishes: false } }),
    expect: { next: 'ValidationFailed', reason: 'ValidationFailed', actions: [], events: ['InvalidRayJobSpec'], requeue: false },
  },
  {
    name: 'New, name too long -> ValidationFailed (InvalidRayJobMetadata)',
    job: rayJob(undefined, { metadata: { name: 'a'.repeat(48) } }),
    expect: { next: 'ValidationFailed', reason: 'ValidationFailed', events: ['InvalidRayJobMetadata'] },
  },

  // ---------------------------------------------------------------- Initializing
  {
    name: 'Initializing, suspend -> Suspending (before anything is created)',
    job: rayJob('Initializing', { spec: { suspend: true } }),
    observed: { cluster: null, submitter: null },
    expect: { next: 'Suspending', actions: [] },
  },
  {
    name: 'Initializing, activeDeadlineSeconds passed -> Failed(DeadlineExceeded), never retried',
    job: rayJob('Initializing', { spec: { activeDeadlineSeconds: 60, backoffLimit: 3 } }),
    observed: { cluster: cluster(''), submitter: null },
    now: 60,
    expect: { next: 'Failed', reason: 'DeadlineExceeded', events: ['RayJobFailed'], status: { failed: 1, endTime: iso(60) } },
  },
  {
    name: 'Initializing, preRunningDeadlineSeconds passed -> Failed(PreRunningDeadlineExceeded)',
    job: rayJob('Initializing', { spec: { preRunningDeadlineSeconds: 30 } }),
    observed: { cluster: cluster('') },
    now: 31,
    expect: { next: 'Failed', reason: 'PreRunningDeadlineExceeded' },
  },
  {
    name: 'Initializing, preRunningDeadline passed with retries left -> Retrying',
    job: rayJob('Initializing', { spec: { preRunningDeadlineSeconds: 30, backoffLimit: 1 } }),
    observed: { cluster: cluster('') },
    now: 31,
    expect: { next: 'Retrying', reason: 'PreRunningDeadlineExceeded', status: { failed: 1 }, absent: ['endTime'] },
  },
  {
    name: 'Initializing, no cluster -> create it (owned, named from status), stay',
    job: rayJob('Initializing'),
    observed: { cluster: null, submitter: null },
    expect: { next: 'Initializing', actions: ['createCluster'], requeue: 3000 },
  },
  {
    name: 'Initializing, deadline ahead shortens the requeue',
    job: rayJob('Initializing', { spec: { activeDeadlineSeconds: 10 } }),
    observed: { cluster: cluster('') },
    now: 9,
    expect: { next: 'Initializing', requeue: 1000 },
  },
  {
    name: 'Initializing, clusterSelector names a missing cluster -> stay, Warning event, message',
    job: rayJob('Initializing', { spec: { clusterSelector: { 'ray.io/cluster': 'demo-fghjk' }, rayClusterSpec: undefined } }),
    observed: { cluster: null, submitter: null },
    expect: { next: 'Initializing', actions: [], events: ['RayClusterNotFound'], status: { message: /not found/ } },
  },
  {
    name: 'Initializing, clusterSelector still missing, message already recorded -> no second event',
    job: rayJob('Initializing', {
      spec: { clusterSelector: { 'ray.io/cluster': 'demo-fghjk' }, rayClusterSpec: undefined },
      status: { message: 'RayCluster ns1/demo-fghjk set in the clusterSelector is not found. It must be created manually' },
    }),
    observed: { cluster: null, submitter: null },
    expect: { next: 'Initializing', actions: [], events: [] },
  },
  {
    name: 'Initializing, cluster being deleted -> wait',
    job: rayJob('Initializing'),
    observed: { cluster: cluster('ready', { deleting: true }), submitter: null },
    expect: { next: 'Initializing', actions: [], requeue: true },
  },
  {
    name: 'Initializing, cluster not ready -> wait, mirror its status',
    job: rayJob('Initializing'),
    observed: { cluster: cluster(''), submitter: null },
    expect: { next: 'Initializing', actions: [], requeue: true, absent: ['dashboardURL'] },
  },
  {
    name: 'Initializing, cluster ready, K8sJobMode, the dashboard answers (404) -> create the submitter, Running',
    job: rayJob('Initializing', { status: { message: 'Waiting for the Ray dashboard to answer before submitting: timed out' } }),
    observed: { cluster: ready, submitter: null, dashboard: { kind: 'notFound' } },
    expect: {
      next: 'Running',
      actions: ['createSubmitter'],
      status: { dashboardURL: 'demo-fghjk-head-svc.ns1.svc.cluster.local:8265', rayClusterStatus: { state: 'ready' }, message: '' },
    },
  },
  {
    name: 'Initializing, cluster ready, K8sJobMode, the dashboard does not answer -> wait, no submitter, the message says why',
    job: rayJob('Initializing', { spec: { activeDeadlineSeconds: 10 } }),
    now: 9,
    observed: { cluster: ready, submitter: null, dashboard: { kind: 'error', message: 'GET http://h/api/jobs/x: HTTP 503' } },
    expect: {
      next: 'Initializing',
      actions: [],
      events: [],
      requeue: 1000,
      status: { message: 'Waiting for the Ray dashboard to answer before submitting: GET http://h/api/jobs/x: HTTP 503' },
      absent: ['dashboardURL', 'reason'],
    },
  },
  {
    name: 'Initializing, cluster ready, K8sJobMode, the dashboard not asked (no observation) -> wait',
    job: rayJob('Initializing'),
    observed: { cluster: ready, submitter: null },
    expect: {
      next: 'Initializing',
      actions: [],
      requeue: 3000,
      status: { message: 'Waiting for the Ray dashboard to answer before submitting: not asked yet' },
    },
  },
  {
    name: 'Initializing, cluster ready, K8sJobMode, the dashboard already knows the job (an earlier submitter) -> create the submitter (it re-attaches)',
    job: rayJob('Initializing'),
    observed: { cluster: ready, submitter: null, dashboard: info('RUNNING') },
    expect: { next: 'Running', actions: ['createSubmitter'] },
  },
  {
    name: 'Initializing, the dashboard never answers, activeDeadlineSeconds passes -> Failed(DeadlineExceeded): a reason the user set',
    job: rayJob('Initializing', { spec: { activeDeadlineSeconds: 10 } }),
    now: 10,
    observed: { cluster: ready, submitter: null, dashboard: { kind: 'error', message: 'timed out' } },
    expect: { next: 'Failed', reason: 'DeadlineExceeded', actions: [] },
  },
  {
    name: 'Initializing, cluster ready, submitter already exists (earlier attempt crashed) -> Running, no second Job',
    job: rayJob('Initializing'),
    observed: { cluster: ready, submitter: running },
    expect: { next: 'Running', actions: [] },
  },
  {
    name: 'Initializing, cluster ready, HTTPMode -> Running (submission happens in Running, decided at once on that write)',
    job: rayJob('Initializing', { spec: { submissionMode: 'HTTPMode' } }),
    observed: { cluster: ready },
    expect: { next: 'Running', decideAgain: true, actions: [] },
  },
  {
    name: 'Initializing, cluster ready, InteractiveMode -> Waiting',
    job: rayJob('Initializing', { spec: { submissionMode: 'InteractiveMode' } }),
    observed: { cluster: ready },
    expect: { next: 'Waiting', actions: [] },
  },
  {
    name: 'Initializing without a cluster name (status edited) -> back to New, which names it',
    job: rayJob('Initializing', { status: { rayClusterName: '' } }),
    observed: { cluster: null, submitter: null },
    expect: { next: 'New', actions: [] },
  },
  {
    name: 'Initializing, spec made invalid meanwhile -> ValidationFailed',
    job: rayJob('Initializing', { spec: { activeDeadlineSeconds: 0 } }),
    observed: { cluster: ready, submitter: null },
    expect: { next: 'ValidationFailed', reason: 'ValidationFailed', events: ['InvalidRayJobSpec'] },
  },

  // ---------------------------------------------------------------- Waiting
  {
    name: 'Waiting, no spec.jobId yet -> stay',
    job: rayJob('Waiting', { spec: { submissionMode: 'InteractiveMode' } }),
    expect: { next: 'Waiting', requeue: true },
  },
  {
    name: 'Waiting, spec.jobId set -> Running with that id',
    job: rayJob('Waiting', { spec: { submissionMode: 'InteractiveMode', jobId: 'by-hand' }, status: { jobId: undefined } }),
    expect: { next: 'Running', status: { jobId: 'by-hand' } },
  },
  {
    name: 'Waiting, preRunningDeadlineSeconds passed -> Failed(PreRunningDeadlineExceeded)',
    job: rayJob('Waiting', { spec: { submissionMode: 'InteractiveMode', preRunningDeadlineSeconds: 5 } }),
    now: 5,
    expect: { next: 'Failed', reason: 'PreRunningDeadlineExceeded' },
  },
  {
    name: 'Waiting while not InteractiveMode is an invalid status -> ValidationFailed(InvalidRayJobStatus)',
    job: rayJob('Waiting'),
    expect: { next: 'ValidationFailed', events: ['InvalidRayJobStatus'] },
  },

  // ---------------------------------------------------------------- Running
  {
    name: 'Running, suspend -> Suspending',
    job: rayJob('Running', { spec: { suspend: true } }),
    observed: { cluster: ready, submitter: running },
    expect: { next: 'Suspending' },
  },
  {
    name: 'Running, activeDeadlineSeconds passed -> Failed(DeadlineExceeded)',
    job: rayJob('Running', { spec: { activeDeadlineSeconds: 100 } }),
    observed: { cluster: ready, submitter: running, dashboard: info('RUNNING') },
    now: 100,
    expect: { next: 'Failed', reason: 'DeadlineExceeded' },
  },
  {
    name: 'Running, Ray job RUNNING -> stay, record it',
    job: rayJob('Running'),
    observed: { cluster: ready, submitter: running, dashboard: info('RUNNING') },
    expect: { next: 'Running', statusCheck: 'ok', requeue: 3000, status: { jobStatus: 'RUNNING', rayJobInfo: { startTime: iso(5) } } },
  },
  {
    name: 'Running, SUCCEEDED and the submitter finished -> Complete, succeeded counted',
    job: rayJob('Running'),
    observed: { cluster: ready, submitter: submitter('complete', 20), dashboard: info('SUCCEEDED', { end: 19 }) },
    now: 21,
    expect: { next: 'Complete', reason: '', status: { jobStatus: 'SUCCEEDED', succeeded: 1, failed: 0, endTime: iso(21) } },
  },
  {
    name: 'Running, STOPPED and the submitter finished -> Complete, not counted as succeeded',
    job: rayJob('Running'),
    observed: { cluster: ready, submitter: submitter('complete', 20), dashboard: info('STOPPED', { end: 19 }) },
    now: 21,
    expect: { next: 'Complete', status: { jobStatus: 'STOPPED', succeeded: 0 } },
  },
  {
    name: 'Running, FAILED (app) and the submitter finished -> Failed(AppFailed)',
    job: rayJob('Running'),
    observed: { cluster: ready, submitter: submitter('complete', 20), dashboard: info('FAILED', { end: 19, message: 'exit code 1' }) },
    now: 21,
    expect: { next: 'Failed', reason: 'AppFailed', events: ['RayJobFailed'], status: { message: 'exit code 1', failed: 1 } },
  },
  {
    name: 'Running, FAILED with backoffLimit 2 on the first attempt -> Retrying',
    job: rayJob('Running', { spec: { backoffLimit: 2 } }),
    observed: { cluster: ready, submitter: submitter('complete', 20), dashboard: info('FAILED', { end: 19 }) },
    now: 21,
    expect: { next: 'Retrying', reason: 'AppFailed', events: ['RayJobFailed'], status: { failed: 1 } },
  },
  {
    name: 'Running, FAILED with backoffLimit 2 on the third attempt -> Failed for good',
    job: rayJob('Running', { spec: { backoffLimit: 2 }, status: { failed: 2 } }),
    observed: { cluster: ready, submitter: submitter('complete', 20), dashboard: info('FAILED', { end: 19 }) },
    now: 21,
    expect: { next: 'Failed', reason: 'AppFailed', status: { failed: 3 } },
  },
  {
    name: 'Running, Ray job ended but the submitter still runs -> stay within the grace period (#3553)',
    job: rayJob('Running'),
    observed: { cluster: ready, submitter: running, dashboard: info('FAILED', { end: 19 }) },
    now: 20,
    expect: { next: 'Running', status: { jobStatus: 'FAILED', rayJobInfo: { endTime: iso(19) } } },
  },
  {
    name: 'Running, grace period after the Ray job FAILED passed (submitter hung) -> Failed(GracePeriodExceeded) (#3553)',
    job: rayJob('Running', { status: { jobStatus: 'FAILED', rayJobInfo: { endTime: iso(19) } } }),
    observed: { cluster: ready, submitter: running, dashboard: info('FAILED', { end: 19 }) },
    now: 19 + 300,
    expect: { next: 'Failed', reason: 'JobDeploymentStatusTransitionGracePeriodExceeded' },
  },
  {
    name: 'Running, grace period after the Ray job SUCCEEDED passed -> Complete(GracePeriodExceeded)',
    job: rayJob('Running', { status: { jobStatus: 'SUCCEEDED', rayJobInfo: { endTime: iso(19) } } }),
    observed: { cluster: ready, submitter: running, dashboard: info('SUCCEEDED', { end: 19 }) },
    now: 19 + 300,
    expect: { next: 'Complete', reason: 'JobDeploymentStatusTransitionGracePeriodExceeded', status: { succeeded: 1 } },
  },
  {
    name: 'Running, the submitter died but the Ray job SUCCEEDED -> Complete, not SubmissionFailed (#2154)',
    job: rayJob('Running'),
    observed: { cluster: ready, submitter: submitter('failed', 30), dashboard: info('SUCCEEDED', { end: 25 }) },
    now: 31,
    expect: { next: 'Complete', status: { jobStatus: 'SUCCEEDED' } },
  },
  {
    name: 'Running, the submitter failed while the Ray job is not terminal -> Failed(SubmissionFailed)',
    job: rayJob('Running'),
    observed: { cluster: ready, submitter: submitter('failed', 30), dashboard: info('RUNNING') },
    now: 31,
    expect: { next: 'Failed', reason: 'SubmissionFailed', status: { message: /BackoffLimitExceeded/ } },
  },
  {
    name: 'Running, the submitter failed and the dashboard is down -> Failed(SubmissionFailed) at once',
    job: rayJob('Running'),
    observed: { cluster: ready, submitter: submitter('failed', 30), dashboard: { kind: 'error', message: 'ECONNREFUSED' } },
    now: 31,
    expect: { next: 'Failed', reason: 'SubmissionFailed' },
  },
  {
    name: "Running, the submitter failed before Ray knew the job -> Failed(SubmissionFailed), jobStatus empty, the message says what the submitter's last attempt reported",
    job: rayJob('Running'),
    observed: {
      cluster: ready,
      submitter: submitter('failed', 30),
      submitterAttempt: {
        exitCode: 1,
        reason: 'Error',
        message: `${'x'.repeat(3000)}\n\u001b[31mRuntimeError: Request failed with status code 500: Failed to get head node agent\u001b[39m\n`,
      },
      dashboard: { kind: 'notFound' },
    },
    now: 31,
    expect: {
      next: 'Failed',
      reason: 'SubmissionFailed',
      status: {
        jobStatus: '',
        message: new RegExp(
          '^Job submission has failed\\. Reason: BackoffLimitExceeded\\. Message: Job has reached the specified backoff limit\\. ' +
            'The last attempt ended with exit code 1 \\(Error\\): x{900,}\\nRuntimeError: Request failed with status code 500: Failed to get head node agent$',
        ),
      },
    },
  },
  {
    name: 'Running, the submitter failed and none of its pods is left (null) -> the Job condition alone',
    job: rayJob('Running'),
    observed: { cluster: ready, submitter: submitter('failed', 30), submitterAttempt: null, dashboard: { kind: 'notFound' } },
    now: 31,
    expect: {
      next: 'Failed',
      reason: 'SubmissionFailed',
      status: { message: 'Job submission has failed. Reason: BackoffLimitExceeded. Message: Job has reached the specified backoff limit' },
    },
  },
  {
    name: 'Running, the submitter failed after the Ray job was seen FAILED, job now unknown -> Failed(AppFailed)',
    job: rayJob('Running', { status: { jobStatus: 'FAILED', message: 'boom' } }),
    observed: { cluster: ready, submitter: submitter('failed', 30), dashboard: { kind: 'notFound' } },
    now: 31,
    expect: { next: 'Failed', reason: 'AppFailed', status: { message: 'boom' } },
  },
  {
    name: 'Running, the submitter Job is gone -> Failed(SubmissionFailed)',
    job: rayJob('Running'),
    observed: { cluster: ready, submitter: null, dashboard: info('RUNNING') },
    expect: { next: 'Failed', reason: 'SubmissionFailed', status: { message: /no longer exists/ } },
  },
  {
    name: 'Running, the RayCluster is gone (head gone) -> Failed(AppFailed) (#1233)',
    job: rayJob('Running'),
    observed: { cluster: null, submitter: running, dashboard: { kind: 'error', message: 'ENOTFOUND' } },
    expect: { next: 'Failed', reason: 'AppFailed', status: { message: /no longer exists/ } },
  },
  {
    name: 'Running, the RayCluster is being deleted -> Failed(AppFailed)',
    job: rayJob('Running'),
    observed: { cluster: cluster('ready', { deleting: true }), submitter: running, dashboard: info('RUNNING') },
    expect: { next: 'Failed', reason: 'AppFailed', status: { message: /being deleted/ } },
  },
  {
    name: 'Running, the submitter completed, the Ray job still RUNNING, within 30 s -> stay',
    job: rayJob('Running'),
    observed: { cluster: ready, submitter: submitter('complete', 20), dashboard: info('RUNNING') },
    now: 40,
    expect: { next: 'Running', requeue: 3000 },
  },
  {
    name: 'Running, the submitter completed 30 s ago, the Ray job still RUNNING -> Failed(GracePeriodExceeded)',
    job: rayJob('Running'),
    observed: { cluster: ready, submitter: submitter('complete', 20), dashboard: info('RUNNING') },
    now: 50,
    expect: { next: 'Failed', reason: 'JobDeploymentStatusTransitionGracePeriodExceeded' },
  },
  {
    name: 'Running, K8sJobMode, dashboard does not know the id yet, submitter running -> stay',
    job: rayJob('Running'),
    observed: { cluster: ready, submitter: running, dashboard: { kind: 'notFound' } },
    expect: { next: 'Running', statusCheck: 'ok', requeue: true },
  },
  {
    name: 'Running, submitter completed but the Ray job is unknown (head restarted, GCS lost) -> Failed(AppFailed) (#3903)',
    job: rayJob('Running'),
    observed: { cluster: ready, submitter: submitter('complete', 20), dashboard: { kind: 'notFound' } },
    now: 21,
    expect: { next: 'Failed', reason: 'AppFailed', status: { message: /not found/ } },
  },
  {
    name: 'Running, HTTPMode, Ray job unknown -> submit it over HTTP, stay',
    job: rayJob('Running', { spec: { submissionMode: 'HTTPMode' } }),
    observed: { cluster: ready, dashboard: { kind: 'notFound' } },
    expect: { next: 'Running', actions: ['submitRayJob'], requeue: true },
  },
  {
    name: 'Running, HTTPMode, Ray job SUCCEEDED (no submitter to wait for) -> Complete',
    job: rayJob('Running', { spec: { submissionMode: 'HTTPMode' } }),
    observed: { cluster: ready, dashboard: info('SUCCEEDED', { end: 9 }) },
    now: 10,
    expect: { next: 'Complete' },
  },
  {
    name: 'Running, InteractiveMode, id unknown to the dashboard -> the status-check clock runs',
    job: rayJob('Running', { spec: { submissionMode: 'InteractiveMode', jobId: 'by-hand' } }),
    observed: { cluster: ready, dashboard: { kind: 'notFound' } },
    expect: { next: 'Running', statusCheck: 'failing' },
  },
  {
    name: 'Running, dashboard unreachable, first failure -> stay, clock starts',
    job: rayJob('Running'),
    observed: { cluster: ready, submitter: running, dashboard: { kind: 'error', message: 'timeout after 5000 ms' } },
    expect: { next: 'Running', statusCheck: 'failing', requeue: 3000, actions: ['setStatusCheckClock'] },
  },
  {
    name: 'Running, dashboard still unreachable, clock already running (a new leader reads it): no second start',
    job: rayJob('Running', { metadata: { annotations: { 'raykeeper.io/status-check-failing-since': iso(10) } } }),
    observed: { cluster: ready, submitter: running, dashboard: { kind: 'error', message: 'timeout after 5000 ms' } },
    now: 100,
    expect: { next: 'Running', statusCheck: 'failing', actions: [] },
  },
  {
    name: 'Running, the dashboard answers again: the clock is cleared',
    job: rayJob('Running', { metadata: { annotations: { 'raykeeper.io/status-check-failing-since': iso(10) } } }),
    observed: { cluster: ready, submitter: running, dashboard: info('RUNNING') },
    now: 100,
    expect: { next: 'Running', statusCheck: 'ok', actions: ['setStatusCheckClock'] },
  },
  {
    name: 'Running left (suspend) with the clock running: cleared',
    job: rayJob('Running', { spec: { suspend: true }, metadata: { annotations: { 'raykeeper.io/status-check-failing-since': iso(10) } } }),
    observed: { cluster: ready, submitter: running },
    expect: { next: 'Suspending', actions: ['setStatusCheckClock'] },
  },
  {
    name: 'Running, dashboard unreachable for the whole status-check timeout -> Failed(JobStatusCheckTimeoutExceeded)',
    job: rayJob('Running', { metadata: { annotations: { 'raykeeper.io/status-check-failing-since': iso(10) } } }),
    observed: { cluster: ready, submitter: running, dashboard: { kind: 'error', message: 'timeout after 5000 ms' } },
    now: 310,
    expect: { next: 'Failed', reason: 'JobStatusCheckTimeoutExceeded', status: { message: /timeout after 5000 ms/ } },
  },
  {
    name: 'Running without a submission id (status edited) -> Failed(SubmissionFailed), not Running for ever',
    job: rayJob('Running', { status: { jobId: '' } }),
    observed: { cluster: ready, submitter: running },
    expect: { next: 'Failed', reason: 'SubmissionFailed' },
  },
  {
    name: 'Running, dashboard not observed (not asked) -> stay',
    job: rayJob('Running'),
    observed: { cluster: ready, submitter: running },
    expect: { next: 'Running', requeue: true },
  },

  // ---------------------------------------------------------------- Suspending
  {
    name: 'Suspending, cluster and submitter exist -> delete both, stay',
    job: rayJob('Suspending', { spec: { suspend: true } }),
    observed: { cluster: ready, submitter: running },
    expect: { next: 'Suspending', actions: ['deleteCluster', 'deleteSubmitter'], requeue: true },
  },
  {
    name: 'Suspending, both being deleted -> wait, no second delete',
    job: rayJob('Suspending', { spec: { suspend: true } }),
    observed: { cluster: cluster('ready', { deleting: true }), submitter: submitter('running', 1, { deleting: true }) },
    expect: { next: 'Suspending', actions: [], requeue: true },
  },
  {
    name: 'Suspending, both gone -> Suspended, ids and Ray status reset (even if suspend was flipped back)',
    job: rayJob('Suspending', { spec: { suspend: false }, status: { jobStatus: 'RUNNING', dashboardURL: 'x:8265', message: 'm' } }),
    observed: { cluster: null, submitter: null },
    expect: { next: 'Suspended', actions: [], absent: ['jobId', 'rayClusterName', 'dashboardURL', 'jobStatus', 'message'] },
  },

  // ---------------------------------------------------------------- Suspended
  {
    name: 'Suspended, still suspended -> stay, no requeue',
    job: rayJob('Suspended', { spec: { suspend: true }, status: { jobId: undefined, rayClusterName: undefined } }),
    expect: { next: 'Suspended', actions: [], requeue: false },
  },
  {
    name: 'Suspended, resumed -> New',
    job: rayJob('Suspended', { spec: { suspend: false }, status: { jobId: undefined, rayClusterName: undefined } }),
    expect: { next: 'New', status: { jobDeploymentStatus: 'New' } },
  },

  // ---------------------------------------------------------------- Retrying
  {
    name: 'Retrying, cluster and submitter exist -> delete both, stay',
    job: rayJob('Retrying', { spec: { backoffLimit: 2 }, status: { failed: 1, reason: 'AppFailed' } }),
    observed: { cluster: ready, submitter: submitter('complete') },
    expect: { next: 'Retrying', actions: ['deleteCluster', 'deleteSubmitter'] },
  },
  {
    name: 'Retrying, all gone -> New, failure count kept, ids reset',
    job: rayJob('Retrying', { spec: { backoffLimit: 2 }, status: { failed: 1, reason: 'AppFailed' } }),
    observed: { cluster: null, submitter: null },
    expect: { next: 'New', status: { failed: 1 }, absent: ['jobId', 'rayClusterName', 'reason'] },
  },
  {
    name: 'Retrying with a clusterSelector never deletes the selected cluster',
    job: rayJob('Retrying', { spec: { clusterSelector: { 'ray.io/cluster': 'demo-fghjk' }, rayClusterSpec: undefined } }),
    observed: { cluster: ready, submitter: null },
    expect: { next: 'New', actions: [] },
  },

  // ---------------------------------------------------------------- Complete / Failed
  {
    name: 'Complete, shutdownAfterJobFinishes, ttl ahead -> requeue at the ttl',
    job: rayJob('Complete', { spec: { ttlSecondsAfterFinished: 60 }, status: { endTime: iso(100) } }),
    observed: { cluster: ready },
    now: 130,
    expect: { next: 'Complete', actions: [], requeue: 30_000 },
  },
  {
    name: 'Complete, ttl passed -> delete the RayCluster (not the submitter: logs stay)',
    job: rayJob('Complete', { spec: { ttlSecondsAfterFinished: 60 }, status: { endTime: iso(100) } }),
    observed: { cluster: ready },
    now: 160,
    expect: { next: 'Complete', actions: ['deleteCluster'], requeue: false },
  },
  {
    name: 'Failed, ttl passed, cluster already gone -> nothing',
    job: rayJob('Failed', { status: { endTime: iso(100) } }),
    observed: { cluster: null },
    now: 160,
    expect: { next: 'Failed', actions: [], requeue: false },
  },
  {
    name: 'Failed, ttl passed, DELETE_RAYJOB_CR_AFTER_JOB_FINISHES -> delete the RayJob',
    job: rayJob('Failed', { status: { endTime: iso(100) } }),
    observed: { cluster: ready },
    now: 160,
    config: { deleteRayJobAfterJobFinishes: true },
    expect: { next: 'Failed', actions: ['deleteRayJob'] },
  },
  {
    name: 'Complete without shutdownAfterJobFinishes -> keep the cluster',
    job: rayJob('Complete', { spec: { shutdownAfterJobFinishes: false }, status: { endTime: iso(100) } }),
    observed: { cluster: ready },
    now: 1000,
    expect: { next: 'Complete', actions: [], requeue: false },
  },
  {
    name: 'Complete with a clusterSelector -> never delete the selected cluster',
    job: rayJob('Complete', {
      spec: { clusterSelector: { 'ray.io/cluster': 'demo-fghjk' }, rayClusterSpec: undefined },
      status: { endTime: iso(1) },
    }),
    observed: { cluster: ready },
    now: 1000,
    expect: { next: 'Complete', actions: [] },
  },
  {
    name: 'Complete without endTime -> record it',
    job: rayJob('Complete'),
    observed: { cluster: ready },
    now: 50,
    expect: { next: 'Complete', actions: [], status: { endTime: iso(50) } },
  },
  {
    name: 'Failed with a spec edited to be invalid stays Failed (finished jobs are not re-validated)',
    job: rayJob('Failed', { spec: { activeDeadlineSeconds: -1, shutdownAfterJobFinishes: false }, status: { endTime: iso(1) } }),
    expect: { next: 'Failed', actions: [], events: [] },
  },

  // ---------------------------------------------------------------- ValidationFailed
  {
    name: 'ValidationFailed, still invalid -> stay silent (no event, no requeue)',
    job: rayJob('ValidationFailed', { spec: { activeDeadlineSeconds: 0 }, status: { reason: 'ValidationFailed', message: 'x' } }),
    expect: { next: 'ValidationFailed', actions: [], events: [], requeue: false },
  },
  {
    name: 'ValidationFailed, spec fixed -> New',
    job: rayJob('ValidationFailed', { status: { reason: 'ValidationFailed', message: 'x' } }),
    expect: { next: 'New', status: { reason: '', message: '' } },
  },

  // ---------------------------------------------------------------- deletion (before the switch)
  {
    name: 'Deleting a Running RayJob -> stop the Ray job, then release the finalizer',
    job: rayJob('Running', { status: { jobStatus: 'RUNNING' }, metadata: { deletionTimestamp: iso(50) } }),
    expect: { next: 'Running', actions: ['stopRayJob', 'removeFinalizer'] },
  },
  {
    name: 'Deleting a RayJob whose Ray job already ended -> only release the finalizer',
    job: rayJob('Complete', { status: { jobStatus: 'SUCCEEDED' }, metadata: { deletionTimestamp: iso(50) } }),
    expect: { next: 'Complete', actions: ['removeFinalizer'] },
  },
  {
    name: 'Deleting an invalid RayJob still releases the finalizer',
    job: rayJob('Initializing', { spec: { activeDeadlineSeconds: -5 }, metadata: { deletionTimestamp: iso(50) } }),
    expect: { next: 'Initializing', actions: ['stopRayJob', 'removeFinalizer'], events: [] },
  },
  {
    name: 'Deleting without our finalizer -> nothing',
    job: rayJob('Running', { metadata: { deletionTimestamp: iso(50), finalizers: ['other/finalizer'] } }),
    expect: { next: 'Running', actions: [] },
  },
  {
    name: 'An unknown state (a newer KubeRay) is left alone',
    job: rayJob('Scheduling'),
    expect: { next: 'Scheduling', leftAlone: true },
  },
  {
    name: 'spec.managedBy MultiKueue: left alone whatever the state',
    job: rayJob(undefined, { spec: { managedBy: 'kueue.x-k8s.io/multikueue' } }),
    expect: { next: 'New', leftAlone: true },
  },
  {
    name: "spec.managedBy KubeRay's own name: ours to drive",
    job: rayJob(undefined, { spec: { managedBy: 'ray.io/kuberay-operator' } }),
    expect: { next: 'New', decideAgain: true, actions: ['addFinalizer'] },
  },
];

/** Every exit of every state; each must be exercised by a row above. */
const EXITS: Record<string, string[]> = {
  New: ['New', 'Initializing', 'ValidationFailed'],
  Initializing: ['Initializing', 'Suspending', 'Failed', 'Retrying', 'Running', 'Waiting', 'ValidationFailed', 'New'],
  Waiting: ['Waiting', 'Running', 'Failed', 'ValidationFailed'],
  Running: ['Running', 'Suspending', 'Complete', 'Failed', 'Retrying'],
  Suspending: ['Suspending', 'Suspended'],
  Suspended: ['Suspended', 'New'],
  Retrying: ['Retrying', 'New'],
  Complete: ['Complete'],
  Failed: ['Failed'],
  ValidationFailed: ['ValidationFailed', 'New'],
};

const config = (overrides: Row['config'] = {}) => defaultMachineConfig({ random: () => 0, ...overrides });

function stateOf(job: RayJob): string {
  const s = job.status?.jobDeploymentStatus;
  return s === undefined || s === '' ? 'New' : s;
}

t.test('transition table', async (t) => {
  for (const row of rows) {
    t.test(row.name, async (t) => {
      const before = JSON.stringify(row.job);
      const decision: RayJobDecision = decideRayJob(row.job, row.observed ?? {}, at(row.now ?? 1), config(row.config));
      const e = row.expect;
      t.equal(decision.kind, e.leftAlone ? 'leftAlone' : 'step', e.leftAlone ? 'left alone' : 'a step');
      if (decision.kind !== 'step') {
        t.equal(decision.stored, e.next, 'the stored state as read');
        return;
      }
      const d: RayJobStep = decision;
      t.equal(d.next, e.next, 'next state');
      t.equal(d.status.jobDeploymentStatus, e.next, 'written deployment status');
      if (e.reason !== undefined) t.equal(d.status.reason ?? '', e.reason, 'reason');
      if (e.actions !== undefined)
        t.same(
          d.actions.map((a) => a.type),
          e.actions,
          'actions',
        );
      if (e.events !== undefined)
        t.same(
          d.events.map((ev) => ev.reason),
          e.events,
          'events',
        );
      if (e.requeue === true) t.ok(d.requeueAfterMs !== undefined && d.requeueAfterMs > 0, 'requeued');
      if (e.requeue === false) t.equal(d.requeueAfterMs, undefined, 'not requeued');
      if (typeof e.requeue === 'number') t.equal(d.requeueAfterMs, e.requeue, 'requeue delay');
      if (e.statusCheck !== undefined) t.equal(d.statusCheck, e.statusCheck, 'status check');
      if (!('leftAlone' in e)) t.equal(d.decideAgain === true, e.decideAgain === true, 'decided again at once, or not');
      if (e.status !== undefined) t.match(d.status, e.status, 'status fields');
      for (const key of e.absent ?? []) t.notOk(key in d.status, `status has no ${key}`);
      t.equal(JSON.stringify(row.job), before, 'the input RayJob is not mutated');
      t.same(decideRayJob(row.job, row.observed ?? {}, at(row.now ?? 1), config(row.config)), d, 'deterministic');
    });
  }
});

t.test('every state and every exit of it has a row', async (t) => {
  const seen = new Map<string, Set<string>>();
  for (const row of rows) {
    if (row.expect.leftAlone) continue;
    const from = stateOf(row.job);
    if (!seen.has(from)) seen.set(from, new Set());
    seen.get(from)?.add(row.expect.next);
  }
  for (const state of JOB_DEPLOYMENT_STATUSES) {
    t.ok(seen.has(state), `state ${state} has rows`);
    for (const exit of EXITS[state] ?? []) t.ok(seen.get(state)?.has(exit), `${state} -> ${exit} has a row`);
    for (const exit of seen.get(state) ?? []) t.ok(EXITS[state]?.includes(exit), `${state} -> ${exit} is a listed exit`);
  }
});

/** A decision the test expects to be a step (fails the type narrowing loudly otherwise). */
function step(job: RayJob, observed: Observed, now: number, c = config()): RayJobStep {
  const d = decideRayJob(job, observed, now, c);
  if (d.kind !== 'step') throw new Error(`expected a step, got ${d.note}`);
  return d;
}

t.test('what the actions carry', async (t) => {
  const init = step(
    rayJob('Initializing', { metadata: { annotations: { 'ray.io/ft-enabled': 'true' } } }),
    { cluster: null, submitter: null },
    at(1),
  );
  const create = init.actions[0];
  t.equal(create?.type, 'createCluster');
  if (create?.type === 'createCluster') {
    t.equal(create.cluster.metadata.name, 'demo-fghjk', 'named from status.rayClusterName');
    t.equal(create.cluster.metadata.annotations?.['ray.io/ft-enabled'], 'true', 'GCS FT annotation carried over');
    t.match(create.cluster.metadata.ownerReferences, [{ kind: 'RayJob', name: 'demo', uid: 'uid-demo', controller: true }]);
  }
  const run = step(rayJob('Initializing'), { cluster: cluster('ready'), submitter: null, dashboard: { kind: 'notFound' } }, at(1));
  const sub = run.actions[0];
  t.equal(sub?.type, 'createSubmitter');
  if (sub?.type === 'createSubmitter') {
    const args = (sub.job.spec?.template?.spec?.containers?.[0]?.['args'] as string[])[0] ?? '';
    t.match(args, 'ray job submit --address http://demo-fghjk-head-svc.ns1.svc.cluster.local:8265 --no-wait');
    t.match(args, '--submission-id demo-abcde -- python main.py');
    t.equal(sub.job.spec?.backoffLimit, 2, 'default submitter backoffLimit');
    t.match(sub.job.spec?.template?.spec?.containers?.[0]?.env, [
      { name: 'PYTHONUNBUFFERED', value: '1' },
      { name: 'RAY_DASHBOARD_ADDRESS', value: 'demo-fghjk-head-svc.ns1.svc.cluster.local:8265' },
      { name: 'RAY_JOB_SUBMISSION_ID', value: 'demo-abcde' },
    ]);
  }
  const stop = step(rayJob('Running', { status: { jobStatus: 'PENDING' }, metadata: { deletionTimestamp: iso(3) } }), {}, at(4));
  t.same(stop.actions[0], { type: 'stopRayJob', cluster: 'demo-fghjk', jobId: 'demo-abcde' });
  const http = step(
    rayJob('Running', { spec: { submissionMode: 'HTTPMode', runtimeEnvYAML: 'env_vars:\n  A: "1"\n' } }),
    { cluster: cluster('ready'), dashboard: { kind: 'notFound' } },
    at(2),
  );
  t.same(http.actions[0], {
    type: 'submitRayJob',
    cluster: 'demo-fghjk',
    request: { entrypoint: 'python main.py', submission_id: 'demo-abcde', runtime_env: { env_vars: { A: '1' } } },
  });
});

t.test('a New decision with the stale copy of a RayJob proposes names the API server will reject', async (t) => {
  // Two reconciles from the same New copy generate different names; the resourceVersion-guarded
  // status write lets only one land (proved against the real API server in reconciler tests).
  let n = 0;
  const random = () => ((n++ * 7) % 27) / 27;
  const a = step(rayJob(undefined), {}, at(1), defaultMachineConfig({ random }));
  const b = step(rayJob(undefined), {}, at(1), defaultMachineConfig({ random }));
  t.not(a.status.rayClusterName, b.status.rayClusterName, 'names differ between two decisions');
  t.equal(a.next, 'New', 'stored as New with the names');
  t.equal(b.next, 'New');
});

t.test('rayJobStatusChanged compares what would be stored', async (t) => {
  t.equal(rayJobStatusChanged({ a: 1, b: 'x' } as never, { b: 'x', a: 1 } as never), false, 'key order ignored');
  t.equal(rayJobStatusChanged({ a: 1 } as never, { a: 1, b: undefined } as never), false, 'undefined keys ignored');
  t.equal(rayJobStatusChanged(undefined, {}), false, 'absent = empty');
  t.equal(
    rayJobStatusChanged({ rayJobInfo: { endTime: 'x' } } as never, { rayJobInfo: { endTime: 'y' } } as never),
    true,
    'nested values compared',
  );
  t.equal(rayJobStatusChanged({ l: [1, 2] } as never, { l: [2, 1] } as never), true, 'array order matters');
});

t.test('observationPlan: each state reads only what its case needs', async (t) => {
  const rows: Array<[string, RayJob, ObservationPlan]> = [
    ['New', rayJob(undefined), { cluster: false, submitter: false, headPod: false, dashboard: false, headService: false }],
    [
      'Initializing K8sJobMode',
      rayJob('Initializing'),
      { cluster: true, submitter: true, headPod: false, dashboard: false, headService: false },
    ],
    [
      'Initializing HTTPMode',
      rayJob('Initializing', { spec: { submissionMode: 'HTTPMode' } }),
      { cluster: true, submitter: false, headPod: false, dashboard: false, headService: false },
    ],
    ['Running', rayJob('Running'), { cluster: true, submitter: true, headPod: false, dashboard: true, headService: true }],
    [
      'Running with a clusterSelector: no head Service of its own (KubeRay makes none)',
      rayJob('Running', { spec: { clusterSelector: { 'ray.io/cluster': 'c' } } }),
      { cluster: true, submitter: true, headPod: false, dashboard: true, headService: false },
    ],
    [
      'Running, suspend requested',
      rayJob('Running', { spec: { suspend: true } }),
      { cluster: true, submitter: true, headPod: false, dashboard: false, headService: false },
    ],
    ['Suspending', rayJob('Suspending'), { cluster: true, submitter: true, headPod: false, dashboard: false, headService: false }],
    [
      'Retrying InteractiveMode',
      rayJob('Retrying', { spec: { submissionMode: 'InteractiveMode' } }),
      { cluster: true, submitter: false, headPod: false, dashboard: false, headService: false },
    ],
    [
      'Complete with shutdown',
      rayJob('Complete'),
      { cluster: true, submitter: false, headPod: false, dashboard: false, headService: false },
    ],
    [
      'Complete without shutdown',
      rayJob('Complete', { spec: { shutdownAfterJobFinishes: false } }),
      { cluster: false, submitter: false, headPod: false, dashboard: false, headService: false },
    ],
    [
      'Failed with a selector',
      rayJob('Failed', { spec: { clusterSelector: { 'ray.io/cluster': 'c' } } }),
      { cluster: false, submitter: false, headPod: false, dashboard: false, headService: false },
    ],
    ['Suspended', rayJob('Suspended'), { cluster: false, submitter: false, headPod: false, dashboard: false, headService: false }],
    ['Waiting', rayJob('Waiting'), { cluster: false, submitter: false, headPod: false, dashboard: false, headService: false }],
    [
      'being deleted',
      rayJob('Running', { metadata: { deletionTimestamp: iso(1) } }),
      { cluster: false, submitter: false, headPod: false, dashboard: false, headService: false },
    ],
    [
      'managed by MultiKueue: nothing read',
      rayJob('Running', { spec: { managedBy: 'kueue.x-k8s.io/multikueue' } }),
      { cluster: false, submitter: false, headPod: false, dashboard: false, headService: false },
    ],
    [
      'Running SidecarMode: the head pod, no submitter Job',
      rayJob('Running', { spec: { submissionMode: 'SidecarMode' } }),
      { cluster: true, submitter: false, headPod: true, dashboard: true, headService: true },
    ],
    [
      'Initializing SidecarMode',
      rayJob('Initializing', { spec: { submissionMode: 'SidecarMode' } }),
      { cluster: true, submitter: false, headPod: true, dashboard: false, headService: false },
    ],
    [
      'Suspending SidecarMode: no submitter Job to delete',
      rayJob('Suspending', { spec: { submissionMode: 'SidecarMode' } }),
      { cluster: true, submitter: false, headPod: false, dashboard: false, headService: false },
    ],
    [
      'an unknown state: nothing read',
      rayJob('Scheduling'),
      { cluster: false, submitter: false, headPod: false, dashboard: false, headService: false },
    ],
  ];
  for (const [name, job, plan] of rows) t.same(observationPlan(job), plan, name);
});

t.test('initializingNeedsDashboard: asked only between a ready cluster and the submitter (K8sJobMode)', async (t) => {
  const rows: Array<[string, RayJob, Observed, boolean]> = [
    ['cluster ready, no submitter', rayJob('Initializing'), { cluster: cluster('ready'), submitter: null }, true],
    ['cluster not ready', rayJob('Initializing'), { cluster: cluster(''), submitter: null }, false],
    [
      'cluster not ready, dashboardURL already recorded',
      rayJob('Initializing', { status: { dashboardURL: 'h:8265' } }),
      { cluster: cluster(''), submitter: null },
      true,
    ],
    ['cluster being deleted', rayJob('Initializing'), { cluster: cluster('ready', { deleting: true }), submitter: null }, false],
    ['no cluster', rayJob('Initializing'), { cluster: null, submitter: null }, false],
    ['the submitter exists', rayJob('Initializing'), { cluster: cluster('ready'), submitter: submitter('running') }, false],
    ['submitter not observed', rayJob('Initializing'), { cluster: cluster('ready') }, false],
    ['HTTPMode', rayJob('Initializing', { spec: { submissionMode: 'HTTPMode' } }), { cluster: cluster('ready'), submitter: null }, false],
    ['SidecarMode', rayJob('Initializing', { spec: { submissionMode: 'SidecarMode' } }), { cluster: cluster('ready') }, false],
    ['Running (observationPlan asks there)', rayJob('Running'), { cluster: cluster('ready'), submitter: null }, false],
  ];
  for (const [name, job, observed, expected] of rows) t.equal(initializingNeedsDashboard(job, observed), expected, name);
});

t.test('clusterMissIsAbsent: a cache miss of the cluster is trusted only where absent means create', async (t) => {
  const rows: Array<[string, RayJob, boolean]> = [
    ['Initializing, own cluster: absent means create (AlreadyExists if the cache lags)', rayJob('Initializing'), true],
    [
      'Initializing with a selector: a miss would say "not found"',
      rayJob('Initializing', { spec: { clusterSelector: { 'ray.io/cluster': 'c' } } }),
      false,
    ],
    ['Running: a miss would fail the job', rayJob('Running'), false],
    ['Complete: a miss would skip the deletion rules', rayJob('Complete'), false],
    ['Initializing, being deleted', rayJob('Initializing', { metadata: { deletionTimestamp: iso(1) } }), false],
  ];
  for (const [name, job, want] of rows) t.equal(clusterMissIsAbsent(job), want, name);
});

t.test(
  'which actions guard themselves, and which are creations a repeat cannot duplicate (the stored-RayJob GET may be skipped)',
  async (t) => {
    const rows: Array<[RayJobAction, boolean, boolean]> = [
      [{ type: 'addFinalizer' }, true, false],
      [{ type: 'removeFinalizer' }, true, false],
      [{ type: 'setStatusCheckClock', since: null }, true, false],
      [{ type: 'recordDeletion', record: 'x' }, true, false],
      [{ type: 'createCluster', cluster: { metadata: { name: 'c' } } }, false, true],
      [{ type: 'createSubmitter', job: { metadata: { name: 'j' } } }, false, true],
      [{ type: 'submitRayJob', cluster: 'c', request: { entrypoint: 'x', submission_id: 'id' } }, false, true],
      [{ type: 'deleteCluster', name: 'c' }, false, false],
      [{ type: 'suspendWorkerGroups', name: 'c', resourceVersion: '1', groups: 1 }, false, false],
      [{ type: 'deleteSubmitter', name: 'j' }, false, false],
      [{ type: 'stopRayJob', cluster: 'c', jobId: 'id' }, false, false],
      [{ type: 'deleteRayJob' }, false, false],
    ];
    for (const [action, guarded, repeatable] of rows) {
      t.equal(isSelfGuarded(action), guarded, `${action.type}: self-guarded ${guarded}`);
      t.equal(isRepeatableCreate(action), repeatable, `${action.type}: repeatable create ${repeatable}`);
    }
  },
);
