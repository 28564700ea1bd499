// `raykeeper controller` as real child processes: killed mid-way and restarted, and two replicas with
// leader election.
import t from 'tap';
import { controllerChild, createCluster, env, FINALIZER, getCluster, jobRunner, listJobs, metricsOf, metricValue, rayCluster, rayKeys, redis, seedRay, until } from './harness.ts';
import { LEASES, RAYCLUSTERS } from '../../src/kube-resources.ts';

t.test('controller killed after creating the Job, restarted twice: exactly one Job, finalizer released once cleaned', async (tt) => {
  const e = await env(tt);
  const { server, client } = await redis(tt);
  const a = await controllerChild(tt, e);
  const c = await createCluster(e, rayCluster('restart', `127.0.0.1:${server.port}`));
  await seedRay(client, c.metadata.uid!);
  await until(async () => (await getCluster(e, 'restart'))?.metadata.finalizers?.includes(FINALIZER), 'finalizer added by the first controller');
  await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'restart' });
  await until(async () => (await listJobs(e)).length === 1, 'Job created');
  await a.kill('SIGKILL');

  // A second controller comes up while the Job is still pending: it must not make another one.
  const b = await controllerChild(tt, e);
  await b.port;
  await until(async () => (metricValue(await metricsOf(await b.port), 'raykeeper_raycluster_actions_total', 'action="waitForJob"') ?? 0) >= 1, 'the new controller has looked at the existing Job');
  tt.equal((await listJobs(e)).length, 1, 'still one Job after the restart');
  tt.ok(await getCluster(e, 'restart'), 'not released while the Job runs');
  await b.kill('SIGKILL');

  // The Job completes while no controller runs; the next one releases the finalizer.
  const runner = await jobRunner(tt, e);
  await until(async () => (await listJobs(e))[0]?.status?.conditions?.some((x) => x.type === 'Complete' && x.status === 'True'), 'the Job completed');
  await runner.stop();
  tt.ok(await getCluster(e, 'restart'), 'still held: nobody released it yet');
  await controllerChild(tt, e);
  await until(async () => (await getCluster(e, 'restart')) === undefined, 'the third controller releases the finalizer');
  tt.same(await rayKeys(client, c.metadata.uid!), []);
  tt.equal((await listJobs(e)).length, 1, 'exactly one Job over three controller lifetimes');
});

interface Lease {
  spec: { holderIdentity?: string | null; leaseTransitions?: number };
}

t.test('two replicas: only the leader reconciles; the standby takes over when the leader is killed; SIGTERM releases the Lease', async (tt) => {
  const e = await env(tt);
  const { server, client } = await redis(tt);
  const flags = (id: string) => ['--leader-elect', '--lease-namespace', e.ns.name, '--lease-name', 'rk', '--identity', id, '--lease-duration', '3', '--renew-deadline', '2', '--retry-period', '0.4'];
  const replicas = { one: await controllerChild(tt, e, flags('one')), two: await controllerChild(tt, e, flags('two')) };
  const leaseRef = { ...LEASES, namespace: e.ns.name, name: 'rk' };
  const holder = async () => (await e.kube.getOrUndefined<Lease>(leaseRef))?.spec.holderIdentity ?? undefined;
  const first = (await until(holder, 'a leader')) as 'one' | 'two';
  const second = first === 'one' ? 'two' : 'one';
  const leader = replicas[first];
  const standby = replicas[second];
  await until(async () => metricValue(await metricsOf(await leader.port), 'raykeeper_leader') === 1, 'leader reports itself');
  tt.equal(metricValue(await metricsOf(await standby.port), 'raykeeper_leader'), 0, 'standby reports 0');

  const c = await createCluster(e, rayCluster('ha', `127.0.0.1:${server.port}`));
  await seedRay(client, c.metadata.uid!);
  await until(async () => (await getCluster(e, 'ha'))?.metadata.finalizers?.includes(FINALIZER), 'the leader adds the finalizer');
  const standbyMetrics = await metricsOf(await standby.port);
  tt.equal(metricValue(standbyMetrics, 'raykeeper_controller_reconcile_total', 'controller="raycluster",result="success"'), undefined, 'the standby reconciled nothing');
  tt.equal(await (async () => (await fetch(`http://127.0.0.1:${await standby.port}/readyz`)).status)(), 200, 'the standby is ready (warm cache)');

  await leader.kill('SIGKILL');
  await until(async () => (await holder()) === second, 'the standby takes the lease', 30_000);
  await until(async () => metricValue(await metricsOf(await standby.port), 'raykeeper_leader') === 1, 'new leader reports itself');
  await jobRunner(tt, e);
  await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'ha' });
  await until(async () => (await getCluster(e, 'ha')) === undefined, 'the new leader completes the deletion');
  tt.same(await rayKeys(client, c.metadata.uid!), []);
  tt.equal((await listJobs(e)).length, 1);

  standby.proc.kill('SIGTERM');
  tt.equal(await standby.exited, 0, 'graceful exit on SIGTERM');
  tt.equal((await holder()) ?? '', '', 'the lease was released on SIGTERM');
  tt.match(standby.log(), /released the lease/);
});
