// The webhook's RayCluster cache for the storage-namespace check (webhook/claims.ts) on the real API server:
// not ready until its first LIST is in (an unreachable API server keeps it 503, admission unchecked), then
// ready, counting the clusters that claim a namespace, and refusing through the validating route a CREATE
// whose claim a cached cluster holds. And `raykeeper webhook --storage-claims`.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { buildApp } from '../../webhook/app.ts';
import { kubeConfigFor } from '../../localcluster/control-plane.ts';
import { freePort } from '../../localcluster/net.ts';
import { RAYCLUSTERS } from '../../src/types.ts';
import { MERGE_PATCH } from '../../kube/client.ts';
import { SERVICEACCOUNTS } from '../../kube/resources.ts';
import { serviceAccountToken, testNamespace } from '../helpers/control-plane.ts';
import { until } from '../helpers/until.ts';
import { FINALIZER, FT, NS_ANNOTATION, rayCluster, review } from '../admission/fixtures.ts';
import { certDir } from './helpers.ts';
import { quiet } from '../helpers/harness.ts';

const BIN = fileURLToPath(new URL('../../bin/raykeeper.js', import.meta.url));

function gauge(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}

t.test('not ready while the first LIST is not in: an unreachable API server keeps /readyz 503, nothing checked', async (t) => {
  const certs = await certDir(t);
  const ns = await testNamespace(t);
  const unreachable = kubeConfigFor({ ...ns.cp.info, server: `https://127.0.0.1:${await freePort()}` });
  const app = await buildApp({ certFile: certs.certFile, keyFile: certs.keyFile, logger: quiet, kubeConfig: unreachable });
  t.teardown(() => app.close());
  const ready = await app.inject({ method: 'GET', url: '/readyz' });
  t.equal(ready.statusCode, 503);
  t.match(ready.json(), { status: /listing RayClusters/ });
  t.equal(gauge(await app.metricsRegistry.metrics(), 'raykeeper_webhook_storage_claims_synced'), 0);
  t.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200, 'alive all the same');
});

t.test('a forbidden LIST (no RBAC) does not hold readiness: served without the check, retried', async (t) => {
  const certs = await certDir(t);
  const ns = await testNamespace(t);
  await ns.kube.create(SERVICEACCOUNTS.at(ns.name), { metadata: { name: 'no-rbac' } });
  const token = await serviceAccountToken(ns.kube, ns.name, 'no-rbac');
  const app = await buildApp({
    certFile: certs.certFile,
    keyFile: certs.keyFile,
    logger: quiet,
    kubeConfig: kubeConfigFor({ ...ns.cp.info, token }),
  });
  t.teardown(() => app.close());
  await until(() => app.claims?.state() === 'forbidden', 'the LIST refused', 15_000, 50);
  t.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200, 'ready: admission must not wait on a permission it lacks');
  const claimant = rayCluster({
    annotations: { [FT]: 'true', [NS_ANNOTATION]: 'anything' },
    headEnv: [{ name: 'RAY_REDIS_ADDRESS', value: 'redis' }],
    finalizers: [FINALIZER],
  });
  const res = await app.inject({
    method: 'POST',
    url: '/validate-ray-io-v1-raycluster',
    payload: review('RayCluster', 'CREATE', claimant),
  });
  t.equal(res.json().response.allowed, true, 'not checked');
});

t.test('synced: ready, claims counted, a held namespace refused through the route', async (t) => {
  const certs = await certDir(t);
  const ns = await testNamespace(t);
  const address = 'redis.shared:6379';
  const storage = `held-${ns.name}`;
  const holder = rayCluster({
    annotations: { [FT]: 'true', [NS_ANNOTATION]: storage },
    headEnv: [{ name: 'RAY_REDIS_ADDRESS', value: address }],
    finalizers: [FINALIZER],
  });
  (holder.metadata as { name: string; namespace?: string }).name = 'holder';
  delete (holder.metadata as { namespace?: string }).namespace;
  await ns.kube.create({ ...RAYCLUSTERS, namespace: ns.name }, holder);

  const app = await buildApp({ certFile: certs.certFile, keyFile: certs.keyFile, logger: quiet, kubeConfig: ns.cp.kubeConfig() });
  t.teardown(() => app.close());
  await until(async () => (await app.inject({ method: 'GET', url: '/readyz' })).statusCode === 200, 'ready once listed', 30_000, 100);
  const metrics = await app.metricsRegistry.metrics();
  t.equal(gauge(metrics, 'raykeeper_webhook_storage_claims_synced'), 1);
  t.ok((gauge(metrics, 'raykeeper_webhook_storage_claims') ?? 0) >= 1, 'the holder is counted (other tests’ clusters may be too)');

  const claimant = rayCluster({
    annotations: { [FT]: 'true', [NS_ANNOTATION]: storage },
    headEnv: [{ name: 'RAY_REDIS_ADDRESS', value: 'redis://redis.shared.svc.cluster.local' }],
    finalizers: [FINALIZER],
  });
  const body = review('RayCluster', 'CREATE', claimant, undefined, { namespace: 'elsewhere' });
  const res = await app.inject({ method: 'POST', url: '/validate-ray-io-v1-raycluster', payload: body });
  const response = res.json().response;
  t.equal(response.allowed, false);
  t.equal(response.status.code, 403);
  t.match(
    response.status.message,
    `storage namespace "${storage}" on Redis redis.shared.svc:6379 is already used by live RayCluster ${ns.name}/holder`,
  );

  // The holder goes: the watch removes it from the cache, and the same CREATE is admitted.
  await ns.kube.patch({ ...RAYCLUSTERS, namespace: ns.name, name: 'holder' }, { metadata: { finalizers: null } }, MERGE_PATCH);
  await ns.kube.delete({ ...RAYCLUSTERS, namespace: ns.name, name: 'holder' });
  await until(
    async () =>
      (await app.inject({ method: 'POST', url: '/validate-ray-io-v1-raycluster', payload: body })).json().response.allowed === true,
    'admitted once the holder is gone',
    15_000,
    100,
  );
});

t.test('raykeeper webhook --storage-claims: a bad value, or on without credentials, exits 2', async (t) => {
  const certs = await certDir(t);
  const run = (args: string[], env: NodeJS.ProcessEnv = {}) =>
    spawnSync(process.execPath, [BIN, 'webhook', '--cert', certs.certFile, '--key', certs.keyFile, '--port', '0', ...args], {
      encoding: 'utf8',
      timeout: 30_000,
      env: { PATH: process.env.PATH, HOME: certs.dir, ...env },
    });
  const bad = run(['--storage-claims', 'maybe']);
  t.equal(bad.status, 2);
  t.match(bad.stderr, /--storage-claims must be auto, on or off/);
  const on = run(['--storage-claims', 'on'], { KUBERNETES_SERVICE_HOST: '' });
  t.equal(on.status, 2);
  t.match(on.stderr, /--storage-claims on: no Kubernetes cluster configured/);
  const missing = run(['--storage-claims', 'on', '--kubeconfig', `${certs.dir}/none.yaml`]);
  t.equal(missing.status, 2);
  t.match(missing.stderr, /--storage-claims on: .*none\.yaml/);
});
