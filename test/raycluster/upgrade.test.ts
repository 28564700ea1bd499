// upgradeStrategy Recreate (src/raycluster/upgrade.ts) as tables: the spec hash (what changes it, what does
// not), its encoding (RFC 4648 base32hex, Go's base32.HexEncoding), and the decision over the head pods.
import t from 'tap';
import {
  base32Hex,
  clusterSpecHash,
  HASH_VERSION,
  headPodStamp,
  KUBERAY_VERSION_ANNOTATION,
  RECREATE_HASH_ANNOTATION,
  recreateDecision,
} from '../../src/raycluster/upgrade.ts';
import type { Pod } from '../../kube/model.ts';
import type { RayCluster } from '../../src/types.ts';

function cluster(mutate: (spec: Record<string, any>) => void = () => {}, recreate = true): RayCluster {
  const spec: Record<string, any> = {
    rayVersion: '2.52.0',
    headGroupSpec: { rayStartParams: {}, template: { spec: { containers: [{ name: 'ray-head', image: 'rayproject/ray:2.52.0' }] } } },
    workerGroupSpecs: [
      {
        groupName: 'g',
        replicas: 1,
        minReplicas: 1,
        maxReplicas: 3,
        rayStartParams: {},
        template: { spec: { containers: [{ name: 'ray-worker', image: 'rayproject/ray:2.52.0' }] } },
      },
    ],
  };
  if (recreate) spec.upgradeStrategy = { type: 'Recreate' };
  mutate(spec);
  return { apiVersion: 'ray.io/v1', kind: 'RayCluster', metadata: { name: 'rc', namespace: 'ns', uid: 'u' }, spec } as RayCluster;
}

t.test('base32Hex: the RFC 4648 base32hex vectors (Go base32.HexEncoding)', async (t) => {
  const vectors: Array<[string, string]> = [
    ['', ''],
    ['f', 'CO======'],
    ['fo', 'CPNG===='],
    ['foo', 'CPNMU==='],
    ['foob', 'CPNMUOG='],
    ['fooba', 'CPNMUOJ1'],
    ['foobar', 'CPNMUOJ1E8======'],
  ];
  for (const [input, want] of vectors) t.equal(base32Hex(Buffer.from(input)), want, JSON.stringify(input));
});

t.test('clusterSpecHash: KubeRay shape; blind to scaling, injected tolerations and gates, key order, empties', async (t) => {
  const base = clusterSpecHash(cluster());
  t.match(base, /^[0-9A-V]{32}$/, 'SHA-1 in 32 base32hex characters, as KubeRay writes it');
  const same: Array<[string, (s: Record<string, any>) => void]> = [
    ['replicas', (s) => (s.workerGroupSpecs[0].replicas = 3)],
    ['minReplicas / maxReplicas', (s) => Object.assign(s.workerGroupSpecs[0], { minReplicas: 0, maxReplicas: 10 })],
    ['workersToDelete', (s) => (s.workerGroupSpecs[0].scaleStrategy = { workersToDelete: ['rc-g-worker-abcde'] })],
    ['worker tolerations (Kueue)', (s) => (s.workerGroupSpecs[0].template.spec.tolerations = [{ key: 'k', operator: 'Exists' }])],
    ['head schedulingGates (Kueue)', (s) => (s.headGroupSpec.template.spec.schedulingGates = [{ name: 'kueue' }])],
    ['upgradeStrategy itself', (s) => (s.upgradeStrategy = { type: 'None' })],
    ['an empty map or list written out', (s) => Object.assign(s.headGroupSpec, { rayStartParams: {}, headService: {}, labels: {} })],
    ['key order', (s) => (s.headGroupSpec = { template: s.headGroupSpec.template, rayStartParams: {} })],
    ['a null field', (s) => (s.enableInTreeAutoscaling = null)],
  ];
  for (const [name, m] of same) t.equal(clusterSpecHash(cluster(m)), base, `unchanged by ${name}`);
  const changed: Array<[string, (s: Record<string, any>) => void]> = [
    ['rayVersion', (s) => (s.rayVersion = '2.51.0')],
    ['the head image', (s) => (s.headGroupSpec.template.spec.containers[0].image = 'rayproject/ray:2.51.0')],
    ['a worker image', (s) => (s.workerGroupSpecs[0].template.spec.containers[0].image = 'rayproject/ray:2.51.0')],
    ['a rayStartParam', (s) => (s.headGroupSpec.rayStartParams['num-cpus'] = '0')],
    ['a new worker group', (s) => s.workerGroupSpecs.push({ groupName: 'h', template: { spec: { containers: [{ name: 'w' }] } } })],
    ['a group suspended (KubeRay hashes it)', (s) => (s.workerGroupSpecs[0].suspend = true)],
    ['numOfHosts', (s) => (s.workerGroupSpecs[0].numOfHosts = 2)],
    ['an env var', (s) => (s.headGroupSpec.template.spec.containers[0].env = [{ name: 'A', value: '1' }])],
    ['false written out (a value, not an empty)', (s) => (s.enableInTreeAutoscaling = false)],
  ];
  for (const [name, m] of changed) t.not(clusterSpecHash(cluster(m)), base, `changed by ${name}`);
  const c = cluster();
  clusterSpecHash(c);
  t.same(c, cluster(), 'the cluster is not changed');
  t.same(headPodStamp(c), { [RECREATE_HASH_ANNOTATION]: base, [KUBERAY_VERSION_ANNOTATION]: HASH_VERSION });
});

