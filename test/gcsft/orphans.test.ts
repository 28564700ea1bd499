// The orphan finder's pure decisions (src/gcsft/orphans.ts) as tables: which listed namespaces are
// orphans, how a cluster becomes an owner, how long an orphan has been seen, and when GC may delete it.
import t from 'tap';
import {
  decideGc,
  findOrphans,
  groupByRedis,
  orphanId,
  ownerNeedsEnv,
  ownerOf,
  redisKey,
  trackOrphans,
  unknownOwners,
  type GcDecision,
  type ListedNamespace,
  type NamespaceOwner,
  type Orphan,
} from '../../src/gcsft/orphans.ts';
import { parseDuration } from '../../src/time.ts';
import { gcsOrphansModule } from '../../controller/gcsft-orphans/module.ts';
import { InformerFactory } from '../../kube/informer.ts';
import { KubeClient } from '../../kube/client.ts';
import type { ControllerContext } from '../../kube/reconciler.ts';
import { createLogger } from '../../kube/logger.ts';
import { createMetricsRegistry } from '../../kube/metrics.ts';
import { cluster, T0 } from './fixtures.ts';

const R = 'redis://redis:6379';
const HOUR_MS = 3_600_000;
const owner = (ns: string | undefined, extra: Partial<NamespaceOwner> = {}): NamespaceOwner => ({
  cluster: `team/${ns ?? 'unknown'}`,
  redis: R,
  namespace: ns,
  deleting: false,
  ...extra,
});
const listed = (namespace: string, keys = 5, bytes: number | undefined = 100): ListedNamespace => ({ namespace, keys, bytes });

t.test('redisKey: one identity per Redis, never the user information', async (t) => {
  const rows: Array<[string, string | undefined]> = [
    ['redis:6379', 'redis://redis:6379'],
    ['redis', 'redis://redis:6379'],
    ['redis://redis:6379', 'redis://redis:6379'],
    ['redis://:S3cret@redis:6379', 'redis://redis:6379'],
    ['user:S3cret@redis:6380', 'redis://redis:6380'],
    ['rediss://u:p@redis:6380', 'rediss://redis:6380'],
    ['[::1]:7000', 'redis://[::1]:7000'],
    ['redis-a:1,redis-b:2', 'redis://redis-a:1'],
    ['http://x', undefined],
    ['', undefined],
  ];
  for (const [address, key] of rows) t.equal(redisKey(address), key, JSON.stringify(address));
});

t.test('findOrphans', async (t) => {
  const rows: Array<{ name: string; listed: ListedNamespace[]; owners: NamespaceOwner[]; orphans: string[] }> = [
    { name: 'nothing listed', listed: [], owners: [owner('a')], orphans: [] },
    { name: 'every namespace owned', listed: [listed('a'), listed('b')], owners: [owner('a'), owner('b')], orphans: [] },
    { name: 'one not named', listed: [listed('a'), listed('gone')], owners: [owner('a')], orphans: ['gone'] },
    { name: 'no owners: all orphaned, sorted', listed: [listed('z'), listed('m')], owners: [], orphans: ['m', 'z'] },
    {
      name: 'a deleting cluster still owns its namespace (its cleanup is pending)',
      listed: [listed('d')],
      owners: [owner('d', { deleting: true })],
      orphans: [],
    },
    {
      name: 'a cluster of ANOTHER Redis naming it owns it too (one Redis, two addresses)',
      listed: [listed('x')],
      owners: [owner('x', { redis: 'redis://10.0.0.5:6379' })],
      orphans: [],
    },
    { name: 'an owner whose Redis is unknown still owns', listed: [listed('x')], owners: [owner('x', { redis: undefined })], orphans: [] },
    { name: 'prefix is not ownership: ns1 does not own ns10', listed: [listed('ns10')], owners: [owner('ns1')], orphans: ['ns10'] },
    { name: 'look-alikes only (no Ray key): not an orphan', listed: [listed('fake', 0)], owners: [], orphans: [] },
    { name: "'@' in the name: never Ray's", listed: [listed('a@b')], owners: [], orphans: [] },
  ];
  for (const row of rows)
    t.same(
      findOrphans(R, row.listed, row.owners).map((o) => o.namespace),
      row.orphans,
      row.name,
    );

  const both = findOrphans(R, [listed('old', 1, 10), listed('old', 4, 30)], []);
  t.same(both, [{ redis: R, namespace: 'old', keys: 5, bytes: 40 }], 'both layouts of one namespace: one orphan, summed');
  t.same(
    findOrphans(R, [{ namespace: 'old', keys: 1, bytes: undefined }, listed('old', 4, 30)], [])[0]?.bytes,
    undefined,
    'an unknown size stays unknown',
  );
});

