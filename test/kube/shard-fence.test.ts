// The write fence per shard, in process on the real API server: two replicas with two shards each hold
// one; a replica may write only in the namespaces of the shard it holds (and Events on shard 0's Lease
// with shard 0); once its shard is handed to the other (it stops), the other may write everywhere.
import t from 'tap';
import { startController } from '../../controller/main.ts';
import { LEASES } from '../../kube/resources.ts';
import { shardLeaseName, shardOf } from '../../kube/shards.ts';
import { testNamespace } from '../helpers/control-plane.ts';
import { quiet, until } from '../helpers/harness.ts';

/** The first `team-<i>` namespace name in the shard (no such namespace needs to exist: the fence reads the path). */
const inShard = (shard: number) => {
  for (let i = 0; ; i++) if (shardOf(`team-${i}`, 2) === shard) return `team-${i}`;
};

t.test('two replicas, two shards: each writes only in its own shard', async (tt) => {
  const ns = await testNamespace(tt);
  const start = (identity: string) =>
    startController({
      kubeConfig: ns.kubeConfig,
      watchNamespace: ns.name,
      modules: [],
      logger: quiet,
      leaderElect: true,
      leaseNamespace: ns.name,
      leaseName: 'fence',
      identity,
      shards: 2,
      leaseDurationMs: 3_000,
      renewDeadlineMs: 2_000,
      retryPeriodMs: 400,
    });
  const a = await start('a');
  const b = await start('b');
  tt.teardown(async () => {
    await a.stop();
    await b.stop();
  });
  const holder = async (shard: number) =>
    (
      await ns.kube.getOrUndefined({
        ...LEASES,
        namespace: ns.name,
        name: shardLeaseName('fence', shard),
      })
    )?.spec?.holderIdentity;
  await until(async () => a.manager.sharding!.held().length === 1 && b.manager.sharding!.held().length === 1, 'one shard each', 60_000);
  const byId = { a, b };
  const zero = byId[(await holder(0)) as 'a' | 'b'];
  const one = byId[(await holder(1)) as 'a' | 'b'];
  tt.not(zero, one, 'two holders');
  const write = (c: typeof a, namespace: string | undefined, resource = 'rayclusters') =>
    c.manager.ctx.kube.mayWrite({ namespace, resource });
  tt.ok(write(zero, inShard(0)), "shard 0's holder writes in shard 0's namespaces");
  tt.notOk(write(zero, inShard(1)), "and not in shard 1's");
  tt.ok(write(one, inShard(1)), "shard 1's holder writes in shard 1's namespaces");
  tt.notOk(write(one, inShard(0)), "and not in shard 0's");
  tt.ok(write(zero, undefined), 'cluster-scoped writes: shard 0');
  tt.notOk(write(one, undefined), 'not with shard 1 alone');
  const leaseNsShard = shardOf(ns.name, 2);
  tt.ok(write(zero, ns.name, 'events'), "Events in the Lease namespace (about shard 0's Lease): shard 0");
  tt.equal(write(one, ns.name, 'events'), leaseNsShard === 1, "for shard 1's holder only when the namespace is its own");
  tt.same(zero.manager.ctx.lease, { namespace: ns.name, name: 'fence-shard-0' }, "Events about the controller go on shard 0's Lease");
  tt.ok(zero.manager.isLeader() && !one.manager.isLeader(), "singleton work: shard 0's holder only");

  // SIGTERM-like stop of shard 0's holder: it releases, the other takes both and may write everywhere.
  await zero.stop();
  tt.notOk(write(zero, inShard(0)), 'a stopped replica writes nothing');
  await until(() => one.manager.sharding!.held().length === 2, 'the other takes both shards', 60_000);
  tt.ok(write(one, inShard(0)) && write(one, inShard(1)) && write(one, undefined), 'and writes in every namespace');
});
