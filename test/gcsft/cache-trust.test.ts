import t from 'tap';
import { cachedStep, createJobPods, decisionStands, type CachedStep, type CacheTrustInput } from '../../src/gcsft/cache-trust.ts';
import { decideRayClusterCleanup, type PodLite, type RayClusterCleanupDecision, type ReleaseReason } from '../../src/gcsft/decide.ts';
import { cluster, job, pod, T0, withFinalizer } from './fixtures.ts';

const EVENT = { type: 'Normal' as const, reason: 'R', message: 'm' };
type Action = RayClusterCleanupDecision['action'];
const D: { [A in Action]: Extract<RayClusterCleanupDecision, { action: A }> } = {
  nothing: { action: 'nothing', reason: 'not ours' },
  addFinalizer: { action: 'addFinalizer' },
  deletePods: { action: 'deletePods', pods: ['demo-head'], requeueAfterMs: 1000 },
  waitForHeadGone: { action: 'waitForHeadGone', requeueAfterMs: 10_000 },
  deleteStaleJob: { action: 'deleteStaleJob', jobName: 'demo-redis-cleanup', jobUid: 'u', requeueAfterMs: 1000 },
  rerunCleanup: { action: 'rerunCleanup', jobName: 'demo-redis-cleanup', jobUid: 'u', event: EVENT, requeueAfterMs: 1000 },
  createJob: { action: 'createJob', jobName: 'demo-redis-cleanup', deadlineMs: T0 + 300_000, requeueAfterMs: 10_000 },
  waitForJob: { action: 'waitForJob', jobName: 'demo-redis-cleanup', requeueAfterMs: 10_000 },
  releaseFinalizer: { action: 'releaseFinalizer', reason: 'job-complete', event: EVENT },
  forceRelease: { action: 'forceRelease', event: EVENT },
};
const release = (reason: ReleaseReason): Extract<RayClusterCleanupDecision, { action: 'releaseFinalizer' }> => ({
  action: 'releaseFinalizer',
  reason,
  event: EVENT,
});

const base: Omit<CacheTrustInput, 'decision'> = { finishedJobNotCreatedHere: false, wholeCluster: true, hasUid: true };
const rows: Array<{ name: string; input: CacheTrustInput; want: CachedStep }> = [
  // 1. A finished Job this process did not create: fresh, whatever was decided.
  ...(Object.keys(D) as Action[]).map((a) => ({
    name: `${a}, the finished Job not created here -> fresh`,
    input: { ...base, decision: D[a], finishedJobNotCreatedHere: true },
    want: { step: 'fresh' as const },
  })),
  // 2. Waits and pod deletions act on the caches, with or without whole specs.
  { name: 'waitForJob -> wait', input: { ...base, decision: D.waitForJob }, want: { step: 'wait', decision: D.waitForJob } },
  { name: 'waitForHeadGone -> wait', input: { ...base, decision: D.waitForHeadGone }, want: { step: 'wait', decision: D.waitForHeadGone } },
  {
    name: 'waitForJob, FT view only -> wait',
    input: { ...base, wholeCluster: false, decision: D.waitForJob },
    want: { step: 'wait', decision: D.waitForJob },
  },
  { name: 'deletePods -> deletePods', input: { ...base, decision: D.deletePods }, want: { step: 'deletePods', decision: D.deletePods } },
  {
    name: 'deletePods, FT view only -> deletePods',
    input: { ...base, wholeCluster: false, decision: D.deletePods },
    want: { step: 'deletePods', decision: D.deletePods },
  },
  // createJob: only from a whole spec, of a cluster with a UID.
  {
    name: 'createJob, whole spec -> createJob',
    input: { ...base, decision: D.createJob },
    want: { step: 'createJob', decision: D.createJob },
  },
  { name: 'createJob, FT view only -> fresh', input: { ...base, wholeCluster: false, decision: D.createJob }, want: { step: 'fresh' } },
  { name: 'createJob, no UID -> fresh', input: { ...base, hasUid: false, decision: D.createJob }, want: { step: 'fresh' } },
  // releaseFinalizer: after the Job only; confirmed on listed pods when another operator makes them.
  {
    name: 'release after a complete Job, operator here -> release',
    input: { ...base, decision: release('job-complete') },
    want: { step: 'release', decision: release('job-complete'), confirmOnListedPods: false },
  },
  {
    name: 'release after a failed Job, operator here -> release',
    input: { ...base, decision: release('job-failed') },
    want: { step: 'release', decision: release('job-failed'), confirmOnListedPods: false },
  },
  {
    name: 'release after a complete Job, KubeRay makes the pods -> release on listed pods',
    input: { ...base, wholeCluster: false, decision: release('job-complete') },
    want: { step: 'release', decision: release('job-complete'), confirmOnListedPods: true },
  },
  {
    name: 'release after a failed Job, KubeRay makes the pods -> release on listed pods',
    input: { ...base, wholeCluster: false, decision: release('job-failed') },
    want: { step: 'release', decision: release('job-failed'), confirmOnListedPods: true },
  },
  { name: 'release for the gate off -> fresh', input: { ...base, decision: release('gate-off') }, want: { step: 'fresh' } },
  { name: 'release for a shared namespace -> fresh', input: { ...base, decision: release('shared-namespace') }, want: { step: 'fresh' } },
  { name: 'release without Redis -> fresh', input: { ...base, decision: release('no-redis') }, want: { step: 'fresh' } },
  { name: 'release for an unusable config -> fresh', input: { ...base, decision: release('unusable-config') }, want: { step: 'fresh' } },
  // Everything else on fresh reads.
  { name: 'forceRelease -> fresh', input: { ...base, decision: D.forceRelease }, want: { step: 'fresh' } },
  { name: 'deleteStaleJob -> fresh', input: { ...base, decision: D.deleteStaleJob }, want: { step: 'fresh' } },
  { name: 'rerunCleanup -> fresh', input: { ...base, decision: D.rerunCleanup }, want: { step: 'fresh' } },
  { name: 'addFinalizer -> fresh', input: { ...base, decision: D.addFinalizer }, want: { step: 'fresh' } },
  { name: 'nothing -> fresh', input: { ...base, decision: D.nothing }, want: { step: 'fresh' } },
];

