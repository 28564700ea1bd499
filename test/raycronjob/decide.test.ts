// The RayCronJob decision as tables over a fake clock: one RayJob a tick with KubeRay v1.7's name, at most
// one catch-up run after downtime, startingDeadlineSeconds, suspend, Forbid / Replace, history limits.
import t from 'tap';
import {
  buildChild,
  childName,
  childPhase,
  decideRayCronJob,
  validateRayCronJob,
  type RayCronJobDecision,
} from '../../src/raycronjob/decide.ts';
import type { RayCronJob, RayCronJobSpec, RayJob } from '../../src/types.ts';

const at = (iso: string) => Date.parse(iso);
const UID = 'cron-uid-1';
const CREATED = '2026-12-04T10:00:30Z';

function cronJob(spec: Partial<RayCronJobSpec> = {}, status: RayCronJob['status'] = undefined, name = 'nightly'): RayCronJob {
  const job: RayCronJob = {
    apiVersion: 'ray.io/v1',
    kind: 'RayCronJob',
    metadata: { name, namespace: 'ml', uid: UID, creationTimestamp: CREATED },
    spec: {
      schedule: '*/10 * * * *',
      jobTemplate: {
        entrypoint: 'python train.py',
        shutdownAfterJobFinishes: true,
        rayClusterSpec: { headGroupSpec: { template: { spec: { containers: [{ name: 'ray-head', image: 'rayproject/ray:2.60.0' }] } } } },
      },
      ...spec,
    },
  };
  if (status) job.status = status;
  return job;
}

/** A child of `owner` for tick `tick`, in deployment state `state`. */
function child(owner: RayCronJob, tick: string, state = 'Running', extra: Partial<RayJob['metadata']> = {}): RayJob {
  const job = buildChild(owner, at(tick));
  job.metadata = { ...job.metadata, uid: `uid-${tick}`, creationTimestamp: tick, ...extra };
  job.status = { jobDeploymentStatus: state };
  return job;
}

const kinds = (d: RayCronJobDecision) => ({
  kind: d.kind,
  ...(d.kind === 'create' ? { name: d.rayJob.metadata.name, scheduledAt: new Date(d.scheduledAt).toISOString() } : {}),
  ...(d.kind === 'delete' ? { why: d.why, children: d.children.map((c) => c.name) } : {}),
  ...(d.kind === 'wait' ? { until: new Date(d.until).toISOString() } : {}),
  lastScheduleTime: d.status.lastScheduleTime,
  events: d.events.map((e) => `${e.type} ${e.reason}`),
});

t.test('child names: KubeRay v1.7 `<cronjob>-<unix minutes>`, cut to the RayJob name limit', async (t) => {
  t.equal(childName('nightly', at('2026-12-04T10:10:00Z')), `nightly-${at('2026-12-04T10:10:00Z') / 60_000}`);
  t.equal(childName('nightly', at('2026-12-04T10:10:00Z')), 'nightly-29939650');
  const long = 'a-very-long-raycronjob-name-that-goes-on-and-on';
  t.equal(childName(long, at('2026-12-04T10:10:00Z')), 'a-very-long-raycronjob-name-that-goes-29939650', 'cut, no double dash');
  const full = childName('abcdefghijklmnopqrstuvwxyz-abcdefghijkl-xyz', at('2026-12-04T10:10:00Z'));
  t.equal(full, 'abcdefghijklmnopqrstuvwxyz-abcdefghijk-29939650');
  t.equal(full.length, 47, 'fits MaxRayJobNameLength exactly');
  t.equal(
    childName('abcdefghijklmnopqrstuvwxyz-abcdefghij-xyz', at('2026-12-04T10:10:00Z')),
    'abcdefghijklmnopqrstuvwxyz-abcdefghij-29939650',
  );
});

t.test('the child: the template as spec, KubeRay labels and annotation, a controller ownerReference', async (t) => {
  const owner = cronJob();
  const c = buildChild(owner, at('2026-12-04T10:10:00Z'));
  t.same(c, {
    apiVersion: 'ray.io/v1',
    kind: 'RayJob',
    metadata: {
      name: 'nightly-29939650',
      namespace: 'ml',
      labels: { 'ray.io/cronjob-name': 'nightly' },
      annotations: { 'ray.io/cronjob-scheduled-timestamp': '2026-12-04T10:10:00Z' },
      ownerReferences: [
        { apiVersion: 'ray.io/v1', kind: 'RayCronJob', name: 'nightly', uid: UID, controller: true, blockOwnerDeletion: true },
      ],
    },
    spec: owner.spec?.jobTemplate,
  });
  t.not(c.spec, owner.spec?.jobTemplate, 'a copy, not the template itself');
});

