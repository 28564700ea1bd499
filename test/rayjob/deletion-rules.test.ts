// RayJob deletion rules on the real kube-apiserver: DeleteWorkers then DeleteCluster after a TTL (with a
// controller restart between them and a clock that crosses the TTL while it is down), DeleteSelf, and
// the unmatched Warning and metric for a deadline-exceeded RayJob whose rules key only on jobStatus.
import t from 'tap';
import { Registry } from 'prom-client';
import { inState, manifest, rayJobHarness, headSpec } from './helpers/harness.ts';
import { RAYCLUSTERS, RAYJOBS, type RayCluster } from '../../src/types.ts';
import { readDeletionRecord } from '../../src/rayjob/deletion.ts';
import { InformerFactory } from '../../kube/informer.ts';
import { rayJobCaches } from '../../controller/rayjob/module.ts';
import { until } from '../helpers/until.ts';

const worker = {
  groupName: 'small',
  replicas: 1,
  template: { spec: { containers: [{ name: 'ray-worker', image: 'rayproject/ray:2.40.0' }] } },
};
const spec = (extra: Record<string, unknown>) => ({
  submissionMode: 'HTTPMode',
  entrypoint: 'exit 0',
  shutdownAfterJobFinishes: false,
  rayClusterSpec: { headGroupSpec: headSpec(), workerGroupSpecs: [worker] },
  ...extra,
});
const suspendedGroups = (c: RayCluster | undefined) => (c?.spec?.workerGroupSpecs ?? []).map((g) => g.suspend === true);

t.test('DeleteWorkers at once, DeleteCluster after 30 s: workers suspended, head kept; restart; TTL crossed while down', async (t) => {
  const h = await rayJobHarness(t);
  const rules = [
    { policy: 'DeleteWorkers', condition: { jobStatus: 'SUCCEEDED', ttlSeconds: 0 } },
    { policy: 'DeleteCluster', condition: { jobStatus: 'SUCCEEDED', ttlSeconds: 30 } },
  ];
  await h.create(manifest('staged', spec({ deletionStrategy: { deletionRules: rules } })));
  const done = await h.drive('staged', inState('Complete', 'Failed'), { autoReady: true });
  t.equal(done.job?.status?.jobStatus, 'SUCCEEDED');
  const clusterName = done.job?.status?.rayClusterName ?? '';

  const after = await h.drive('staged', (j) => j !== undefined && readDeletionRecord(j).done.length > 0);
  t.same(after.job && readDeletionRecord(after.job).done, ['DeleteWorkers:jobStatus=SUCCEEDED'], 'DeleteWorkers recorded');
  const kept = await h.cluster(clusterName);
  t.ok(kept, 'the RayCluster (and its head) stays');
  t.same(suspendedGroups(kept), [true], 'every worker group suspended');
  t.ok(
    (await h.events('staged')).some((e) => e.reason === 'UpdatedRayCluster'),
    'Normal UpdatedRayCluster, as KubeRay',
  );

  // Someone resumes the workers; a restarted controller (a new reconciler) does not suspend them again.
  await h.kube.patch(
    { ...RAYCLUSTERS, namespace: h.namespace, name: clusterName },
    [{ op: 'replace', path: '/spec/workerGroupSpecs/0/suspend', value: false }],
    'application/json-patch+json',
  );
  const restarted = h.replica();
  await restarted.reconcile(`${h.namespace}/staged`);
  t.same(suspendedGroups(await h.cluster(clusterName)), [false], 'a done rule is not repeated after a restart');
  t.ok(await h.cluster(clusterName), 'DeleteCluster not due yet: cluster kept');

  // The controller was down while the TTL passed: the next one (its clock 60 s on) deletes the cluster at once.
  const later = h.replica({ now: () => Date.now() + 60_000 });
  await later.reconcile(`${h.namespace}/staged`);
  const deleting = await h.cluster(clusterName);
  t.ok(deleting === undefined || deleting.metadata.deletionTimestamp, 'DeleteCluster carried out once the TTL passed');
  const job = await h.get('staged');
  t.ok(job, 'DeleteCluster keeps the RayJob');
  t.same(job && readDeletionRecord(job).done, ['DeleteWorkers:jobStatus=SUCCEEDED', 'DeleteCluster:jobStatus=SUCCEEDED']);
  t.equal(job?.status?.jobDeploymentStatus, 'Complete', 'still Complete');
});

t.test('DeleteSelf: the RayJob goes (finalizer released)', async (t) => {
  const h = await rayJobHarness(t);
  const rules = [{ policy: 'DeleteSelf', condition: { jobStatus: 'SUCCEEDED' } }];
  await h.create(manifest('selfdel', spec({ deletionStrategy: { deletionRules: rules } })));
  const done = await h.drive('selfdel', (j) => j === undefined, { autoReady: true });
  t.same(done.states, ['New', 'Initializing', 'Running', 'Complete', '<deleted>']);
});

