// Redis Cluster (3 masters): detected by INFO, every master scanned, keys of the namespace on all of them
// removed (UNLINK grouped by slot), the old-layout hash routed to its node, other data untouched.
import t from 'tap';
import { Cluster } from 'ioredis';
import { runCleanup } from '../../controller/redis-cleanup/cleanup.ts';
import { listNamespaces } from '../../controller/redis-cleanup/list.ts';
import { keySlot } from '../../src/redis/slots.ts';
import { redisServerMissing, startRedisCluster } from '../helpers/redis-server.ts';
import { client, seedLegacy, snapshot } from './fixtures.ts';

const missing = redisServerMissing();
if (missing) {
  t.fail(missing); // a missing redis-server fails, like a missing control plane
} else {
  const cluster = await startRedisCluster(3);
  t.teardown(() => cluster.stop());
  const seed = new Cluster([{ host: '127.0.0.1', port: cluster.port }], { redisOptions: { protocol: 2, disableClientInfo: true } });
  seed.on('error', () => undefined);
  t.teardown(() => seed.disconnect());
  const nodes = cluster.nodes.map((n) => client(n.port));
  t.teardown(() => nodes.forEach((n) => n.disconnect()));
  const all = async () => {
    const keys: string[] = [];
    for (const n of nodes) keys.push(...(await snapshot(n)).keys());
    return keys.sort();
  };

  // Many tables so that the namespace's keys land on every master.
  const tables = Array.from({ length: 40 }, (_, i) => `T${i}`);
  await seedLegacy(seed, 'c1');
  for (const ns of ['c1', 'c10', 'c2']) {
    for (const table of tables) await seed.hset(`RAY${ns}@${table}`, 'k', 'v');
    await seed.set(`RAY${ns}@JobCounter`, '1');
  }
  await seed.rpush('RAYc1@LOOKALIKE', 'x');
  for (let i = 0; i < 300; i++) await seed.set(`other:${i}`, 'x');

  t.test('the slot function agrees with the cluster (CLUSTER KEYSLOT)', async (t) => {
    for (const key of ['RAYc1@T0', 'RAYc1@JobCounter', 'c1', '{tag}x', 'other:17']) {
      t.equal(keySlot(Buffer.from(key)), Number(await nodes[0]!.cluster('KEYSLOT', key)), key);
    }
  });

  t.test('keys of the namespace sit on every master', async (t) => {
    for (const n of nodes) {
      const keys = [...(await snapshot(n)).keys()].filter((k) => k.startsWith('RAYc1@'));
      t.ok(keys.length > 0, `a master holds ${keys.length} of them`);
    }
  });

  t.test('--list across all masters', async (t) => {
    const res = await listNamespaces({
      connection: { host: '127.0.0.1', port: cluster.nodes[1]!.port, tls: false },
      legacy: true,
      deadlineMs: 20_000,
    });
    t.equal(res.mode, 'cluster');
    const byName = Object.fromEntries(res.namespaces.map((n) => [`${n.namespace}/${n.layout}`, n]));
    t.same(Object.keys(byName).sort(), ['c1/current', 'c1/legacy', 'c10/current', 'c2/current']);
    t.match(byName['c1/current'], { keys: 41, lookalikes: 1 });
  });

  t.test('cleanup through any node removes the namespace from all masters', async (t) => {
    const before = await all();
    const res = await runCleanup({
      connection: { host: '127.0.0.1', port: cluster.nodes[2]!.port, tls: false },
      namespace: 'c1',
      deadlineMs: 20_000,
      scanCount: 20,
    });
    t.equal(res.mode, 'cluster');
    t.match(res.target, /3 masters/);
    t.equal(res.deletedCount, 41);
    t.equal(res.legacy, 'deleted');
    t.match(res.leftAlone, [{ key: 'RAYc1@LOOKALIKE', type: 'list' }]);
    const after = await all();
    const removed = before.filter((k) => !after.includes(k));
    t.same(
      removed,
      before.filter((k) => k === 'c1' || (k.startsWith('RAYc1@') && k !== 'RAYc1@LOOKALIKE')),
      'exactly the namespace',
    );
    t.equal(after.filter((k) => k.startsWith('RAYc10@')).length, 41, 'c10 intact');
    t.equal(after.filter((k) => k.startsWith('other:')).length, 300);
    const again = await runCleanup({
      connection: { host: '127.0.0.1', port: cluster.port, tls: false },
      namespace: 'c1',
      deadlineMs: 20_000,
    });
    t.equal(again.deletedCount, 0, 'idempotent');
  });

  t.test('a minimal ACL user works on the cluster (+cluster|slots +cluster|info besides the standalone set)', async (t) => {
    for (const n of nodes) {
      await n.call(
        'ACL',
        'SETUSER',
        'cleaner',
        'reset',
        'on',
        '>cleaner-pw',
        '~*',
        '-@all',
        '+info',
        '+scan',
        '+type',
        '+unlink',
        '+hscan',
        '+cluster|slots',
        '+cluster|info',
      );
    }
    const res = await runCleanup({
      connection: { host: '127.0.0.1', port: cluster.port, tls: false, username: 'cleaner', password: 'cleaner-pw' },
      namespace: 'c2',
      deadlineMs: 20_000,
    });
    t.equal(res.mode, 'cluster');
    t.equal(res.deletedCount, 41);
    t.equal((await all()).filter((k) => k.startsWith('RAYc2@')).length, 0);
    t.equal((await all()).filter((k) => k.startsWith('RAYc10@')).length, 41, 'c10 intact');
  });
}