t.test('one RayJob per tick; nothing before the first tick after creation', async (t) => {
  const owner = cronJob();
  t.same(kinds(decideRayCronJob(owner, [], at('2026-12-04T10:05:00Z'))), {
    kind: 'wait',
    until: '2026-12-04T10:10:00.000Z',
    lastScheduleTime: undefined,
    events: [],
  });
  const d = decideRayCronJob(owner, [], at('2026-12-04T10:10:02Z'));
  t.same(kinds(d), {
    kind: 'create',
    name: 'nightly-29939650',
    scheduledAt: '2026-12-04T10:10:00.000Z',
    lastScheduleTime: '2026-12-04T10:10:00Z',
    events: [],
  });
  t.equal(d.kind === 'create' && d.requeueAfterMs, 9 * 60_000 + 58_000 + 100, 'wake 100 ms after the next tick');
  // Recorded: nothing until the next tick, whether or not the cache shows the child yet.
  const recorded = cronJob({}, { lastScheduleTime: '2026-12-04T10:10:00Z' });
  for (const children of [[], [child(recorded, '2026-12-04T10:10:00Z')]]) {
    t.same(kinds(decideRayCronJob(recorded, children, at('2026-12-04T10:15:00Z'))), {
      kind: 'wait',
      until: '2026-12-04T10:20:00.000Z',
      lastScheduleTime: '2026-12-04T10:10:00Z',
      events: [],
    });
  }
  t.same(kinds(decideRayCronJob(recorded, [child(recorded, '2026-12-04T10:10:00Z')], at('2026-12-04T10:20:00Z'))).name, 'nightly-29939660');
});

t.test('the child of the due tick exists (status write lost, stale cache): recorded, not created twice', async (t) => {
  const owner = cronJob();
  const existing = child(owner, '2026-12-04T10:10:00Z');
  t.same(kinds(decideRayCronJob(owner, [existing], at('2026-12-04T10:10:05Z'))), {
    kind: 'wait',
    until: '2026-12-04T10:20:00.000Z',
    lastScheduleTime: '2026-12-04T10:10:00Z',
    events: [],
  });
});

t.test('downtime across three ticks: ONE catch-up run, for the latest tick', async (t) => {
  const owner = cronJob({}, { lastScheduleTime: '2026-12-04T10:10:00Z' });
  const d = decideRayCronJob(owner, [child(owner, '2026-12-04T10:10:00Z', 'Complete')], at('2026-12-04T10:47:00Z'));
  t.same(kinds(d), {
    kind: 'create',
    name: `nightly-${at('2026-12-04T10:40:00Z') / 60_000}`,
    scheduledAt: '2026-12-04T10:40:00.000Z',
    lastScheduleTime: '2026-12-04T10:40:00Z',
    events: [],
  });
  const after = cronJob({}, { lastScheduleTime: '2026-12-04T10:40:00Z' });
  t.equal(decideRayCronJob(after, [], at('2026-12-04T10:47:01Z')).kind, 'wait', 'the missed 10:20 and 10:30 never run');
});

t.test('@every: ticks counted from the creation, then from the last run', async (t) => {
  const owner = cronJob({ schedule: '@every 25m' });
  t.same(kinds(decideRayCronJob(owner, [], at('2026-12-04T10:20:00Z'))), {
    kind: 'wait',
    until: '2026-12-04T10:25:30.000Z',
    lastScheduleTime: undefined,
    events: [],
  });
  t.equal(kinds(decideRayCronJob(owner, [], at('2026-12-04T10:25:30Z'))).scheduledAt, '2026-12-04T10:25:30.000Z');
  const ran = cronJob({ schedule: '@every 25m' }, { lastScheduleTime: '2026-12-04T10:25:30Z' });
  t.equal(kinds(decideRayCronJob(ran, [], at('2026-12-04T11:44:00Z'))).scheduledAt, '2026-12-04T11:40:30.000Z', 'one catch-up run');
});

t.test('startingDeadlineSeconds: a tick older than that is skipped with MissSchedule', async (t) => {
  const owner = cronJob({ startingDeadlineSeconds: 60 }, { lastScheduleTime: '2026-12-04T10:10:00Z' });
  t.equal(decideRayCronJob(owner, [], at('2026-12-04T10:20:59Z')).kind, 'create', 'within the deadline');
  t.equal(decideRayCronJob(owner, [], at('2026-12-04T10:21:00Z')).kind, 'create', 'exactly at the deadline');
  const late = decideRayCronJob(owner, [], at('2026-12-04T10:21:01Z'));
  t.same(kinds(late), {
    kind: 'wait',
    until: '2026-12-04T10:30:00.000Z',
    lastScheduleTime: '2026-12-04T10:10:00Z',
    events: ['Warning MissSchedule'],
  });
  t.match(late.events[0]?.message, 'Missed scheduled time to start a RayJob: 2026-12-04T10:20:00Z');
  t.equal(decideRayCronJob(owner, [], at('2026-12-04T10:30:30Z')).kind, 'create', 'the next tick runs');
  t.equal(
    decideRayCronJob(cronJob({ startingDeadlineSeconds: 0 }), [], at('2026-12-04T10:10:00Z')).kind,
    'create',
    'deadline 0: on time only',
  );
});

