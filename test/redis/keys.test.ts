// Pure key logic: glob escaping (its matching is checked by the real server in glob.test.ts), classification of
// both layouts, --list parsing and tallies, cluster slots, error classes and the backoff schedule
// (the pace of the sweep: pace.test.ts).
import t from 'tap';
import {
  classifyCurrentKey,
  classifyLegacyType,
  currentPattern,
  currentPrefix,
  displayKey,
  escapeGlob,
  firstForeignField,
  formatNamespaceTable,
  legacyNamespaceOf,
  NamespaceTally,
  parseCurrentKey,
} from '../../src/redis/keys.ts';
import { batchKeys, crc16, keySlot } from '../../src/redis/slots.ts';
import { classifyRedisError, delayWithin } from '../../src/redis/errors.ts';
import { errorMessage, oneLine } from '../../src/errors.ts';
import { chooseSentinelMaster, modeFromInfo, parseSentinelMasters } from '../../src/redis/topology.ts';

const b = (s: string) => Buffer.from(s, 'utf8');

t.test('escapeGlob escapes every special character and nothing else changes', async (t) => {
  t.equal(escapeGlob('a*b?c[d]e\\f^g-h'), 'a\\*b\\?c\\[d\\]e\\\\f\\^g\\-h');
  t.equal(escapeGlob('plain.ns_1:x'), 'plain.ns_1:x');
  t.equal(currentPattern('n*s').toString(), 'RAYn\\*s@*');
});

// The property "the pattern of ns matches exactly the keys that start with RAY<ns>@" is checked
// against the real redis-server's SCAN MATCH in glob.test.ts.

