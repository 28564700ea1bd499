// The concern raised on the seed: a stale informer cache or squashed events must not apply a
// transition twice or skip one. Proved on the real kube-apiserver: a reconcile fed an OLD copy, and
// two replicas reconciling the same RayJob concurrently, each yield exactly one of every transition.
import t from 'tap';
import { Watch } from '@kubernetes/client-node';
import type { RayJob } from '../../src/types.ts';
import { inState, manifest, rayJobHarness, type Harness } from './helpers/harness.ts';
import { sleep } from '../../kube/backoff.ts';

/** Every stored version of a RayJob, in order, from a real watch. */
interface VersionLog {
  versions: RayJob[];
  /** Resolves once the watch has delivered the RayJob as it is stored now. */
  caughtUp(): Promise<void>;
}

/** Opens the watch and returns once it delivered its first event (the RayJob as stored when it opened). */
async function recordVersions(t: Tap, h: Harness, name: string): Promise<VersionLog> {
  const versions: RayJob[] = [];
  let delivered = () => {};
  const watch = new Watch(h.ns.kubeConfig);
  const req = await watch.watch(
    `/apis/ray.io/v1/namespaces/${h.namespace}/rayjobs`,
    { fieldSelector: `metadata.name=${name}` },
    (_phase, obj: RayJob) => {
      versions.push(obj);
      delivered();
    },
    () => undefined,
  );
  t.teardown(() => req.abort());
  const delivers = (rv: string | undefined, what: string) =>
    new Promise<void>((resolve, reject) => {
      const has = () => versions.some((v) => rv === undefined || v.metadata.resourceVersion === rv);
      if (has()) return resolve();
      const timer = setTimeout(() => reject(new Error(`the watch did not deliver ${what} within 10 s`)), 10_000);
      delivered = () => {
        if (!has()) return;
        clearTimeout(timer);
        resolve();
      };
    });
  await delivers(undefined, 'its first event');
  return {
    versions,
    caughtUp: async () => {
      const rv = (await h.get(name))?.metadata.resourceVersion;
      await delivers(rv, `resourceVersion ${rv}`);
    },
  };
}

type Tap = { teardown(fn: () => unknown): void };

/** The deployment statuses a sequence of versions went through (consecutive repeats collapsed). */
function path(versions: RayJob[]): string[] {
  const out: string[] = [];
  for (const v of versions) {
    const s = v.status?.jobDeploymentStatus || 'New';
    if (out[out.length - 1] !== s) out.push(s);
  }
  return out;
}

/** How many stored versions ENTERED each state (a transition applied twice shows as 2). */
function entries(versions: RayJob[]): Record<string, number> {
  const counts: Record<string, number> = {};
  let prev = '';
  let prevId = '';
  for (const v of versions) {
    const s = v.status?.jobDeploymentStatus || 'New';
    const id = `${v.status?.rayClusterName ?? ''}|${v.status?.jobId ?? ''}`;
    if (s !== prev || (s === 'Initializing' && id !== prevId)) counts[s] = (counts[s] ?? 0) + 1;
    prev = s;
    prevId = id;
  }
  return counts;
}

t.test('a reconcile fed an old copy (New) after the RayJob moved on: no second transition, no second cluster', async (t) => {
  const h = await rayJobHarness(t);
  await h.create(manifest('old', { entrypoint: 'sleep 60' }));
  const log = await recordVersions(t, h, 'old');
  const newCopy = (await h.get('old'))!;
  const init = await h.drive('old', inState('Initializing'));
  const names = { cluster: init.job?.status?.rayClusterName, jobId: init.job?.status?.jobId, rv: init.job?.metadata.resourceVersion };

  const pass = await h.reconciler.reconcileObject(newCopy);
  t.equal(pass.kind, 'conflict', 'the stale New copy is refused (its finalizer patch test fails)');
  const after = await h.get('old');
  t.equal(after?.metadata.resourceVersion, names.rv, 'nothing written');
  t.equal(after?.status?.rayClusterName, names.cluster, 'names unchanged');
  t.equal(after?.status?.jobId, names.jobId);

  // Level-triggered recovery: the next reconcile re-reads and carries on from Initializing.
  await h.drive('old', (j) => j?.status?.jobStatus === 'RUNNING', { autoReady: true });
  const clusters = await h.clusters();
  t.same(
    clusters.map((c) => c.metadata.name),
    [names.cluster],
    'exactly one RayCluster, the recorded one',
  );
  t.same(h.dashboard.submissions, [names.jobId], 'exactly one submission');
  await log.caughtUp();
  t.same(path(log.versions), ['New', 'Initializing', 'Running'], 'each transition once, none skipped');
  t.same(entries(log.versions), { New: 1, Initializing: 1, Running: 1 });
});

