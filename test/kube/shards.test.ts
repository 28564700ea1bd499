// Sharding's pure rules (kube/shards.ts) as tables, and the per-shard write target of a request path.
import t from 'tap';
import { KubeClient, writeTarget } from '../../kube/client.ts';
import type { KubeCredentials } from '../../kube/kubeconfig.ts';
import { RAYCLUSTERS } from '../../src/types.ts';
import {
  fnv1a32,
  isOlder,
  joinWaitMs,
  layoutBlocker,
  layoutPeers,
  liveLeader,
  liveMembers,
  memberLeaseName,
  observeLeader,
  observeMembers,
  parseShards,
  planShards,
  quota,
  shardOf,
  shardOfKey,
  type LayoutMember,
  type MemberObservation,
} from '../../kube/shards.ts';

t.test('FNV-1a 32: the published test vectors', async (tt) => {
  for (const [input, hash] of [
    ['', 0x811c9dc5],
    ['a', 0xe40c292c],
    ['foobar', 0xbf9cf968],
  ] as const)
    tt.equal(fnv1a32(input), hash, JSON.stringify(input));
});

t.test('shard of a namespace and of a key', async (tt) => {
  for (const [namespace, shards, shard] of [
    [undefined, 4, 0],
    ['', 4, 0],
    ['a', 1, 0],
    ['a', 4, 0xe40c292c % 4],
    ['foobar', 3, 0xbf9cf968 % 3],
  ] as const)
    tt.equal(shardOf(namespace, shards), shard, `${namespace} / ${shards}`);
  tt.equal(shardOfKey('foobar/x', 3), shardOf('foobar', 3), 'namespaced key: its namespace');
  tt.equal(shardOfKey('gcs-orphan-scan', 3), 0, 'cluster-scoped key: shard 0');
  const counts = [0, 0, 0];
  for (let i = 0; i < 300; i++) counts[shardOf(`team-${i}`, 3)]! += 1;
  tt.ok(
    counts.every((c) => c > 60),
    `300 namespaces spread over 3 shards: ${counts.join(', ')}`,
  );
});

t.test('quotas add up to the shards and differ by at most one', async (tt) => {
  for (const [shards, members, expected] of [
    [4, ['a'], [4]],
    [4, ['a', 'b'], [2, 2]],
    [4, ['a', 'b', 'c'], [2, 1, 1]],
    [3, ['a', 'b', 'c'], [1, 1, 1]],
    [2, ['a', 'b', 'c'], [1, 1, 0]],
    [5, ['c', 'a', 'b'], [2, 2, 1]],
  ] as const) {
    const got = [...members].sort().map((m) => quota(shards, members, m));
    tt.same(got, expected, `${shards} shards, members ${members.join(',')}`);
  }
  tt.equal(quota(4, ['b'], 'a'), 2, 'a replica counts itself when the listing missed it');
});

t.test('plan: campaign below the quota, hand back above it', async (tt) => {
  for (const [shards, held, want, plan] of [
    [4, [], 2, { campaign: [0, 1, 2, 3], release: [] }],
    [4, [1], 2, { campaign: [0, 2, 3], release: [] }],
    [4, [1, 3], 2, { campaign: [], release: [] }],
    [4, [0, 1, 2, 3], 2, { campaign: [], release: [2, 3] }],
    [4, [3, 0, 2], 1, { campaign: [], release: [2, 3] }],
    [3, [0], 0, { campaign: [], release: [0] }],
  ] as const)
    tt.same(planShards(shards, held, want), plan, `held ${held.join(',')} of ${shards}, quota ${want}`);
});

t.test('members: alive while their Lease changed within a lease duration (our clock)', async (tt) => {
  let observed = observeMembers(
    new Map(),
    new Map([
      ['a', '1'],
      ['b', '7'],
    ]),
    1_000,
  );
  tt.same(liveMembers(observed, 1_000, 15_000).sort(), ['a', 'b'], 'first seen: alive');
  observed = observeMembers(
    observed,
    new Map([
      ['a', '2'],
      ['b', '7'],
    ]),
    10_000,
  );
  tt.same(liveMembers(observed, 16_000, 15_000), ['a'], 'b unchanged for a lease duration: gone');
  observed = observeMembers(observed, new Map([['a', '2']]), 17_000);
  tt.same([...observed.keys()], ['a'], 'a member deleted from the listing is forgotten');
  const kept: MemberObservation | undefined = observed.get('a');
  tt.equal(kept?.observedAt, 10_000, 'an unchanged record keeps its first observation time');
});

