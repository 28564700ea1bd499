// The operator's decisions (src/raycluster/desired.ts), status (status.ts) and expectations, as tables.
import t from 'tap';
import { plan, unsupportedFields, type PlanInput } from '../../src/raycluster/desired.ts';
import { Expectations } from '../../src/raycluster/expectations.ts';
import {
  clusterSpecHash,
  HASH_VERSION,
  headPodStamp,
  KUBERAY_VERSION_ANNOTATION,
  RECREATE_HASH_ANNOTATION,
} from '../../src/raycluster/upgrade.ts';
import { buildHeadService } from '../../src/raycluster/service.ts';
import { computeStatus, desiredReplicas, rayClusterStatusChanged, type Condition } from '../../src/raycluster/status.ts';
import type { Pod } from '../../kube/model.ts';
import type { RayCluster } from '../../src/types.ts';

function cluster(extra: Partial<RayCluster['spec']> = {}, meta: Partial<RayCluster['metadata']> = {}): RayCluster {
  return {
    apiVersion: 'ray.io/v1',
    kind: 'RayCluster',
    metadata: { name: 'rc', namespace: 'ns', uid: 'u', generation: 1, ...meta },
    spec: {
      headGroupSpec: { rayStartParams: {}, template: { spec: { containers: [{ name: 'ray-head', image: 'ray' }] } } },
      workerGroupSpecs: [
        {
          groupName: 'g',
          replicas: 2,
          minReplicas: 1,
          maxReplicas: 3,
          rayStartParams: {},
          template: { spec: { containers: [{ name: 'w', image: 'ray' }] } },
        },
      ],
      ...extra,
    },
  } as RayCluster;
}

function pod(
  name: string,
  type: 'head' | 'worker',
  opts: { group?: string; phase?: string; ready?: boolean; index?: number; deleting?: boolean; replica?: string } = {},
): Pod {
  const labels: Record<string, string> = {
    'ray.io/cluster': 'rc',
    'ray.io/node-type': type,
    'ray.io/group': type === 'head' ? 'headgroup' : (opts.group ?? 'g'),
  };
  if (opts.index !== undefined) labels['ray.io/worker-group-replica-index'] = String(opts.index);
  if (opts.replica) labels['ray.io/worker-group-replica-name'] = opts.replica;
  const p: Pod = { metadata: { name, namespace: 'ns', uid: `uid-${name}`, labels }, spec: { containers: [{ name: 'ray' }] } };
  if (opts.deleting) p.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
  if (opts.phase)
    p.status = { phase: opts.phase, podIP: '10.0.0.1', conditions: [{ type: 'Ready', status: opts.ready ? 'True' : 'False' }] };
  return p;
}

function input(c: RayCluster, pods: Pod[], extra: Partial<PlanInput> = {}): PlanInput {
  return {
    cluster: c,
    pods,
    services: [buildHeadService(c)],
    unsatisfied: () => false,
    gateEnabled: true,
    randomSuffix: () => 'abcde',
    ...extra,
  };
}

const summary = (i: PlanInput) => {
  const p = plan(i);
  return {
    skip: p.skip,
    stop: p.stop !== undefined,
    services: p.services.map((s) => s.metadata.name),
    createAuthSecret: p.createAuthSecret,
    blocked: p.blocked?.reason,
    actions: p.actions.map((a) =>
      a.kind === 'createPod'
        ? `create ${a.nodeType}${a.pod.metadata.labels?.['ray.io/worker-group-replica-index'] !== undefined ? `#${a.pod.metadata.labels['ray.io/worker-group-replica-index']}` : ''}`
        : `delete ${a.name}`,
    ),
  };
};

