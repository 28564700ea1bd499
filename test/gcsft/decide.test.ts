import t, { type Test } from 'tap';
import {
  clusterPods,
  decideRayClusterCleanup,
  deletionDeadlineMs,
  headOnNode,
  HEAD_POD_WAIT_MS,
  JOB_WAIT_MS,
  type RayClusterCleanupDecision,
  type RayClusterCleanupInput,
} from '../../src/gcsft/decide.ts';
import { cluster, job, pod, T0, withFinalizer } from './fixtures.ts';

interface Row {
  name: string;
  input: Partial<RayClusterCleanupInput> & Pick<RayClusterCleanupInput, 'cluster'>;
  action: RayClusterCleanupDecision['action'];
  check?: (d: RayClusterCleanupDecision, tt: Test) => void;
}

const S = 1000;
const OTHER = 'ffffffff-0000-0000-0000-000000000000';

const rows: Row[] = [
  // Not deleting.
  { name: 'FT via annotation, no finalizer -> add', input: { cluster: cluster() }, action: 'addFinalizer' },
  { name: 'FT via options, no finalizer -> add', input: { cluster: cluster({ ft: 'options' }) }, action: 'addFinalizer' },
  {
    name: 'spec.managedBy MultiKueue -> hands off',
    input: { cluster: { ...cluster(), spec: { ...cluster().spec, managedBy: 'kueue.x-k8s.io/multikueue' } } },
    action: 'nothing',
  },
  {
    name: 'spec.managedBy KubeRay -> add',
    input: { cluster: { ...cluster(), spec: { ...cluster().spec, managedBy: 'ray.io/kuberay-operator' } } },
    action: 'addFinalizer',
  },
  { name: 'other finalizers only -> add ours', input: { cluster: cluster({ finalizers: ['example.com/keep'] }) }, action: 'addFinalizer' },
  {
    name: 'FT via annotation, finalizer present -> nothing',
    input: { cluster: cluster({ finalizers: withFinalizer }) },
    action: 'nothing',
  },
  { name: 'FT off -> nothing', input: { cluster: cluster({ ft: 'off' }) }, action: 'nothing' },
  {
    name: 'both the FT annotation and gcsFaultToleranceOptions -> nothing, as the webhook (KubeRay rejects it)',
    input: {
      cluster: {
        ...cluster({ ft: 'options' }),
        metadata: { ...cluster({ ft: 'options' }).metadata, annotations: { 'ray.io/ft-enabled': 'true' } },
      },
    },
    action: 'nothing',
    check: (d, tt) => tt.match(d, { reason: /both the ray\.io\/ft-enabled annotation and spec\.gcsFaultToleranceOptions/ }),
  },
  { name: 'rocksdb backend -> nothing', input: { cluster: cluster({ ft: 'rocksdb' }) }, action: 'nothing' },
  { name: 'gate off, FT on, no finalizer -> nothing', input: { cluster: cluster(), gateEnabled: false }, action: 'nothing' },
  {
    name: 'annotation "TRUE" counts as on',
    input: { cluster: cluster({ ft: 'off', annotations: { 'ray.io/ft-enabled': 'TRUE' } }) },
    action: 'addFinalizer',
  },

  // Deleting, not ours.
  {
    name: 'deleting without our finalizer -> nothing',
    input: { cluster: cluster({ deletedAt: T0, finalizers: ['x/y'] }) },
    action: 'nothing',
  },

  // Deleting with our finalizer: preconditions.
  {
    name: 'gate off while deleting -> release with a warning naming the namespace',
    input: { cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }), gateEnabled: false },
    action: 'releaseFinalizer',
    check: (d, tt) => {
      if (d.action !== 'releaseFinalizer') return;
      tt.equal(d.reason, 'gate-off');
      tt.equal(d.event?.type, 'Warning');
      tt.match(d.event?.message ?? '', /0b7c1a52-5f7e-4b8e-9a43-2d1f0c2e9f10/);
      tt.match(d.event?.message ?? '', /raykeeper redis-cleanup/);
    },
  },
  {
    name: 'FT turned off before deletion -> release quietly',
    input: { cluster: cluster({ ft: 'off', deletedAt: T0, finalizers: withFinalizer }) },
    action: 'releaseFinalizer',
    check: (d, tt) => d.action === 'releaseFinalizer' && tt.equal(d.event, undefined),
  },
  {
    name: 'rocksdb (embedded GCS storage) with a stale Redis finalizer -> release quietly, nothing in Redis to clean',
    input: { cluster: cluster({ ft: 'rocksdb', deletedAt: T0, finalizers: withFinalizer }) },
    action: 'releaseFinalizer',
    check: (d, tt) => d.action === 'releaseFinalizer' && tt.equal(d.event, undefined),
  },
  {
    name: "namespace with '@' -> release with RedisCleanupSkipped",
    input: { cluster: cluster({ deletedAt: T0, finalizers: withFinalizer, annotations: { 'ray.io/external-storage-namespace': 'a@b' } }) },
    action: 'releaseFinalizer',
    check: (d, tt) => d.action === 'releaseFinalizer' && tt.equal(d.event?.reason, 'RedisCleanupSkipped'),
  },
  {
    name: 'no Redis address anywhere -> release with RedisCleanupSkipped',
    input: { cluster: cluster({ deletedAt: T0, finalizers: withFinalizer, env: [] }) },
    action: 'releaseFinalizer',
    check: (d, tt) => d.action === 'releaseFinalizer' && tt.match(d.event?.message ?? '', /no Redis address/),
  },

  {
    name: 'namespace from a Secret key in the head env -> cleaned (the Job resolves it as the head did)',
    input: {
      cluster: cluster({
        deletedAt: T0,
        finalizers: withFinalizer,
        env: [
          { name: 'RAY_REDIS_ADDRESS', value: 'redis:6379' },
          { name: 'RAY_external_storage_namespace', valueFrom: { secretKeyRef: { name: 'gcs', key: 'ns' } } },
        ],
      }),
    },
    action: 'createJob',
  },
  {
    name: "namespace from the head pod's own fields -> release with RedisCleanupSkipped (the Job's pod would read its own)",
    input: {
      cluster: cluster({
        deletedAt: T0,
        finalizers: withFinalizer,
        env: [
          { name: 'RAY_REDIS_ADDRESS', value: 'redis:6379' },
          { name: 'RAY_external_storage_namespace', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        ],
      }),
    },
    action: 'releaseFinalizer',
    check: (d, tt) =>
      tt.match(d, { event: { reason: 'RedisCleanupSkipped', message: /fieldRef, which the cleanup Job's pod would resolve/ } }),
  },

  // Pods.
  {
    name: 'head and worker alive -> delete both (not the cleanup pod)',
    input: {
      cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }),
      pods: [pod('demo-head', 'head'), pod('demo-worker-1', 'worker'), pod('demo-redis-cleanup-abc', 'redis-cleanup')],
    },
    action: 'deletePods',
    check: (d, tt) => d.action === 'deletePods' && tt.same(d.pods, ['demo-head', 'demo-worker-1']),
  },
  {
    name: 'head terminating -> wait 10 s',
    input: { cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }), pods: [pod('demo-head', 'head', true)] },
    action: 'waitForHeadGone',
    check: (d, tt) => d.action === 'waitForHeadGone' && tt.equal(d.requeueAfterMs, HEAD_POD_WAIT_MS),
  },
  {
    name: 'only workers terminating -> create the Job (workers do not write to Redis)',
    input: { cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }), pods: [pod('demo-worker-1', 'worker', true)] },
    action: 'createJob',
  },
  {
    name: 'head terminating near the deadline -> wait only until the deadline',
    input: { cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }), pods: [pod('demo-head', 'head', true)], now: T0 + 297 * S },
    action: 'waitForHeadGone',
    check: (d, tt) =>
      d.action === 'waitForHeadGone' && tt.ok(d.requeueAfterMs <= 3 * S + 50 && d.requeueAfterMs >= 3 * S, `${d.requeueAfterMs}`),
  },

  // One live owner per storage namespace (issue 45): checked where the Job would be created.
  {
    name: 'another LIVE cluster claims the namespace on the same Redis -> release without cleaning, naming it',
    input: {
      cluster: cluster({ deletedAt: T0, finalizers: withFinalizer, annotations: { 'ray.io/external-storage-namespace': 'shared' } }),
      claimants: [{ cluster: 'team-b/b', deleting: false, match: 'same' }],
    },
    action: 'releaseFinalizer',
    check: (d, tt) => {
      if (d.action !== 'releaseFinalizer') return;
      tt.equal(d.reason, 'shared-namespace');
      tt.equal(d.event?.type, 'Warning');
      tt.equal(d.event?.reason, 'RedisCleanupSkippedSharedNamespace');
      tt.match(
        d.event?.message ?? '',
        /storage namespace "shared" in Redis at redis:6379 is also the storage namespace of live RayCluster team-b\/b/,
      );
      tt.match(d.event?.message ?? '', /kept the data/);
    },
  },
  {
    name: "a claimant whose Redis is not known here ('maybe') -> kept too, saying so",
    input: {
      cluster: cluster({ deletedAt: T0, finalizers: withFinalizer, annotations: { 'ray.io/external-storage-namespace': 'shared' } }),
      claimants: [{ cluster: 'team-b/b', deleting: false, match: 'maybe' }],
    },
    action: 'releaseFinalizer',
    check: (d, tt) => tt.match(d, { reason: 'shared-namespace', event: { message: /team-b\/b, whose Redis address is not known here/ } }),
  },
  {
    name: 'the only claimant is being deleted too -> create the Job (both go)',
    input: {
      cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }),
      claimants: [{ cluster: 'team-b/b', deleting: true, match: 'same' }],
    },
    action: 'createJob',
  },
  {
    name: 'a live claimant, but the head pod still exists -> wait first (the guard is decided last, on the freshest view)',
    input: {
      cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }),
      pods: [pod('demo-head', 'head', true)],
      claimants: [{ cluster: 'team-b/b', deleting: false, match: 'same' }],
    },
    action: 'waitForHeadGone',
  },
  {
    name: 'a live claimant after the timeout -> the timeout release (the data stays either way)',
    input: {
      cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }),
      now: T0 + 301 * S,
      claimants: [{ cluster: 'team-b/b', deleting: false, match: 'same' }],
    },
    action: 'forceRelease',
  },

  // Job lifecycle.
  {
    name: 'no pods, no Job -> create it with the deadline',
    input: { cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }) },
    action: 'createJob',
    check: (d, tt) => {
      if (d.action !== 'createJob') return;
      tt.equal(d.jobName, 'demo-redis-cleanup');
      tt.equal(d.deadlineMs, T0 + 300 * S);
      tt.equal(d.requeueAfterMs, JOB_WAIT_MS);
    },
  },
  {
    name: 'Job running -> wait 2 s',
    input: { cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }), job: job() },
    action: 'waitForJob',
  },
  {
    name: 'Job Complete -> release, Normal event',
    input: { cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }), job: job({ condition: 'Complete' }) },
    action: 'releaseFinalizer',
    check: (d, tt) => {
      if (d.action !== 'releaseFinalizer') return;
      tt.equal(d.reason, 'job-complete');
      tt.equal(d.event?.type, 'Normal');
    },
  },
  {
    name: 'Job SuccessCriteriaMet -> release',
    input: { cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }), job: job({ condition: 'SuccessCriteriaMet' }) },
    action: 'releaseFinalizer',
  },
  {
    name: 'Job Failed -> release, Warning with reason, namespace and command',
    input: {
      cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }),
      job: job({ condition: 'Failed', reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' }),
    },
    action: 'releaseFinalizer',
    check: (d, tt) => {
      if (d.action !== 'releaseFinalizer') return;
      tt.equal(d.reason, 'job-failed');
      tt.equal(d.event?.type, 'Warning');
      tt.equal(d.event?.reason, 'RedisCleanupFailed');
      tt.match(d.event?.message ?? '', /BackoffLimitExceeded/);
      tt.match(d.event?.message ?? '', /"0b7c1a52-5f7e-4b8e-9a43-2d1f0c2e9f10"/);
      tt.match(
        d.event?.message ?? '',
        /RAY_external_storage_namespace=0b7c1a52-5f7e-4b8e-9a43-2d1f0c2e9f10 RAY_REDIS_ADDRESS=redis:6379 raykeeper redis-cleanup/,
      );
    },
  },
  {
    name: 'Job FailureTarget (before Failed) -> release',
    input: {
      cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }),
      job: job({ condition: 'FailureTarget', reason: 'DeadlineExceeded' }),
    },
    action: 'releaseFinalizer',
  },
  {
    name: 'Job Complete after the timeout -> still a normal release (the data is gone)',
    input: { cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }), job: job({ condition: 'Complete' }), now: T0 + 400 * S },
    action: 'releaseFinalizer',
  },

  // A head pod that appeared after the Job was created (an operator acting on a stale cache).
  {
    name: 'Job Complete but a head pod exists -> delete the Job to clean again, Warning naming the head',
    input: {
      cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }),
      job: job({ condition: 'Complete' }),
      pods: [pod('demo-head', 'head'), pod('demo-worker-1', 'worker')],
    },
    action: 'rerunCleanup',
    check: (d, tt) => {
      if (d.action !== 'rerunCleanup') return;
      tt.equal(d.jobName, 'demo-redis-cleanup');
      tt.equal(d.jobUid, 'job-uid-1');
      tt.equal(d.event.type, 'Warning');
      tt.equal(d.event.reason, 'RedisCleanupRerun');
      tt.match(d.event.message, /demo-head/);
      tt.match(d.event.message, /0b7c1a52-5f7e-4b8e-9a43-2d1f0c2e9f10/);
    },
  },
  {
    name: 'Job Failed and a head pod terminating -> clean again too',
    input: {
      cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }),
      job: job({ condition: 'Failed' }),
      pods: [pod('demo-head', 'head', true)],
    },
    action: 'rerunCleanup',
  },
  {
    name: 'Job Complete with only a worker pod -> release (workers do not write to Redis)',
    input: {
      cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }),
      job: job({ condition: 'Complete' }),
      pods: [pod('demo-worker-1', 'worker')],
    },
    action: 'releaseFinalizer',
  },
  {
    name: 'Job Complete, the cleanup pod still listed -> release (it is not a Ray pod)',
    input: {
      cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }),
      job: job({ condition: 'Complete' }),
      pods: [pod('demo-redis-cleanup-abc', 'redis-cleanup')],
    },
    action: 'releaseFinalizer',
  },
  {
    name: 'Job Complete but a head pod exists after the timeout -> force release',
    input: {
      cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }),
      job: job({ condition: 'Complete' }),
      pods: [pod('demo-head', 'head')],
      now: T0 + 300 * S,
    },
    action: 'forceRelease',
  },
  {
    name: 'our Job being deleted (e.g. its namespace going), unfinished -> wait 1 s for it to go',
    input: { cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }), job: job({ deleting: true }) },
    action: 'waitForJob',
    check: (d, tt) => d.action === 'waitForJob' && tt.equal(d.requeueAfterMs, 1000),
  },
  {
    name: 'our Job being deleted with a head pod after it finished -> wait for it to go, not a second delete',
    input: {
      cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }),
      job: job({ deleting: true, condition: 'Complete' }),
      pods: [pod('demo-head', 'head')],
    },
    action: 'waitForJob',
  },
  {
    name: 'our Job Complete and being deleted (its namespace going), no head -> release',
    input: { cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }), job: job({ deleting: true, condition: 'Complete' }) },
    action: 'releaseFinalizer',
  },

  // Timeout.
  {
    name: 'timeout with the Job still running -> force release',
    input: { cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }), job: job(), now: T0 + 300 * S },
    action: 'forceRelease',
    check: (d, tt) => {
      if (d.action !== 'forceRelease') return;
      tt.equal(d.event.reason, 'ForceDeletedStuckCluster');
      tt.equal(d.event.type, 'Warning');
      tt.match(d.event.message, /0b7c1a52-5f7e-4b8e-9a43-2d1f0c2e9f10/);
    },
  },
  {
    name: 'timeout with the head pod stuck -> force release (KubeRay would wait for ever)',
    input: { cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }), pods: [pod('demo-head', 'head', true)], now: T0 + 301 * S },
    action: 'forceRelease',
  },
  {
    name: 'custom timeout annotation 5 s -> force release after 5 s',
    input: {
      cluster: cluster({ deletedAt: T0, finalizers: withFinalizer, annotations: { 'ray.io/gcs-ft-deletion-timeout': '5' } }),
      job: job(),
      now: T0 + 5 * S,
    },
    action: 'forceRelease',
  },
  {
    name: 'custom timeout annotation 5 s, 4 s in -> wait capped to the deadline',
    input: {
      cluster: cluster({ deletedAt: T0, finalizers: withFinalizer, annotations: { 'ray.io/gcs-ft-deletion-timeout': '5' } }),
      job: job(),
      now: T0 + 4.5 * S,
    },
    action: 'waitForJob',
    check: (d, tt) => d.action === 'waitForJob' && tt.ok(d.requeueAfterMs <= 550, `${d.requeueAfterMs}`),
  },
  {
    name: 'invalid timeout annotation -> default 300 s',
    input: {
      cluster: cluster({ deletedAt: T0, finalizers: withFinalizer, annotations: { 'ray.io/gcs-ft-deletion-timeout': '-3' } }),
      job: job(),
      now: T0 + 299 * S,
    },
    action: 'waitForJob',
  },

  // Stale Job of an earlier cluster with the same name.
  {
    name: 'Job owned by another RayCluster UID -> delete it first',
    input: { cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }), job: job({ ownerUid: OTHER, condition: 'Complete' }) },
    action: 'deleteStaleJob',
    check: (d, tt) => d.action === 'deleteStaleJob' && tt.equal(d.jobUid, 'job-uid-1'),
  },
  {
    name: 'foreign Job already being deleted -> wait',
    input: { cluster: cluster({ deletedAt: T0, finalizers: withFinalizer }), job: job({ ownerUid: OTHER, deleting: true }) },
    action: 'waitForJob',
  },
];

