// Issue 47 item 9, on the real API server and Redis: a GCS-FT cluster whose head reaches Redis by the short
// Service name `redis`, in a namespace being deleted. The cleanup Job cannot be created there, so the controller
// cleans itself; it must resolve `redis` as the Job's pod in the CLUSTER's namespace would
// (`redis.<namespace>`), not from its own namespace (where it found no `redis`: EAI_AGAIN, the finalizer
// released as inprocess-failed and the keys left).
//
// This machine has no cluster DNS, so the test stands in for it at the one place the controller hands the
// address to the cleanup (the injectable in-process runner): a resolver that knows the Service
// `redis.<test namespace>.svc.cluster.local` (the real redis-server on loopback) by the names a pod's resolver in
// the controller's namespace completes to it (`redis.<ns>`, `redis.<ns>.svc`, in full), and nothing else: not
// plain `redis`, which that resolver would look for in the controller's own namespace. Everything else is real: the API server, the controller, the Secret-free
// env resolution, the cleanup code and Redis.
import t from 'tap';
import { startController } from '../../controller/main.ts';
import { gcsFtCleanupModule } from '../../controller/gcsft-cleanup/module.ts';
import { createGcsFtCleanupController, defaultInProcessRunner, type InProcessRunner } from '../../controller/gcsft-cleanup/reconciler.ts';
import { DEFAULT_CLEANUP_CONFIG } from '../../src/gcsft/cleanup-job.ts';
import { parseRedisAddress } from '../../src/redis/address.ts';
import { RAYCLUSTERS } from '../../src/types.ts';
import { NAMESPACES } from '../../kube/resources.ts';
import {
  createCluster,
  env,
  FINALIZER,
  getCluster,
  listJobs,
  metricValue,
  quiet,
  rayCluster,
  rayKeys,
  redis,
  seedRay,
  until,
} from '../helpers/harness.ts';

t.test('namespace terminating: the in-process cleanup resolves `redis` in the cluster’s namespace, as its Job would', async (tt) => {
  const e = await env(tt);
  const { server, client } = await redis(tt);
  const service = `redis.${e.ns.name}`;
  const names = [service, `${service}.svc`, `${service}.svc.cluster.local`];
  const asked: string[] = [];
  // Cluster DNS stand-in: the one Service this test's namespace has. A name the controller's own namespace would
  // have to resolve (plain `redis`) fails as it did in issue 47.
  const clusterDns: InProcessRunner = async (env, options) => {
    const address = env.RAY_REDIS_ADDRESS ?? '';
    asked.push(address);
    const { host, port } = parseRedisAddress(address);
    if (!names.includes(host)) return { ok: false, message: `getaddrinfo EAI_AGAIN ${host}` };
    return defaultInProcessRunner({ ...env, RAY_REDIS_ADDRESS: `127.0.0.1:${port}` }, options);
  };
  const c = await startController({
    kubeConfig: e.ns.kubeConfig,
    watchNamespace: e.ns.name,
    workers: 2,
    modules: [
      {
        ...gcsFtCleanupModule,
        create: (ctx) =>
          createGcsFtCleanupController(ctx, { job: { ...DEFAULT_CLEANUP_CONFIG, image: 'raykeeper:test' }, runCleanup: clusterDns }),
      },
    ],
    env: {},
    logger: quiet,
    retry: { baseMs: 100, maxMs: 2000, jitter: 0.2 },
  });
  tt.teardown(() => c.stop());

  const cluster = await createCluster(e, rayCluster('short', `redis:${server.port}`, { finalizers: [FINALIZER] }));
  await seedRay(client, cluster.metadata.uid!);
  await seedRay(client, 'neighbour');
  await e.kube.delete({ ...NAMESPACES, name: e.ns.name });
  await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'short' });
  await until(async () => (await getCluster(e, 'short')) === undefined, 'the finalizer is released', 60_000);

  tt.same(asked, [`${service}:${server.port}`], 'the controller asked for the Service of the cluster’s namespace, once');
  tt.same(await rayKeys(client, cluster.metadata.uid!), [], 'the keys are gone');
  tt.equal((await rayKeys(client, 'neighbour')).length, 5, 'the neighbour intact');
  tt.same(await listJobs(e), [], 'no Job could be created (the namespace is terminating)');
  const releases = await c.manager.ctx.metrics.getSingleMetricAsString('raykeeper_raycluster_finalizer_releases_total');
  tt.equal(metricValue(releases, 'raykeeper_raycluster_finalizer_releases_total', 'reason="inprocess-complete"'), 1);
  tt.equal(metricValue(releases, 'raykeeper_raycluster_finalizer_releases_total', 'reason="inprocess-failed"'), 0);
});
