// The same RayCronJob under KubeRay v1.6.2's real operator (its `RayCronJob` feature gate on) and under
// ours, side by side on one kube-apiserver with KubeRay's CRDs, each operator watching a namespace of its
// own: which RayJobs exist when, and what they look like, compared in one test. The schedule is
// `@every 30s` (robfig/cron's constant delay, which our schedule module implements itself): the first tick
// is the creation + 30 s under both. The same: one RayJob at that tick, owned (controller) by the
// RayCronJob, labelled ray.io/cronjob-name, annotated with that scheduled time, the template as its spec;
// none while suspended. Different, by design (KubeRay
// v1.7's fixes, docs/design.md): our name is `<cronjob>-<unix minutes>` where v1.6.2's has 5 random
// characters, and our status.lastScheduleTime is the tick where v1.6.2 writes the wall-clock time. The
// spec is compared without empty objects: KubeRay's Go types write `metadata: {}` and `resources: {}`
// into the copy; ours is the template as written.
import t from 'tap';
import { startController } from '../../controller/main.ts';
import { rayCronJobModule } from '../../controller/raycronjob/module.ts';
import { createMetricsRegistry } from '../../kube/metrics.ts';
import { MERGE_PATCH, type KubeClient } from '../../kube/client.ts';
import { NAMESPACES } from '../../kube/resources.ts';
import { RAYCRONJOBS, RAYJOBS, type RayCronJob, type RayJob } from '../../src/types.ts';
import { sleep } from '../../kube/backoff.ts';
import { until } from '../helpers/harness.ts';
import { missingPart } from '../helpers/parts.ts';
import { capturingLogger, kubeRayControlPlane, missingKubeRay, startKubeRay } from './helpers.ts';

const missing = missingKubeRay();
if (missing) t.fail(missingPart(missing));

const NAME = 'every-30s';
const cronJob: RayCronJob = {
  apiVersion: 'ray.io/v1',
  kind: 'RayCronJob',
  metadata: { name: NAME },
  spec: {
    schedule: '@every 30s',
    jobTemplate: {
      entrypoint: 'python -c "print(1)"',
      shutdownAfterJobFinishes: true,
      rayClusterSpec: {
        headGroupSpec: { rayStartParams: {}, template: { spec: { containers: [{ name: 'ray-head', image: 'rayproject/ray:2.60.0' }] } } },
      },
    },
  },
};

function withoutEmptyObjects(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutEmptyObjects);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const kept = withoutEmptyObjects(v);
    if (!(kept !== null && typeof kept === 'object' && !Array.isArray(kept) && Object.keys(kept).length === 0)) out[k] = kept;
  }
  return out;
}

async function children(kube: KubeClient, namespace: string): Promise<RayJob[]> {
  return (await kube.list({ ...RAYJOBS, namespace }, { labelSelector: `ray.io/cronjob-name=${NAME}` })).items;
}

