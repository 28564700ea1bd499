// One live owner per storage namespace (issue 45), on the real API server and a real redis-server, across
// two Kubernetes namespaces: the held-out scenario. Clusters A (namespace n1) and B (n2) name one storage
// namespace on one Redis (spelled differently).
// - The webhook bypassed (no webhook selects these namespaces, as if B were created while it was down): deleting
//   A leaves B's tables and a Warning on A names B; the finalizer goes at once, no Job. Deleting B, the last
//   holder, then cleans the namespace (its Job, run by the test job runner).
// - Through the webhook (its RayCluster cache listing every namespace): B is refused, the message naming the
//   storage namespace and A; deleting A cleans.
// - The copy-pasted manifest in ONE namespace: the controller's cache index finds it (the cross-namespace
//   cases above find B by a LIST of every namespace: the controller here watches one).
// - Under --watch-namespace with RBAC in its namespace only, that LIST is forbidden: the guard sees its own
//   namespace, warns in the log, and B (elsewhere) is not protected: the documented limit of that RBAC.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import {
  controllerInProcess,
  createCluster,
  env,
  events,
  FINALIZER,
  getCluster,
  jobRunner,
  listJobs,
  metricValue,
  rayCluster,
  rayKeys,
  redis,
  seedRay,
  until,
  type Env,
} from '../helpers/harness.ts';
import { localWebhookConfigurations } from '../../localcluster/webhook-config.ts';
import { applyObject } from '../../localcluster/apply.ts';
import { KubeApiError } from '../../kube/client.ts';
import { MUTATING_WEBHOOK_CONFIGURATIONS, SERVICEACCOUNTS, VALIDATING_WEBHOOK_CONFIGURATIONS } from '../../kube/resources.ts';
import { RAYCLUSTERS } from '../../src/types.ts';
import { startLoopbackWebhook } from '../helpers/webhook.ts';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { parseAllDocuments, stringify } from 'yaml';
import { startController } from '../../controller/main.ts';
import { gcsFtCleanupModule } from '../../controller/gcsft-cleanup/module.ts';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { kubeconfigDocument } from '../../localcluster/control-plane.ts';
import { capturingLogger } from '../webhook/helpers.ts';

const NS_ANNOTATION = 'ray.io/external-storage-namespace';

function storage(): string {
  return `shared-${randomBytes(4).toString('hex')}`;
}

async function deleteCluster(e: Env, name: string): Promise<void> {
  await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name });
}

async function releases(c: Awaited<ReturnType<typeof controllerInProcess>>, reason: string): Promise<number> {
  const text = await c.manager.ctx.metrics.getSingleMetricAsString('raykeeper_raycluster_finalizer_releases_total');
  return metricValue(text, 'raykeeper_raycluster_finalizer_releases_total', `reason="${reason}"`) ?? 0;
}

t.test('webhook bypassed: deleting A (n1) keeps B’s (n2) tables, a Warning on A names B; B, the last, cleans', async (tt) => {
  const n1 = await env(tt);
  const n2 = await env(tt);
  const { server, client } = await redis(tt);
  const ns = storage();
  const a = await createCluster(
    n1,
    rayCluster('a', `127.0.0.1:${server.port}`, { finalizers: [FINALIZER], annotations: { [NS_ANNOTATION]: ns } }),
  );
  await createCluster(
    n2,
    rayCluster('b', `redis://127.0.0.1:${server.port}/0`, { finalizers: [FINALIZER], annotations: { [NS_ANNOTATION]: ns } }),
  );
  const keys = await seedRay(client, ns);
  await seedRay(client, a.metadata.uid!); // a neighbour: A's UID is not its namespace here

  const c1 = await controllerInProcess(tt, n1);
  await deleteCluster(n1, 'a');
  await until(async () => (await getCluster(n1, 'a')) === undefined, 'A released', 30_000);
  const [warning] = await until(async () => {
    const found = await events(n1, 'RedisCleanupSkippedSharedNamespace');
    return found.length > 0 ? found : undefined;
  }, 'the Warning on A');
  tt.equal(warning!.type, 'Warning');
  tt.equal(warning!.involvedObject.name, 'a');
  tt.match(
    warning!.message,
    `storage namespace "${ns}" in Redis at 127.0.0.1:${server.port} is also the storage namespace of live RayCluster ${n2.ns.name}/b`,
  );
  tt.same(await rayKeys(client, ns), [...keys].sort(), "B's tables are all there");
  tt.equal((await rayKeys(client, a.metadata.uid!)).length, 5, 'nothing else touched');
  tt.same(await listJobs(n1), [], 'no cleanup Job was created');
  tt.equal(await releases(c1, 'shared-namespace'), 1, 'released for the shared namespace (metric)');
  tt.equal(await releases(c1, 'job-complete'), 0);

  // B is now the only holder: its deletion cleans the namespace.
  await jobRunner(tt, n2);
  await controllerInProcess(tt, n2);
  await deleteCluster(n2, 'b');
  await until(async () => (await getCluster(n2, 'b')) === undefined, 'B released after its cleanup', 60_000);
  tt.same(await rayKeys(client, ns), [], 'the last holder’s deletion cleaned the namespace');
  tt.equal((await events(n2, 'RedisCleanupSucceeded')).length, 1);
  tt.equal((await rayKeys(client, a.metadata.uid!)).length, 5, 'the neighbour intact');
});