t.test('plan: decision table', async (t) => {
  const ft = cluster({}, { annotations: { 'ray.io/ft-enabled': 'true' } });
  const rows: Array<[string, PlanInput, Partial<ReturnType<typeof summary>>]> = [
    [
      'new cluster: Service, head, two workers',
      input(cluster(), [], { services: [] }),
      { services: ['rc-head-svc'], actions: ['create head', 'create worker#0', 'create worker#1'] },
    ],
    [
      'all there: nothing',
      input(cluster(), [pod('rc-head', 'head'), pod('w0', 'worker', { index: 0 }), pod('w1', 'worker', { index: 1 })]),
      { actions: [] },
    ],
    [
      'managedBy MultiKueue: hands off',
      input(cluster({ managedBy: 'kueue.x-k8s.io/multikueue' }), []),
      { skip: 'managedExternally', actions: [] },
    ],
    [
      'managedBy KubeRay value: ours',
      input(cluster({ managedBy: 'ray.io/kuberay-operator' }), [
        pod('rc-head', 'head'),
        pod('w0', 'worker', { index: 0 }),
        pod('w1', 'worker', { index: 1 }),
      ]),
      { skip: undefined },
    ],
    ['deleting: nothing', input(cluster({}, { deletionTimestamp: '2026-01-01T00:00:00Z' }), []), { skip: 'deleting' }],
    ['GCS FT without the cleanup finalizer yet: wait', input(ft, []), { skip: 'waitForFinalizer', actions: [] }],
    [
      'GCS FT, cleanup off: go',
      input(ft, [], { gateEnabled: false }),
      { skip: undefined, actions: ['create head', 'create worker#0', 'create worker#1'] },
    ],
    [
      'both FT switches set: no finalizer will come, so no wait for one',
      input(cluster({ gcsFaultToleranceOptions: { redisAddress: 'redis:6379' } }, { annotations: { 'ray.io/ft-enabled': 'true' } }), []),
      { skip: undefined },
    ],
    [
      'GCS FT with the finalizer: go',
      input(cluster({}, { annotations: { 'ray.io/ft-enabled': 'true' }, finalizers: ['ray.io/gcs-ft-redis-cleanup-finalizer'] }), []),
      { actions: ['create head', 'create worker#0', 'create worker#1'] },
    ],
    [
      'head unsatisfied (created, not in cache yet): no second head',
      input(cluster(), [], { unsatisfied: (g) => g === 'headgroup' }),
      { actions: ['create worker#0', 'create worker#1'] },
    ],
    ['group unsatisfied: workers left alone', input(cluster(), [], { unsatisfied: (g) => g === 'g' }), { actions: ['create head'] }],
    [
      'failed head: deleted, pass stops',
      input(cluster(), [pod('rc-head', 'head', { phase: 'Failed' })]),
      { actions: ['delete rc-head'], stop: true },
    ],
    [
      'terminating head: wait',
      input(cluster(), [pod('rc-head', 'head', { deleting: true }), pod('w0', 'worker', { index: 0 }), pod('w1', 'worker', { index: 1 })]),
      { actions: [] },
    ],
    ['two heads: stop', input(cluster(), [pod('a', 'head'), pod('b', 'head')]), { stop: true, actions: [] }],
    [
      'failed worker: deleted, nothing created this pass',
      input(cluster(), [pod('rc-head', 'head'), pod('w0', 'worker', { index: 0, phase: 'Failed' })]),
      { actions: ['delete w0'], stop: true },
    ],
    [
      'replicas above max: clamped to 3',
      input(
        cluster({
          workerGroupSpecs: [
            { groupName: 'g', replicas: 9, minReplicas: 1, maxReplicas: 3, template: { spec: { containers: [{ name: 'w' }] } } },
          ],
        }),
        [pod('rc-head', 'head'), pod('w1', 'worker', { index: 1 })],
      ),
      { actions: ['create worker#0', 'create worker#2'] },
    ],
    [
      'replicas below min: raised to min',
      input(
        cluster({
          workerGroupSpecs: [
            { groupName: 'g', replicas: 0, minReplicas: 2, maxReplicas: 3, template: { spec: { containers: [{ name: 'w' }] } } },
          ],
        }),
        [pod('rc-head', 'head')],
      ),
      { actions: ['create worker#0', 'create worker#1'] },
    ],
    [
      'scale down: not running first, then the highest index',
      input(cluster({ workerGroupSpecs: [{ groupName: 'g', replicas: 1, template: { spec: { containers: [{ name: 'w' }] } } }] }), [
        pod('rc-head', 'head'),
        pod('w0', 'worker', { index: 0, phase: 'Running', ready: true }),
        pod('w1', 'worker', { index: 1, phase: 'Running', ready: true }),
        pod('w2', 'worker', { index: 2, phase: 'Pending' }),
      ]),
      { actions: ['delete w2', 'delete w1'] },
    ],
    [
      'workersToDelete: named pod goes, the count is then met',
      input(
        cluster({
          workerGroupSpecs: [
            {
              groupName: 'g',
              replicas: 1,
              scaleStrategy: { workersToDelete: ['w0', 'not-ours'] },
              template: { spec: { containers: [{ name: 'w' }] } },
            },
          ],
        }),
        [pod('rc-head', 'head'), pod('w0', 'worker', { index: 0 }), pod('w1', 'worker', { index: 1 })],
      ),
      { actions: ['delete w0'] },
    ],
    [
      'suspend asked: nothing until the status says Suspending',
      input(cluster({ suspend: true }), [pod('rc-head', 'head')]),
      { actions: [] },
    ],
    [
      'Suspending: every pod deleted',
      input({ ...cluster({ suspend: true }), status: { conditions: [{ type: 'RayClusterSuspending', status: 'True' }] } }, [
        pod('rc-head', 'head'),
        pod('w0', 'worker'),
      ]),
      { actions: ['delete rc-head', 'delete w0'] },
    ],
    [
      'Suspended: nothing',
      input({ ...cluster({ suspend: true }), status: { conditions: [{ type: 'RayClusterSuspended', status: 'True' }] } }, []),
      { actions: [] },
    ],
    [
      'worker group suspended: its pods deleted',
      input(
        cluster({
          workerGroupSpecs: [{ groupName: 'g', replicas: 2, suspend: true, template: { spec: { containers: [{ name: 'w' }] } } }],
        }),
        [pod('rc-head', 'head'), pod('w0', 'worker')],
      ),
      { actions: ['delete w0'] },
    ],
    [
      'multi-host: 1 replica x 2 hosts + headless Service',
      input(
        cluster({
          workerGroupSpecs: [{ groupName: 'g', replicas: 1, numOfHosts: 2, template: { spec: { containers: [{ name: 'w' }] } } }],
        }),
        [pod('rc-head', 'head')],
      ),
      { services: ['rc-headless'], actions: ['create worker#0', 'create worker#0'] },
    ],
    [
      'multi-host: an incomplete replica goes whole',
      input(
        cluster({
          workerGroupSpecs: [{ groupName: 'g', replicas: 1, numOfHosts: 2, template: { spec: { containers: [{ name: 'w' }] } } }],
        }),
        [pod('rc-head', 'head'), pod('h0', 'worker', { replica: 'g-x', index: 0 })],
      ),
      { actions: ['delete h0'], stop: true },
    ],
    [
      'token auth, no Secret yet: generated, then the Service and pods',
      input(cluster({ authOptions: { mode: 'token' } }), [], { services: [], authSecret: 'absent' }),
      { createAuthSecret: 'rc', services: ['rc-head-svc'], actions: ['create head', 'create worker#0', 'create worker#1'] },
    ],
    [
      'token auth, Secret there: nothing to generate',
      input(cluster({ authOptions: { mode: 'token' } }), [], { authSecret: 'present' }),
      { createAuthSecret: undefined, actions: ['create head', 'create worker#0', 'create worker#1'] },
    ],
    [
      'token auth, our Secret without auth_token: blocked, no pods',
      input(cluster({ authOptions: { mode: 'token' } }), [], { authSecret: 'noKey' }),
      { createAuthSecret: undefined, blocked: 'AuthSecretInvalid', stop: true, actions: [] },
    ],
    [
      'secretName given and there: used, never generated',
      input(cluster({ authOptions: { mode: 'token', secretName: 'mine' } }), [], { authSecret: 'present' }),
      { createAuthSecret: undefined, blocked: undefined, actions: ['create head', 'create worker#0', 'create worker#1'] },
    ],
    [
      'secretName given, missing: not generated, no pods',
      input(cluster({ authOptions: { mode: 'token', secretName: 'mine' } }), [], { authSecret: 'absent' }),
      { createAuthSecret: undefined, blocked: 'AuthSecretNotFound', stop: true, actions: [] },
    ],
    [
      'secretName missing while suspending: the pods still go',
      input(
        {
          ...cluster({ suspend: true, authOptions: { mode: 'token', secretName: 'mine' } }),
          status: { conditions: [{ type: 'RayClusterSuspending', status: 'True' }] },
        },
        [pod('rc-head', 'head')],
        { authSecret: 'absent' },
      ),
      { blocked: 'AuthSecretNotFound', actions: ['delete rc-head'] },
    ],
    [
      'unreadable (no secret reader), ours: created if missing (AlreadyExists is fine), pods',
      input(cluster({ authOptions: { mode: 'token' } }), [], { authSecret: 'unreadable' }),
      { createAuthSecret: 'rc', blocked: undefined, actions: ['create head', 'create worker#0', 'create worker#1'] },
    ],
    [
      'unreadable, given: not checked (as KubeRay), pods',
      input(cluster({ authOptions: { mode: 'token', secretName: 'mine' } }), [], { authSecret: 'unreadable' }),
      { createAuthSecret: undefined, blocked: undefined, actions: ['create head', 'create worker#0', 'create worker#1'] },
    ],
    [
      'mode disabled: no Secret at all',
      input(cluster({ authOptions: { mode: 'disabled' } }), [], { authSecret: undefined }),
      { createAuthSecret: undefined, blocked: undefined, actions: ['create head', 'create worker#0', 'create worker#1'] },
    ],
    [
      'enableK8sTokenAuth: refused, no pods',
      input(cluster({ authOptions: { mode: 'token', enableK8sTokenAuth: true } }), [], { services: [], authSecret: 'absent' }),
      { createAuthSecret: undefined, actions: [], services: [] },
    ],
    [
      'autoscaling: pods as replicas says (the autoscaler writes replicas)',
      input(cluster({ enableInTreeAutoscaling: true }), []),
      { actions: ['create head', 'create worker#0', 'create worker#1'] },
    ],
    [
      'autoscaling, replicas down without workersToDelete: nothing deleted (the autoscaler picks)',
      input(cluster({ enableInTreeAutoscaling: true }), [
        pod('rc-head', 'head'),
        pod('w0', 'worker', { index: 0 }),
        pod('w1', 'worker', { index: 1 }),
        pod('w2', 'worker', { index: 2 }),
      ]),
      { actions: [] },
    ],
    [
      'autoscaling with ENABLE_RANDOM_POD_DELETE: replicas down deletes',
      input(
        cluster({ enableInTreeAutoscaling: true }),
        [pod('rc-head', 'head'), pod('w0', 'worker', { index: 0 }), pod('w1', 'worker', { index: 1 }), pod('w2', 'worker', { index: 2 })],
        { randomPodDelete: true },
      ),
      { actions: ['delete w2'] },
    ],
    [
      'autoscaling, workersToDelete + replicas down: exactly the listed pod',
      input(
        cluster({
          enableInTreeAutoscaling: true,
          workerGroupSpecs: [
            {
              groupName: 'g',
              replicas: 1,
              minReplicas: 0,
              maxReplicas: 3,
              scaleStrategy: { workersToDelete: ['w0'] },
              template: { spec: { containers: [{ name: 'w' }] } },
            },
          ],
        }),
        [pod('rc-head', 'head'), pod('w0', 'worker', { index: 0 }), pod('w1', 'worker', { index: 1 }), pod('w2', 'worker', { index: 2 })],
      ),
      { actions: ['delete w0'] },
    ],
    [
      'autoscaling multi-host, replicas down without workersToDelete: nothing deleted',
      input(
        cluster({
          enableInTreeAutoscaling: true,
          workerGroupSpecs: [{ groupName: 'g', replicas: 0, numOfHosts: 2, template: { spec: { containers: [{ name: 'w' }] } } }],
        }),
        [pod('rc-head', 'head'), pod('a0', 'worker', { index: 0, replica: 'g-a' }), pod('a1', 'worker', { index: 0, replica: 'g-a' })],
      ),
      { actions: [] },
    ],
  ];
  for (const [name, i, want] of rows) {
    const got = summary(i);
    t.match(got, want, name);
    // t.match takes [] for any array and ['x'] for any starting with x: the lists are compared whole.
    for (const k of ['actions', 'services'] as const)
      if (k in want) t.same((got as Record<string, unknown>)[k], (want as Record<string, unknown>)[k], `${name}: ${k}, exactly`);
  }
  const multi = plan(
    input(
      cluster({ workerGroupSpecs: [{ groupName: 'g', replicas: 1, numOfHosts: 2, template: { spec: { containers: [{ name: 'w' }] } } }] }),
      [pod('rc-head', 'head')],
    ),
  );
  t.same(
    multi.actions.map((a) =>
      a.kind === 'createPod'
        ? [a.pod.metadata.labels?.['ray.io/worker-group-replica-name'], a.pod.metadata.labels?.['ray.io/replica-host-index']]
        : [],
    ),
    [
      ['g-abcde', '0'],
      ['g-abcde', '1'],
    ],
  );
});