if (!missing)
  t.test('one RayCronJob, KubeRay v1.6.2 and raykeeper: the same RayJobs at the same ticks', { timeout: 280_000 }, async (t) => {
    const { cp, kube } = await kubeRayControlPlane((m) => t.comment(`control plane: ${m}`));
    t.teardown(async () => {
      kube.close();
      await cp.stop();
    });
    for (const name of ['kuberay', 'raykeeper', 'kuberay-lease']) await kube.create(NAMESPACES, { metadata: { name } });
    const kuberay = await startKubeRay(cp, {
      cleanup: false,
      leaseNamespace: 'kuberay-lease',
      args: ['--feature-gates=RayCronJob=true', '--watch-namespace=kuberay'],
    });
    t.teardown(() => kuberay.stop());
    const { logger } = capturingLogger('warn');
    const ours = await startController({
      kubeConfig: cp.kubeConfig(),
      watchNamespace: 'raykeeper',
      modules: [rayCronJobModule],
      env: {},
      logger,
      metrics: createMetricsRegistry(),
    });
    t.teardown(() => ours.stop().catch(() => undefined));
    await until(() => kuberay.log().includes('RayCronJob feature gate is enabled'), "KubeRay's RayCronJob controller", 60_000, 200);

    const [kr, rk] = await Promise.all(['kuberay', 'raykeeper'].map((namespace) => kube.create({ ...RAYCRONJOBS, namespace }, cronJob)));
    const tickOf = (owner: RayCronJob | undefined) => Date.parse(owner?.metadata.creationTimestamp ?? '') + 30_000;
    const tick = tickOf(rk);
    t.same(await children(kube, 'kuberay'), [], 'KubeRay: nothing before the tick');
    t.same(await children(kube, 'raykeeper'), [], 'raykeeper: nothing before the tick');

    await until(
      async () => (await children(kube, 'kuberay')).length > 0 && (await children(kube, 'raykeeper')).length > 0,
      'a RayJob in both namespaces',
      Math.max(tickOf(kr), tick) - Date.now() + 15_000,
      250,
    );
    await sleep(3_000);
    const theirChildren = await children(kube, 'kuberay');
    const [a = undefined] = theirChildren;
    const [b = undefined, ...moreB] = await children(kube, 'raykeeper');
    t.same(moreB, [], 'raykeeper: one RayJob for the tick');
    // KubeRay v1.6.2 can make a second RayJob for the same tick when its status write conflicts and its
    // cache is stale (kuberay #4849, fixed in v1.7 by the deterministic names raykeeper uses): reported,
    // and every one of them is for this one tick.
    const scheduled = (j: RayJob) => j.metadata.annotations?.['ray.io/cronjob-scheduled-timestamp'];
    t.same([...new Set(theirChildren.map(scheduled))].length, 1, 'KubeRay: its RayJobs are all for this one tick');
    if (theirChildren.length > 1) t.comment(`KubeRay v1.6.2 made ${theirChildren.length} RayJobs for one tick (kuberay #4849)`);
    const shape = (job: RayJob | undefined, owner: RayCronJob | undefined) => ({
      labels: job?.metadata.labels,
      annotations: job?.metadata.annotations,
      owners: (job?.metadata.ownerReferences ?? []).map((o) => ({ ...o, uid: o.uid === owner?.metadata.uid ? '<owner>' : o.uid })),
      spec: withoutEmptyObjects(job?.spec),
    });
    const stamp = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
    const withTick = (job: RayJob | undefined, owner: RayCronJob | undefined) => {
      const s = shape(job, owner);
      t.same(s.annotations, { 'ray.io/cronjob-scheduled-timestamp': stamp(tickOf(owner)) }, 'scheduled at its creation + 30 s');
      return { ...s, annotations: '<creation + 30 s>' };
    };
    t.same(withTick(b, rk), withTick(a, kr), 'same labels, annotation (the tick), controller ownerReference and spec');
    t.match(a?.metadata.name, new RegExp(`^${NAME}-[a-z0-9]{5}$`), 'KubeRay v1.6.2: 5 random characters');
    t.equal(b?.metadata.name, `${NAME}-${Math.floor(tick / 60_000)}`, 'raykeeper: KubeRay v1.7 <cronjob>-<unix minutes>');
    const last = async (namespace: string) =>
      Date.parse((await kube.get({ ...RAYCRONJOBS, namespace, name: NAME })).status?.lastScheduleTime ?? '');
    t.equal(await last('raykeeper'), tick, 'raykeeper: lastScheduleTime is the tick');
    const theirs = await last('kuberay');
    t.ok(theirs >= tickOf(kr) && theirs < tickOf(kr) + 15_000, 'KubeRay v1.6.2: lastScheduleTime is when it created the RayJob');

    // Suspended in both: no RayJob for the next tick in either.
    for (const namespace of ['kuberay', 'raykeeper'])
      await kube.patch({ ...RAYCRONJOBS, namespace, name: NAME }, { spec: { suspend: true } }, MERGE_PATCH);
    // The next tick: 30 s after the first (ours), after KubeRay's creation time (KubeRay's).
    await sleep(Math.max(0, Math.max(theirs, tick) + 30_000 - Date.now()) + 10_000);
    t.equal((await children(kube, 'kuberay')).length, theirChildren.length, 'KubeRay: none while suspended');
    t.equal((await children(kube, 'raykeeper')).length, 1, 'raykeeper: none while suspended');
    // A 409 KubeRay retries (its RayCronJob and RayCluster controllers race on a loaded machine) is
    // reported, not asserted; so is what follows one in its RayJob controller: the retry decides on a cache
    // that has not seen the RayCluster it created, and its create is answered AlreadyExists (KubeRay v1.6.2
    // reads its own namespace only: raykeeper is not in it). Any other "Reconciler error" fails.
    const errors = kuberay.reconcilerErrors();
    const conflict = (l: string) => l.includes('the object has been modified');
    const ownClusterAgain = (l: string) =>
      /"RayJob":\{[^}]*"namespace":"kuberay"\}.*rayclusters\.ray\.io \\"[^"\\]+\\" already exists/.test(l);
    const retried = (l: string) => conflict(l) || ownClusterAgain(l);
    t.same(
      errors.filter((l) => !retried(l)),
      [],
      'no "Reconciler error" in KubeRay\'s log other than a retried 409 conflict (and the create its stale retry repeats)',
    );
    if (errors.some(conflict)) t.comment(`KubeRay's own 409 conflicts: ${errors.filter(conflict).length}`);
    if (errors.some(ownClusterAgain))
      t.comment(`KubeRay's RayJob re-created its own RayCluster after a retry: ${errors.filter(ownClusterAgain).length}`);
  });