t.test('through the webhook: B (n2) is refused, naming the namespace and A (n1); deleting A cleans', async (tt) => {
  const n1 = await env(tt);
  const n2 = await env(tt);
  const { server, client } = await redis(tt);
  const webhook = await startLoopbackWebhook(tt, { kubeConfig: n1.ns.cp.kubeConfig() });
  await until(() => webhook.app().claims?.synced() === true, 'the webhook cache synced', 30_000);
  const name = `raykeeper-claims-${n1.ns.name}`;
  const configs = await localWebhookConfigurations({
    ...webhook,
    name,
    namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [n1.ns.name, n2.ns.name] }] },
  });
  for (const config of configs) await applyObject(n1.kube, config);
  tt.teardown(async () => {
    await n1.kube.delete({ ...MUTATING_WEBHOOK_CONFIGURATIONS, name }).catch(() => {});
    await n1.kube.delete({ ...VALIDATING_WEBHOOK_CONFIGURATIONS, name }).catch(() => {});
  });
  const ns = storage();
  // No finalizer in the manifests: the mutating webhook adds it (so A is defaulted by the webhook).
  const a = await until(
    async () => {
      const created = await createCluster(n1, rayCluster('a', `127.0.0.1:${server.port}`, { annotations: { [NS_ANNOTATION]: ns } })).catch(
        () => undefined,
      );
      if (created && !created.metadata.finalizers?.includes(FINALIZER)) {
        await deleteCluster(n1, 'a'); // created before the API server called our webhook: try again
        await until(async () => (await getCluster(n1, 'a')) === undefined, 'the early A gone');
        return undefined;
      }
      return created;
    },
    'A created through the webhook',
    30_000,
    200,
  );
  tt.ok(a.metadata.finalizers?.includes(FINALIZER), 'A defaulted by our mutating webhook');
  await seedRay(client, ns);

  // The webhook's cache sees A within a moment (a watch event).
  const refused = await until(
    async () => {
      try {
        await n2.kube.create(
          { ...RAYCLUSTERS, namespace: n2.ns.name },
          rayCluster('b', `redis://127.0.0.1:${server.port}`, { annotations: { [NS_ANNOTATION]: ns } }),
          { query: { dryRun: 'All' } },
        );
        return undefined;
      } catch (err) {
        if (err instanceof KubeApiError && err.statusCode === 403) return err;
        throw err;
      }
    },
    'B refused at admission',
    15_000,
    100,
  );
  tt.match(
    refused.status?.message ?? '',
    `admission webhook "raycluster.validate.raykeeper.io" denied the request: metadata.annotations[${NS_ANNOTATION}]: storage namespace "${ns}" on Redis localhost:${server.port} is already used by live RayCluster ${n1.ns.name}/a`,
  );
  const real = await createCluster(n2, rayCluster('b', `redis://127.0.0.1:${server.port}`, { annotations: { [NS_ANNOTATION]: ns } })).catch(
    (err: unknown) => err,
  );
  tt.ok(real instanceof KubeApiError && real.statusCode === 403, 'the real create is refused too');
  tt.equal(await getCluster(n2, 'b'), undefined, 'B not stored');
  tt.ok(
    (await createCluster(n2, rayCluster('b', `127.0.0.1:${server.port}`, { annotations: { [NS_ANNOTATION]: `${ns}-b` } }))).metadata.uid,
    'B with its own namespace is admitted',
  );
  tt.match(
    await webhook.metrics(),
    /raykeeper_webhook_validations_total\{resource="raycluster",operation="CREATE",result="denied",reason="storage_namespace_in_use"\} [1-9]/,
  );

  await jobRunner(tt, n1);
  await controllerInProcess(tt, n1);
  await deleteCluster(n1, 'a');
  await until(async () => (await getCluster(n1, 'a')) === undefined, 'A released after its cleanup', 60_000);
  tt.same(await rayKeys(client, ns), [], "A's namespace cleaned: no live cluster shared it");
  tt.equal((await events(n1, 'RedisCleanupSkippedSharedNamespace')).length, 0);
});

