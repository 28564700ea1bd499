// The cleanup against a real redis-server: both layouts, decoys, glob characters, dry run, idempotence,
// many keys across many SCAN calls, and --list.
import t from 'tap';
import { cleanupDetail, runCleanup, summarize, type CleanupOptions } from '../../controller/redis-cleanup/cleanup.ts';
import { listNamespaces } from '../../controller/redis-cleanup/list.ts';
import { redisServerMissing, startRedisServer } from '../helpers/redis-server.ts';
import { client, diff, seedCurrent, seedDecoys, seedFiller, seedLegacy, snapshot } from './fixtures.ts';

const missing = redisServerMissing();
if (missing) {
  t.fail(missing); // a missing redis-server fails, like a missing control plane
} else {
  const server = await startRedisServer();
  t.teardown(() => server.stop());
  const r = client(server.port);
  t.teardown(() => r.disconnect());
  const connection = { host: '127.0.0.1', port: server.port, tls: false };
  const clean = (namespace: string, extra: Partial<CleanupOptions> = {}) =>
    runCleanup({ connection, namespace, deadlineMs: 20_000, ...extra });

  t.beforeEach(async () => {
    await r.flushall();
  });

  t.test('current layout: exactly the Ray tables of the namespace go; decoys and neighbours stay', async (t) => {
    const ray = await seedCurrent(r, 'ns1');
    const decoys = await seedDecoys(r, 'ns1');
    await seedCurrent(r, 'ns10');
    await seedCurrent(r, 'ns');
    await seedLegacy(r, 'ns10');
    await seedFiller(r, 3000);
    const before = await snapshot(r);

    const result = await clean('ns1', { scanCount: 50 });
    const after = await snapshot(r);
    const d = diff(before, after);
    t.same(d.removed, [...ray].sort(), 'only the four Ray keys of ns1 were removed');
    t.same(d.changed, [], 'nothing else changed');
    t.same(d.added, []);
    t.equal(result.deletedCount, 4);
    t.same(result.deleted.map((k) => k.key).sort(), [...ray].sort());
    t.equal(result.legacy, 'absent');
    t.ok(result.scanCalls > 10, `several SCAN calls with COUNT 50 (${result.scanCalls})`);
    // The look-alikes that match RAYns1@* are reported, each with a reason.
    const reported = new Map(result.leftAlone.map((k) => [k.key, k.reason]));
    for (const k of ['RAYns1@LISTTABLE', 'RAYns1@SETTABLE', 'RAYns1@ZTABLE', 'RAYns1@STRTABLE', 'RAYns1@x@JOB', 'RAYns1@']) {
      t.ok(reported.has(k), `${k} reported as left alone`);
      t.ok(after.has(k), `${k} still there`);
    }
    t.equal(result.leftAloneCount, 6);
    t.notOk(reported.has('RAYns10@JOB'), 'other namespaces are not even candidates');
    for (const k of decoys) t.ok(after.has(k), `decoy ${k} intact`);
    t.match(summarize(result), /deleted 4 key\(s\); left alone 6 look-alike/);
  });

  t.test('idempotent: a second run deletes nothing, changes nothing and succeeds', async (t) => {
    await seedCurrent(r, 'ns1');
    await seedLegacy(r, 'ns1');
    await seedCurrent(r, 'keep');
    const first = await clean('ns1');
    t.equal(first.deletedCount, 4);
    t.equal(first.legacy, 'deleted');
    const before = await snapshot(r);
    const second = await clean('ns1');
    t.equal(second.deletedCount, 0);
    t.equal(second.legacy, 'absent');
    t.same(diff(before, await snapshot(r)), { removed: [], changed: [], added: [] });
    t.equal((await snapshot(r)).size, 4, 'the other namespace is intact');
  });

  t.test('a namespace that never existed is success with nothing deleted', async (t) => {
    await seedCurrent(r, 'other');
    const before = await snapshot(r);
    const result = await clean('never-there');
    t.equal(result.deletedCount, 0);
    t.equal(result.legacy, 'absent');
    t.same(diff(before, await snapshot(r)).removed, []);
  });

  t.test('old layout: the hash <ns> goes only when every field is <ns>@...', async (t) => {
    await seedLegacy(r, 'old1', 6);
    await seedLegacy(r, 'old10', 2);
    await seedLegacy(r, 'old2', 3, { 'foreign-field': 'x' });
    await r.set('old3', 'a string named like a namespace');
    // A big hash whose one foreign field comes after many HSCAN pages.
    await seedLegacy(r, 'old4', 3000);
    await r.hset('old4', 'zzz-not-ray', '1');
    await r.hset('old1x', 'old1@JOB:a', '1');
    const before = await snapshot(r);

    const r1 = await clean('old1');
    t.equal(r1.legacy, 'deleted');
    t.equal(r1.legacyFields, 6);
    t.same(diff(before, await snapshot(r)).removed, ['old1']);

    for (const [ns, reason] of [
      ['old2', /has field "foreign-field" not starting with "old2@"/],
      ['old3', /is a string, Ray's old layout is a hash/],
      ['old4', /has field "zzz-not-ray"/],
    ] as const) {
      const res = await clean(ns);
      t.equal(res.legacy, 'left-alone', `${ns} left alone`);
      t.equal(res.leftAloneCount, 1);
      t.match(res.leftAlone[0], { key: ns, reason }, `${ns} reason`);
    }
    const after = await snapshot(r);
    t.same(diff(before, after), { removed: ['old1'], changed: [], added: [] }, 'old2, old3, old4, old10, old1x untouched');
  });

  t.test('both layouts at once, and --layout restricts', async (t) => {
    await seedCurrent(r, 'both');
    await seedLegacy(r, 'both');
    const onlyCurrent = await clean('both', { layout: 'current' });
    t.equal(onlyCurrent.deletedCount, 4);
    t.equal(onlyCurrent.legacy, 'not-checked');
    t.equal(await r.exists('both'), 1, 'legacy hash kept with --layout current');
    await seedCurrent(r, 'both');
    const onlyLegacy = await clean('both', { layout: 'legacy' });
    t.equal(onlyLegacy.deletedCount, 0);
    t.equal(onlyLegacy.scanCalls, 0, 'no keyspace scan for the legacy layout');
    t.equal(onlyLegacy.legacy, 'deleted');
    t.equal(await r.exists('RAYboth@JOB'), 1, 'current keys kept with --layout legacy');
  });

  t.test('glob characters in namespaces are literal: no namespace touches another', async (t) => {
    const names = ['g*', 'g?', 'g[ab]', 'ga', 'gb', 'g\\', 'g\\*', 'g^-', 'gx', 'g'];
    for (const ns of names) await seedCurrent(r, ns, 1);
    for (const ns of names) await seedLegacy(r, ns, 1);
    for (const ns of names) {
      const before = await snapshot(r);
      const res = await clean(ns);
      const d = diff(before, await snapshot(r));
      const expected = [`RAY${ns}@ACTOR_TASK_SPEC`, `RAY${ns}@JOB`, `RAY${ns}@JobCounter`, `RAY${ns}@NODE`, ns].sort();
      t.same(d.removed, expected, `${JSON.stringify(ns)} removed only its own keys`);
      t.same(d.changed, []);
      t.equal(res.deletedCount, 4);
    }
    t.equal((await snapshot(r)).size, 0, 'all cleaned in the end');
  });

  t.test('--dry-run deletes nothing and reports what would go', async (t) => {
    const ray = await seedCurrent(r, 'dry');
    await seedLegacy(r, 'dry');
    await seedDecoys(r, 'dry');
    const before = await snapshot(r);
    const res = await clean('dry', { dryRun: true });
    t.same(diff(before, await snapshot(r)), { removed: [], changed: [], added: [] }, 'nothing changed');
    t.equal(res.dryRun, true);
    t.equal(res.deletedCount, 4);
    t.same(res.deleted.map((k) => k.key).sort(), [...ray].sort());
    t.same(Object.fromEntries(res.deleted.map((k) => [k.key, k.type])), {
      'RAYdry@JOB': 'hash',
      'RAYdry@NODE': 'hash',
      'RAYdry@ACTOR_TASK_SPEC': 'hash',
      'RAYdry@JobCounter': 'string',
    });
    t.equal(res.legacy, 'would-delete');
    t.equal(res.legacyFields, 4);
    t.match(summarize(res), /would delete 4 key\(s\); old-layout hash would be deleted \(4 fields\)/);
  });

  t.test('progress is reported per SCAN batch', async (t) => {
    await seedCurrent(r, 'p');
    await seedFiller(r, 2000);
    const seen: number[] = [];
    await clean('p', { scanCount: 100, onProgress: (p) => void seen.push(p.scanCalls) });
    t.ok(seen.length > 5, `progress called ${seen.length} times`);
    t.same(
      seen,
      [...seen].sort((a, b) => a - b),
      'monotonic',
    );
  });

  t.test('an invalid namespace is refused before connecting', async (t) => {
    await t.rejects(clean('a@b'), /contains '@'/);
    await t.rejects(clean(''), /empty/);
  });

  t.test('--list: namespaces with key counts, fields and sizes; --legacy finds the old layout', async (t) => {
    await seedCurrent(r, 'l1', 10);
    await seedCurrent(r, 'l2', 2);
    await seedDecoys(r, 'l2');
    await seedLegacy(r, 'old', 5);
    await seedLegacy(r, 'notray', 2, { foreign: 'x' });
    await seedFiller(r, 500);
    const res = await listNamespaces({ connection, scanCount: 100, deadlineMs: 20_000 });
    t.same(res.warnings, []);
    const byName = Object.fromEntries(res.namespaces.map((n) => [`${n.namespace}/${n.layout}`, n]));
    t.same(Object.keys(byName).sort(), ['l1/current', 'l2/current', 'l20/current'], 'the RAYl20@JOB decoy is a namespace of its own');
    t.match(byName['l1/current'], { keys: 4, fields: 30, tables: ['ACTOR_TASK_SPEC', 'JOB', 'JobCounter', 'NODE'], lookalikes: 0 });
    // Wrong-type keys count as look-alikes; RAYl2@ and RAYl2@x@JOB are not Ray key shapes at all.
    t.match(byName['l2/current'], { keys: 4, fields: 6, lookalikes: 4 });
    t.ok((byName['l1/current']!.bytes ?? 0) > (byName['l2/current']!.bytes ?? 0), 'sizes from MEMORY USAGE: bigger tables, more bytes');
    t.ok((byName['l2/current']!.bytes ?? 0) > 0);

    const withLegacy = await listNamespaces({ connection, legacy: true, scanCount: 100, deadlineMs: 20_000 });
    const legacy = withLegacy.namespaces.filter((n) => n.layout === 'legacy');
    t.same(
      legacy.map((n) => n.namespace),
      ['old'],
      'the hash with a foreign field is not listed',
    );
    t.match(legacy[0], { keys: 1, fields: 5 });
  });

  t.test("Ray's known tables go first, in one round trip; the sweep finds the rest", async (t) => {
    const ray = await seedCurrent(r, 'k1');
    await r.hset('RAYk1@A_TABLE_RAY_ADDS_LATER', 'f', 'v');
    await r.hset('RAYk1@PLACEMENT_GROUP', 'f', 'v');
    await r.rpush('RAYk1@WORKERS', 'not a hash'); // a known name with the wrong type: left alone, once
    await seedCurrent(r, 'k10');
    await seedFiller(r, 5000);
    const watcher = client(server.port);
    t.teardown(() => watcher.disconnect());
    let seenAtFirstScan: number | undefined;
    const res = await clean('k1', {
      scanCount: 10, // a slow sweep: the known tables must already be gone when it starts
      onProgress: async () => {
        seenAtFirstScan ??= await watcher.exists(...ray, 'RAYk1@PLACEMENT_GROUP');
      },
    });
    t.equal(seenAtFirstScan, 0, 'every known table was gone before the first SCAN of the sweep');
    t.equal(res.knownDeleted, 5, 'JOB, NODE, ACTOR_TASK_SPEC, PLACEMENT_GROUP and JobCounter by name');
    t.equal(res.deletedCount, 6, 'and the table not on the list by the sweep');
    t.ok(res.dataGoneMs !== undefined && res.dataGoneMs <= res.durationMs, `data gone after ${res.dataGoneMs} ms of ${res.durationMs}`);
    t.equal(await r.exists('RAYk1@A_TABLE_RAY_ADDS_LATER'), 0);
    t.equal(res.leftAloneCount, 1, 'the list under a known name is reported once');
    t.match(res.leftAlone, [{ key: 'RAYk1@WORKERS', type: 'list' }]);
    t.equal(await r.exists('RAYk1@WORKERS'), 1);
    t.equal((await r.keys('RAYk10@*')).length, 4, 'the neighbour namespace is intact');

    // A dry run counts each key once, whether found by name or by the sweep.
    await seedCurrent(r, 'k1');
    await r.hset('RAYk1@A_TABLE_RAY_ADDS_LATER', 'f', 'v');
    const dry = await clean('k1', { dryRun: true });
    t.equal(dry.deletedCount, 5);
    t.equal(dry.knownDeleted, 4);
    t.equal(dry.leftAloneCount, 1);
    t.equal((await r.keys('RAYk1@*')).length, 6, 'nothing deleted');
  });

  t.test(
    '--sweep never: known tables and the old hash go, a table not on the list stays; always finds it; neighbours never touched',
    async (t) => {
      for (const mode of ['never', 'always'] as const) {
        await r.flushall();
        const ray = await seedCurrent(r, 'w1');
        await r.hset('RAYw1@PLACEMENT_GROUP', 'f', 'v');
        await r.hset('RAYw1@KV', 'f', 'v');
        await r.hset('RAYw1@NEWTABLE', 'f', 'v');
        await seedLegacy(r, 'w1');
        const neighbours = [...(await seedCurrent(r, 'w10')), ...(await seedCurrent(r, 'w')), await seedLegacy(r, 'w2')];
        await r.hset('RAYw10@NEWTABLE', 'f', 'v');
        neighbours.push('RAYw10@NEWTABLE');
        await seedFiller(r, 2000);
        const before = await snapshot(r);

        const res = await clean('w1', { sweep: { mode, reason: `test ${mode}` } });
        const after = await snapshot(r);
        const removed = diff(before, after).removed;
        const known = [...ray, 'RAYw1@PLACEMENT_GROUP', 'RAYw1@KV', 'w1'].sort();
        t.same(removed, mode === 'never' ? known : [...known, 'RAYw1@NEWTABLE'].sort(), `${mode}: exactly these keys removed`);
        t.same(diff(before, after).changed, [], `${mode}: nothing else changed`);
        for (const k of neighbours) t.equal(after.get(k), before.get(k), `${mode}: neighbour ${k} intact`);
        t.equal(res.knownDeleted, 6, `${mode}: the known tables by name`);
        t.equal(res.legacy, 'deleted');
        t.equal(res.sweep, mode === 'never' ? 'skipped' : 'ran');
        t.equal(res.sweepReason, `test ${mode}`);
        if (mode === 'never') {
          t.equal(res.scanCalls, 0, 'never: not one SCAN call');
          t.equal(await r.exists('RAYw1@NEWTABLE'), 1, 'never: the table not on the list stays');
          t.match(summarize(res), /: deleted \d+ key\(s\)[^;]*(; old-layout hash deleted \(\d+ fields\))? in \d+ ms$/);
          t.notMatch(summarize(res), /sweep/, 'the sweep is detail, not in the summary');
          t.same(cleanupDetail(res), { sweep: 'skipped', sweepReason: 'test never', scanCalls: 0, legacy: res.legacy });
        } else {
          t.ok(res.scanCalls > 0);
          t.match(cleanupDetail(res), { sweep: 'ran', sweepReason: 'test always', scanCalls: res.scanCalls });
        }
      }
      // Without a decision the sweep runs, as it always did.
      await r.flushall();
      await r.hset('RAYw1@NEWTABLE', 'f', 'v');
      const byDefault = await clean('w1');
      t.equal(byDefault.sweep, 'ran');
      t.equal(await r.exists('RAYw1@NEWTABLE'), 0, 'the default sweeps');
    },
  );

  t.test('adaptive SCAN COUNT: fewer calls than the old fixed COUNT 1000 over the same keyspace', async (t) => {
    await seedCurrent(r, 'a1');
    await seedFiller(r, 60_000);
    const fixed = await clean('a1', { scanCount: 1000 });
    await seedCurrent(r, 'a1');
    const adaptive = await clean('a1');
    t.equal(adaptive.deletedCount, 4);
    t.ok(adaptive.scanCalls < fixed.scanCalls / 2, `adaptive ${adaptive.scanCalls} calls vs fixed ${fixed.scanCalls}`);
  });

  const v6 = await startRedisServer({ ipv6: true }).catch((e: unknown) => e as Error);
  const noV6 = v6 instanceof Error ? `no IPv6 loopback here: ${v6.message}` : false;
  t.test('IPv6: a server on [::1] (address parsing of [::1]:port is in address.test.ts)', { skip: noV6 }, async (t) => {
    if (v6 instanceof Error) return;
    t.teardown(() => v6.stop());
    const r6 = client(v6.port, { host: '::1' });
    t.teardown(() => r6.disconnect());
    await seedCurrent(r6, 'six');
    const res = await runCleanup({ connection: { host: '::1', port: v6.port, tls: false }, namespace: 'six', deadlineMs: 20_000 });
    t.equal(res.deletedCount, 4);
    t.match(res.target, new RegExp(`^\\[::1\\]:${v6.port} `));
    t.equal((await snapshot(r6)).size, 0);
  });
}