function head(annotations: Record<string, string> | undefined, name = 'rc-head-abcde'): Pod {
  return { metadata: { name, uid: `uid-${name}`, annotations, labels: { 'ray.io/node-type': 'head' } } };
}

t.test('recreateDecision: as shouldRecreatePodsForUpgrade', async (t) => {
  const c = cluster();
  const ours = headPodStamp(c);
  const newer = cluster((s) => (s.rayVersion = '2.51.0'));
  const rows: Array<[string, RayCluster, Pod[], string]> = [
    ['no strategy', cluster(() => {}, false), [head(headPodStamp(newer))], 'keep'],
    ['None', cluster((s) => (s.upgradeStrategy = { type: 'None' })), [head(headPodStamp(newer))], 'keep'],
    ['Recreate, no head yet', c, [], 'keep'],
    ['Recreate, same hash', c, [head(ours)], 'keep'],
    ['Recreate, a head without the stamp (made before the stamp existed)', c, [head(undefined)], 'keep'],
    ['Recreate, the spec changed', newer, [head(ours)], 'recreate'],
    [
      'Recreate, hash without version (KubeRay compares it)',
      newer,
      [head({ [RECREATE_HASH_ANNOTATION]: ours[RECREATE_HASH_ANNOTATION]! })],
      'recreate',
    ],
    [
      'Recreate, stamped by KubeRay v1.6.2: re-stamped, not recreated',
      c,
      [head({ [RECREATE_HASH_ANNOTATION]: 'KUBERAYSHASHOFTHESPEC00000000000', [KUBERAY_VERSION_ANNOTATION]: 'v1.6.2' })],
      'restamp',
    ],
    [
      'Recreate, the spec changed, head terminating (still listed)',
      newer,
      [{ ...head(ours), metadata: { ...head(ours).metadata, deletionTimestamp: 'x' } }],
      'recreate',
    ],
  ];
  for (const [name, cl, heads, want] of rows) t.equal(recreateDecision(cl, heads).action, want, name);
  const restamp = recreateDecision(c, [head({ [KUBERAY_VERSION_ANNOTATION]: 'v1.6.2', [RECREATE_HASH_ANNOTATION]: 'X' })]);
  t.same(
    restamp,
    { action: 'restamp', pod: 'rc-head-abcde', uid: 'uid-rc-head-abcde', annotations: ours },
    'our hash and version, by name and uid',
  );
  const why = recreateDecision(newer, [head(ours)]);
  t.match(why, { action: 'recreate', why: /spec changed.*Recreate/ });
});
