// Token auth on the real kube-apiserver with our RayCluster operator (controller/raycluster/reconciler.ts):
// the Secret generated and owned (KubeRay's name and key), a given secretName honoured (missing: no pods,
// a Warning and ReplicaFailure; created later: the pods come), the env on every Ray container, and the
// token in no event, log line, status or metric.
import t from 'tap';
import { startController } from '../../controller/main.ts';
import { rayClusterOperatorModule } from '../../controller/raycluster/module.ts';
import type { Pod } from '../../kube/model.ts';
import { PODS, SECRETS } from '../../kube/resources.ts';
import { createMetricsRegistry } from '../../kube/metrics.ts';
import type { RayClusterStatus } from '../../src/raycluster/status.ts';
import { RAYCLUSTERS, type RayCluster } from '../../src/types.ts';
import { capturingLogger } from '../webhook/helpers.ts';
import { env, events, getCluster, until, type Env } from '../helpers/harness.ts';
import { kuberaySample } from './samples.ts';

function authCluster(name: string, authOptions: Record<string, unknown>): RayCluster {
  const c = kuberaySample();
  c.metadata.name = name;
  (c.spec as Record<string, unknown>).authOptions = authOptions;
  return c;
}

async function clusterPods(e: Env, name: string, n: number): Promise<Pod[]> {
  return until(async () => {
    const ps = (await e.kube.list({ ...PODS, namespace: e.ns.name }, { labelSelector: `ray.io/cluster=${name}` })).items;
    return ps.length === n ? ps : undefined;
  }, `${n} pods of ${name}`);
}

/** The auth env of every container and init container of the pods, by container name. */
function authEnv(ps: Pod[]): Array<[string, unknown, unknown]> {
  return ps
    .flatMap((p) => [...(p.spec?.initContainers ?? []), ...(p.spec?.containers ?? [])])
    .map((c) => [
      c.name,
      c.env?.find((x) => x.name === 'RAY_AUTH_MODE')?.value,
      c.env?.find((x) => x.name === 'RAY_AUTH_TOKEN')?.valueFrom,
    ]);
}

t.test('token auth: the Secret generated and owned, secretName honoured, the env everywhere, the token nowhere else', async (tt) => {
  const e = await env(tt);
  const capture = capturingLogger();
  const metrics = createMetricsRegistry();
  const c = await startController({
    kubeConfig: e.ns.kubeConfig,
    watchNamespace: e.ns.name,
    modules: [rayClusterOperatorModule],
    logger: capture.logger,
    metrics,
    retry: { baseMs: 100, maxMs: 2000, jitter: 0.2 },
  });
  tt.teardown(() => c.stop());
  const ns = e.ns.name;

  const created = await e.kube.create({ ...RAYCLUSTERS, namespace: ns }, authCluster('auth', { mode: 'token' }));
  const secret = await until(() => e.kube.getOrUndefined({ ...SECRETS, namespace: ns, name: 'auth' }), 'the generated Secret');
  tt.same(Object.keys(secret.data ?? {}), ['auth_token'], 'one key: auth_token');
  const token = Buffer.from(secret.data!.auth_token!, 'base64').toString('utf8');
  tt.equal(Buffer.from(token, 'base64').length, 32, '32 random bytes, base64');
  tt.same(secret.metadata.labels, { 'ray.io/cluster': 'auth' });
  tt.match(secret.metadata.ownerReferences, [
    { apiVersion: 'ray.io/v1', kind: 'RayCluster', name: 'auth', uid: created.metadata.uid, controller: true, blockOwnerDeletion: true },
  ]);
  const ps = await clusterPods(e, 'auth', 2);
  const ref = { secretKeyRef: { name: 'auth', key: 'auth_token' } };
  tt.same(
    authEnv(ps).sort(),
    [
      ['ray-head', 'token', ref],
      ['ray-worker', 'token', ref],
      ['wait-gcs-ready', 'token', ref],
    ],
    'head, worker and wait-gcs-ready: RAY_AUTH_MODE and RAY_AUTH_TOKEN by secretKeyRef',
  );

  // A given secretName: never generated; missing -> no pods, a Warning and ReplicaFailure; created -> pods.
  await e.kube.create({ ...RAYCLUSTERS, namespace: ns }, authCluster('given', { mode: 'token', secretName: 'my-token' }));
  const failure = await until(
    async () =>
      ((await getCluster(e, 'given'))?.status as RayClusterStatus | undefined)?.conditions?.find((x) => x.type === 'ReplicaFailure'),
    'given: ReplicaFailure',
  );
  tt.match(failure, { status: 'True', reason: 'AuthSecretNotFound', message: /my-token.*not found/ });
  const [warning] = await until(async () => {
    const ev = await events(e, 'AuthSecretNotFound');
    return ev.length > 0 ? ev : undefined;
  }, 'the AuthSecretNotFound event');
  tt.equal(warning!.type, 'Warning');
  tt.equal((await e.kube.list({ ...PODS, namespace: ns }, { labelSelector: 'ray.io/cluster=given' })).items.length, 0, 'no pods');
  tt.equal(await e.kube.getOrUndefined({ ...SECRETS, namespace: ns, name: 'given' }), undefined, 'nothing generated');
  tt.equal(await e.kube.getOrUndefined({ ...SECRETS, namespace: ns, name: 'my-token' }), undefined, 'nor the named one');
  const mine = 'user-chosen-token-value';
  await e.kube.create({ ...SECRETS, namespace: ns }, { metadata: { name: 'my-token' }, stringData: { auth_token: mine } });
  const given = await clusterPods(e, 'given', 2);
  const mineRef = { secretKeyRef: { name: 'my-token', key: 'auth_token' } };
  tt.same(
    authEnv(given).map(([, , v]) => v),
    [mineRef, mineRef, mineRef],
    'the given Secret is referenced',
  );
  await until(
    async () =>
      ((await getCluster(e, 'given'))?.status as RayClusterStatus | undefined)?.conditions?.some((x) => x.type === 'ReplicaFailure')
        ? undefined
        : true,
    'ReplicaFailure cleared',
  );

  const everything = JSON.stringify({
    events: await events(e),
    logs: capture.lines(),
    status: [(await getCluster(e, 'auth'))?.status, (await getCluster(e, 'given'))?.status],
    metrics: await metrics.metrics(),
    pods: [...ps, ...given],
  });
  tt.ok(capture.lines().length > 0, 'the controller logged');
  tt.notOk(everything.includes(token), 'the generated token is in no event, log line, status, metric or pod');
  tt.notOk(everything.includes(mine), 'nor the given one');
  tt.ok(everything.includes('CreatedAuthSecret'), 'the Secret creation is an event');
});
