// RAY_REDIS_ADDRESS pointing at a Sentinel (as Ray supports, ray #47335): detected by INFO, the master found
// through the Sentinel, cleaned there. With passwords on both (Ray uses the same credentials for both),
// and with a Sentinel watching two masters (then --sentinel-master chooses).
import t from 'tap';
import { runCleanup } from '../../controller/redis-cleanup/cleanup.ts';
import { runWith } from '../../controller/redis-cleanup/cli.ts';
import { redisServerMissing, startRedisServer, startSentinel } from '../helpers/redis-server.ts';
import { client, seedCurrent, seedLegacy, snapshot } from './fixtures.ts';

const missing = redisServerMissing();
if (missing) {
  t.fail(missing); // a missing redis-server fails, like a missing control plane
} else {
  t.test('auto-detected Sentinel: the master behind it is cleaned', async (t) => {
    const master = await startRedisServer();
    t.teardown(() => master.stop());
    const sentinel = await startSentinel({ masterName: 'mymaster', masterPort: master.port });
    t.teardown(() => sentinel.stop());
    const r = client(master.port);
    t.teardown(() => r.disconnect());
    await seedCurrent(r, 's1');
    await seedLegacy(r, 's1');
    await seedCurrent(r, 's2');
    const res = await runCleanup({
      connection: { host: '127.0.0.1', port: sentinel.port, tls: false },
      namespace: 's1',
      deadlineMs: 20_000,
    });
    t.equal(res.mode, 'sentinel');
    t.match(res.target, new RegExp(`Sentinel 127\\.0\\.0\\.1:${sentinel.port} master "mymaster" at 127\\.0\\.0\\.1:${master.port}`));
    t.equal(res.deletedCount, 4);
    t.equal(res.legacy, 'deleted');
    t.same([...(await snapshot(r)).keys()].sort(), ['RAYs2@ACTOR_TASK_SPEC', 'RAYs2@JOB', 'RAYs2@JobCounter', 'RAYs2@NODE']);
  });

  t.test('password on master and Sentinel (same credentials, as Ray uses them)', async (t) => {
    const pw = 'sentinel-Pa55';
    const master = await startRedisServer({ password: pw });
    t.teardown(() => master.stop());
    const sentinel = await startSentinel({ masterName: 'm', masterPort: master.port, masterPassword: pw, password: pw });
    t.teardown(() => sentinel.stop());
    const r = client(master.port, { password: pw });
    t.teardown(() => r.disconnect());
    await seedCurrent(r, 'p1');
    await seedCurrent(r, 'p2');
    const out = { stdout: '', stderr: '' };
    const code = await runWith(['--timeout', '20'], {
      env: { RAY_REDIS_ADDRESS: `127.0.0.1:${sentinel.port}`, RAY_external_storage_namespace: 'p1', REDIS_PASSWORD: pw },
      stdout: { write: (s: string) => (out.stdout += s) },
      stderr: { write: (s: string) => (out.stderr += s) },
    });
    t.equal(code, 0, out.stderr);
    t.match(out.stdout, /Sentinel .* master "m"/);
    t.notMatch(out.stdout + out.stderr, pw);
    t.equal((await snapshot(r)).size, 4);
  });

  t.test('a Sentinel watching two masters: refused without --sentinel-master, cleaned with it', async (t) => {
    const a = await startRedisServer();
    t.teardown(() => a.stop());
    const b = await startRedisServer();
    t.teardown(() => b.stop());
    const sentinel = await startRedisServer({
      sentinel: true,
      config: [
        `sentinel monitor alpha 127.0.0.1 ${a.port} 1`,
        `sentinel monitor beta 127.0.0.1 ${b.port} 1`,
        'sentinel resolve-hostnames no',
      ],
    });
    t.teardown(() => sentinel.stop());
    const ra = client(a.port);
    const rb = client(b.port);
    t.teardown(() => {
      ra.disconnect();
      rb.disconnect();
    });
    await seedCurrent(ra, 'x');
    await seedCurrent(rb, 'x');
    const connection = { host: '127.0.0.1', port: sentinel.port, tls: false };
    await t.rejects(
      runCleanup({ connection, namespace: 'x', deadlineMs: 20_000 }),
      /monitors 2 masters \((alpha, beta|beta, alpha)\): choose one with --sentinel-master/,
    );
    t.equal((await snapshot(ra)).size + (await snapshot(rb)).size, 8, 'nothing deleted');
    const res = await runCleanup({ connection: { ...connection, sentinelMaster: 'beta' }, namespace: 'x', deadlineMs: 20_000 });
    t.equal(res.deletedCount, 4);
    t.equal((await snapshot(rb)).size, 0, 'beta cleaned');
    t.equal((await snapshot(ra)).size, 4, 'alpha untouched');
    await t.rejects(
      runCleanup({ connection: { ...connection, sentinelMaster: 'gamma' }, namespace: 'x', deadlineMs: 20_000 }),
      /no.*"gamma"/,
    );
  });
}