t.test('suspend: no run, history still kept, the latest tick runs on resume (CronJob)', async (t) => {
  const owner = cronJob({ suspend: true }, { lastScheduleTime: '2026-12-04T10:10:00Z' });
  const d = decideRayCronJob(owner, [], at('2026-12-04T10:35:00Z'));
  t.same(kinds(d), { kind: 'nothing', lastScheduleTime: '2026-12-04T10:10:00Z', events: ['Normal SuspendedRayCronJob'] });
  const old = ['10:00', '10:10', '10:20', '10:30', '10:40'].map((m) => child(owner, `2026-12-04T${m}:00Z`, 'Complete'));
  t.same(kinds(decideRayCronJob(owner, old, at('2026-12-04T10:45:00Z'))).children, ['nightly-29939640', 'nightly-29939650']);
  const resumed = cronJob({}, { lastScheduleTime: '2026-12-04T10:10:00Z' });
  t.equal(kinds(decideRayCronJob(resumed, [], at('2026-12-04T10:35:00Z'))).scheduledAt, '2026-12-04T10:30:00.000Z');
});

t.test('concurrencyPolicy: Allow runs beside, Forbid waits (and runs late), Replace deletes first', async (t) => {
  const status = { lastScheduleTime: '2026-12-04T10:10:00Z' };
  const now = at('2026-12-04T10:20:01Z');
  for (const state of ['Running', 'New', 'Initializing', 'Suspended', 'Retrying']) {
    const running = child(cronJob(), '2026-12-04T10:10:00Z', state);
    t.equal(decideRayCronJob(cronJob({ concurrencyPolicy: 'Allow' }, status), [running], now).kind, 'create', `Allow beside ${state}`);
    t.equal(decideRayCronJob(cronJob({}, status), [running], now).kind, 'create', `absent = Allow beside ${state}`);
    const forbid = decideRayCronJob(cronJob({ concurrencyPolicy: 'Forbid' }, status), [running], now);
    t.same(kinds(forbid), {
      kind: 'wait',
      until: '2026-12-04T10:30:00.000Z',
      lastScheduleTime: '2026-12-04T10:10:00Z',
      events: ['Normal JobAlreadyActive'],
    });
    const replace = decideRayCronJob(cronJob({ concurrencyPolicy: 'Replace' }, status), [running], now);
    t.same(kinds(replace), {
      kind: 'delete',
      why: 'Replace',
      children: ['nightly-29939650'],
      lastScheduleTime: '2026-12-04T10:10:00Z',
      events: [],
    });
  }
  for (const state of ['Complete', 'Failed', 'ValidationFailed']) {
    const done = child(cronJob(), '2026-12-04T10:10:00Z', state);
    t.equal(decideRayCronJob(cronJob({ concurrencyPolicy: 'Forbid' }, status), [done], now).kind, 'create', `Forbid after ${state}`);
    t.equal(decideRayCronJob(cronJob({ concurrencyPolicy: 'Replace' }, status), [done], now).kind, 'create', `Replace after ${state}`);
  }
  // Forbid: the tick stays due; when the child finishes (still before the next tick) it runs, late.
  const finished = child(cronJob(), '2026-12-04T10:10:00Z', 'Complete');
  t.equal(
    kinds(decideRayCronJob(cronJob({ concurrencyPolicy: 'Forbid' }, status), [finished], at('2026-12-04T10:27:00Z'))).scheduledAt,
    '2026-12-04T10:20:00.000Z',
  );
  // Replace: a child being deleted is already gone.
  const going = child(cronJob(), '2026-12-04T10:10:00Z', 'Running', { deletionTimestamp: '2026-12-04T10:20:01Z' });
  t.equal(decideRayCronJob(cronJob({ concurrencyPolicy: 'Replace' }, status), [going], now).kind, 'create');
  t.equal(decideRayCronJob(cronJob({ concurrencyPolicy: 'Forbid' }, status), [going], now).kind, 'create');
});