t.test('a copy-pasted manifest in one namespace: the controller’s cache finds the other holder', async (tt) => {
  const e = await env(tt);
  const { server, client } = await redis(tt);
  const ns = storage();
  for (const name of ['a', 'a-copy'])
    await createCluster(e, rayCluster(name, `127.0.0.1:${server.port}`, { finalizers: [FINALIZER], annotations: { [NS_ANNOTATION]: ns } }));
  const keys = await seedRay(client, ns);
  const c = await controllerInProcess(tt, e);
  await deleteCluster(e, 'a');
  await until(async () => (await getCluster(e, 'a')) === undefined, 'A released', 30_000);
  const warning = await until(async () => (await events(e, 'RedisCleanupSkippedSharedNamespace'))[0], 'the Warning');
  tt.match(warning.message, `live RayCluster ${e.ns.name}/a-copy`);
  tt.same(await rayKeys(client, ns), [...keys].sort(), 'the copy’s tables intact');
  tt.equal(await releases(c, 'shared-namespace'), 1);
});

t.test(
  'under --watch-namespace without a cluster-wide list (the chart’s watchNamespaces RBAC): the guard sees its namespace only, and says so',
  async (tt) => {
    const n1 = await env(tt);
    const n2 = await env(tt);
    const { server, client } = await redis(tt);
    // The shipped controller rules, granted in n1 only (a Role, as charts/raykeeper does under controller.watchNamespaces).
    const rules = parseAllDocuments(readFileSync(join(REPO_ROOT, 'manifests', 'base', 'rbac-controller.yaml'), 'utf8'))
      .map((d) => d.toJS() as { kind: string; rules?: unknown[] })
      .find((d) => d.kind === 'ClusterRole')?.rules;
    const rbac = (plural: string) => ({ group: 'rbac.authorization.k8s.io', version: 'v1', plural, namespace: n1.ns.name });
    await n1.kube.create({ ...SERVICEACCOUNTS, namespace: n1.ns.name }, { metadata: { name: 'controller' } });
    await n1.kube.create(rbac('roles'), { metadata: { name: 'controller' }, rules });
    await n1.kube.create(rbac('rolebindings'), {
      metadata: { name: 'controller' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'controller' },
      subjects: [{ kind: 'ServiceAccount', name: 'controller', namespace: n1.ns.name }],
    });
    const doc = kubeconfigDocument(n1.ns.cp.info, n1.ns.name) as { users: Array<{ user: Record<string, unknown> }> };
    doc.users[0]!.user.as = `system:serviceaccount:${n1.ns.name}:controller`;
    const kc = new KubeConfig();
    kc.loadFromString(stringify(doc));

    const ns = storage();
    await createCluster(n1, rayCluster('a', `127.0.0.1:${server.port}`, { finalizers: [FINALIZER], annotations: { [NS_ANNOTATION]: ns } }));
    await createCluster(n2, rayCluster('b', `127.0.0.1:${server.port}`, { finalizers: [FINALIZER], annotations: { [NS_ANNOTATION]: ns } }));
    await seedRay(client, ns);
    const { logger, lines } = capturingLogger();
    await jobRunner(tt, n1);
    const c = await startController({
      kubeConfig: kc,
      watchNamespace: n1.ns.name,
      modules: [gcsFtCleanupModule],
      env: {},
      logger,
      moduleFlags: { 'cleanup-image': 'raykeeper:test' },
      retry: { baseMs: 100, maxMs: 2000, jitter: 0.2 },
    });
    tt.teardown(() => c.stop());
    await deleteCluster(n1, 'a');
    await until(async () => (await getCluster(n1, 'a')) === undefined, 'A released after its cleanup', 60_000);
    tt.ok(
      lines().some((l) => /may not list RayClusters in every namespace \(403\)/.test(String(l.msg))),
      'a warning says the guard could not look beyond its namespace',
    );
    tt.same(await rayKeys(client, ns), [], 'not seen, so cleaned: what this RBAC cannot protect (docs/reference/gcs-ft.md)');
  },
);