t.test('ownerOf: namespace and Redis as the head pod got them', async (t) => {
  const uid = cluster().metadata.uid;
  t.same(
    ownerOf(cluster()),
    { cluster: 'team-a/demo', deleting: false, redis: 'redis://redis.team-a:6379', namespace: uid },
    "annotation FT: the UID; the one-label host `redis` is the Service in the cluster's namespace",
  );
  const other = cluster();
  other.metadata.namespace = 'team-b';
  t.not(ownerOf(other).redis, ownerOf(cluster()).redis, "two namespaces' `redis` are two Redis servers, listed apart");
  const external = cluster({ ft: 'options', options: { redisAddress: 'redis.corp:6379' } });
  t.equal(ownerOf(external).redis, 'redis://redis.corp:6379', 'a longer name is kept as written (it may be external)');
  t.same(
    ownerOf(cluster({ ft: 'options', options: { externalStorageNamespace: 'shared', redisAddress: 'redis://:pw@cache:6380' } })),
    { cluster: 'team-a/demo', deleting: false, redis: 'redis://cache.team-a:6380', namespace: 'shared' },
    'options: the explicit namespace; the address without its password',
  );
  t.same(ownerOf(cluster({ deletedAt: T0 })).deleting, true, 'deleting');
  const off = ownerOf(cluster({ ft: 'off' }));
  t.same([off.redis, off.namespace], [undefined, uid], 'FT off: owns its namespace, points at no Redis');
  const own = cluster({
    env: [
      { name: 'RAY_REDIS_ADDRESS', value: 'redis:6379' },
      { name: 'RAY_external_storage_namespace', value: 'mine' },
    ],
  } as never);
  t.equal(ownerOf(own).namespace, 'mine', "the head template's own env entry wins");
  const expanded = cluster({
    env: [
      { name: 'RAY_REDIS_ADDRESS', value: 'redis:6379' },
      { name: 'RAY_external_storage_namespace', value: '$(TEAM)-gcs' },
    ],
  } as never);
  t.equal(ownerOf(expanded).namespace, undefined, 'a $(VAR) the kubelet expands: unknown here, never its literal text');
  t.same(
    decideGc({ orphan: { redis: R, namespace: 'team-gcs' }, firstSeen: 0, now: 2 * HOUR_MS, graceMs: HOUR_MS, fresh: [ownerOf(expanded)] })
      .action,
    'keep',
    'so the namespace it expands to is never collected',
  );

  const fromSecret = cluster({
    env: [
      { name: 'RAY_REDIS_ADDRESS', valueFrom: { secretKeyRef: { name: 'r', key: 'address' } } },
      { name: 'RAY_external_storage_namespace', valueFrom: { configMapKeyRef: { name: 'c', key: 'ns' } } },
    ],
  } as never);
  t.ok(ownerNeedsEnv(fromSecret), 'references: the environment must be resolved');
  t.notOk(ownerNeedsEnv(cluster()), 'plain values: no I/O');
  t.notOk(ownerNeedsEnv(cluster({ ft: 'off' })), 'no Redis: no I/O');
  t.same([ownerOf(fromSecret).redis, ownerOf(fromSecret).namespace], [undefined, undefined], 'unresolved: unknown');
  const resolved = ownerOf(fromSecret, { RAY_REDIS_ADDRESS: 'redis://u:pw@r:1', RAY_external_storage_namespace: 'ns-from-cm' });
  t.same([resolved.redis, resolved.namespace], ['redis://r.team-a:1', 'ns-from-cm'], 'resolved');
});

t.test('groupByRedis and unknownOwners', async (t) => {
  const owners = [
    owner('a', { redis: 'redis://b:1' }),
    owner('b', { redis: 'redis://a:1' }),
    owner('c', { redis: undefined }),
    owner('d', { redis: 'redis://b:1' }),
  ];
  const groups = groupByRedis(owners);
  t.same([...groups.keys()], ['redis://a:1', 'redis://b:1'], 'sorted; an unknown Redis is not listed');
  t.same(
    groups.get('redis://b:1')?.map((o) => o.namespace),
    ['a', 'd'],
  );
  t.same(unknownOwners([owner('a'), owner(undefined, { cluster: 'team/x' })]), ['team/x']);
});

