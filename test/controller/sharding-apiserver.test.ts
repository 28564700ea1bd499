// `raykeeper controller --shards N` as real child processes on a control plane of this test's own (the
// replicas watch every namespace, which the shared test control plane's other tests must not see):
// every shard held by exactly one replica, each replica holding its share, a replica killed with -9
// losing its shard to the others, and every GCS-FT RayCluster released once (one cleanup Job each).
import t from 'tap';
import { startControlPlane } from '../../localcluster/control-plane.ts';
import { JobRunner } from '../../localcluster/job-runner.ts';
import { KubeClient } from '../../kube/client.ts';
import { EVENTS, JOBS, LEASES, NAMESPACES } from '../../kube/resources.ts';
import { shardLeaseName, shardOf } from '../../kube/shards.ts';
import { EVENT_CREATED_REDIS_CLEANUP_JOB } from '../../src/event-reasons.ts';
import { RAYCLUSTERS } from '../../src/types.ts';
import {
  controllerChild,
  FINALIZER,
  leaderFlags,
  metricsOf,
  metricValue,
  quiet,
  rayCluster,
  rayKeys,
  redis,
  seedRay,
  until,
  type ChildController,
  type Env,
} from '../helpers/harness.ts';

const SHARDS = 3;
const LEASE = 'rk';
const SYSTEM = 'raykeeper-system';

/** Two namespaces for each shard: every replica gets work whichever shard it holds. */
function namespacesPerShard(): string[] {
  const picked: string[] = [];
  const count = new Array<number>(SHARDS).fill(0);
  for (let i = 0; picked.length < 2 * SHARDS; i++) {
    const ns = `team-${i}`;
    const shard = shardOf(ns, SHARDS);
    if (count[shard]! < 2) {
      count[shard]! += 1;
      picked.push(ns);
    }
  }
  return picked;
}

