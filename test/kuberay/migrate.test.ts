// The moves of docs/operate/migrate.md with KubeRay's REAL operator (v1.6.2, tools/build-kuberay.sh) on a real
// kube-apiserver with KubeRay's CRDs (helpers.ts), our controller in this process and `raykeeper uninstall` as
// an admin runs it. What each part proves:
// - standalone -> KubeRay: a RayJob raykeeper stored as `New` is not understood by KubeRay (it logs "Unknown
//   JobDeploymentStatus", adds no finalizer, creates no RayCluster); `raykeeper uninstall` sets it to "" and
//   KubeRay then starts it with the names raykeeper chose; the GCS-FT finalizer raykeeper's controller added is
//   removed by the uninstall and added back by KubeRay (its cleanup on) at its next pass over the cluster (an
//   annotation edit starts one): KubeRay holds it (managedFields), and
//   the uninstall says so (a Normal Event, exit 3) when it sees it come back;
// - KubeRay -> standalone: KubeRay stopped, raykeeper's controller takes both finalizers over (same names): the
//   GCS-FT cluster's deletion runs raykeeper's cleanup Job (its Redis data gone), the RayJob KubeRay started
//   keeps its jobId and cluster and its deletion completes;
// - companion -> standalone: KubeRay (cleanup off) stopped, raykeeper's controller restarted with
//   --companion=off: the same, for a RayJob KubeRay drove and the GCS-FT finalizer that was raykeeper's.
import t from 'tap';
import { Redis } from 'ioredis';
import { startController, type RunningController } from '../../controller/main.ts';
import { RECONCILER_MODULES } from '../../controller/reconcilers.ts';
import { KUBERAY_LEASE_NAME, leaseIsHeld, type CompanionSetting } from '../../controller/companion.ts';
import { JobRunner } from '../../localcluster/job-runner.ts';
import { MERGE_PATCH } from '../../kube/client.ts';
import { RAYCLUSTERS, RAYJOBS, type RayJob } from '../../src/types.ts';
import { finalizerWriter } from '../../src/uninstall/decide.ts';
import { startRedisServer } from '../helpers/redis-server.ts';
import { quiet, rayCluster, rayKeys, seedRay, until } from '../helpers/harness.ts';
import { cli, eventsOf } from '../uninstall/helpers.ts';
import { kubeRayControlPlane, missingKubeRay, startKubeRay, type KubeRayOperator } from './helpers.ts';
import { JOBS, LEASES, NAMESPACES } from '../../kube/resources.ts';
import { missingPart } from '../helpers/parts.ts';

const FINALIZER = 'ray.io/gcs-ft-redis-cleanup-finalizer';
const RAYJOB_FINALIZER = 'ray.io/rayjob-finalizer';
const STORAGE_NS = 'ray.io/external-storage-namespace';

const missing = missingKubeRay();
if (missing) t.fail(missingPart(missing));

function rayJob(name: string): RayJob {
  return {
    apiVersion: 'ray.io/v1',
    kind: 'RayJob',
    metadata: { name },
    spec: {
      entrypoint: 'python -c "print(1)"',
      rayClusterSpec: {
        headGroupSpec: { rayStartParams: {}, template: { spec: { containers: [{ name: 'ray-head', image: 'rayproject/ray:2.40.0' }] } } },
      },
    },
  };
}

