// Password- and ACL-protected Redis: the minimal ACL works for both layouts; auth and permission errors
// fail at once (no retries) and delete nothing; --list degrades when MEMORY USAGE is denied.
import t from 'tap';
import { runCleanup } from '../../controller/redis-cleanup/cleanup.ts';
import { listNamespaces } from '../../controller/redis-cleanup/list.ts';
import type { RedisCleanupError } from '../../controller/redis-cleanup/connect.ts';
import { cleanupFromEnvironment } from '../../controller/redis-cleanup/config.ts';
import { redactAddress } from '../../src/redis/address.ts';
import { redisServerMissing, startRedisServer } from '../helpers/redis-server.ts';
import { client, diff, seedCurrent, seedLegacy, snapshot } from './fixtures.ts';

const ADMIN_PW = 'admin-Pa55';
// The documented minimal ACL for the cleanup (see `raykeeper redis-cleanup --help`).
const MINIMAL = '+info +scan +type +unlink +hscan';
const SPECIAL_PW = 'S3cr3t#1?x/y@z';

const missing = redisServerMissing();
if (missing) {
  t.fail(missing); // a missing redis-server fails, like a missing control plane
} else {
  const server = await startRedisServer({
    password: ADMIN_PW,
    aclUsers: [
      `cleanup on >cleanup-pw ~* resetchannels -@all ${MINIMAL}`,
      `noinfo on >noinfo-pw ~* resetchannels -@all +scan +type +unlink +hscan`,
      `nounlink on >nounlink-pw ~* resetchannels -@all +ping +info +scan +type +hscan`,
      `raykeys on >raykeys-pw ~RAY* resetchannels -@all ${MINIMAL}`,
      `lister on >lister-pw ~* resetchannels -@all +ping +info +scan +type +hlen +hscan`,
      'disabled off >off-pw ~* +@all',
      `noscan on >noscan-pw ~* resetchannels -@all +info +type +unlink +hscan`,
      `nohscan on >nohscan-pw ~* resetchannels -@all +info +scan +type +unlink`,
      // A password with every character that used to cut a URL short: '#', '?', '/', '@'.
      `special on >${SPECIAL_PW} ~* resetchannels -@all ${MINIMAL}`,
    ],
  });
  t.teardown(() => server.stop());
  const admin = client(server.port, { password: ADMIN_PW });
  t.teardown(() => admin.disconnect());
  const conn = (username: string | undefined, password: string | undefined) => ({
    host: '127.0.0.1',
    port: server.port,
    tls: false,
    username,
    password,
  });
  const clean = (namespace: string, username: string | undefined, password: string | undefined, deadlineMs = 20_000) =>
    runCleanup({ connection: conn(username, password), namespace, deadlineMs });

  t.beforeEach(async () => {
    await admin.flushall();
    await seedCurrent(admin, 'ns1');
    await seedLegacy(admin, 'ns1');
    await seedCurrent(admin, 'ns2');
  });

  t.test('requirepass (default user): works with the password', async (t) => {
    const res = await clean('ns1', undefined, ADMIN_PW);
    t.equal(res.deletedCount, 4);
    t.equal(res.legacy, 'deleted');
    t.equal((await snapshot(admin)).size, 4, 'ns2 intact');
  });

  t.test('the minimal ACL user cleans both layouts', async (t) => {
    const res = await clean('ns1', 'cleanup', 'cleanup-pw');
    t.equal(res.deletedCount, 4);
    t.equal(res.legacy, 'deleted');
    t.same(res.warnings, []);
    t.same([...(await snapshot(admin)).keys()].sort(), ['RAYns2@ACTOR_TASK_SPEC', 'RAYns2@JOB', 'RAYns2@JobCounter', 'RAYns2@NODE']);
  });

  t.test('without +info the mode cannot be asked: standalone is assumed, with a warning', async (t) => {
    const res = await clean('ns1', 'noinfo', 'noinfo-pw');
    t.equal(res.deletedCount, 4);
    t.match(res.warnings.join(), /INFO is not permitted: assuming a standalone/);
  });

  for (const [what, user, pw] of [
    ['wrong password', undefined, 'wrong-Pa55'],
    ['no password', undefined, undefined],
    ['wrong ACL password', 'cleanup', 'nope'],
    ['unknown user', 'ghost', 'x'],
    ['disabled user', 'disabled', 'off-pw'],
  ] as const) {
    t.test(`${what}: fails at once, deletes nothing, names no password`, async (t) => {
      const before = await snapshot(admin);
      const started = Date.now();
      const err = (await clean('ns1', user, pw, 60_000).catch((e: unknown) => e)) as RedisCleanupError;
      t.ok(err instanceof Error, 'rejected');
      t.equal(err.kind, 'auth');
      t.match(err.message, /WRONGPASS|NOAUTH/);
      t.ok(Date.now() - started < 30_000, 'did not retry until the 60 s deadline');
      if (pw) t.notMatch(err.message, pw);
      t.same(diff(before, await snapshot(admin)).removed, []);
    });
  }

  t.test('ACL without +unlink: a permission error at once, nothing deleted', async (t) => {
    const before = await snapshot(admin);
    const err = (await clean('ns1', 'nounlink', 'nounlink-pw', 60_000).catch((e: unknown) => e)) as RedisCleanupError;
    t.equal(err.kind, 'permission');
    t.match(err.message, /NOPERM.*unlink/);
    t.same(diff(before, await snapshot(admin)).removed, []);
  });

  t.test('ACL limited to ~RAY*: the old-layout key is out of reach, so both layouts fail; --layout current works', async (t) => {
    const err = (await clean('ns1', 'raykeys', 'raykeys-pw').catch((e: unknown) => e)) as RedisCleanupError;
    t.equal(err.kind, 'permission');
    t.match(err.message, /NOPERM/);
    t.equal((await snapshot(admin)).size, 9, 'the check failed before anything was deleted');
    const res = await runCleanup({ connection: conn('raykeys', 'raykeys-pw'), namespace: 'ns1', layout: 'current', deadlineMs: 20_000 });
    t.equal(res.deletedCount, 4);
    t.equal(await admin.exists('ns1'), 1, 'legacy hash untouched');
  });

  for (const [user, missingCommand] of [
    ['noscan', 'scan'],
    ['nohscan', 'hscan'],
  ] as const) {
    t.test(`ACL without +${missingCommand}: a permission error before the first deletion, nothing deleted`, async (t) => {
      const before = await snapshot(admin);
      const err = (await clean('ns1', user, `${user}-pw`, 60_000).catch((e: unknown) => e)) as RedisCleanupError;
      t.equal(err.kind, 'permission');
      t.match(err.message, new RegExp(`NOPERM.*${missingCommand}`, 'i'));
      t.same(diff(before, await snapshot(admin)), { removed: [], changed: [], added: [] }, 'neither layout touched');
    });
  }

  t.test('without the sweep, SCAN is neither needed nor probed: the ACL without +scan cleans both layouts', async (t) => {
    const res = await runCleanup({
      connection: conn('noscan', 'noscan-pw'),
      namespace: 'ns1',
      sweep: { mode: 'never', reason: 'test' },
      deadlineMs: 20_000,
    });
    t.equal(res.deletedCount, 4);
    t.equal(res.legacy, 'deleted');
    t.equal(res.sweep, 'skipped');
    t.same(
      [...(await snapshot(admin)).keys()].sort(),
      ['RAYns2@ACTOR_TASK_SPEC', 'RAYns2@JOB', 'RAYns2@JobCounter', 'RAYns2@NODE'],
      'ns2 intact',
    );
  });

  t.test('a URL password with unencoded # ? / @ works, and no error quotes any of it', async (t) => {
    const address = `redis://special:${SPECIAL_PW}@127.0.0.1:${server.port}`;
    const res = await cleanupFromEnvironment({ RAY_REDIS_ADDRESS: address, RAY_external_storage_namespace: 'ns1' }, { deadlineMs: 20_000 });
    t.equal(res.deletedCount, 4);
    t.equal(res.legacy, 'deleted');
    const pieces = ['S3cr3t', '1?x', 'y@z', 'x/y'];
    for (const bad of [
      `redis://special:${SPECIAL_PW}@127.0.0.1:port`,
      `redis://special:${SPECIAL_PW}@[nothost]:1`,
      `redis://special:${SPECIAL_PW}@:1`,
    ]) {
      const err = (await cleanupFromEnvironment(
        { RAY_REDIS_ADDRESS: bad, RAY_external_storage_namespace: 'ns1' },
        { deadlineMs: 5000 },
      ).catch((e: unknown) => e)) as Error;
      t.ok(err instanceof Error, `${redactAddress(bad)} refused`);
      for (const p of pieces)
        t.notOk(err.message.includes(p), `${redactAddress(bad)}: the error (${err.message}) quotes no part of the password`);
    }
    const wrong = (await cleanupFromEnvironment(
      { RAY_REDIS_ADDRESS: `redis://special:${SPECIAL_PW}x@127.0.0.1:${server.port}`, RAY_external_storage_namespace: 'ns1' },
      { deadlineMs: 5000 },
    ).catch((e: unknown) => e)) as RedisCleanupError;
    t.equal(wrong.kind, 'auth');
    for (const p of pieces) t.notOk(wrong.message.includes(p), `auth failure quotes no part of the password (${wrong.message})`);
  });

  t.test('--list: MEMORY USAGE denied degrades to unknown sizes; counts still right', async (t) => {
    const res = await listNamespaces({ connection: conn('lister', 'lister-pw'), deadlineMs: 20_000 });
    t.match(res.warnings.join(), /MEMORY USAGE is not available.*NOPERM/);
    const ns1 = res.namespaces.find((n) => n.namespace === 'ns1');
    t.match(ns1, { keys: 4, fields: 9, bytes: undefined });
    const full = await listNamespaces({ connection: conn(undefined, ADMIN_PW), deadlineMs: 20_000 });
    t.ok((full.namespaces.find((n) => n.namespace === 'ns1')?.bytes ?? 0) > 0, 'sizes known with full rights');
    // Without +hlen either: fields unknown too.
    const bare = await listNamespaces({ connection: conn('cleanup', 'cleanup-pw'), deadlineMs: 20_000 });
    t.match(
      bare.namespaces.find((n) => n.namespace === 'ns1'),
      { keys: 4, fields: undefined, bytes: undefined },
    );
  });
}