t.test('cachedStep', async (t) => {
  for (const row of rows) t.same(cachedStep(row.input), row.want, row.name);
});

t.test('createJobPods: the pod cache only when the gate shows it holds every pod this process created', async (t) => {
  t.equal(createJobPods(true), 'cached');
  t.equal(createJobPods(false), 'listed');
});

t.test('decisionStands', async (t) => {
  const deleting = cluster({ finalizers: withFinalizer, deletedAt: T0 });
  const input = { cluster: deleting, job: undefined, now: T0, gateEnabled: true };
  const d = decideRayClusterCleanup({ ...input, pods: [] });
  t.equal(d.action, 'createJob', 'the control: no pods, no Job -> create the Job');
  const otherUid: PodLite = {
    metadata: { ...pod('demo-worker-1', 'worker').metadata, ownerReferences: [{ kind: 'RayCluster', uid: 'ffffffff-0000' }] },
  };
  const ours: PodLite = {
    metadata: { ...pod('demo-worker-1', 'worker').metadata, ownerReferences: [{ kind: 'RayCluster', uid: deleting.metadata.uid }] },
  };
  const table: Array<{ name: string; pods: PodLite[]; want: boolean }> = [
    { name: 'no pods: stands', pods: [], want: true },
    { name: 'a head pod appeared: does not stand (delete the pods first)', pods: [pod('demo-head', 'head')], want: false },
    { name: 'a pod of another RayCluster UID: the cached copy is old', pods: [otherUid], want: false },
    { name: 'a worker of this cluster not yet deleting: does not stand (delete it first)', pods: [ours], want: false },
    { name: 'a deleting worker of this cluster, no head: stands', pods: [pod('demo-worker-1', 'worker', true)], want: true },
  ];
  for (const row of table) t.equal(decisionStands({ ...input, decision: d, pods: row.pods }), row.want, row.name);
  const finished = job({ condition: 'Complete' });
  const released = decideRayClusterCleanup({ ...input, pods: [], job: finished });
  t.equal(released.action, 'releaseFinalizer', 'the control: a complete Job, no head -> release');
  t.equal(decisionStands({ ...input, job: finished, decision: released, pods: [] }), true, 'release stands on no pods');
  t.equal(
    decisionStands({ ...input, job: finished, decision: released, pods: [pod('demo-head', 'head')] }),
    false,
    'a head made while the Job ran: release does not stand',
  );
});