if (!missing)
  t.test('moves between raykeeper and KubeRay v1.6.2 (the real operator)', async (t) => {
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
    const address = `127.0.0.1:${redis.port}`;
    const running: Array<{ stop(): Promise<unknown> }> = [];
    t.teardown(() => Promise.all(running.map((r) => r.stop().catch(() => undefined))));

    const namespace = async (name: string) => {
      await kube.create(NAMESPACES, { metadata: { name } });
      return name;
    };
    const ours = async (ns: string, companion: CompanionSetting): Promise<RunningController> => {
      const c = await startController({
        kubeConfig: cp.kubeConfig(),
        watchNamespace: ns,
        companion,
        modules: RECONCILER_MODULES,
        env: {},
        logger: quiet,
        moduleFlags: { 'cleanup-image': 'raykeeper:test' },
        retry: { baseMs: 100, maxMs: 2000, jitter: 0.2 },
      });
      running.push(c);
      return c;
    };
    const kubeRay = async (leaseNamespace: string, cleanup: boolean): Promise<KubeRayOperator> => {
      await namespace(leaseNamespace);
      const k = await startKubeRay(cp, { cleanup, leaseNamespace });
      running.push(k);
      await until(
        async () => {
          const lease = await kube.getOrUndefined({
            ...LEASES,
            namespace: leaseNamespace,
            name: KUBERAY_LEASE_NAME,
          });
          return lease !== undefined && leaseIsHeld(lease, Date.now());
        },
        "KubeRay's leader Lease",
        60_000,
      );
      return k;
    };
    const jobRunner = async (ns: string) => {
      const r = new JobRunner({
        kubeConfig: cp.kubeConfig(),
        namespaces: [ns],
        labelSelector: 'app.kubernetes.io/created-by!=kuberay-operator',
        logger: quiet,
        killGraceMs: 1000,
      });
      await r.start();
      running.push(r);
      return r;
    };
    const cluster = (ns: string, name: string) => kube.getOrUndefined({ ...RAYCLUSTERS, namespace: ns, name });
    const job = (ns: string, name: string) => kube.getOrUndefined({ ...RAYJOBS, namespace: ns, name });
    const gone = (get: () => Promise<unknown>, what: string) => until(async () => (await get()) === undefined, what, 90_000);

    await t.test('standalone -> KubeRay -> standalone', async (t) => {
      const ns = await namespace('move');
      // raykeeper standalone: its controller adds the GCS-FT finalizer.
      let us = await ours(ns, 'off');
      await kube.create({ ...RAYCLUSTERS, namespace: ns }, rayCluster('ft', address, { annotations: { [STORAGE_NS]: 'ft-data' } }));
      await until(
        async () => (await cluster(ns, 'ft'))?.metadata.finalizers?.includes(FINALIZER),
        "raykeeper's controller adds the GCS-FT finalizer",
      );
      const keys = (await seedRay(client, 'ft-data')).sort();
      await us.stop();
      // A RayJob as raykeeper's RayJob reconciler first stores it (src/rayjob/machine.ts decideNew): New, with the
      // names it chose, nothing created yet; its controller stopped there.
      await kube.create({ ...RAYJOBS, namespace: ns }, rayJob('rj'));
      const names = { jobId: 'rj-kq7zw', rayClusterName: 'rj-raycluster-kq7zw' };
      await kube.patch(
        { ...RAYJOBS, namespace: ns, name: 'rj', subresource: 'status' },
        { status: { jobDeploymentStatus: 'New', jobStatus: '', ...names } },
        MERGE_PATCH,
      );

      // KubeRay's operator (its cleanup on) arrives before raykeeper is uninstalled.
      const kuberay = await kubeRay('kuberay-move', true);
      // A subtest that fails half-way must not leave its operator to the next one (two KubeRay leaders).
      t.teardown(() => kuberay.stop().catch(() => undefined));
      await until(
        () =>
          kuberay
            .log()
            .split('\n')
            .some((l) => l.includes('Unknown JobDeploymentStatus') && l.includes('"rj"')),
        'KubeRay to log the New it does not know',
        60_000,
      );
      const unknown = await job(ns, 'rj');
      t.equal(unknown?.status?.jobDeploymentStatus, 'New', 'KubeRay leaves a RayJob in "New" as it is');
      t.notOk(unknown?.metadata.finalizers?.includes(RAYJOB_FINALIZER), 'adds no finalizer to it');
      t.equal(await cluster(ns, names.rayClusterName), undefined, 'and creates no RayCluster for it');

      const r = await cli(
        ['uninstall', '--namespace', ns, '--watch-namespace', ns, '--controller-deployment', '', '--webhook-configuration', ''],
        cp.info.kubeconfigPath,
      );
      t.ok(
        r.code === 0 || r.code === 3,
        `exit 3 when it saw KubeRay add the finalizer back (within its 3 s), else 0 (exit ${r.code}: ${r.stderr})`,
      );
      t.comment(
        `raykeeper uninstall beside KubeRay: exit ${r.code}; ${r.stdout
          .split('\n')
          .filter((l) => /readded|added back/.test(l))
          .join(' | ')}`,
      );
      t.match(r.stdout, new RegExp(`${ns}/rj: RayJob: jobDeploymentStatus "New" set to ""`));
      const started = await until(async () => {
        const j = await job(ns, 'rj');
        return j?.status?.jobDeploymentStatus === 'Initializing' ? j : undefined;
      }, 'KubeRay to start the RayJob');
      t.match(started.status, names, "KubeRay kept raykeeper's jobId and rayClusterName");
      t.ok(started.metadata.finalizers?.includes(RAYJOB_FINALIZER), "KubeRay's RayJob finalizer (the same name as raykeeper's)");
      await until(() => cluster(ns, names.rayClusterName), 'KubeRay creates the RayCluster under the name raykeeper chose');

      // KubeRay adds it back at its next pass over that cluster. A finalizer edit is not one (its predicates
      // pass generation, label and annotation changes only), so that pass is its periodic requeue (300 s by
      // default) or the cluster's next change: an annotation, here.
      await kube.patch(
        { ...RAYCLUSTERS, namespace: ns, name: 'ft' },
        { metadata: { annotations: { 'example.com/touched': 'yes' } } },
        MERGE_PATCH,
      );
      const held = await until(async () => {
        const c = await cluster(ns, 'ft');
        return c?.metadata.finalizers?.includes(FINALIZER) ? c : undefined;
      }, 'the GCS-FT finalizer, added back by KubeRay at its next pass');
      t.equal(finalizerWriter(held.metadata.managedFields, FINALIZER), 'kuberay-operator', 'KubeRay holds it now (managedFields)');
      const ftEvents = await eventsOf(kube, ns, 'ft');
      t.ok(
        ftEvents.some((e) => e.reason === 'FinalizerReleasedForUninstall' && e.type === 'Warning'),
        'the uninstall said it removed it',
      );
      if (r.code === 3)
        t.ok(
          ftEvents.some(
            (e) => e.reason === 'FinalizerReleasedForUninstall' && e.type === 'Normal' && /added back by kuberay-operator/.test(e.message),
          ),
          'and that KubeRay added it back',
        );

      // Back: KubeRay's operator goes, raykeeper's controller (standalone) comes back.
      await kuberay.stop();
      us = await ours(ns, 'off');
      const runner = await jobRunner(ns);
      await kube.delete({ ...RAYCLUSTERS, namespace: ns, name: 'ft' });
      await gone(() => cluster(ns, 'ft'), 'the GCS-FT cluster, released by raykeeper');
      t.same(await rayKeys(client, 'ft-data'), [], "raykeeper's cleanup deleted its data");
      t.ok(keys.length > 0);
      const cleanup = await kube.get({
        ...JOBS,
        namespace: ns,
        name: 'ft-redis-cleanup',
      });
      t.equal(cleanup.metadata.labels?.['app.kubernetes.io/created-by'], 'raykeeper', 'by its cleanup Job');
      t.match(runner.result(ns, 'ft-redis-cleanup'), { outcome: { kind: 'succeeded' } });
      const kept = await job(ns, 'rj');
      t.match(kept?.status, names, 'the RayJob KubeRay started keeps its names under raykeeper');
      t.not(kept?.status?.jobDeploymentStatus, 'New');
      await kube.delete({ ...RAYJOBS, namespace: ns, name: 'rj' });
      await gone(() => job(ns, 'rj'), "the RayJob, its finalizer removed by raykeeper's RayJob reconciler");
      await us.stop();
    });

    await t.test('companion -> standalone', async (t) => {
      const ns = await namespace('companion-move');
      const kuberay = await kubeRay('kuberay-companion', false);
      t.teardown(() => kuberay.stop().catch(() => undefined));
      let us = await ours(ns, 'on');
      await kube.create({ ...RAYCLUSTERS, namespace: ns }, rayCluster('cft', address, { annotations: { [STORAGE_NS]: 'cft-data' } }));
      const ft = await until(async () => {
        const c = await cluster(ns, 'cft');
        return c?.metadata.finalizers?.includes(FINALIZER) ? c : undefined;
      }, "raykeeper's GCS-FT finalizer (companion mode)");
      t.equal(finalizerWriter(ft.metadata.managedFields, FINALIZER), 'raykeeper', "raykeeper's, not KubeRay's (its cleanup off)");
      await seedRay(client, 'cft-data');
      await kube.create({ ...RAYJOBS, namespace: ns }, rayJob('cj'));
      const driven = await until(async () => {
        const j = await job(ns, 'cj');
        return j?.status?.jobDeploymentStatus === 'Initializing' && j.status.rayClusterName ? j : undefined;
      }, 'KubeRay drives the RayJob');
      t.ok(driven.metadata.finalizers?.includes(RAYJOB_FINALIZER));

      // The move: KubeRay's operator goes; raykeeper's controller restarts with --companion=off.
      await kuberay.stop();
      await us.stop();
      us = await ours(ns, 'off');
      await jobRunner(ns);
      await kube.delete({ ...RAYCLUSTERS, namespace: ns, name: 'cft' });
      await gone(() => cluster(ns, 'cft'), 'the GCS-FT cluster, released by raykeeper');
      t.same(await rayKeys(client, 'cft-data'), [], 'its data cleaned by raykeeper');
      const kept = await job(ns, 'cj');
      t.equal(kept?.status?.jobId, driven.status?.jobId, 'the RayJob KubeRay drove keeps its jobId under raykeeper');
      t.equal(kept?.status?.rayClusterName, driven.status?.rayClusterName);
      t.not(kept?.status?.jobDeploymentStatus, 'New');
      await kube.delete({ ...RAYJOBS, namespace: ns, name: 'cj' });
      await gone(() => job(ns, 'cj'), "the RayJob, KubeRay's finalizer (the same name) removed by raykeeper");
      await us.stop();
    });
  });
