// One rule for the head's storage namespace (issue 45), end to end on the real API server and Redis: a head whose
// RAY_external_storage_namespace comes from a Secret key (KubeRay leaves it, so Ray writes under the Secret's
// value). The cleanup Job deletes THAT namespace (the job runner resolves the secretKeyRef as the kubelet),
// not the UID; the Job's annotation, the events and the by-hand command all name the same Secret key (the
// controller never reads the Secret: its RBAC has no Secret read by default, and a Secret's content never goes
// into an annotation or an event); and the by-hand command, run as printed with the Secret read by the admin,
// deletes the same namespace.
import t from 'tap';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import {
  controllerInProcess,
  createCluster,
  env,
  events,
  FINALIZER,
  getCluster,
  jobRunner,
  listJobs,
  rayCluster,
  rayKeys,
  redis,
  seedRay,
  until,
} from '../helpers/harness.ts';
import { RAYCLUSTERS } from '../../src/types.ts';
import { JOBS, SECRETS } from '../../kube/resources.ts';

const BIN = fileURLToPath(new URL('../../bin/raykeeper.js', import.meta.url));
const fromSecret = { name: 'RAY_external_storage_namespace', valueFrom: { secretKeyRef: { name: 'gcs-ns', key: 'ns' } } };

t.test('the Job cleans the namespace the Secret names; its annotation and the events name the Secret key', async (tt) => {
  const e = await env(tt);
  const { server, client } = await redis(tt);
  const ns = `from-secret-${randomBytes(4).toString('hex')}`;
  await e.kube.create({ ...SECRETS, namespace: e.ns.name }, { metadata: { name: 'gcs-ns' }, stringData: { ns } });
  await jobRunner(tt, e);
  await controllerInProcess(tt, e);
  const c = await createCluster(
    e,
    rayCluster('fromsecret', `127.0.0.1:${server.port}`, { finalizers: [FINALIZER], headEnv: [fromSecret] }),
  );
  await seedRay(client, ns);
  await seedRay(client, c.metadata.uid!);
  await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'fromsecret' });
  await until(async () => (await getCluster(e, 'fromsecret')) === undefined, 'released after the cleanup', 60_000);

  tt.same(await rayKeys(client, ns), [], 'the namespace the head wrote (the Secret’s) is deleted');
  tt.equal((await rayKeys(client, c.metadata.uid!)).length, 5, 'the UID namespace is not touched');
  const [job] = await listJobs(e);
  const full = await e.kube.get({ ...JOBS, namespace: e.ns.name, name: job!.metadata.name });
  tt.same(
    full.metadata.annotations,
    { 'raykeeper.io/cluster-name': 'fromsecret', 'raykeeper.io/storage-namespace-from': 'secret gcs-ns key ns' },
    "the Job's annotation names the Secret key, not the UID",
  );
  const container = (full.spec as { template: { spec: { containers: Array<{ env: unknown[] }> } } }).template.spec.containers[0]!;
  tt.same(
    container.env.find((x) => (x as { name: string }).name === 'RAY_external_storage_namespace'),
    fromSecret,
    'its env reads the same key',
  );
  const created = (await events(e, 'CreatedRedisCleanupJob'))[0]!;
  tt.match(created.message, `to delete storage namespace from secret gcs-ns key ns in Redis at 127.0.0.1:${server.port}`);
  const succeeded = (await events(e, 'RedisCleanupSucceeded'))[0]!;
  tt.match(succeeded.message, 'deleted storage namespace from secret gcs-ns key ns');
  for (const ev of await events(e)) tt.notMatch(ev.message, ns, `${ev.reason}: the Secret's content is not in an event`);
});

t.test('the by-hand command names the Secret key; run with it, it deletes the same namespace', async (tt) => {
  const e = await env(tt);
  const { server, client } = await redis(tt);
  const ns = `from-secret-${randomBytes(4).toString('hex')}`;
  await e.kube.create({ ...SECRETS, namespace: e.ns.name }, { metadata: { name: 'gcs-ns' }, stringData: { ns } });
  await controllerInProcess(tt, e); // no job runner: the Job never runs, the timeout releases with the command
  const c = await createCluster(
    e,
    rayCluster('byhand', `127.0.0.1:${server.port}`, {
      finalizers: [FINALIZER],
      headEnv: [fromSecret],
      annotations: { 'ray.io/gcs-ft-deletion-timeout': '3' },
    }),
  );
  await seedRay(client, ns);
  await seedRay(client, c.metadata.uid!);
  await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'byhand' });
  await until(async () => (await getCluster(e, 'byhand')) === undefined, 'released at the timeout', 30_000);
  const forced = await until(async () => (await events(e, 'ForceDeletedStuckCluster'))[0], 'the Warning');
  const command = /To delete it by hand run: (.*)$/.exec(forced.message)?.[1] ?? '';
  tt.equal(
    command,
    `RAY_external_storage_namespace='<secret gcs-ns key ns>' RAY_REDIS_ADDRESS=127.0.0.1:${server.port} raykeeper redis-cleanup`,
    'the command names the same Secret key as the Job',
  );
  tt.equal((await rayKeys(client, ns)).length, 5, 'still there: the Job never ran');

  // An admin runs it, reading the Secret as the placeholder says (kubectl get secret gcs-ns -o jsonpath='{.data.ns}' | base64 -d).
  const secret = await e.kube.get({ ...SECRETS, namespace: e.ns.name, name: 'gcs-ns' });
  const vars: Record<string, string> = {};
  for (const m of command.matchAll(/(\w+)=('[^']*'|\S+)/g)) vars[m[1]!] = m[2]!.replace(/^'|'$/g, '');
  if (vars.RAY_external_storage_namespace === '<secret gcs-ns key ns>')
    vars.RAY_external_storage_namespace = Buffer.from(secret.data!.ns!, 'base64').toString('utf8');
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, [BIN, 'redis-cleanup'], { env: { ...process.env, ...vars }, stdio: 'ignore' });
    child.on('exit', resolve);
  });
  tt.equal(code, 0, 'raykeeper redis-cleanup exits 0');
  tt.same(await rayKeys(client, ns), [], 'the by-hand command deleted the namespace the head wrote');
  tt.equal((await rayKeys(client, c.metadata.uid!)).length, 5, 'and not the UID');
});