t.test('history limits: the oldest finished beyond 3 succeeded / 1 failed (defaults) or the spec', async (t) => {
  const status = { lastScheduleTime: '2026-12-04T11:00:00Z' };
  const now = at('2026-12-04T11:05:00Z');
  const owner = cronJob({}, status);
  const mk = (minute: string, state: string) => child(owner, `2026-12-04T${minute}:00Z`, state);
  // Listed out of order: sorted by the scheduled-timestamp annotation.
  const children = [
    mk('10:50', 'Complete'),
    mk('10:00', 'Complete'),
    mk('10:20', 'Failed'),
    mk('10:30', 'Complete'),
    mk('10:10', 'Complete'),
  ];
  children.push(mk('10:40', 'ValidationFailed'), mk('11:00', 'Running'));
  t.same(kinds(decideRayCronJob(owner, children, now)), {
    kind: 'delete',
    why: 'history',
    children: ['nightly-29939640', 'nightly-29939660'],
    lastScheduleTime: '2026-12-04T11:00:00Z',
    events: [],
  });
  const keepAll = cronJob({ successfulJobsHistoryLimit: 10, failedJobsHistoryLimit: 10 }, status);
  t.equal(decideRayCronJob(keepAll, children, now).kind, 'wait');
  const keepNone = cronJob({ successfulJobsHistoryLimit: 0, failedJobsHistoryLimit: 0 }, status);
  t.same(kinds(decideRayCronJob(keepNone, children, now)).children?.length, 6, 'every finished child, never the running one');
  // A RayJob of someone else's, same label or not, is never counted.
  const stranger = mk('09:00', 'Complete');
  stranger.metadata.ownerReferences = [
    { apiVersion: 'ray.io/v1', kind: 'RayCronJob', name: 'nightly', uid: 'another-uid', controller: true },
  ];
  t.equal(decideRayCronJob(keepAll, [...children, stranger], now).kind, 'wait');
  // A due tick goes first; history after.
  t.equal(decideRayCronJob(owner, children, at('2026-12-04T11:10:00Z')).kind, 'create');
});

t.test('invalid specs: nothing, Warning InvalidRayCronJobSpec (KubeRay); being deleted: nothing', async (t) => {
  const cases: Array<[Partial<RayCronJobSpec>, RegExp]> = [
    [{ schedule: 'every minute' }, /expected exactly 5 fields/],
    [{ schedule: '* * * * *', timeZone: 'Mars/Olympus' }, /unknown time zone/],
    [{ concurrencyPolicy: 'Sometimes' }, /concurrencyPolicy must be Allow, Forbid or Replace/],
    [{ startingDeadlineSeconds: -1 }, /startingDeadlineSeconds must be a non-negative integer/],
    [{ successfulJobsHistoryLimit: 1.5 }, /successfulJobsHistoryLimit must be a non-negative integer/],
    [
      { jobTemplate: { entrypoint: 'x' } },
      /invalid RayJob template: The RayJob spec is invalid: one of RayClusterSpec or ClusterSelector must be set/,
    ],
  ];
  for (const [spec, want] of cases) {
    const d = decideRayCronJob(cronJob(spec), [], at('2026-12-04T10:10:00Z'));
    t.equal(d.kind, 'nothing');
    t.equal(d.events[0]?.reason, 'InvalidRayCronJobSpec');
    t.match(d.events[0]?.message, /^ml\/nightly: /);
    t.match(d.events[0]?.message, want);
  }
  const dotted = validateRayCronJob(cronJob({}, undefined, 'nightly.v2'));
  t.match(dotted, {
    ok: false,
    message: /invalid RayJob template: The RayJob metadata is invalid: RayJob name should be a valid DNS1035 label/,
  });
  t.match(validateRayCronJob(cronJob({}, undefined, 'x'.repeat(64))), { ok: false, message: /no more than 63 characters/ });
  const deleting = cronJob();
  deleting.metadata.deletionTimestamp = '2026-12-04T10:09:00Z';
  t.same(kinds(decideRayCronJob(deleting, [], at('2026-12-04T10:10:00Z'))), { kind: 'nothing', lastScheduleTime: undefined, events: [] });
});

t.test('child phases: Complete succeeded, Failed and ValidationFailed failed, the rest active', async (t) => {
  const owner = cronJob();
  const phase = (state: string | undefined) => {
    const c = child(owner, '2026-12-04T10:10:00Z');
    c.status = state === undefined ? {} : { jobDeploymentStatus: state };
    return childPhase(c);
  };
  t.same(['Complete', 'Failed', 'ValidationFailed', 'Running', 'New', '', undefined, 'Waiting', 'Suspending'].map(phase), [
    'succeeded',
    'failed',
    'failed',
    'active',
    'active',
    'active',
    'active',
    'active',
    'active',
  ]);
});
