// RAY_REDIS_ADDRESS parsing and credential precedence (KubeRay's Job: env wins over the URL).
import t from 'tap';
import { AddressError, formatHostPort, parseRedisAddress, redactAddress, resolveCredentials } from '../../src/redis/address.ts';

t.test('accepted forms', async (t) => {
  const cases: Array<[string, { host: string; port: number; tls: boolean; username?: string; password?: string }]> = [
    ['redis-master:6379', { host: 'redis-master', port: 6379, tls: false }],
    ['10.0.0.5:7000', { host: '10.0.0.5', port: 7000, tls: false }],
    ['redis', { host: 'redis', port: 6379, tls: false }],
    ['  r.ns.svc.cluster.local:6380  ', { host: 'r.ns.svc.cluster.local', port: 6380, tls: false }],
    ['first:1,second:2', { host: 'first', port: 1, tls: false }],
    ['[::1]:6390', { host: '::1', port: 6390, tls: false }],
    ['[fe80::1]', { host: 'fe80::1', port: 6379, tls: false }],
    ['::1', { host: '::1', port: 6379, tls: false }],
    ['redis://r:6379', { host: 'r', port: 6379, tls: false }],
    ['REDIS://r:6379', { host: 'r', port: 6379, tls: false }],
    ['rediss://r:6380', { host: 'r', port: 6380, tls: true }],
    ['rediss://r', { host: 'r', port: 6379, tls: true }],
    ['redis://:s3cret@r:1', { host: 'r', port: 1, tls: false, password: 's3cret' }],
    ['redis://alice:s3cret@r:1', { host: 'r', port: 1, tls: false, username: 'alice', password: 's3cret' }],
    ['redis://alice@r:1', { host: 'r', port: 1, tls: false, username: 'alice' }],
    ['redis://al%40ice:p%3Aw%40d@r:1', { host: 'r', port: 1, tls: false, username: 'al@ice', password: 'p:w@d' }],
    ['redis://u:p@ss@r:1', { host: 'r', port: 1, tls: false, username: 'u', password: 'p@ss' }],
    ['rediss://u:pw@[2001:db8::7]:6390', { host: '2001:db8::7', port: 6390, tls: true, username: 'u', password: 'pw' }],
    ['redis://r:1/0', { host: 'r', port: 1, tls: false }],
    ['redis://r:1,redis://other:2', { host: 'r', port: 1, tls: false }],
    // The user information first, up to the LAST '@': unencoded '#', '?', '/' and '@' stay in the password.
    ['redis://default:S3cr3t#1@127.0.0.1:6379', { host: '127.0.0.1', port: 6379, tls: false, username: 'default', password: 'S3cr3t#1' }],
    ['redis://u:a/b?c#d@e@r:1', { host: 'r', port: 1, tls: false, username: 'u', password: 'a/b?c#d@e' }],
    ['rediss://:p#w@r', { host: 'r', port: 6379, tls: true, password: 'p#w' }],
    // No scheme but user information: a redis:// URL, as KubeRay prefixes it.
    ['u:p#w@r:1', { host: 'r', port: 1, tls: false, username: 'u', password: 'p#w' }],
  ];
  for (const [raw, want] of cases) {
    const got = parseRedisAddress(raw);
    t.same(
      { host: got.host, port: got.port, tls: got.tls, username: got.username, password: got.password },
      { username: undefined, password: undefined, ...want },
      raw,
    );
    t.same(got.warnings, [], `${raw}: no warnings`);
  }
});

t.test('a database index or query is ignored with a warning (Ray uses db 0)', async (t) => {
  const a = parseRedisAddress('redis://r:1/3');
  t.equal(a.host, 'r');
  t.match(a.warnings.join(), /database "3"/);
  t.match(parseRedisAddress('redis://r:1?x=1').warnings.join(), /query/);
});

