// "The same Redis" (src/redis/identity.ts): address spellings of one server compare equal, relative to the
// cluster's own Kubernetes namespace; what the text cannot tell stays different (written down there, and
// asserted here so a change of the rule is a change of this table). And the host a pod of the cluster's
// namespace resolves (serviceHost, mapAddressHost): what the in-process cleanup connects to.
import t from 'tap';
import { redisIdentity, serviceHost } from '../../src/redis/identity.ts';
import { AddressError, mapAddressHost } from '../../src/redis/address.ts';

t.test('one server, many spellings: one identity', async (t) => {
  const groups: Array<{ ns: string; same: string[]; identity: string }> = [
    {
      ns: 'team-a',
      identity: 'redis.team-a.svc:6379',
      same: [
        'redis',
        'redis:6379',
        'REDIS:6379',
        'redis://redis',
        'rediss://redis:6379',
        'redis://default:secret@redis:6379/0',
        'u:p@redis',
        'redis.team-a',
        'redis.team-a.svc',
        'redis.team-a.svc.cluster.local',
        'Redis.Team-A.SVC.cluster.local.:6379',
        'redis.team-a.svc.corp.example:6379',
        'redis:6379,redis-replica:6379',
      ],
    },
    {
      ns: 'team-b',
      identity: 'redis.team-a.svc:6380',
      same: ['redis.team-a:6380', 'redis.team-a.svc.cluster.local:6380', 'rediss://redis.team-a.svc:6380'],
    },
    { ns: 'x', identity: '10.0.0.5:6379', same: ['10.0.0.5', '10.0.0.5:6379', 'redis://10.0.0.5:6379', '[::ffff:10.0.0.5]:6379'] },
    // A zone id is no URL host: compared as written (lower case), never an exception (the webhook's cache runs this on every object).
    { ns: 'x', identity: '[fe80::1%eth0]:6379', same: ['[fe80::1%eth0]:6379', '[FE80::1%eth0]:6379'] },
    {
      ns: 'x',
      identity: 'localhost:6390',
      same: [
        '[::1]:6390',
        '[0:0:0:0:0:0:0:1]:6390',
        'redis://[0::1]:6390',
        '127.0.0.1:6390',
        'redis://localhost:6390',
        '127.1.2.3:6390',
        'localhost.:6390',
      ],
    },
    { ns: 'x', identity: 'redis.example.com:6379', same: ['redis.example.com', 'REDIS.example.com.', 'rediss://redis.example.com:6379'] },
    { ns: 'x', identity: 'localhost:7000', same: ['localhost:7000', 'LOCALHOST:7000'] },
  ];
  for (const g of groups)
    for (const address of g.same) t.equal(redisIdentity(address, g.ns), g.identity, `${address} in namespace ${g.ns}`);
});

t.test('different servers, and what the text cannot tell, compare different', async (t) => {
  const pairs: Array<[string, string, string, string, string]> = [
    // [address A, namespace A, address B, namespace B, why]
    ['redis', 'team-a', 'redis', 'team-b', 'a short name is a Service of the cluster’s own namespace'],
    ['redis:6379', 'x', 'redis:6380', 'x', 'another port'],
    ['redis.team-a', 'x', 'redis.team-b', 'x', 'another namespace'],
    // Not caught (written down in src/redis/identity.ts):
    ['10.0.0.5:6379', 'x', 'redis.x.svc:6379', 'x', 'an IP and a name'],
    ['redis-master.x', 'x', 'redis.x', 'x', 'two Services (or a CNAME) of one server'],
    ['sentinel-0.x:26379', 'x', 'sentinel-1.x:26379', 'x', 'two Sentinels of one group'],
    ['node-0.x:7000', 'x', 'node-1.x:7000', 'x', 'two seed nodes of one Redis Cluster'],
    ['a:1,shared:1', 'x', 'b:1,shared:1', 'x', 'only the first entry of a list counts'],
  ];
  for (const [a, nsA, b, nsB, why] of pairs) t.not(redisIdentity(a, nsA), redisIdentity(b, nsB), `${a} (${nsA}) vs ${b} (${nsB}): ${why}`);
  t.equal(redisIdentity('127.0.0.1:6379', 'a'), redisIdentity('127.0.0.1:6379', 'b'), 'loopback in two pods: counted as one server');
});

t.test('no identity for what Ray would not accept', async (t) => {
  for (const bad of ['', 'redis-sentinel://s:26379/mymaster', 'http://r:1', 'r:0', 'r:abc'])
    t.equal(redisIdentity(bad, 'x'), undefined, JSON.stringify(bad));
  t.equal(redisIdentity('redis://u:topsecret@r:99999', 'x'), undefined, 'a bad port');
});

t.test('serviceHost: the name a pod of the cluster namespace resolves', async (t) => {
  const cases: Array<[string, string]> = [
    ['redis', 'redis.n1.svc'],
    ['redis.shared', 'redis.shared.svc'],
    ['redis.shared.svc', 'redis.shared.svc'],
    ['redis.shared.svc.cluster.local', 'redis.shared.svc.cluster.local'],
    ['redis.example.com', 'redis.example.com'],
    ['redis.', 'redis.'],
    ['localhost', 'localhost'],
    ['127.0.0.1', '127.0.0.1'],
    ['::1', '::1'],
  ];
  for (const [host, want] of cases) t.equal(serviceHost(host, 'n1'), want, host);
});

t.test('mapAddressHost: only the host of the first entry changes; user information is kept as written', async (t) => {
  const q = (raw: string) => mapAddressHost(raw, (h) => serviceHost(h, 'n1'));
  const cases: Array<[string, string]> = [
    ['redis', 'redis.n1.svc'],
    ['redis:6380', 'redis.n1.svc:6380'],
    ['redis://redis:6379/0', 'redis://redis.n1.svc:6379/0'],
    ['rediss://u:p%40ss@redis:6380', 'rediss://u:p%40ss@redis.n1.svc:6380'],
    ['redis://u:a/b?c#d@e@redis:1', 'redis://u:a/b?c#d@e@redis.n1.svc:1'],
    ['u:p#w@redis.shared:1', 'u:p#w@redis.shared.svc:1'],
    ['redis:1,other:2', 'redis.n1.svc:1'],
    ['10.0.0.5:6379', '10.0.0.5:6379'],
    ['[::1]:6390', '[::1]:6390'],
    ['redis.example.com:6379', 'redis.example.com:6379'],
  ];
  for (const [raw, want] of cases) t.equal(q(raw), want, raw);
  t.throws(() => q('http://r:1'), AddressError);
});