t.test(
  'three replicas, three shards: one shard each; one killed with -9: its shard taken over, every cluster released once',
  { timeout: 280_000 },
  async (tt) => {
    const cp = await startControlPlane();
    tt.teardown(() => cp.stop());
    const kube = new KubeClient(cp.kubeConfig());
    tt.teardown(() => kube.close());
    const namespaces = namespacesPerShard();
    for (const name of [SYSTEM, ...namespaces]) await kube.create(NAMESPACES, { metadata: { name } });
    const e: Env = { ns: { name: SYSTEM, cp: { ...cp, shared: false }, kubeConfig: cp.kubeConfig(SYSTEM), kube }, kube };
    const { server, client } = await redis(tt);

    const flags = (id: string) => [
      '--watch-namespace=', // every namespace (the harness's default is the test namespace)
      '--shards',
      String(SHARDS),
      ...leaderFlags(SYSTEM, LEASE, id),
    ];
    const replicas: Record<string, ChildController> = {};
    for (const id of ['one', 'two', 'three']) replicas[id] = await controllerChild(tt, e, flags(id));
    const holders = async () =>
      Promise.all(
        Array.from(
          { length: SHARDS },
          async (_, shard) =>
            (await kube.getOrUndefined({ ...LEASES, namespace: SYSTEM, name: shardLeaseName(LEASE, shard) }))?.spec?.holderIdentity ?? '',
        ),
      );
    const settled = async (live: string[]) => {
      const h = await holders();
      const perReplica = live.map((id) => h.filter((x) => x === id).length);
      return h.every((x) => live.includes(x)) && perReplica.every((n) => n >= 1) ? h : undefined;
    };
    const first = await until(() => settled(['one', 'two', 'three']), 'every shard held, one per replica', 90_000);
    tt.same([...first].sort(), ['one', 'three', 'two'], 'three shards, three replicas: one each');
    for (const [id, c] of Object.entries(replicas)) {
      await until(async () => metricValue(await metricsOf(await c.port), 'raykeeper_shards_held') === 1, `${id} reports one shard held`);
    }

    const clusters: Array<{ namespace: string; uid: string }> = [];
    for (const namespace of namespaces) {
      const body = rayCluster('c', `127.0.0.1:${server.port}`);
      const c = await kube.create({ ...RAYCLUSTERS, namespace }, body);
      await seedRay(client, c.metadata.uid!);
      clusters.push({ namespace, uid: c.metadata.uid! });
    }
    const get = (namespace: string) => kube.getOrUndefined({ ...RAYCLUSTERS, namespace, name: 'c' });
    for (const { namespace } of clusters)
      await until(async () => (await get(namespace))?.metadata.finalizers?.includes(FINALIZER), `the finalizer in ${namespace}`);
    for (const [id, c] of Object.entries(replicas)) {
      const text = await metricsOf(await c.port);
      tt.ok(
        (metricValue(text, 'raykeeper_controller_reconcile_total', 'controller="raycluster",result="success"') ?? 0) >= 1,
        `${id} reconciled its shard's clusters`,
      );
    }

    // Every cluster deleted, its cleanup Job created and still pending (no job runner yet): then the
    // holder of shard 0 (the singleton work's too) is killed with -9 mid-deletion. The others take its
    // shard over and must find the Job it made, not make a second one.
    for (const { namespace } of clusters) await kube.delete({ ...RAYCLUSTERS, namespace, name: 'c' });
    const jobs = async (namespace: string) => (await kube.list({ ...JOBS, namespace })).items.length;
    for (const { namespace } of clusters) await until(async () => (await jobs(namespace)) === 1, `${namespace}: the cleanup Job`);
    for (const { namespace } of clusters) {
      const reporters = (await kube.list({ ...EVENTS, namespace })).items.map((x) => x.reportingInstance);
      const holder = first[shardOf(namespace, SHARDS)];
      tt.ok(
        reporters.length > 0 && reporters.every((r) => r === holder),
        `${namespace}: every Event from ${holder}, its shard's holder (${reporters.join(', ')})`,
      );
    }
    const victim = first[0]!;
    await replicas[victim]!.kill('SIGKILL');
    const killedAt = Date.now();
    const live = Object.keys(replicas).filter((id) => id !== victim);
    const after = await until(() => settled(live), `shard 0 of the killed ${victim} taken over`, 60_000);
    tt.ok(live.includes(after[0]!), `shard 0 now held by ${after[0]}`);
    tt.comment(`taken over ${Date.now() - killedAt} ms after the kill (lease duration 3000 ms)`);
    tt.same(live.map((id) => after.filter((x) => x === id).length).sort(), [1, 2], 'two replicas, three shards: two and one');
    const victimNamespaces = clusters.filter(({ namespace }) => first[shardOf(namespace, SHARDS)] === victim);
    tt.ok(victimNamespaces.length >= 2, 'the killed replica had clusters in deletion');

    const runner = new JobRunner({ kubeConfig: cp.kubeConfig(), namespaces, logger: quiet, killGraceMs: 1000 });
    await runner.start();
    tt.teardown(() => runner.stop());
    for (const { namespace } of clusters) await until(async () => (await get(namespace)) === undefined, `${namespace}'s cluster released`);
    for (const { namespace, uid } of clusters) {
      tt.same(await rayKeys(client, uid), [], `${namespace}: Redis cleaned`);
      tt.equal(await jobs(namespace), 1, `${namespace}: exactly one cleanup Job`);
      const created = (await kube.list({ ...EVENTS, namespace })).items.filter((x) => x.reason === EVENT_CREATED_REDIS_CLEANUP_JOB);
      tt.same(
        created.map((x) => x.count ?? 1),
        [1],
        `${namespace}: one ${EVENT_CREATED_REDIS_CLEANUP_JOB} Event`,
      );
    }

    const memberLease = (id: string) => kube.getOrUndefined({ ...LEASES, namespace: SYSTEM, name: `${LEASE}-member-${id}` });
    await until(
      async () => (await memberLease(victim)) === undefined,
      `the member Lease of the killed ${victim} removed by shard 0's holder`,
    );
    tt.pass(`the member Lease of the killed ${victim} removed`);

    // Paused (SIGSTOP) past the lease duration: its shards go to the other. Resumed, it finds them lost,
    // aborts their work and campaigns again (no exit, unlike the single leader): two and one again.
    const [leaving, stays] = live as [string, string];
    const paused = replicas[leaving]!;
    paused.proc.kill('SIGSTOP');
    await until(async () => (await holders()).every((x) => x === stays), `${stays} holds every shard while ${leaving} is paused`, 60_000);
    paused.proc.kill('SIGCONT');
    await until(() => settled(live), `${leaving} back with a shard after its pause`, 60_000);
    tt.match(paused.log(), /"msg":"sharding: shard lost"/, 'the paused replica noticed its loss');
    tt.equal(paused.proc.exitCode, null, 'and still runs');

    // SIGTERM: it hands its shards back, the last replica holds them all.
    replicas[leaving]!.proc.kill('SIGTERM');
    tt.equal(await replicas[leaving]!.exited, 0, 'graceful exit on SIGTERM');
    await until(async () => (await holders()).every((x) => x === stays), `${stays} holds every shard`, 60_000);
    tt.equal(await memberLease(leaving), undefined, 'the replica that left deleted its member Lease');
    tt.ok(await memberLease(stays), 'the last one is still a member');
  },
);
