// The pod operator and the GCS-FT cleanup in one process, on the real API server: a head-pod create the
// operator started before the cluster's deletion is held back in flight until after the deletion. The
// cleanup must not list pods (and create its Job) while that create is under way, and the operator
// must start no other pod create for the cluster once the cleanup saw it deleting
// (kube/creation-gate.ts). Without the gate the Job would run while the head pod is
// still to come, and its GCS would write after the cleanup.
import t from 'tap';
import { startController } from '../../controller/main.ts';
import { gcsFtCleanupModule } from '../../controller/gcsft-cleanup/module.ts';
import { rayClusterOperatorModule } from '../../controller/raycluster/module.ts';
import type { ControllerContext, ReconcilerModule } from '../../kube/reconciler.ts';
import { sleep } from '../../kube/backoff.ts';
import { RAYCLUSTERS } from '../../src/types.ts';
import { PODS } from '../../kube/resources.ts';
import type { KubeClient } from '../../kube/client.ts';
import {
  createCluster,
  env,
  events,
  FINALIZER,
  getCluster,
  jobRunner,
  listJobs,
  metricValue,
  quiet,
  rayCluster,
  rayKeys,
  redis,
  seedRay,
  until,
} from '../helpers/harness.ts';

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** A module listed first: it wraps the shared client so that head-pod creates wait for `release`. */
function holdHeadPodCreates() {
  const started = deferred();
  const release = deferred();
  const sent = { head: 0, worker: 0 };
  const module: ReconcilerModule = {
    name: 'test-hold-head-pod',
    summary: 'test only: holds head pod creates',
    create(ctx: ControllerContext) {
      const real = ctx.kube;
      (ctx as { kube: KubeClient }).kube = new Proxy(real, {
        get(target, prop) {
          if (prop === 'create') {
            return async (ref: { plural: string }, body: { metadata?: { labels?: Record<string, string> } }, options?: unknown) => {
              const type = ref.plural === 'pods' ? body.metadata?.labels?.['ray.io/node-type'] : undefined;
              if (type === 'head') {
                started.resolve();
                await release.promise;
              }
              if (type === 'head' || type === 'worker') sent[type]++;
              return target.create(ref as never, body as never, options as never);
            };
          }
          const value = Reflect.get(target, prop, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      return { name: 'test-hold-head-pod', reconciler: { reconcile: async () => undefined }, watches: [] };
    },
  };
  return { module, started: started.promise, release: release.resolve, sent };
}

t.test(
  'a head-pod create in flight when the cluster is deleted: the cleanup waits for it, sees the pod, and no other pod is created',
  async (tt) => {
    const e = await env(tt);
    const { server, client } = await redis(tt);
    await jobRunner(tt, e);
    const hold = holdHeadPodCreates();
    const c = await startController({
      kubeConfig: e.ns.kubeConfig,
      watchNamespace: e.ns.name,
      workers: 2,
      modules: [hold.module, gcsFtCleanupModule, rayClusterOperatorModule],
      env: {},
      logger: quiet,
      moduleFlags: { 'cleanup-image': 'raykeeper:test' },
      retry: { baseMs: 100, maxMs: 2000, jitter: 0.2 },
    });
    tt.teardown(() => c.stop());

    const created = await createCluster(e, rayCluster('order', `127.0.0.1:${server.port}`, { finalizers: [FINALIZER] }));
    const uid = created.metadata.uid!;
    await seedRay(client, uid);
    await hold.started; // the operator is creating the head pod
    await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'order' });
    const actions = async (action: string) =>
      metricValue(
        await c.manager.ctx.metrics.getSingleMetricAsString('raykeeper_raycluster_actions_total'),
        'raykeeper_raycluster_actions_total',
        `action="${action}"`,
      ) ?? 0;
    // Give the cleanup time to act on the deletion if it did not wait for the create.
    await sleep(1500);
    tt.equal((await listJobs(e)).length, 0, 'no cleanup Job while the head-pod create is under way');
    tt.equal(await actions('createJob'), 0, 'no Job decided either');

    hold.release();
    await until(async () => (await getCluster(e, 'order')) === undefined, 'the cluster to be gone', 60_000);
    tt.ok((await actions('deletePods')) >= 1, 'the cleanup saw the head pod that landed and deleted it first');
    tt.equal(hold.sent.head, 1, 'the held head-pod create was sent');
    tt.equal(hold.sent.worker, 0, 'no worker pod create was sent once the cleanup saw the deletion');
    tt.same(await rayKeys(client, uid), [], 'the GCS data is gone');
    tt.equal((await listJobs(e)).length, 1, 'one cleanup Job');
    tt.equal((await events(e, 'RedisCleanupRerun')).length, 0, 'no rerun was needed');
    tt.equal(
      (await e.kube.list({ ...PODS, namespace: e.ns.name }, { labelSelector: 'ray.io/node-type in (head,worker)' })).items.length,
      0,
      'no Ray pod left',
    );
  },
);