for (const row of rows) {
  t.test(row.name, async (tt) => {
    const d = decideRayClusterCleanup({ pods: [], job: undefined, now: T0 + 1000, gateEnabled: true, ...row.input });
    tt.equal(d.action, row.action, JSON.stringify(d));
    row.check?.(d, tt);
  });
}

t.test('deadline = deletionTimestamp + timeout', async (tt) => {
  tt.equal(deletionDeadlineMs(cluster({ deletedAt: T0 }), 0), T0 + 300_000);
  tt.equal(deletionDeadlineMs(cluster({ deletedAt: T0, annotations: { 'ray.io/gcs-ft-deletion-timeout': '60' } }), 0), T0 + 60_000);
});

t.test('the decision never depends on anything but its input (same input, same answer)', async (tt) => {
  for (const row of rows) {
    const input = { pods: [], job: undefined, now: T0 + 1000, gateEnabled: true, ...row.input };
    tt.same(decideRayClusterCleanup(structuredClone(input)), decideRayClusterCleanup(structuredClone(input)), row.name);
  }
});

t.test('headOnNode: look again at once only when no head pod runs on a node', async (tt) => {
  const onNode = (p: ReturnType<typeof pod>) => ({ ...p, spec: { nodeName: 'n1' } });
  const rows: Array<[string, ReturnType<typeof pod>[], boolean]> = [
    ['no pods', [], false],
    ['an unscheduled head (gone as soon as deleted)', [pod('h', 'head', true)], false],
    ['a scheduled head', [onNode(pod('h', 'head', true))], true],
    ['scheduled workers, unscheduled head', [pod('h', 'head'), onNode(pod('w', 'worker'))], false],
    ['an empty nodeName', [{ ...pod('h', 'head'), spec: { nodeName: '' } }], false],
    ['a cleanup pod on a node is no head', [onNode(pod('c', 'redis-cleanup'))], false],
  ];
  for (const [name, pods, want] of rows) tt.equal(headOnNode(pods), want, name);
});

t.test('clusterPods: the cluster by label, owned by its UID or by no RayCluster', async (tt) => {
  const UID = 'aaaaaaaa-0000-0000-0000-000000000000';
  const owned = (p: ReturnType<typeof pod>, uid: string, kind = 'RayCluster') => ({
    ...p,
    metadata: { ...p.metadata, ownerReferences: [{ kind, uid }] },
  });
  const other = pod('o', 'head');
  other.metadata!.labels = { 'ray.io/cluster': 'other', 'ray.io/node-type': 'head' };
  const rows: Array<[string, ReturnType<typeof pod>, boolean]> = [
    ['owned by this cluster', owned(pod('h', 'head'), UID), true],
    ['no owner (made by hand with the label)', pod('w', 'worker'), true],
    ['owned by something else than a RayCluster', owned(pod('w', 'worker'), OTHER, 'ReplicaSet'), true],
    ['owned by a newer cluster of the same name', owned(pod('h2', 'head'), OTHER), false],
    ['another cluster by label', other, false],
  ];
  for (const [name, p, want] of rows) tt.equal(clusterPods([p], 'demo', UID).length, want ? 1 : 0, name);
});