t.test('kuberay #5184: activeDeadlineSeconds passed, rules only on jobStatus: cluster kept, one Warning, a metric', async (t) => {
  const h = await rayJobHarness(t);
  const rules = [
    { policy: 'DeleteCluster', condition: { jobStatus: 'SUCCEEDED' } },
    { policy: 'DeleteCluster', condition: { jobStatus: 'FAILED' } },
  ];
  // The deadline must pass while Ray reports the job RUNNING: wait for that first (a 2 s deadline could
  // pass before the first dashboard answer on a loaded machine), then for the deadline.
  await h.create(manifest('leak', spec({ entrypoint: 'sleep 60', activeDeadlineSeconds: 10, deletionStrategy: { deletionRules: rules } })));
  await h.drive('leak', (j) => j?.status?.jobStatus === 'RUNNING', { autoReady: true, timeoutMs: 10_000 });
  const failed = await h.drive('leak', inState('Failed'), { autoReady: true, timeoutMs: 30_000 });
  t.equal(failed.job?.status?.reason, 'DeadlineExceeded');
  t.equal(failed.job?.status?.jobStatus, 'RUNNING', 'jobStatus is still RUNNING');
  const registry = new Registry();
  const watcher = h.replica({ metrics: registry });
  await watcher.reconcile(`${h.namespace}/leak`);
  await watcher.reconcile(`${h.namespace}/leak`);
  // A replica reading the caches that counts it too, and is never asked again (its shard went to another).
  const factory = new InformerFactory(h.kube, { namespace: h.namespace });
  const caches = rayJobCaches(factory);
  factory.start();
  t.teardown(() => factory.stop());
  t.ok(await factory.waitForSync(), 'caches synced');
  const cachedRegistry = new Registry();
  await h.replica({ metrics: cachedRegistry, caches }).reconcile(`${h.namespace}/leak`);
  const cachedCount = async () => (await cachedRegistry.getSingleMetric('raykeeper_rayjob_unmatched_deletion_rules')?.get())?.values;
  t.same(
    (await cachedCount())?.map((v) => v.value),
    [1],
    'the cached replica counts it',
  );
  t.ok(await h.cluster(failed.job?.status?.rayClusterName ?? ''), 'the RayCluster is kept, as KubeRay keeps it');
  await h.replica().reconcile(`${h.namespace}/leak`);
  const warnings = (await h.events('leak')).filter((e) => e.reason === 'DeletionRulesUnmatched');
  t.same(
    warnings.map((w) => w.count),
    [1],
    'one Warning, not one a pass, nor one a restarted controller',
  );
  const leaked = await h.get('leak');
  t.equal(leaked && readDeletionRecord(leaked).unmatched, true, 'the record remembers it');
  t.match(warnings[0]?.message, /condition\.jobDeploymentStatus: Failed would match it/);
  const metric = await registry.getSingleMetric('raykeeper_rayjob_unmatched_deletion_rules')?.get();
  t.same(
    metric?.values.map((v) => [v.labels['namespace'], v.value]),
    [[h.namespace, 1]],
    'raykeeper_rayjob_unmatched_deletion_rules counts it',
  );
  await h.kube.delete({ ...RAYJOBS, namespace: h.namespace, name: 'leak' });
  await h.drive('leak', (j) => j === undefined);
  await watcher.reconcile(`${h.namespace}/leak`);
  const after = await registry.getSingleMetric('raykeeper_rayjob_unmatched_deletion_rules')?.get();
  t.same(after?.values, [], 'gone with the RayJob');
  await until(async () => (await cachedCount())?.length === 0, 'the cached replica to forget it', 10_000).catch(() => undefined);
  t.same(await cachedCount(), [], 'the cached replica forgot it on its cache’s delete event, without a reconcile');
});

t.test("the CRD refuses what KubeRay's CRD refuses: legacy policies mixed with rules, a condition with both statuses", async (t) => {
  const h = await rayJobHarness(t);
  const mixed = { onSuccess: { policy: 'DeleteCluster' }, onFailure: { policy: 'DeleteCluster' }, deletionRules: [] as unknown[] };
  mixed.deletionRules.push({ policy: 'DeleteCluster', condition: { jobStatus: 'FAILED' } });
  await t.rejects(h.create(manifest('mixed', spec({ deletionStrategy: mixed }))), {
    message: /legacy policies \(onSuccess\/onFailure\) and deletionRules cannot be used together/,
  });
  const both = [{ policy: 'DeleteCluster', condition: { jobStatus: 'FAILED', jobDeploymentStatus: 'Failed' } }];
  await t.rejects(h.create(manifest('both', spec({ deletionStrategy: { deletionRules: both } }))), {
    message: /JobStatus and JobDeploymentStatus cannot be used together/,
  });
  const created = await h.create(
    manifest('ok', spec({ deletionStrategy: { deletionRules: [{ policy: 'DeleteSelf', condition: { jobStatus: 'FAILED' } }] } })),
  );
  t.equal(created.spec?.deletionStrategy?.deletionRules?.[0]?.condition.ttlSeconds, 0, 'ttlSeconds defaulted to 0 by the schema');
});