t.test('unsupported fields: named, refused only where running without them would be weaker', async (t) => {
  const u = unsupportedFields(
    cluster(
      {
        enableInTreeAutoscaling: true,
        autoscalerOptions: { version: 'v2', idleTimeoutSeconds: 30 },
        authOptions: { mode: 'token', enableK8sTokenAuth: true },
        workerGroupSpecs: [{ groupName: 'g', idleTimeoutSeconds: 10, template: { spec: { containers: [{ name: 'w' }] } } }],
      },
      { labels: { 'ray.io/scheduler-name': 'volcano' } },
    ),
  );
  t.same(
    u.map((x) => [x.field, x.refused]),
    [
      ['spec.authOptions.enableK8sTokenAuth', true],
      ['label ray.io/scheduler-name', false],
    ],
  );
  t.same(unsupportedFields(cluster()), []);
  t.same(unsupportedFields(cluster({ authOptions: { mode: 'token', secretName: 's' } })), [], 'token auth is done');
});

t.test('plan: upgradeStrategy Recreate, head names and the stamp', async (t) => {
  const recreate = (rayVersion: string) => cluster({ upgradeStrategy: { type: 'Recreate' }, rayVersion });
  const fresh = plan(input(recreate('2.52.0'), []));
  const head = fresh.actions.find((a) => a.kind === 'createPod' && a.nodeType === 'head');
  t.ok(
    head?.kind === 'createPod' && head.pod.metadata.generateName === 'rc-head-' && head.pod.metadata.name === undefined,
    'generated head name',
  );
  const stamp = head?.kind === 'createPod' ? head.pod.metadata.annotations : undefined;
  t.same(
    { hash: stamp?.[RECREATE_HASH_ANNOTATION], version: stamp?.[KUBERAY_VERSION_ANNOTATION] },
    { hash: clusterSpecHash(recreate('2.52.0')), version: HASH_VERSION },
    'the new head carries the hash and our version',
  );
  const plain = plan(input(cluster(), [])).actions.find((a) => a.kind === 'createPod' && a.nodeType === 'head');
  t.ok(
    plain?.kind === 'createPod' && plain.pod.metadata.annotations?.[RECREATE_HASH_ANNOTATION],
    'stamped without a strategy too (KubeRay stamps every head)',
  );

  const stamped = (c: RayCluster, o: Parameters<typeof pod>[2] = {}) => {
    const p = pod('rc-head-abcde', 'head', o);
    p.metadata.annotations = headPodStamp(c);
    return p;
  };
  const workers = [pod('w0', 'worker', { index: 0 }), pod('w1', 'worker', { index: 1 })];
  const changed = plan(input(recreate('2.51.0'), [stamped(recreate('2.52.0')), ...workers]));
  t.same(
    changed.actions.map((a) => (a.kind === 'deletePod' ? `delete ${a.nodeType} ${a.name}` : 'create')),
    ['delete head rc-head-abcde', 'delete worker w0', 'delete worker w1'],
    'the spec changed: every pod deleted, nothing created in that pass',
  );
  t.equal(changed.recreating, true);
  const going = plan(
    input(recreate('2.51.0'), [stamped(recreate('2.52.0'), { deleting: true }), pod('w0', 'worker', { index: 0, deleting: true })]),
  );
  t.same(
    going.actions.map((a) => a.kind === 'deletePod' && a.terminating),
    [true, true],
    'while the old head terminates: nothing new (the deletions are already under way), no head created',
  );
  const lagging = plan(input(recreate('2.51.0'), [stamped(recreate('2.52.0')), ...workers], { unsatisfied: (g) => g === 'g' }));
  t.same(lagging.actions, [], 'not while the cache lacks a pod we created (it would survive the deletion)');
  t.same(plan(input(recreate('2.52.0'), [stamped(recreate('2.52.0')), ...workers])).actions, [], 'same spec: nothing');
  const none = plan(input(cluster({ rayVersion: '2.51.0' }), [stamped(cluster()), ...workers]));
  t.same(none.actions, [], 'strategy None (absent): a changed spec recreates nothing');

  const kuberays = pod('rc-head-abcde', 'head');
  kuberays.metadata.annotations = { [RECREATE_HASH_ANNOTATION]: 'THEIRS', [KUBERAY_VERSION_ANNOTATION]: 'v1.6.2' };
  const taken = plan(input(recreate('2.52.0'), [kuberays, ...workers]));
  t.same(taken.actions, [], 'a head stamped by KubeRay is not recreated...');
  t.same(
    taken.restamp,
    { pod: 'rc-head-abcde', uid: 'uid-rc-head-abcde', annotations: headPodStamp(recreate('2.52.0')) },
    '...but re-stamped with ours',
  );
});

