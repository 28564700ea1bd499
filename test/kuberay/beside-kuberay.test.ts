// raykeeper beside KubeRay's REAL operator (ray-operator v1.6.2 built from the Go module proxy by
// tools/build-kuberay.sh), both against one real kube-apiserver with KubeRay's CRDs, KubeRay out of
// cluster as platform.md describes. Measures README's "Beside KubeRay" table:
// - companion mode (KubeRay's cleanup off): detected from KubeRay's Lease; exactly one cleanup Job per
//   cluster, made by us, Redis data gone; RayJob status written only by KubeRay (never `New`); no
//   "Reconciler error" in KubeRay's log;
// - KubeRay's cleanup left on: its cleanup Job for a cluster we clean gets a Warning naming the setting;
// - companion off: spec.managedBy (MultiKueue) is left alone by both operators.
// Gated on the binary: skipped (visibly) where it is not built, a FAILURE on CI (env CI).
import t from 'tap';
import { Watch } from '@kubernetes/client-node';
import { Redis } from 'ioredis';
import { startController, type RunningController } from '../../controller/main.ts';
import { RECONCILER_MODULES } from '../../controller/reconcilers.ts';
import { KUBERAY_LEASE_NAME, leaseIsHeld, type CompanionSetting } from '../../controller/companion.ts';
import { JobRunner } from '../../localcluster/job-runner.ts';
import { createMetricsRegistry, type Registry } from '../../kube/metrics.ts';
import type { KubeClient } from '../../kube/client.ts';
import { RAYCLUSTERS, RAYJOBS, type RayJob } from '../../src/types.ts';
import type { ControlPlane } from '../../localcluster/control-plane.ts';
import { startRedisServer } from '../helpers/redis-server.ts';
import { rayCluster, rayKeys, seedRay, until } from '../helpers/harness.ts';
import { capturingLogger, kubeRayControlPlane, missingKubeRay, startKubeRay, type KubeRayOperator } from './helpers.ts';
import { EVENTS, JOBS, LEASES, NAMESPACES, PODS, ROLEBINDINGS, ROLES, SERVICEACCOUNTS, type Resource } from '../../kube/resources.ts';
import type { ApiObject } from '../../kube/model.ts';
import { EVENT_KUBERAY_CLEANUP_ENABLED } from '../../src/event-reasons.ts';
import { missingPart } from '../helpers/parts.ts';

const FINALIZER = 'ray.io/gcs-ft-redis-cleanup-finalizer';

const missing = missingKubeRay();
if (missing) t.fail(missingPart(missing));

interface Ours {
  controller: RunningController;
  metrics: Registry;
  lines: string[];
}

async function ours(cp: ControlPlane, namespace: string, companion: CompanionSetting, level = 'info'): Promise<Ours> {
  const { logger, lines } = capturingLogger(level);
  const metrics = createMetricsRegistry();
  const controller = await startController({
    kubeConfig: cp.kubeConfig(),
    watchNamespace: namespace,
    companion,
    modules: RECONCILER_MODULES,
    env: {},
    logger,
    metrics,
    moduleFlags: { 'cleanup-image': 'raykeeper:test' },
    retry: { baseMs: 100, maxMs: 2000, jitter: 0.2 },
  });
  return { controller, metrics, lines };
}

async function namespace(kube: KubeClient, name: string): Promise<string> {
  await kube.create(NAMESPACES, { metadata: { name } });
  return name;
}

function rayJob(name: string, extra: Record<string, unknown> = {}): RayJob {
  return {
    apiVersion: 'ray.io/v1',
    kind: 'RayJob',
    metadata: { name },
    spec: {
      entrypoint: 'python -c "print(1)"',
      rayClusterSpec: {
        headGroupSpec: { rayStartParams: {}, template: { spec: { containers: [{ name: 'ray-head', image: 'rayproject/ray:2.40.0' }] } } },
      },
      ...extra,
    },
  };
}

/** Every stored version of the objects of a resource in a namespace, from a real watch. */
async function record<T>(t: Tap, cp: ControlPlane, path: string): Promise<Array<{ type: string; obj: T }>> {
  const seen: Array<{ type: string; obj: T }> = [];
  const req = await new Watch(cp.kubeConfig()).watch(
    path,
    {},
    (type, obj: T) => seen.push({ type, obj }),
    () => undefined,
  );
  t.teardown(() => req.abort());
  return seen;
}
type Tap = { teardown(fn: () => unknown): void };

async function leaseHeld(kube: KubeClient, ns: string): Promise<boolean> {
  const lease = await kube.getOrUndefined({ ...LEASES, namespace: ns, name: KUBERAY_LEASE_NAME });
  return lease !== undefined && leaseIsHeld(lease, Date.now());
}