t.test('an old Suspending copy after suspend/resume moved on: the live submitter is not deleted', async (t) => {
  const h = await rayJobHarness(t);
  await h.create(manifest('sus', { entrypoint: 'sleep 60' }));
  await h.drive('sus', (j) => j?.status?.jobStatus === 'RUNNING', { autoReady: true });
  await h.patchSpec('sus', { suspend: true });
  await h.reconciler.reconcile(`${h.namespace}/sus`);
  const suspendingCopy = (await h.get('sus'))!;
  t.equal(suspendingCopy.status?.jobDeploymentStatus, 'Suspending');
  await h.drive('sus', inState('Suspended'));
  await h.patchSpec('sus', { suspend: false });
  const resumed = await h.drive('sus', (j) => j?.status?.jobStatus === 'RUNNING', { autoReady: true });
  const submitter = (await h.submitterJob('sus')) as { metadata: { uid: string } };
  const rv = resumed.job?.metadata.resourceVersion;

  // The stale copy still says Suspending; it observes the NEW submitter (same name) and would delete it.
  const pass = await h.reconciler.reconcileObject(suspendingCopy);
  t.equal(pass.kind, 'conflict', 'refused: the stored RayJob is no longer the copy decided on');
  const still = (await h.submitterJob('sus')) as { metadata: { uid: string; deletionTimestamp?: string } } | undefined;
  t.equal(still?.metadata.uid, submitter.metadata.uid, 'the live submitter Job is untouched');
  t.notOk(still?.metadata.deletionTimestamp, 'and not being deleted');
  t.ok(await h.cluster(resumed.job?.status?.rayClusterName ?? ''), 'the live cluster is untouched');
  t.equal((await h.get('sus'))?.metadata.resourceVersion, rv, 'nothing written');
});

t.test('two replicas reconciling the same RayJob concurrently: one transition each step, one cluster, one submission', async (t) => {
  const h = await rayJobHarness(t);
  await h.create(manifest('race', { entrypoint: 'sleep 0.5', shutdownAfterJobFinishes: false }));
  const log = await recordVersions(t, h, 'race');
  const a = h.reconciler;
  const b = h.replica();
  const copy = (await h.get('race'))!;

  // Both decide on the same New copy: each would generate its own names. Only one may land.
  const [pa, pb] = await Promise.all([a.reconcileObject(copy), b.reconcileObject(copy)]);
  t.same([pa.kind, pb.kind].sort(), ['conflict', 'done'], 'one wins, the other is told to re-read');
  const stored = (await h.get('race'))!;
  const winner = pa.kind === 'done' ? pa : pb;
  t.equal(
    stored.status?.rayClusterName,
    winner.kind === 'done' ? winner.decision?.status.rayClusterName : '',
    "the stored names are the winner's",
  );

  // Then both keep reconciling side by side until the end.
  const key = `${h.namespace}/race`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    await Promise.allSettled([a.reconcile(key), b.reconcile(key)]);
    const job = await h.get('race');
    if (job?.status?.jobDeploymentStatus === 'Complete' || job?.status?.jobDeploymentStatus === 'Failed') break;
    if (job?.status?.rayClusterName) {
      const c = await h.cluster(job.status.rayClusterName);
      if (c && c.status?.state !== 'ready') await h.markReady(job.status.rayClusterName);
    }
    if (Date.now() > deadline) throw new Error(`race did not finish: ${JSON.stringify(job?.status)}`);
    await sleep(150);
  }
  await log.caughtUp();
  const final = (await h.get('race'))!;
  t.equal(final.status?.jobDeploymentStatus, 'Complete');
  t.equal(final.status?.succeeded, 1, 'counted once');
  t.same(
    (await h.clusters()).map((c) => c.metadata.name),
    [stored.status?.rayClusterName],
    'one RayCluster',
  );
  t.same(h.dashboard.submissions, [stored.status?.jobId], 'one submission');
  t.same(path(log.versions), ['New', 'Initializing', 'Running', 'Complete'], 'no transition skipped');
  t.same(entries(log.versions), { New: 1, Initializing: 1, Running: 1, Complete: 1 }, 'no transition applied twice');
  const created = (await h.events('race')).filter((e) => e.reason === 'CreatedRayCluster' || e.reason === 'CreatedRayJobSubmitter');
  t.same(created.map((e) => e.reason).sort(), ['CreatedRayCluster', 'CreatedRayJobSubmitter'], 'each creation happened once');
});
