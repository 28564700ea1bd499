// Sharding's pure rules (kube/shards.ts) as tables, and the per-shard write target of a request path.
import t from 'tap';
import { KubeClient, writeTarget } from '../../kube/client.ts';
import type { KubeCredentials } from '../../kube/kubeconfig.ts';
import { RAYCLUSTERS } from '../../kube/resources.ts';
import {
  fnv1a32,
  liveMembers,
  memberLeaseName,
  observeMembers,
  planShards,
  quota,
  shardOf,
  shardOfKey,
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