t.test('members: their layout and age come with the listing, their liveness from the record', async (tt) => {
  let observed = observeMembers(new Map(), new Map([['a', { record: '1', shards: 2, createdAt: 5_000 }]]), 1_000);
  tt.same(observed.get('a'), { record: '1', shards: 2, createdAt: 5_000, observedAt: 1_000 });
  observed = observeMembers(observed, new Map([['a', { record: '1', shards: 2, createdAt: 5_000 }]]), 4_000);
  tt.equal(observed.get('a')?.observedAt, 1_000, 'unchanged: first observation kept');
  observed = observeMembers(observed, new Map([['a', { record: '2', shards: 2, createdAt: 5_000 }]]), 6_000);
  tt.equal(observed.get('a')?.observedAt, 6_000, 'renewed: observed anew');
});

t.test('the shards annotation', async (tt) => {
  for (const [value, shards] of [
    ['3', 3],
    ['1', 1],
    ['12', 12],
    [undefined, undefined],
    ['', undefined],
    ['0', undefined],
    ['-2', undefined],
    ['2.5', undefined],
    ['03', undefined],
    ['x', undefined],
  ] as const)
    tt.equal(parseShards(value), shards, JSON.stringify(value));
});

t.test('the single leader: live while it has a holder and its record changed within a lease duration (our clock)', async (tt) => {
  const d = 3_000;
  const steps: Array<[string, { holder: string; record: string } | undefined, number, string | undefined]> = [
    ['no Lease', undefined, 0, undefined],
    ['released (no holder)', { holder: '', record: '5' }, 100, undefined],
    ['taken: first seen, live', { holder: 'l1', record: '6' }, 200, 'l1'],
    ['unchanged within a lease duration', { holder: 'l1', record: '6' }, 3_100, 'l1'],
    ['unchanged for a lease duration: gone', { holder: 'l1', record: '6' }, 3_200, undefined],
    ['renewed', { holder: 'l1', record: '7' }, 3_300, 'l1'],
    ['another holder', { holder: 'l2', record: '8' }, 3_400, 'l2'],
    ['released', { holder: '', record: '9' }, 3_500, undefined],
    ['deleted', undefined, 3_600, undefined],
  ];
  let observed = new Map<string, MemberObservation>();
  for (const [what, lease, now, live] of steps) {
    observed = observeLeader(observed, lease, now);
    tt.equal(liveLeader(observed, now, d), live, what);
  }
});

t.test('the incumbent: the older member Lease, the same second: the smaller identity, unknown: the newest', async (tt) => {
  const m = (identity: string, createdAt: number | undefined): LayoutMember => ({ identity, shards: 2, createdAt });
  for (const [a, b, older] of [
    [m('b', 1_000), m('a', 2_000), true],
    [m('a', 2_000), m('b', 1_000), false],
    [m('a', 1_000), m('b', 1_000), true],
    [m('b', 1_000), m('a', 1_000), false],
    [m('a', 1_000), m('b', undefined), true],
    [m('a', undefined), m('b', 1_000), false],
    [m('a', undefined), m('b', undefined), true],
  ] as const)
    tt.equal(isOlder(a, b), older, `${a.identity}@${a.createdAt} older than ${b.identity}@${b.createdAt}`);
});