t.test('plan: embedded GCS storage (backend rocksdb) is built: its claim first, then the head that mounts it', async (t) => {
  const rocks = cluster({ gcsFaultToleranceOptions: { backend: 'rocksdb', storage: { size: '2Gi', subPath: 'gcs' } } });
  const p = plan(input(rocks, [], { services: [] }));
  t.same(p.unsupported, [], 'not refused');
  t.same(p.gcsStorageClaim?.metadata, {
    name: 'rc-gcs-pvc',
    namespace: 'ns',
    labels: { 'ray.io/cluster': 'rc' },
    ownerReferences: [{ apiVersion: 'ray.io/v1', kind: 'RayCluster', name: 'rc', uid: 'u', controller: true, blockOwnerDeletion: true }],
  });
  t.same(p.gcsStorageClaim?.spec, { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '2Gi' } } });
  t.same(p.services.length, 1, 'the head Service');
  const head = p.actions.find((a) => a.kind === 'createPod' && a.nodeType === 'head');
  const spec = head?.kind === 'createPod' ? head.pod.spec : undefined;
  t.same(
    spec?.containers[0]?.env?.filter((e) => e.name.startsWith('RAY_gcs_storage')),
    [
      { name: 'RAY_gcs_storage', value: 'rocksdb' },
      { name: 'RAY_gcs_storage_path', value: '/data/gcs' },
    ],
  );
  t.same(
    spec?.containers[0]?.volumeMounts?.find((m) => m.name === 'gcs-storage'),
    { name: 'gcs-storage', mountPath: '/data/gcs', subPath: 'gcs' },
  );
  t.same(
    spec?.volumes?.find((v) => v.name === 'gcs-storage'),
    { name: 'gcs-storage', persistentVolumeClaim: { claimName: 'rc-gcs-pvc' } },
  );
  t.notOk(
    spec?.containers[0]?.env?.some((e) => e.name === 'RAY_REDIS_ADDRESS' || e.name === 'RAY_external_storage_namespace'),
    'no Redis wiring',
  );
  const given = cluster({ gcsFaultToleranceOptions: { backend: 'rocksdb', storage: { claimName: 'mine' } } });
  const withClaim = plan(input(given, [], { services: [] }));
  t.equal(withClaim.gcsStorageClaim, undefined, 'claimName: nothing created');
  const headWithClaim = withClaim.actions.find((a) => a.kind === 'createPod' && a.nodeType === 'head');
  t.same(
    headWithClaim?.kind === 'createPod' ? headWithClaim.pod.spec?.volumes?.find((v) => v.name === 'gcs-storage') : undefined,
    { name: 'gcs-storage', persistentVolumeClaim: { claimName: 'mine' } },
    'the head mounts the named claim',
  );
  for (const backend of [undefined, '', 'redis', 'rocksdb'])
    t.same(
      unsupportedFields(cluster({ gcsFaultToleranceOptions: { backend, redisAddress: 'redis:6379' } })),
      [],
      `backend ${backend}: nothing unsupported`,
    );
  t.equal(
    plan(input(cluster({ gcsFaultToleranceOptions: { redisAddress: 'redis:6379' } }), [])).gcsStorageClaim,
    undefined,
    'Redis: no claim',
  );
});