if (!missing)
  t.test('beside KubeRay v1.6.2 (the real operator)', async (t) => {
    const { cp, kube } = await kubeRayControlPlane((m) => t.comment(`control plane: ${m}`));
    t.teardown(async () => {
      kube.close();
      await cp.stop();
    });
    const redis = await startRedisServer();
    const client = new Redis({ host: redis.host, port: redis.port, lazyConnect: true, maxRetriesPerRequest: 1 });
    await client.connect();
    t.teardown(async () => {
      client.disconnect();
      await redis.stop();
    });
    const kubeRays: KubeRayOperator[] = [];
    t.teardown(() => Promise.all(kubeRays.map((k) => k.stop())));
    const controllers: RunningController[] = [];
    t.teardown(() => Promise.all(controllers.map((c) => c.stop().catch(() => undefined))));
    /** A KubeRay operator with its Lease in a namespace of its own (each phase starts one: no wait for a takeover). */
    const kubeRayLeading = async (leaseNamespace: string, cleanup: boolean): Promise<KubeRayOperator> => {
      await namespace(kube, leaseNamespace);
      const kuberay = await startKubeRay(cp, { cleanup, leaseNamespace });
      kubeRays.push(kuberay);
      await until(() => leaseHeld(kube, leaseNamespace), "KubeRay's leader Lease", 60_000);
      return kuberay;
    };
    /** KubeRay's head pod for a cluster: KubeRay reconciles it. */
    const headPodOf = (ns: string, cluster: string) =>
      until(
        async () => (await kube.list({ ...PODS, namespace: ns }, { labelSelector: `ray.io/cluster=${cluster}` })).items.length > 0,
        `KubeRay's head pod of ${cluster}`,
      );

    await t.test('companion mode (KubeRay cleanup off): detected; one cleanup Job, ours; RayJob status only from KubeRay', async (t) => {
      const ns = await namespace(kube, 'companion');
      const kuberay = await kubeRayLeading('kuberay-system', false);

      const us = await ours(cp, ns, 'auto');
      controllers.push(us.controller);
      const startup = us.lines.find((l) => l.includes('companion mode:')) ?? '';
      t.match(startup, /KubeRay operator running \(Lease kuberay-system\/ray-operator-leader held by /, 'start-up log line says why');
      t.match(startup, /not starting [a-z-]+, [a-z-]+, [a-z-]+ \(KubeRay runs them\)/, 'and what it does not start');
      for (const name of ['rayjob', 'raycluster-pods', 'raycronjob']) t.match(startup.split('not starting')[1], name);
      t.match(
        await us.metrics.getSingleMetricAsString('raykeeper_companion_mode'),
        /raykeeper_companion_mode\{reason="kuberay-detected"\} 1/,
      );

      const runner = new JobRunner({
        kubeConfig: cp.kubeConfig(),
        namespaces: [ns],
        labelSelector: 'app.kubernetes.io/created-by!=kuberay-operator',
        killGraceMs: 1000,
      });
      await runner.start();
      t.teardown(() => runner.stop());

      // RayCluster: GCS FT, Redis reachable. KubeRay makes its pods; we add the finalizer and clean up.
      const logFrom = kuberay.log().length;
      const jobs = await record<{ metadata: { name: string; labels?: Record<string, string> } }>(
        t,
        cp,
        `/apis/batch/v1/namespaces/${ns}/jobs`,
      );
      // Created with the finalizer, as our webhook's answer makes it at CREATE in companion mode: nothing
      // of ours writes the RayCluster until it is deleted. (Without the webhook the controller adds it
      // later, and KubeRay's next status update from its older copy gets one 409, which it retries.)
      const created = await kube.create(
        { ...RAYCLUSTERS, namespace: ns },
        rayCluster('ft', `127.0.0.1:${redis.port}`, { finalizers: [FINALIZER] }),
      );
      await until(
        async () => (await kube.getOrUndefined({ ...RAYCLUSTERS, namespace: ns, name: 'ft' }))?.metadata.finalizers?.includes(FINALIZER),
        'the GCS-FT finalizer (ours)',
      );
      await headPodOf(ns, 'ft');
      const keys = await seedRay(client, created.metadata.uid ?? '');
      const deletedAt = Date.now();
      await kube.delete({ ...RAYCLUSTERS, namespace: ns, name: 'ft' });
      await until(
        async () => (await kube.getOrUndefined({ ...RAYCLUSTERS, namespace: ns, name: 'ft' })) === undefined,
        'the RayCluster is gone',
        90_000,
      );
      t.comment(`companion: RayCluster gone ${Date.now() - deletedAt} ms after delete`);
      const added = jobs.filter((e) => e.type === 'ADDED').map((e) => e.obj);
      t.equal(added.length, 1, 'exactly one cleanup Job');
      t.equal(added[0]?.metadata.name, 'ft-redis-cleanup');
      t.equal(added[0]?.metadata.labels?.['app.kubernetes.io/created-by'], 'raykeeper', 'made by us');
      t.ok(keys.length > 0);
      t.same(await rayKeys(client, created.metadata.uid ?? ''), [], "the cluster's GCS data is gone from Redis");

      // RayJob: KubeRay drives it alone.
      const versions = await record<RayJob>(t, cp, `/apis/ray.io/v1/namespaces/${ns}/rayjobs`);
      await kube.create({ ...RAYJOBS, namespace: ns }, rayJob('rj'));
      const driven = await until(async () => {
        const j = await kube.getOrUndefined({ ...RAYJOBS, namespace: ns, name: 'rj' });
        return j?.status?.jobDeploymentStatus === 'Initializing' && j.status.rayClusterName ? j : undefined;
      }, 'KubeRay moves the RayJob to Initializing');
      await until(
        async () => kube.getOrUndefined({ ...RAYCLUSTERS, namespace: ns, name: driven.status?.rayClusterName ?? '' }),
        "KubeRay's RayCluster for the RayJob",
      );
      const stored = await kube.get({
        ...RAYJOBS,
        namespace: ns,
        name: 'rj',
      });
      const statusWriters = new Set((stored.metadata.managedFields ?? []).filter((f) => f.subresource === 'status').map((f) => f.manager));
      t.same([...statusWriters], ['kuberay-operator'], 'status written only by KubeRay (managedFields)');
      const states = versions.map((v) => v.obj.status?.jobDeploymentStatus ?? '<none>');
      t.notOk(states.includes('New'), `nothing stored New on a RayJob KubeRay drives (${[...new Set(states)].join(' -> ')})`);
      // Attributable to us: an error on an object our controller writes in companion mode, i.e. the
      // GCS-FT RayCluster (its finalizer). KubeRay also races itself (its RayJob and RayCluster
      // controllers both update the RayJob's cluster); those are reported, not blamed on us.
      const errors = kuberay
        .reconcilerErrors(logFrom)
        .map((l) => JSON.parse(l) as { logger?: string; error?: string; RayCluster?: { name?: string }; RayJob?: { name?: string } });
      // A 409 (optimistic concurrency: our finalizer patch and KubeRay's update crossed) is retried by
      // KubeRay at once and is how the API server serialises two writers; it is counted, not blamed.
      const conflict = (e: { error?: string }) => /the object has been modified/.test(e.error ?? '');
      const ours_ = errors.filter((e) => e.RayCluster?.name === 'ft' && !conflict(e));
      t.same(ours_, [], "no Reconciler error (other than a retried 409 conflict) in KubeRay's log about the GCS-FT RayCluster we clean");
      t.comment(
        `companion: 409 conflicts on the GCS-FT RayCluster: ${errors.filter((e) => e.RayCluster?.name === 'ft' && conflict(e)).length}`,
      );
      t.comment(
        `companion: KubeRay Reconciler errors in all: ${errors.length} (${errors.map((e) => `${e.logger} ${e.RayCluster?.name ?? e.RayJob?.name ?? ''}: ${(e.error ?? '').slice(0, 80)}`).join('; ')})`,
      );
      // Autoscaling: the ServiceAccount / Role / RoleBinding are KubeRay's (our operator does not run here).
      await kube.create(
        { ...RAYCLUSTERS, namespace: ns },
        {
          apiVersion: 'ray.io/v1',
          kind: 'RayCluster',
          metadata: { name: 'scaler' },
          spec: {
            enableInTreeAutoscaling: true,
            headGroupSpec: {
              rayStartParams: {},
              template: { spec: { containers: [{ name: 'ray-head', image: 'rayproject/ray:2.40.0' }] } },
            },
          },
        },
      );
      for (const ref of [SERVICEACCOUNTS, ROLES, ROLEBINDINGS] as Resource<ApiObject>[]) {
        const o = await until(() => kube.getOrUndefined({ ...ref, namespace: ns, name: 'scaler' }), `KubeRay's ${ref.plural}/scaler`);
        t.equal(
          o.metadata.labels?.['app.kubernetes.io/created-by'],
          'kuberay-operator',
          `autoscaling: ${ref.plural}/scaler made by KubeRay, not us`,
        );
      }
      await us.controller.stop();
      await kuberay.stop();
    });

    await t.test("KubeRay's cleanup left on: its cleanup Job for a cluster we clean gets a Warning naming the setting", async (t) => {
      const ns = await namespace(kube, 'unsafe');
      const kuberay = await kubeRayLeading('kuberay-system-2', true);
      const first = await ours(cp, ns, 'auto');
      await kube.create({ ...RAYCLUSTERS, namespace: ns }, rayCluster('both', `127.0.0.1:${redis.port}`));
      await until(
        async () => (await kube.getOrUndefined({ ...RAYCLUSTERS, namespace: ns, name: 'both' }))?.metadata.finalizers?.includes(FINALIZER),
        'the finalizer',
      );
      await headPodOf(ns, 'both');
      // KubeRay wins the race for the Job when ours is not running at the deletion (the other order
      // leaves KubeRay logging "already exists" every 2 s: the Job name is the same).
      await first.controller.stop();
      await kube.delete({ ...RAYCLUSTERS, namespace: ns, name: 'both' });
      const theirs = await until(async () => {
        const j = await kube.getOrUndefined({
          ...JOBS,
          namespace: ns,
          name: 'both-redis-cleanup',
        });
        return j?.metadata.labels?.['app.kubernetes.io/created-by'] === 'kuberay-operator' ? j : undefined;
      }, "KubeRay's own cleanup Job");
      t.ok(theirs);
      const second = await ours(cp, ns, 'auto');
      controllers.push(second.controller);
      const warning = await until(async () => {
        const events = (await kube.list({ ...EVENTS, namespace: ns })).items;
        return events.find((e) => e.reason === EVENT_KUBERAY_CLEANUP_ENABLED && e.involvedObject.name === 'both');
      }, 'the Warning on the RayCluster');
      t.equal(warning.type, 'Warning');
      t.match(warning.message, /ENABLE_GCS_FT_REDIS_CLEANUP=false/, 'names the setting to change');
      t.match(warning.message, /both-redis-cleanup/, 'and the Job');
      t.match(
        await second.metrics.getSingleMetricAsString('raykeeper_kuberay_cleanup_jobs_total'),
        /raykeeper_kuberay_cleanup_jobs_total 1/,
      );
      await second.controller.stop();
      await kuberay.stop();
    });

    await t.test('companion off beside KubeRay: a RayJob with spec.managedBy MultiKueue is left alone by both', async (t) => {
      const ns = await namespace(kube, 'managedby');
      const kuberay = await kubeRayLeading('kuberay-system-3', false);
      const us = await ours(cp, ns, 'off', 'debug');
      controllers.push(us.controller);
      const logFrom = kuberay.log().length;
      await kube.create({ ...RAYJOBS, namespace: ns }, rayJob('kueue', { managedBy: 'kueue.x-k8s.io/multikueue' }));
      await kube.create({ ...RAYJOBS, namespace: ns }, rayJob('fight'));
      // Positive controls: our RayJob reconciler looked at `kueue` and said why it left it alone, and
      // KubeRay drove `fight` (whoever of the two moved it first: without companion mode both run).
      await until(
        () => us.lines.some((l) => l.includes('"rayjob":"managedby/kueue"') && l.includes('spec.managedBy is')),
        'our reconciler leaving `kueue` alone',
        30_000,
      );
      const fight = await until(
        async () => {
          const j = await kube.get({
            ...RAYJOBS,
            namespace: ns,
            name: 'fight',
          });
          return j.status?.jobDeploymentStatus === 'Initializing' ? j : undefined;
        },
        '`fight` Initializing',
        30_000,
      );
      const writers = [...new Set((fight.metadata.managedFields ?? []).filter((f) => f.subresource === 'status').map((f) => f.manager))];
      t.comment(
        `companion off: status of a RayJob without managedBy written by ${writers.join(' and ')}; KubeRay Reconciler errors: ${kuberay.reconcilerErrors(logFrom).length}`,
      );
      const kueue = await kube.get({ ...RAYJOBS, namespace: ns, name: 'kueue' });
      t.equal(kueue.status, undefined, 'no status');
      t.same(kueue.metadata.finalizers ?? [], [], 'no finalizer');
      const clusters = (await kube.list({ ...RAYCLUSTERS, namespace: ns })).items;
      t.notOk(
        clusters.some((c) => (c.metadata.ownerReferences ?? []).some((o) => o.name === 'kueue')),
        'no RayCluster for it',
      );
      await us.controller.stop();
      await kuberay.stop();
    });
  });