t.test('layouts: who blocks a replica, and whom it shares its shards with', async (tt) => {
  const m = (identity: string, shards: number | undefined, createdAt: number | undefined): LayoutMember => ({
    identity,
    shards,
    createdAt,
  });
  const rows: Array<{
    what: string;
    self: LayoutMember;
    live: LayoutMember[];
    leader?: string;
    blocker: ReturnType<typeof layoutBlocker>;
    peers: string[];
  }> = [
    {
      what: 'alone',
      self: m('a', 2, 1_000),
      live: [m('a', 2, 1_000)],
      blocker: undefined,
      peers: ['a'],
    },
    {
      what: 'one layout: every live member is a peer',
      self: m('b', 3, 2_000),
      live: [m('a', 3, 1_000), m('b', 3, 2_000), m('c', 3, 3_000)],
      blocker: undefined,
      peers: ['b', 'a', 'c'],
    },
    {
      what: 'a newcomer of another layout (N=3 beside N=2): blocked by the incumbent',
      self: m('b', 3, 2_000),
      live: [m('a', 2, 1_000), m('b', 3, 2_000)],
      blocker: { kind: 'member', identity: 'a', shards: 2 },
      peers: ['b'],
    },
    {
      what: 'the incumbent is not blocked by a newcomer, and does not count it',
      self: m('a', 2, 1_000),
      live: [m('a', 2, 1_000), m('b', 3, 2_000)],
      blocker: undefined,
      peers: ['a'],
    },
    {
      what: 'the same second: the smaller identity is the incumbent',
      self: m('b', 3, 1_000),
      live: [m('a', 2, 1_000), m('b', 3, 1_000)],
      blocker: { kind: 'member', identity: 'a', shards: 2 },
      peers: ['b'],
    },
    {
      what: 'our member Lease not created yet: we are the newest',
      self: m('b', 3, undefined),
      live: [m('a', 2, 5_000), m('b', 3, undefined)],
      blocker: { kind: 'member', identity: 'a', shards: 2 },
      peers: ['b'],
    },
    {
      what: 'an unrecorded N (an older raykeeper) is another layout',
      self: m('b', 3, 2_000),
      live: [m('a', undefined, 1_000), m('b', 3, 2_000)],
      blocker: { kind: 'member', identity: 'a', shards: undefined },
      peers: ['b'],
    },
    {
      what: 'several older: the oldest is named',
      self: m('c', 3, 3_000),
      live: [m('b', 4, 2_000), m('a', 2, 1_000), m('c', 3, 3_000)],
      blocker: { kind: 'member', identity: 'a', shards: 2 },
      peers: ['c'],
    },
    {
      what: 'a peer blocked by another layout is not counted (its share would stay unheld)',
      self: m('a', 3, 1_000),
      live: [m('a', 3, 1_000), m('x', 2, 2_000), m('b', 3, 3_000)],
      blocker: undefined,
      peers: ['a'],
    },
    {
      what: 'an unblocked peer is counted beside a blocked newcomer of another layout',
      self: m('a', 3, 1_000),
      live: [m('a', 3, 1_000), m('b', 3, 2_000), m('x', 2, 3_000)],
      blocker: undefined,
      peers: ['a', 'b'],
    },
    {
      what: 'a live single leader blocks every sharded replica, the oldest too',
      self: m('a', 3, 1_000),
      live: [m('a', 3, 1_000), m('b', 3, 2_000)],
      leader: 'l1',
      blocker: { kind: 'leader', identity: 'l1' },
      peers: ['a', 'b'],
    },
  ];
  for (const row of rows) {
    tt.same(layoutBlocker(row.self, row.live, row.leader), row.blocker, `${row.what}: blocker`);
    tt.same(layoutPeers(row.self, row.live), row.peers, `${row.what}: peers`);
  }
  tt.equal(
    quota(3, layoutPeers(m('a', 3, 1_000), [m('a', 3, 1_000), m('x', 2, 2_000)]), 'a'),
    3,
    'a newcomer of N=2 takes no share of N=3',
  );
});

t.test('the join wait: over the creation time resolution and a stale leader check', async (tt) => {
  tt.equal(joinWaitMs(2_000), 5_000, 'default timing');
  tt.equal(joinWaitMs(400), 1_800, 'test timing');
});

t.test('member Lease names are valid object names', async (tt) => {
  tt.equal(memberLeaseName('raykeeper-controller', 'Host_1a2b'), 'raykeeper-controller-member-host-1a2b');
  tt.match(memberLeaseName('l', '___'), /^l-member-[0-9a-f]+$/);
});

t.test('write target of a request path', async (tt) => {
  for (const [path, target] of [
    ['/apis/ray.io/v1/namespaces/team-a/rayclusters/c1', { namespace: 'team-a', resource: 'rayclusters' }],
    ['/api/v1/namespaces/sys/events', { namespace: 'sys', resource: 'events' }],
    ['/apis/batch/v1/namespaces/x/jobs', { namespace: 'x', resource: 'jobs' }],
    ['/api/v1/namespaces/x', { namespace: undefined, resource: 'namespaces' }],
    ['/apis/rbac.authorization.k8s.io/v1/clusterroles/r', { namespace: undefined, resource: 'clusterroles' }],
  ] as const)
    tt.same(writeTarget(path), target, path);
});

t.test("the fence sees the request's namespace behind a server URL with a path prefix (a proxy's)", async (tt) => {
  const seen: unknown[] = [];
  const credentials: KubeCredentials = {
    getCurrentCluster: () => ({ name: 'c', server: 'https://proxy.invalid/k8s/clusters/c-x', skipTLSVerify: false }),
    getCurrentUser: () => ({ name: 'u' }),
    applyToHTTPSOptions: async () => undefined,
  };
  const kube = new KubeClient(credentials).fenced((target) => {
    seen.push(target);
    return false; // refused: nothing is sent
  });
  await tt.rejects(kube.create({ ...RAYCLUSTERS, namespace: 'team-a' }, { metadata: { name: 'c1' } }), { name: 'NotLeaderError' });
  tt.same(seen, [{ namespace: 'team-a', resource: 'rayclusters' }]);
});