t.test('trackOrphans: seen continuously, forgotten when not', async (t) => {
  const o = (ns: string, redis = R): Orphan => ({ redis, namespace: ns, keys: 1, bytes: 1 });
  const first = trackOrphans(new Map(), [o('a'), o('b')], new Set([R]), 1000);
  t.same(
    first.newlyFound.map((x) => x.namespace),
    ['a', 'b'],
    'both new',
  );
  t.same([...first.firstSeen.values()], [1000, 1000]);
  const second = trackOrphans(first.firstSeen, [o('a')], new Set([R]), 2000);
  t.same(second.newlyFound, [], 'a is not new again');
  t.equal(second.firstSeen.get(orphanId(o('a'))), 1000, 'a keeps its first sighting');
  t.notOk(second.firstSeen.has(orphanId(o('b'))), 'b not seen this scan: forgotten');
  const third = trackOrphans(second.firstSeen, [o('b')], new Set([R]), 3000);
  t.same(
    third.newlyFound.map((x) => x.namespace),
    ['b'],
    'b back: new again, its grace starts over',
  );
  t.equal(third.firstSeen.get(orphanId(o('b'))), 3000);
  const other = 'redis://other:6379';
  const unlisted = trackOrphans(new Map([[orphanId(o('c', other)), 500]]), [], new Set([R]), 4000);
  t.equal(unlisted.firstSeen.get(orphanId(o('c', other))), 500, 'a Redis that could not be listed keeps its orphans');
});

t.test('decideGc', async (t) => {
  const orphan = { redis: R, namespace: 'gone' };
  const H = 3_600_000;
  const rows: Array<{ name: string; now: number; fresh: NamespaceOwner[]; want: GcDecision }> = [
    { name: 'within the grace: wait', now: T0 + H - 1, fresh: [], want: { action: 'wait', dueAt: T0 + H } },
    { name: 'grace over, nobody names it: delete', now: T0 + H, fresh: [owner('other')], want: { action: 'delete' } },
    {
      name: 'a RayCluster names it again: keep',
      now: T0 + H,
      fresh: [owner('gone', { cluster: 'team/new' })],
      want: { action: 'keep', reason: 'RayCluster team/new names it' },
    },
    {
      name: 'a deleting RayCluster names it (cleanup pending): keep',
      now: T0 + 2 * H,
      fresh: [owner('gone', { cluster: 'team/old', deleting: true })],
      want: { action: 'keep', reason: 'RayCluster team/old (being deleted) names it' },
    },
    {
      name: 'named by a cluster of another Redis address: keep',
      now: T0 + H,
      fresh: [owner('gone', { cluster: 'team/x', redis: 'redis://10.1.1.1:6379' })],
      want: { action: 'keep', reason: 'RayCluster team/x names it' },
    },
    {
      name: "some cluster's namespace cannot be read: keep",
      now: T0 + H,
      fresh: [owner(undefined, { cluster: 'team/secret' })],
      want: { action: 'keep', reason: 'the storage namespace of RayCluster team/secret cannot be read' },
    },
  ];
  for (const row of rows) t.same(decideGc({ orphan, firstSeen: T0, now: row.now, graceMs: H, fresh: row.fresh }), row.want, row.name);
});

t.test('parseDuration', async (t) => {
  const rows: Array<[string, number | undefined]> = [
    ['0', 0],
    ['90s', 90_000],
    ['10m', 600_000],
    ['1h30m', 5_400_000],
    ['7d', 604_800_000],
    ['1.5h', 5_400_000],
    ['250ms', 250],
    [' 10m ', 600_000],
    ['10', undefined],
    ['-1m', undefined],
    ['10 m', undefined],
    ['', undefined],
    ['m', undefined],
  ];
  for (const [raw, ms] of rows) t.equal(parseDuration(raw), ms, JSON.stringify(raw));
});

t.test('the gcs-orphans module: on every 10m standalone, off beside KubeRay, GC only with scans', async (t) => {
  const kube = new KubeClient({
    getCurrentCluster: () => ({ name: 'c', server: 'https://127.0.0.1:1', skipTLSVerify: false }),
    getCurrentUser: () => null,
    applyToHTTPSOptions: async () => {},
  });
  const ctx = (companion: boolean) =>
    ({
      informers: new InformerFactory(kube),
      companion,
      logger: createLogger('test', { level: 'silent' }),
      metrics: createMetricsRegistry(),
      isLeader: () => true,
      now: Date.now,
    }) as unknown as ControllerContext;
  t.equal((await gcsOrphansModule.create(ctx(false), {})).watches.length, 1, 'standalone: scans by default');
  t.same((await gcsOrphansModule.create(ctx(true), {})).watches, [], 'companion mode: off by default');
  t.equal((await gcsOrphansModule.create(ctx(true), { 'orphan-scan-interval': '1h' })).watches.length, 1, 'companion mode: on when asked');
  t.same((await gcsOrphansModule.create(ctx(false), { 'orphan-scan-interval': '0' })).watches, [], '0: off');
  await t.rejects(
    async () => gcsOrphansModule.create(ctx(true), { 'orphan-gc-after': '24h' }),
    /--orphan-gc-after needs --orphan-scan-interval/,
  );
  await t.rejects(
    async () => gcsOrphansModule.create(ctx(false), { 'orphan-scan-interval': '10' }),
    /--orphan-scan-interval: "10" is not a duration/,
  );
});