t.test('desired replicas: clamp x numOfHosts, suspended group 0', async (t) => {
  const rows: Array<[Record<string, unknown>, number]> = [
    [{ replicas: 2 }, 2],
    [{ replicas: 9, maxReplicas: 3 }, 3],
    [{ minReplicas: 2 }, 2],
    [{ replicas: 2, numOfHosts: 4 }, 8],
    [{ replicas: 2, suspend: true }, 0],
    [{ replicas: 2, numOfHosts: 0 }, 2],
  ];
  for (const [g, want] of rows) t.equal(desiredReplicas(g), want, JSON.stringify(g));
});

t.test('status: provisioning, ready, head info, suspend transitions, written only when changed', async (t) => {
  const c = cluster();
  const svc = buildHeadService(c);
  svc.spec!.ports = svc.spec!.ports!.map((p) => ({ ...p, targetPort: p.port }));
  const now = Date.parse('2026-12-01T08:00:00Z');
  const s0 = computeStatus({ cluster: c, pods: [], services: [], now });
  t.equal(s0.state, undefined);
  t.equal(s0.desiredWorkerReplicas, 2);
  t.equal(s0.minWorkerReplicas, 1);
  t.equal(s0.maxWorkerReplicas, 3);
  t.match(s0.conditions, [
    { type: 'HeadPodReady', status: 'False', reason: 'HeadPodNotFound' },
    { type: 'RayClusterProvisioned', status: 'False' },
    { type: 'RayClusterSuspended', status: 'False' },
    { type: 'RayClusterSuspending', status: 'False' },
  ]);
  const running = [
    pod('rc-head', 'head', { phase: 'Running', ready: true }),
    pod('w0', 'worker', { phase: 'Running', ready: true }),
    pod('w1', 'worker', { phase: 'Running', ready: true }),
  ];
  const s1 = computeStatus({ cluster: { ...c, status: s0 }, pods: running, services: [svc], now: now + 1000 });
  t.equal(s1.state, 'ready');
  t.equal(s1.readyWorkerReplicas, 2);
  t.equal(s1.availableWorkerReplicas, 2);
  t.same(s1.head, { podIP: '10.0.0.1', podName: 'rc-head', serviceIP: '10.0.0.1', serviceName: 'rc-head-svc' });
  t.same(s1.endpoints, { client: '10001', dashboard: '8265', 'gcs-server': '6379', metrics: '8080', serve: '8000' });
  t.match(
    s1.conditions?.find((x: Condition) => x.type === 'HeadPodReady'),
    { status: 'True', reason: 'HeadPodRunningAndReady' },
  );
  t.match(
    s1.conditions?.find((x: Condition) => x.type === 'RayClusterProvisioned'),
    { status: 'True', reason: 'AllPodRunningAndReadyFirstTime', lastTransitionTime: '2026-12-01T08:00:01Z' },
  );
  t.ok(s1.stateTransitionTimes?.ready);
  t.ok(rayClusterStatusChanged(s0, s1));
  const s2 = computeStatus({ cluster: { ...c, status: s1 }, pods: running, services: [svc], now: now + 5000 });
  t.notOk(rayClusterStatusChanged(s1, s2), 'same world, no write (lastUpdateTime does not count)');
  t.equal(s2.lastUpdateTime, s1.lastUpdateTime);
  const failed = computeStatus({
    cluster: { ...c, status: s1 },
    pods: running,
    services: [svc],
    failure: { reason: 'FailedCreateWorkerPod', message: 'quota' },
    now,
  });
  t.match(
    failed.conditions?.find((x: Condition) => x.type === 'ReplicaFailure'),
    { status: 'True', reason: 'FailedCreateWorkerPod' },
  );
  // Suspend: Suspending -> (no pods) Suspended -> unsuspend -> not suspended.
  const susp = { ...c, spec: { ...c.spec, suspend: true } } as RayCluster;
  const a = computeStatus({ cluster: { ...susp, status: s1 }, pods: running, services: [svc], now });
  t.match(
    a.conditions?.find((x: Condition) => x.type === 'RayClusterSuspending'),
    { status: 'True' },
  );
  const b = computeStatus({ cluster: { ...susp, status: a }, pods: [], services: [svc], now });
  t.equal(b.state, 'suspended');
  t.match(
    b.conditions?.find((x: Condition) => x.type === 'RayClusterSuspended'),
    { status: 'True' },
  );
  t.match(
    b.conditions?.find((x: Condition) => x.type === 'RayClusterProvisioned'),
    { status: 'False', message: 'RayCluster has been suspended' },
  );
  const back = computeStatus({ cluster: { ...c, status: b }, pods: [], services: [svc], now });
  t.match(
    back.conditions?.find((x: Condition) => x.type === 'RayClusterSuspended'),
    { status: 'False' },
  );
  const unsupported = computeStatus({
    cluster: c,
    pods: [],
    services: [],
    unsupported: { refused: true, message: 'spec.authOptions (...)' },
    now,
  });
  t.match(
    unsupported.conditions?.find((x: Condition) => x.type === 'raykeeper.io/UnsupportedFields'),
    { status: 'True', reason: 'Refused' },
  );
});