t.test('rejected forms carry a one-line reason and never the password', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['', /empty/],
    [' ,r:1', /empty/],
    ['r:', /port "" is not a number/],
    ['r:abc', /not a number/],
    ['r:70000', /out of range/],
    ['r:0', /out of range/],
    ['http://r:1', /unsupported scheme "http"/],
    ['redis://topsecret@:1', /host is empty/],
    ['redis://u:topsecret@r:port', /not a number/],
    ['redis://u:top%ZZsecret@r:1', /percent-encoding/],
    ['fe80::1:6379x', /IPv6 addresses with a port must be written/],
    ['[::1', /missing '\]'/],
    ['[nothost]:1', /not an IPv6 address/],
    ['[::1]x', /unexpected text/],
    // With an '@' anywhere, nothing of the address is quoted (a ',' cuts the first entry inside a password).
    ['redis://default:topsecret#1@r:port', /^redis:\/\/ address: port is not a number$/],
    ['redis://u:top,secret@r:1', /^redis:\/\/ address: port is not a number$/],
    ['u:topsecret@[nothost]:1', /^redis:\/\/ address: the bracketed host is not an IPv6 address$/],
    ['redis://u:topsecret@r:1/x y', /./],
  ];
  for (const [raw, re] of cases) {
    if (raw === 'redis://u:topsecret@r:1/x y') {
      // Not an error: a warning, which must not quote the path either.
      t.notMatch(parseRedisAddress(raw).warnings.join(), /topsecret|x y/, 'warning names no part of an address with user information');
      continue;
    }
    const err = t.throws(() => parseRedisAddress(raw), AddressError, raw) as unknown as Error;
    t.match(err.message, re, raw);
    t.notMatch(err.message, /topsecret/, `${raw}: password not echoed`);
    t.notMatch(err.message, /\n/, `${raw}: one line`);
  }
});

t.test('redactAddress: no user information survives, whatever it holds; the rest stays readable', async (t) => {
  const rows: Array<[string, string, string]> = [
    ['redis://:SECRET@host:6379', 'redis://***@host:6379', 'redis://host:6379'],
    ['rediss://alice:SECRET@r.ns.svc:6380/0', 'rediss://***@r.ns.svc:6380/0', 'rediss://r.ns.svc:6380/0'],
    ['redis://default:SECRET#1@127.0.0.1:6379', 'redis://***@127.0.0.1:6379', 'redis://127.0.0.1:6379'],
    ['redis://u:SE@CR/ET?x@h:1', 'redis://***@h:1', 'redis://h:1'],
    ['redis://u:SE,CRET@h:1,redis://other:2', 'redis://***@h:1,redis://other:2', 'redis://h:1,redis://other:2'],
    ['u:SECRET@h:1', '***@h:1', 'redis://h:1'],
    ['redis-master:6379', 'redis-master:6379', 'redis-master:6379'],
    ['redis://h:1', 'redis://h:1', 'redis://h:1'],
  ];
  for (const [raw, shown, dropped] of rows) {
    t.equal(redactAddress(raw), shown, raw);
    t.equal(redactAddress(raw, { drop: true }), dropped, `${raw} (drop)`);
    t.notMatch(redactAddress(raw), /SECRET|SE|CRET/, `${raw}: nothing of the password`);
    // What drop leaves parses to the same server, without credentials (a ',' in a password cannot parse).
    if (raw.includes('SE,CRET')) continue;
    const a = parseRedisAddress(raw);
    const b = parseRedisAddress(redactAddress(raw, { drop: true }));
    t.same([b.host, b.port, b.tls, b.username, b.password], [a.host, a.port, a.tls, undefined, undefined], `${raw}: same server`);
  }
});

t.test('formatHostPort brackets IPv6', async (t) => {
  t.equal(formatHostPort('::1', 6379), '[::1]:6379');
  t.equal(formatHostPort('r', 1), 'r:1');
});

t.test('credential precedence: flag > env > URL; empty counts as unset', async (t) => {
  const url = parseRedisAddress('redis://urluser:urlpass@r:1');
  t.same(resolveCredentials(url, {}), { username: 'urluser', password: 'urlpass' });
  t.same(resolveCredentials(url, { envPassword: 'envpass' }), { username: 'urluser', password: 'envpass' });
  t.same(resolveCredentials(url, { envUsername: 'envuser', envPassword: 'envpass' }), { username: 'envuser', password: 'envpass' });
  t.same(resolveCredentials(url, { envPassword: 'envpass', flagPassword: 'flagpass', flagUsername: 'fu' }), {
    username: 'fu',
    password: 'flagpass',
  });
  t.same(resolveCredentials(url, { envPassword: '' }), { username: 'urluser', password: 'urlpass' });
  t.same(resolveCredentials(parseRedisAddress('r:1'), {}), {});
  t.same(resolveCredentials(parseRedisAddress('r:1'), { envPassword: 'p' }), { password: 'p' });
});
