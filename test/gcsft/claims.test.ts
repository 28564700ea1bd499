// Storage-namespace claims (src/gcsft/claims.ts): what a cluster claims, how two claims compare, and the
// index the webhook and the controller keep from their caches. Tables over pure functions.
import t from 'tap';
import {
  ClaimIndex,
  claimEntry,
  claimantsAmong,
  compareClaims,
  describeClaimants,
  storageClaim,
  watchClaims,
  type ClaimEntry,
} from '../../src/gcsft/claims.ts';
import type { RayCluster } from '../../src/types.ts';
import { cluster, type ClusterOpts } from './fixtures.ts';

function inNs(ns: string, name: string, o: ClusterOpts = {}): RayCluster {
  const c = cluster({ name, uid: `uid-${ns}-${name}`, ...o });
  c.metadata.namespace = ns;
  return c;
}

const shared = (address: string, extra: ClusterOpts = {}): ClusterOpts => ({
  annotations: { 'ray.io/external-storage-namespace': 'shared' },
  env: [{ name: 'RAY_REDIS_ADDRESS', value: address }],
  ...extra,
});

t.test('what a cluster claims', async (t) => {
  t.same(storageClaim(inNs('n1', 'a', shared('redis:6379'))), {
    namespace: '=shared',
    namespaceText: '"shared"',
    redis: 'redis.n1.svc:6379',
    redisText: 'redis.n1.svc:6379',
    byDefault: false,
  });
  t.same(storageClaim(inNs('n1', 'a')), {
    namespace: '=uid-n1-a',
    namespaceText: '"uid-n1-a"',
    redis: 'redis.n1.svc:6379',
    redisText: 'redis.n1.svc:6379',
    byDefault: true,
  });
  t.same(
    storageClaim(
      inNs('n1', 'a', {
        env: [
          { name: 'RAY_REDIS_ADDRESS', valueFrom: { secretKeyRef: { name: 'redis', key: 'url' } } },
          { name: 'RAY_external_storage_namespace', valueFrom: { secretKeyRef: { name: 'gcs', key: 'ns' } } },
        ],
      }),
    ),
    {
      namespace: 'secret:n1/gcs#ns',
      namespaceText: 'from secret gcs key ns',
      redis: 'secret:n1/redis#url',
      redisText: 'from secret redis key url',
      byDefault: false,
    },
    'references compared as references',
  );
  const envFrom = inNs('n1', 'a', shared('x', { env: [] }));
  envFrom.spec!.headGroupSpec!.template!.spec!.containers![0]!.envFrom = [{ secretRef: { name: 'redis-env' } }];
  t.same(
    storageClaim(envFrom),
    { namespace: '=shared', namespaceText: '"shared"', redis: undefined, redisText: '(not known here)', byDefault: false },
    'envFrom: Redis unknown',
  );
  t.same(storageClaim(inNs('n1', 'a', shared('$(REDIS_HOST):6379')))?.redis, undefined, '$(VAR) in the address: unknown');

  const none: Array<[string, RayCluster]> = [
    ['FT off', inNs('n1', 'a', { ...shared('redis'), ft: 'off' })],
    ['rocksdb', inNs('n1', 'a', { ft: 'rocksdb' })],
    ['no Redis address anywhere', inNs('n1', 'a', shared('x', { env: [] }))],
    ['an address Ray refuses', inNs('n1', 'a', shared('http://r:1'))],
    [
      'namespace from the pod’s fields',
      inNs('n1', 'a', {
        env: [
          { name: 'RAY_REDIS_ADDRESS', value: 'r' },
          { name: 'RAY_external_storage_namespace', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        ],
      }),
    ],
    [
      'namespace with $(VAR)',
      inNs('n1', 'a', {
        env: [
          { name: 'RAY_REDIS_ADDRESS', value: 'r' },
          { name: 'RAY_external_storage_namespace', value: '$(TEAM)-gcs' },
        ],
      }),
    ],
  ];
  const managed = inNs('n1', 'a', shared('redis'));
  managed.spec!.managedBy = 'kueue.x-k8s.io/multikueue';
  none.push(['managed by MultiKueue (runs elsewhere)', managed]);
  for (const [why, c] of none) t.equal(storageClaim(c), undefined, why);
});

t.test('compare: same, maybe, different', async (t) => {
  const claim = (c: RayCluster) => storageClaim(c)!;
  const a = claim(inNs('n1', 'a', shared('redis.shared:6379')));
  t.equal(
    compareClaims(a, claim(inNs('n2', 'b', shared('redis://redis.shared.svc.cluster.local')))),
    'same',
    'two spellings across namespaces',
  );
  t.equal(compareClaims(a, claim(inNs('shared', 'c', shared('redis')))), 'same', 'the short name in the Redis namespace itself');
  t.equal(compareClaims(a, claim(inNs('n2', 'b', shared('redis')))), 'different', "n2's own redis");
  t.equal(
    compareClaims(a, claim(inNs('n1', 'b', { ...shared('redis.shared'), annotations: { 'ray.io/external-storage-namespace': 'other' } }))),
    'different',
  );
  const envFrom = inNs('n1', 'a', shared('x', { env: [] }));
  envFrom.spec!.headGroupSpec!.template!.spec!.containers![0]!.envFrom = [{ secretRef: { name: 'redis-env' } }];
  t.equal(compareClaims(a, claim(envFrom)), 'maybe');
  const ref = (ns: string) =>
    claim(
      inNs(ns, 'x', {
        env: [
          { name: 'RAY_REDIS_ADDRESS', value: 'r.shared' },
          { name: 'RAY_external_storage_namespace', valueFrom: { secretKeyRef: { name: 'gcs', key: 'ns' } } },
        ],
      }),
    );
  t.equal(compareClaims(ref('n1'), ref('n1')), 'same', 'one Secret key, one namespace: a copied manifest');
  t.equal(compareClaims(ref('n1'), ref('n2')), 'different', 'Secrets of two namespaces are not compared by content (not read)');
});

t.test('the index: put, replace, remove, look up by namespace', async (t) => {
  const index = new ClaimIndex();
  const put = (c: RayCluster) => index.put(`${c.metadata.namespace}/${c.metadata.name}`, claimEntry(c));
  const a = inNs('n1', 'a', shared('redis.shared'));
  put(a);
  put(inNs('n2', 'b', shared('redis.shared:6379')));
  put(inNs('n3', 'c', shared('redis.other')));
  put(inNs('n4', 'd', { ...shared('redis.shared'), deletedAt: Date.parse('2026-11-30T10:00:00Z'), finalizers: ['x'] }));
  put(inNs('n5', 'e'));
  const claim = storageClaim(a)!;
  t.same(index.claimants(claim, 'n1/a'), [
    { cluster: 'n2/b', deleting: false, match: 'same' },
    { cluster: 'n4/d', deleting: true, match: 'same' },
  ]);
  t.same(
    index.claimants(claim, undefined).map((c) => c.cluster),
    ['n1/a', 'n2/b', 'n4/d'],
    'a CREATE has no self yet',
  );
  put(inNs('n2', 'b', { ...shared('redis.shared'), annotations: { 'ray.io/external-storage-namespace': 'moved' } }));
  t.same(
    index.claimants(claim, 'n1/a').map((c) => c.cluster),
    ['n4/d'],
    'an update moves the entry',
  );
  index.remove('n4/d');
  index.put('n5/e', undefined);
  t.same(index.claimants(claim, 'n1/a'), []);
  t.equal(index.size, 3, 'a, b (moved), c');
});

t.test('watchClaims keeps the index in step with cache events', async (t) => {
  const handlers: Array<(type: 'add' | 'update' | 'delete', obj: RayCluster) => void> = [];
  const index = new ClaimIndex();
  watchClaims({ on: (h) => handlers.push(h) }, index, claimEntry);
  const emit = (type: 'add' | 'update' | 'delete', c: RayCluster) => handlers.forEach((h) => h(type, c));
  const a = inNs('n1', 'a', shared('redis.shared'));
  const b = inNs('n2', 'b', shared('redis.shared'));
  emit('add', a);
  emit('add', b);
  t.same(
    index.claimants(storageClaim(a)!, 'n1/a').map((c) => c.cluster),
    ['n2/b'],
  );
  emit('update', { ...b, metadata: { ...b.metadata, deletionTimestamp: '2026-11-30T10:00:00Z' } });
  t.same(index.claimants(storageClaim(a)!, 'n1/a'), [{ cluster: 'n2/b', deleting: true, match: 'same' }]);
  emit('delete', b);
  t.same(index.claimants(storageClaim(a)!, 'n1/a'), []);
});

t.test('claimantsAmong and their description', async (t) => {
  const a = inNs('n1', 'a', shared('redis.shared'));
  const entries = ['n9/z', 'n2/b', 'n3/c', 'n4/d', 'n1/a'].map((k) => {
    const [ns, name] = k.split('/') as [string, string];
    return claimEntry(inNs(ns, name, shared('redis.shared')))!;
  });
  entries[0] = { ...(entries[0] as ClaimEntry), deleting: true };
  const found = claimantsAmong(storageClaim(a)!, entries, 'n1/a');
  t.same(
    found.map((c) => c.cluster),
    ['n2/b', 'n3/c', 'n4/d', 'n9/z'],
    'live first, then by name; not itself',
  );
  t.equal(describeClaimants(found), 'live RayCluster n2/b, live RayCluster n3/c, live RayCluster n4/d and 1 more');
});
