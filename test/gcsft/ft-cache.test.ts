// The GCS-FT cleanup's cache projection (controller/raycluster/informers.ts ftRayCluster): for every kind
// of cluster that is not being deleted (the only ones decided from the cache), the decision on the
// projection is the decision on the whole object; and the projection is what the informer keeps only
// when the RayCluster operator does not run in the process.
import t from 'tap';
import { decideRayClusterCleanup } from '../../src/gcsft/decide.ts';
import { cleanupEnv } from '../../src/gcsft/redis-env.ts';
import { planInProcessCleanup } from '../../src/gcsft/inprocess.ts';
import { ftRayCluster, rayClusterInformer, slimRayCluster } from '../../controller/raycluster/informers.ts';
import { InformerFactory } from '../../kube/informer.ts';
import type { ControllerContext } from '../../kube/reconciler.ts';
import { KubeClient } from '../../kube/client.ts';
import type { RayCluster } from '../../src/types.ts';
import { cluster, T0, withFinalizer } from './fixtures.ts';

const withSpec = (c: RayCluster, spec: Record<string, unknown>): RayCluster => ({ ...c, spec: { ...c.spec, ...spec } }) as RayCluster;
/** A head whose Redis settings come from a Secret, a TLS volume and envFrom, beside unrelated env, mounts and volumes. */
function redisFromSecrets(): RayCluster {
  const c = cluster({
    env: [
      { name: 'RAY_REDIS_ADDRESS', value: 'rediss://redis:6380' },
      { name: 'REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: 'redis', key: 'password' } } },
      { name: 'RAY_REDIS_CA_CERT', value: '/tls/ca.crt' },
      { name: 'UNRELATED', value: 'x' },
    ],
  } as never);
  const pod = c.spec!.headGroupSpec!.template!.spec as Record<string, unknown>;
  Object.assign((pod.containers as Array<Record<string, unknown>>)[0]!, {
    envFrom: [{ secretRef: { name: 'redis-env' } }],
    volumeMounts: [
      { name: 'tls', mountPath: '/tls' },
      { name: 'logs', mountPath: '/logs' },
    ],
  });
  pod.volumes = [
    { name: 'tls', secret: { secretName: 'redis-tls' } },
    { name: 'logs', emptyDir: {} },
  ];
  return c;
}

const CLUSTERS: Array<[string, RayCluster]> = [
  ['FT by annotation', cluster()],
  ['FT by options', cluster({ ft: 'options' })],
  ['FT off', cluster({ ft: 'off' })],
  ['rocksdb backend', cluster({ ft: 'rocksdb' })],
  ['annotation "TRUE"', cluster({ ft: 'off', annotations: { 'ray.io/ft-enabled': 'TRUE' } })],
  ['finalizer present', cluster({ finalizers: withFinalizer })],
  ['other finalizers only', cluster({ finalizers: ['example.com/keep'] })],
  ['Redis from a Secret, TLS files, envFrom', redisFromSecrets()],
  ['managed by MultiKueue', withSpec(cluster(), { managedBy: 'kueue.x-k8s.io/multikueue' })],
  ['managed by KubeRay', withSpec(cluster({ ft: 'options' }), { managedBy: 'ray.io/kuberay-operator' })],
  [
    'with kubectl last-applied and managedFields',
    {
      ...cluster(),
      metadata: {
        ...cluster().metadata,
        managedFields: [{ manager: 'kubectl' }],
        annotations: { ...cluster().metadata.annotations, 'kubectl.kubernetes.io/last-applied-configuration': '{"big":true}' },
      },
    } as RayCluster,
  ],
];

for (const [name, full] of CLUSTERS) {
  t.test(name, async (t) => {
    const projected = ftRayCluster(full);
    for (const gateEnabled of [true, false]) {
      t.same(
        decideRayClusterCleanup({ cluster: projected, pods: [], job: undefined, now: T0, gateEnabled }),
        decideRayClusterCleanup({ cluster: full, pods: [], job: undefined, now: T0, gateEnabled }),
        `same decision, gate ${gateEnabled ? 'on' : 'off'}`,
      );
    }
    t.same(projected.metadata, slimRayCluster(full).metadata, 'metadata as the operator cache keeps it');
    t.notOk((projected as { status?: unknown }).status, 'no status');
    t.same(cleanupEnv(projected), cleanupEnv(full), 'the Redis settings the orphan finder reads');
    t.same(planInProcessCleanup(projected), planInProcessCleanup(full), 'and their sources');
    t.notOk(projected.spec?.headGroupSpec?.template?.spec?.containers?.[0]?.image, 'no pod template beyond them');
    t.notOk((projected.spec as RayCluster['spec'])?.workerGroupSpecs, 'no worker groups');
  });
}

t.test('the informer keeps the projection only without the RayCluster operator', async (t) => {
  const kube = new KubeClient({
    getCurrentCluster: () => ({ name: 'c', server: 'https://127.0.0.1:1', skipTLSVerify: false }),
    getCurrentUser: () => null,
    applyToHTTPSOptions: async () => {},
  });
  const ctxWith = (reconcilers: string[] | undefined) =>
    ({ informers: new InformerFactory(kube), reconcilers }) as unknown as ControllerContext;
  const full = cluster();
  const cachedBy = (reconcilers: string[] | undefined) => {
    return rayClusterInformer(ctxWith(reconcilers)).projection.transform(full);
  };
  t.same(cachedBy(['raycluster']), ftRayCluster(full), 'cleanup alone: projection');
  t.same(cachedBy(['raycluster', 'rayjob']), ftRayCluster(full), 'cleanup and RayJob: projection');
  t.same(cachedBy(['raycluster', 'raycluster-pods']), slimRayCluster(full), 'with the operator: its cache');
  t.same(cachedBy(undefined), slimRayCluster(full), 'unknown: the operator cache');
});