t.test('expectations: a group waits until the cache shows its writes, or the timeout', async (t) => {
  let now = 0;
  const e = new Expectations({ now: () => now, timeoutMs: 1000 });
  e.expect('ns/rc', 'headgroup', 'rc-head', 'create');
  t.notOk(
    e.satisfied('ns/rc', 'headgroup', () => 'absent'),
    'created pod not in the cache yet',
  );
  t.ok(
    e.satisfied('ns/rc', 'g', () => 'absent'),
    'other groups are free',
  );
  t.ok(
    e.satisfied('ns/rc', 'headgroup', () => 'present'),
    'seen',
  );
  t.ok(
    e.satisfied('ns/rc', 'headgroup', () => 'absent'),
    'forgotten once seen',
  );
  e.expect('ns/rc', 'g', 'w0', 'delete');
  t.notOk(e.satisfied('ns/rc', 'g', () => 'present'));
  t.ok(
    e.satisfied('ns/rc', 'g', () => 'terminating'),
    'a terminating pod counts as deleted',
  );
  e.expect('ns/rc', 'g', 'w1', 'create');
  now = 1500;
  t.ok(
    e.satisfied('ns/rc', 'g', () => 'absent'),
    'timed out',
  );
  e.expect('ns/rc', 'g', 'w2', 'create');
  e.forget('ns/rc');
  t.equal(e.size, 0);
});