t.test('classifyCurrentKey: Ray tables vs look-alikes', async (t) => {
  const cases: Array<[string, string, string, boolean, RegExp?]> = [
    ['RAYns1@JOB', 'hash', 'ns1', true],
    ['RAYns1@ACTOR_TASK_SPEC', 'hash', 'ns1', true],
    ['RAYns1@JobCounter', 'string', 'ns1', true],
    ['RAYns1@JobCounter', 'hash', 'ns1', false, /JobCounter is a hash/],
    ['RAYns1@JOB', 'string', 'ns1', false, /is a string, Ray's tables are hashes/],
    ['RAYns1@JOB', 'list', 'ns1', false, /list/],
    ['RAYns1@JOB', 'set', 'ns1', false, /set/],
    ['RAYns1@JOB', 'zset', 'ns1', false, /zset/],
    ['RAYns1@JOB', 'stream', 'ns1', false, /stream/],
    ['RAYns1@JOB', 'none', 'ns1', false, /already gone/],
    ['RAYns10@JOB', 'hash', 'ns1', false, /does not start with/],
    ['RAYns1@', 'hash', 'ns1', false, /empty table/],
    ['RAYns1@a@JOB', 'hash', 'ns1', false, /contains '@'/],
    ['RAYa*@JOB', 'hash', 'a*', true],
    ['RAYab@JOB', 'hash', 'a*', false, /does not start/],
  ];
  for (const [key, type, ns, ray, reason] of cases) {
    const v = classifyCurrentKey(b(key), type, ns);
    t.equal(v.ray, ray, `${key} (${type}) in ${ns}`);
    if (!v.ray && reason) t.match(v.reason, reason, key);
  }
  const invalid = Buffer.concat([b('RAYns1@'), Buffer.from([0xff, 0xfe])]);
  t.match(classifyCurrentKey(invalid, 'hash', 'ns1'), { ray: false, reason: /UTF-8/ });
  t.same(currentPrefix('ns1'), b('RAYns1@'));
});

t.test("old layout: the hash is Ray's only when every field starts with <ns>@", async (t) => {
  t.same(classifyLegacyType('none'), { absent: true });
  t.same(classifyLegacyType('hash'), { check: 'fields' });
  t.match(classifyLegacyType('string'), { ray: false, reason: /string/ });
  t.equal(firstForeignField([b('ns1@JOB:a'), b('ns1@NODE:b')], 'ns1'), undefined);
  t.same(firstForeignField([b('ns1@JOB:a'), b('ns10@JOB:b')], 'ns1'), b('ns10@JOB:b'));
  t.same(firstForeignField([b('ns1@JOB:a'), b('other')], 'ns1'), b('other'));
  t.same(firstForeignField([b('ns1')], 'ns1'), b('ns1'));
  t.equal(firstForeignField([], 'ns1'), undefined);
});

t.test('--list parsing: namespace and table from RAY<ns>@<TABLE>', async (t) => {
  t.same(parseCurrentKey(b('RAYabc-123@JOB')), { namespace: 'abc-123', table: 'JOB' });
  t.same(parseCurrentKey(b('RAYx@JobCounter')), { namespace: 'x', table: 'JobCounter' });
  for (const k of ['RAY@JOB', 'RAYx@', 'RAYx', 'rayx@JOB', 'RAYx@a@b', 'other']) t.equal(parseCurrentKey(b(k)), undefined, k);
  t.equal(parseCurrentKey(Buffer.from([0x52, 0x41, 0x59, 0xff, 0x40, 0x41])), undefined, 'non-UTF-8');
  t.equal(legacyNamespaceOf(b('ns1'), [b('ns1@JOB:a')]), 'ns1');
  t.equal(legacyNamespaceOf(b('ns1'), [b('ns1@JOB:a'), b('x')]), undefined);
  t.equal(legacyNamespaceOf(b('ns1'), []), undefined);
  t.equal(legacyNamespaceOf(b('a@b'), [b('a@b@JOB:x')]), undefined, 'namespace cannot hold @');
});

t.test('NamespaceTally sums per namespace and layout, drops look-alike-only prefixes', async (t) => {
  const tally = new NamespaceTally();
  tally.addCurrent(b('RAYa@JOB'), 'hash', 10, 100);
  tally.addCurrent(b('RAYa@NODE'), 'hash', 5, 50);
  tally.addCurrent(b('RAYa@JobCounter'), 'string', 0, 8);
  tally.addCurrent(b('RAYa@ACTOR'), 'list', undefined, 30);
  tally.addCurrent(b('RAYb@JOB'), 'hash', undefined, undefined);
  tally.addCurrent(b('RAYonlyfake@JOB'), 'zset', undefined, 1);
  tally.addCurrent(b('RAYgone@JOB'), 'none', undefined, undefined);
  tally.addCurrent(b('RAYbad'), 'hash', 1, 1);
  tally.addLegacy('a', 7, 70);
  const rows = tally.summaries();
  t.same(rows, [
    { namespace: 'a', layout: 'current', keys: 3, tables: ['JOB', 'JobCounter', 'NODE'], fields: 15, bytes: 158, lookalikes: 1 },
    { namespace: 'a', layout: 'legacy', keys: 1, tables: ['a'], fields: 7, bytes: 70, lookalikes: 0 },
    { namespace: 'b', layout: 'current', keys: 1, tables: ['JOB'], fields: undefined, bytes: undefined, lookalikes: 0 },
  ]);
  const table = formatNamespaceTable(rows);
  t.match(table, /^NAMESPACE\s+LAYOUT\s+KEYS\s+FIELDS\s+BYTES\s+LOOK-ALIKES/);
  t.match(table, /\nb\s+current\s+1\s+\?\s+\?\s+0/);
  t.equal(formatNamespaceTable([]), 'no Ray storage namespaces found');
});

t.test('displayKey escapes control and invalid bytes, bounds length', async (t) => {
  t.equal(displayKey(b('RAYa@JOB')), 'RAYa@JOB');
  t.equal(displayKey(b('a\nb\\c')), 'a\\x0ab\\\\c');
  t.equal(displayKey(Buffer.from([0x61, 0xff, 0x5c])), 'a\\xff\\\\');
  t.equal(displayKey(b('x'.repeat(300)), 10), 'xxxxxxxxxx...');
});

t.test('cluster slots match the Redis Cluster spec', async (t) => {
  t.equal(crc16(b('123456789')), 0x31c3, 'CRC16-XMODEM check value');
  // Values from CLUSTER KEYSLOT on a real server.
  t.equal(keySlot(b('foo')), 12182);
  t.equal(keySlot(b('bar')), 5061);
  t.equal(keySlot(b('{user1000}.following')), keySlot(b('user1000')));
  t.equal(keySlot(b('foo{}{bar}')), keySlot(b('foo{}{bar}')), 'empty tag: whole key');
  t.not(keySlot(b('foo{}{bar}')), keySlot(b('bar')));
  t.equal(keySlot(b('foo{{bar}}zap')), keySlot(b('{bar')));
  const keys = ['a', 'b', 'c', '{t}1', '{t}2', '{t}3'].map(b);
  const clustered = batchKeys(keys, 2, true);
  for (const batch of clustered) t.equal(new Set(batch.map(keySlot)).size, 1, 'one slot per batch');
  t.equal(clustered.flat().length, 6);
  t.same(
    batchKeys(keys, 4, false).map((x) => x.length),
    [4, 2],
    'standalone: by size only',
  );
});

t.test('error classes', async (t) => {
  const e = (message: string, code?: string) => Object.assign(new Error(message), code ? { code } : {});
  const cases: Array<[Error, string]> = [
    [e('WRONGPASS invalid username-password pair or user is disabled.'), 'auth'],
    [e('NOAUTH Authentication required.'), 'auth'],
    [e('ERR invalid password'), 'auth'],
    [e("NOPERM this user has no permissions to run the 'unlink' command"), 'permission'],
    [e('self-signed certificate in certificate chain', 'SELF_SIGNED_CERT_IN_CHAIN'), 'tls'],
    [e("Hostname/IP does not match certificate's altnames", 'ERR_TLS_CERT_ALTNAME_INVALID'), 'tls'],
    [e('unable to verify the first certificate', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE'), 'tls'],
    [e('connect ECONNREFUSED 127.0.0.1:1', 'ECONNREFUSED'), 'retryable'],
    [e('Connection is closed (connect ECONNREFUSED 127.0.0.1:1)'), 'retryable'],
    [e('Connection is closed.'), 'retryable'],
    [e('Command timed out'), 'retryable'],
    [e('read ECONNRESET', 'ECONNRESET'), 'retryable'],
    [e('getaddrinfo ENOTFOUND redis', 'ENOTFOUND'), 'retryable'],
    [e('LOADING Redis is loading the dataset in memory'), 'retryable'],
    [e("READONLY You can't write against a read only replica."), 'retryable'],
    [e('MOVED 3999 127.0.0.1:6381'), 'retryable'],
    [e('CLUSTERDOWN The cluster is down'), 'retryable'],
    [e('All sentinels are unreachable. Retrying from scratch after 10ms.'), 'retryable'],
    [e("ERR unknown command 'UNLINK'"), 'fatal'],
    [e('ERR syntax error'), 'fatal'],
  ];
  for (const [err, kind] of cases) t.equal(classifyRedisError(err), kind, err.message);
  t.equal(classifyRedisError('plain string ECONNREFUSED'), 'retryable');
  t.equal(classifyRedisError(undefined), 'fatal');
});

t.test('backoff grows exponentially, is capped, and never passes the deadline', async (t) => {
  const policy = { baseMs: 100, maxMs: 1000, factor: 2, jitter: 0 };
  t.same(
    [1, 2, 3, 4, 5, 6].map((failures) => delayWithin(failures, 1e9, policy)),
    [100, 200, 400, 800, 1000, 1000],
  );
  t.equal(delayWithin(6, 300, policy), 275, 'clipped to the remaining time minus a slice for the attempt');
  t.equal(delayWithin(1, 10, policy), undefined, 'no time left for another attempt');
  t.equal(delayWithin(1, 0, policy), undefined);
  const jittered = delayWithin(3, 1e9, { ...policy, jitter: 0.5 }, () => 1);
  t.equal(jittered, 200, 'jitter takes off up to half');
});

t.test('errorMessage shortens OpenSSL errors and keeps the TLS class', async (t) => {
  const raw =
    'C00C2BD1827F0000:error:0A00045C:SSL routines:ssl3_read_bytes:tlsv13 alert certificate required:../deps/openssl/openssl/ssl/record/rec_layer_s3.c:918:SSL alert number 116';
  const short = errorMessage(new Error(raw));
  t.equal(short, 'TLS handshake failed: tlsv13 alert certificate required (alert 116)');
  t.equal(classifyRedisError(new Error(short)), 'tls');
  t.equal(classifyRedisError(new Error(raw)), 'tls');
  t.equal(errorMessage(new Error('plain')), 'plain');
  t.equal(errorMessage('str'), 'str');
});

t.test('oneLine: single line, secrets masked, bounded', async (t) => {
  t.equal(oneLine('a\n  b\tc', []), 'a b c');
  t.equal(oneLine('x hunter2 y hunter2', ['hunter2', undefined, '']), 'x *** y ***');
  t.equal(oneLine('y'.repeat(50), [], 10), 'yyyyyyy...');
});

t.test('topology: INFO mode and Sentinel masters', async (t) => {
  t.equal(modeFromInfo('# Server\r\nredis_version:7.0.15\r\nredis_mode:sentinel\r\n'), 'sentinel');
  t.equal(modeFromInfo('redis_mode:cluster\n'), 'cluster');
  t.equal(modeFromInfo('redis_mode:standalone\n'), 'standalone');
  t.equal(modeFromInfo('redis_version:4.0.0\n'), 'standalone');
  const masters = parseSentinelMasters([
    ['name', 'm1', 'ip', '10.0.0.1', 'port', '6379', 'flags', 'master'],
    ['name', 'm2', 'ip', '10.0.0.2', 'port', '6380'],
    ['noname', 'x'],
  ]);
  t.same(
    masters.map((m) => [m.name, m.ip, m.port]),
    [
      ['m1', '10.0.0.1', 6379],
      ['m2', '10.0.0.2', 6380],
    ],
  );
  t.same(
    parseSentinelMasters([{ name: 'm3', ip: 'h', port: '1' }]).map((m) => m.name),
    ['m3'],
    'RESP3 maps',
  );
  t.same(parseSentinelMasters('nope'), []);
  t.same(chooseSentinelMaster(masters.slice(0, 1), undefined), { name: 'm1' });
  t.match(chooseSentinelMaster(masters, undefined), { error: /2 masters \(m1, m2\).*--sentinel-master/ });
  t.same(chooseSentinelMaster(masters, 'm2'), { name: 'm2' });
  t.match(chooseSentinelMaster(masters, 'zz'), { error: /no.*"zz".*m1, m2/ });
  t.match(chooseSentinelMaster([], undefined), { error: /no master/ });
});
