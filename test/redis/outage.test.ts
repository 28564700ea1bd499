// Redis going away mid-cleanup: retries with backoff, a clear one-line failure when it stays away past the
// deadline, success when it comes back in time, and no hang when it stops answering (SIGSTOP).
import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCleanup } from '../../controller/redis-cleanup/cleanup.ts';
import type { RedisCleanupError } from '../../controller/redis-cleanup/connect.ts';
import { freePort, redisServerMissing, startRedisServer, type RedisServer } from '../helpers/redis-server.ts';
import { client, seedCurrent, seedFiller, snapshot } from './fixtures.ts';
import { sleep } from '../../kube/backoff.ts';

const FAST = { baseMs: 100, maxMs: 400, factor: 2, jitter: 0 };

const missing = redisServerMissing();
if (missing) {
  t.fail(missing); // a missing redis-server fails, like a missing control plane
} else {
  t.test('killed mid-cleanup and never back: retries, then fails clearly within the deadline', async (t) => {
    const server = await startRedisServer();
    t.teardown(() => server.stop());
    const r = client(server.port);
    await seedCurrent(r, 'gone');
    await seedFiller(r, 5000);
    r.disconnect();
    const retries: string[] = [];
    let killed = false;
    const started = Date.now();
    const err = (await runCleanup({
      connection: { host: '127.0.0.1', port: server.port, tls: false },
      namespace: 'gone',
      scanCount: 10,
      deadlineMs: 3000,
      backoff: FAST,
      onRetry: (info) => void retries.push(info.reason),
      onProgress: async () => {
        if (!killed) {
          killed = true;
          await server.kill();
        }
      },
    }).catch((e: unknown) => e)) as RedisCleanupError;
    const elapsed = Date.now() - started;
    t.ok(killed, 'the server was killed during the pass');
    t.ok(err instanceof Error, 'rejected');
    t.ok(retries.length >= 2, `retried ${retries.length} times`);
    t.match(retries.at(-1), /ECONNREFUSED/);
    t.match(err.message, /^gave up after \d+\.\ds: deadline reached; last error: 127\.0\.0\.1:\d+: .*ECONNREFUSED/);
    t.notMatch(err.message, /\n/, 'one line');
    t.ok(elapsed >= 2500 && elapsed < 15_000, `retried until the 3 s deadline, then stopped (${elapsed} ms)`);
  });

  t.test('killed mid-cleanup and restarted with its data: the retry finishes the job', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'raykeeper-redis-restart-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    let server: RedisServer = await startRedisServer({ dir });
    t.teardown(() => server.stop());
    const r = client(server.port);
    await seedCurrent(r, 'back');
    await seedCurrent(r, 'keep');
    await seedFiller(r, 5000);
    await r.save(); // dump.rdb in dir: the restarted server loads it
    r.disconnect();
    const port = server.port;
    let restarted: Promise<void> | undefined;
    const retries: string[] = [];
    const result = await runCleanup({
      connection: { host: '127.0.0.1', port, tls: false },
      namespace: 'back',
      scanCount: 10,
      deadlineMs: 30_000,
      backoff: FAST,
      onRetry: (info) => void retries.push(info.reason),
      onProgress: async () => {
        if (restarted) return;
        await server.kill();
        restarted = (async () => {
          await sleep(700);
          server = await startRedisServer({ port, dir });
        })();
      },
    });
    await restarted;
    t.ok(retries.length >= 1, `retried ${retries.length} time(s): ${retries[0]}`);
    t.ok(result.attempts >= 2);
    const check = client(port);
    t.teardown(() => check.disconnect());
    const keys = [...(await snapshot(check)).keys()];
    t.equal(keys.filter((k) => k.startsWith('RAYback@')).length, 0, 'the namespace is gone after the restart');
    t.equal(keys.filter((k) => k.startsWith('RAYkeep@')).length, 4, 'the other namespace is intact');
    t.equal(keys.filter((k) => k.startsWith('filler:')).length, 5000);
  });

  t.test('nothing listening (closed port): gives up after the connection budget, not the deadline', async (t) => {
    const port = await freePort();
    const retries: string[] = [];
    const started = Date.now();
    const err = (await runCleanup({
      connection: { host: '127.0.0.1', port, tls: false },
      namespace: 'nobody',
      deadlineMs: 60_000,
      connectBudgetMs: 1500,
      backoff: FAST,
      onRetry: (info) => void retries.push(info.reason),
    }).catch((e: unknown) => e)) as RedisCleanupError;
    const elapsed = Date.now() - started;
    t.ok(err instanceof Error, 'rejected');
    t.match(err.message, /^Redis unreachable for \d+s \(\d+ attempts, connection budget spent\): 127\.0\.0\.1:\d+: .*ECONNREFUSED/);
    t.notMatch(err.message, /\n/, 'one line');
    t.ok(retries.length >= 2, `retried ${retries.length} times within the budget`);
    t.ok(elapsed >= 1500 && elapsed < 10_000, `gave up after ${elapsed} ms: the 1.5 s budget, not the 60 s deadline`);
  });

  t.test('stopped (SIGSTOP) past the budget, then resumed: a reachable but slow Redis keeps the whole deadline', async (t) => {
    const server = await startRedisServer();
    t.teardown(async () => {
      process.kill(server.pid, 'SIGCONT');
      await server.stop();
    });
    const r = client(server.port);
    t.teardown(() => r.disconnect());
    await seedCurrent(r, 'slow');
    await seedCurrent(r, 'keep');
    process.kill(server.pid, 'SIGSTOP');
    const started = Date.now();
    let resumedAt: number | undefined;
    const retries: string[] = [];
    const result = await runCleanup({
      connection: { host: '127.0.0.1', port: server.port, tls: false, commandTimeoutMs: 500 },
      namespace: 'slow',
      deadlineMs: 30_000,
      connectBudgetMs: 1000,
      backoff: FAST,
      onRetry: (info) => {
        retries.push(info.reason);
        // Resume only once the connection budget is long spent: the cleanup must still be trying.
        if (resumedAt === undefined && Date.now() - started > 3000) {
          resumedAt = Date.now() - started;
          process.kill(server.pid, 'SIGCONT');
        }
      },
    });
    t.ok(resumedAt !== undefined && resumedAt > 3000, `resumed after ${resumedAt} ms, three times the 1 s budget`);
    t.match(retries[0], /timed out/i, 'the failures were timeouts of an accepted connection, not refusals');
    t.equal(result.deletedCount, 4, 'then the cleanup finished');
    t.equal((await r.keys('RAYslow@*')).length, 0);
    t.equal((await r.keys('RAYkeep@*')).length, 4);
  });

  t.test('a server that stops answering (SIGSTOP) cannot hang the cleanup past its deadline', async (t) => {
    const server = await startRedisServer();
    t.teardown(async () => {
      process.kill(server.pid, 'SIGCONT');
      await server.stop();
    });
    const r = client(server.port);
    await seedCurrent(r, 'hung');
    await seedFiller(r, 2000);
    r.disconnect();
    let stopped = false;
    const started = Date.now();
    const err = (await runCleanup({
      connection: { host: '127.0.0.1', port: server.port, tls: false },
      namespace: 'hung',
      scanCount: 10,
      deadlineMs: 3000,
      backoff: FAST,
      onProgress: () => {
        if (!stopped) {
          stopped = true;
          process.kill(server.pid, 'SIGSTOP');
        }
      },
    }).catch((e: unknown) => e)) as RedisCleanupError;
    const elapsed = Date.now() - started;
    t.ok(err instanceof Error);
    t.match(err.message, /gave up after .*timed out/i);
    t.ok(elapsed < 15_000, `gave up after ${elapsed} ms, not hung`);
  });
}
