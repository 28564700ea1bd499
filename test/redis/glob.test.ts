// The SCAN MATCH pattern of a namespace, with the real redis-server as the oracle (its glob matcher,
// util.c stringmatchlen, is what the cleanup relies on): for random namespaces made of glob-special
// characters, `SCAN MATCH RAY<escaped ns>@*` returns exactly the keys whose bytes start with `RAY<ns>@`.
import t from 'tap';
import fc from 'fast-check';
import { currentPattern, currentPrefix } from '../../src/redis/keys.ts';
import { redisServerMissing, startRedisServer } from '../helpers/redis-server.ts';
import { client } from './fixtures.ts';

const missing = redisServerMissing();
if (missing) {
  t.fail(missing); // a missing redis-server fails, like a missing control plane
} else {
  const server = await startRedisServer();
  t.teardown(() => server.stop());
  const r = client(server.port);
  t.teardown(() => r.disconnect());

  /** Every key SCAN MATCH returns, whole walk. */
  async function scanAll(pattern: Buffer): Promise<Set<string>> {
    const out = new Set<string>();
    let cursor = '0';
    do {
      const [next, keys] = (await r.callBuffer('SCAN', cursor, 'MATCH', pattern, 'COUNT', '10000')) as [Buffer, Buffer[]];
      cursor = next.toString();
      for (const k of keys) out.add(k.toString('latin1'));
    } while (cursor !== '0');
    return out;
  }

  t.test('property: the pattern of ns matches exactly the keys that start with RAY<ns>@ (redis-server decides)', async (t) => {
    const unit = fc.constantFrom('a', '1', '*', '?', '[', ']', '\\', '^', '-', '!', '{', 'é', '@');
    const nsArb = fc.string({
      unit: fc.constantFrom('a', '1', '*', '?', '[', ']', '\\', '^', '-', '!', '{', 'é'),
      minLength: 1,
      maxLength: 6,
    });
    const written: Buffer[] = [];
    let checked = 0;
    await fc.assert(
      fc.asyncProperty(nsArb, nsArb, fc.string({ unit, maxLength: 5 }), async (ns, other, table) => {
        // Keys of this namespace, of another, and of the namespace with one extra character: all stay.
        const keys = [`RAY${ns}@${table}`, `RAY${other}@${table}`, `RAY${ns}${other}@${table}`, `RAY${other}${ns}@x`].map((k) =>
          Buffer.from(k, 'utf8'),
        );
        const p = r.pipeline();
        for (const k of keys) p.set(k, '1');
        await p.exec();
        written.push(...keys);
        const prefix = currentPrefix(ns);
        const expected = new Set(
          written.filter((k) => k.length >= prefix.length && k.subarray(0, prefix.length).equals(prefix)).map((k) => k.toString('latin1')),
        );
        const got = await scanAll(currentPattern(ns));
        checked += 1;
        return got.size === expected.size && [...got].every((k) => expected.has(k));
      }),
      { numRuns: 300, seed: 20261201 },
    );
    t.equal(checked, 300, '300 random namespaces checked against SCAN MATCH');
    t.ok(written.length >= 1000, `over a keyspace of ${new Set(written.map((k) => k.toString('latin1'))).size} distinct keys`);
  });
}
