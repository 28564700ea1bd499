// The seed's manual test, automated, on the real kube-apiserver: our webhook registered through our
// MutatingWebhookConfiguration (url https://127.0.0.1:PORT, caBundle from our certs), `raykeeper
// controller` as a child process, a real password-protected redis-server, and the job runner that stands in
// for the kubelet: create, defaults, delete, Redis cleaned, finalizer gone.
import t from 'tap';
import { parseManifests } from '../../localcluster/apply.ts';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { EXTERNAL_STORAGE_NAMESPACE_ANNOTATION, FT_ENABLED_ANNOTATION, GCS_FT_REDIS_CLEANUP_FINALIZER } from '../../src/names.ts';
import { RAYCLUSTERS, RAYJOBS, type RayCluster } from '../../src/types.ts';
import { registerWebhook } from '../helpers/webhook.ts';
import { controllerChild, createCluster, env, getCluster, jobRunner, rayKeys, redis, seedRay, until } from '../helpers/harness.ts';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { JOBS, SECRETS } from '../../kube/resources.ts';

const PASSWORD = 'e2e-s3cret-pw';

/** manifests/samples/raycluster-gcs-ft.yaml (KubeRay's ray-cluster.external-redis.yaml, options form,
 * metadata.annotations absent), pointed at the test Redis. */
async function externalRedisCluster(name: string, redisAddress: string): Promise<RayCluster> {
  const [sample] = parseManifests(
    await readFile(join(REPO_ROOT, 'manifests', 'samples', 'raycluster-gcs-ft.yaml'), 'utf8'),
  ) as unknown as RayCluster[];
  if (!sample?.spec?.gcsFaultToleranceOptions) throw new Error('the sample is not a GCS-FT RayCluster');
  if (sample.metadata.annotations !== undefined) throw new Error('the sample must have no annotations');
  sample.metadata.name = name;
  sample.spec.gcsFaultToleranceOptions.redisAddress = redisAddress;
  return sample;
}

t.test('seed: webhook pins, controller cleans Redis on delete, RayJob starts at New', async (t) => {
  const e = await env(t);
  const { server, client } = await redis(t, { password: PASSWORD });
  const address = `${server.host}:${server.port}`;
  await e.kube.create(
    { ...SECRETS, namespace: e.ns.name },
    {
      metadata: { name: 'redis-password-secret' },
      stringData: { password: PASSWORD },
    },
  );
  await registerWebhook(t, e);

  // 1. Create: the API server applies our patch (finalizer + pinned namespace), annotations absent.
  const options = await createCluster(e, await externalRedisCluster('external-redis', address));
  t.same(options.metadata.finalizers, [GCS_FT_REDIS_CLEANUP_FINALIZER], 'options form: finalizer added at admission');
  const nsOptions = options.spec?.gcsFaultToleranceOptions?.externalStorageNamespace;
  t.match(nsOptions, /^[0-9a-f-]{36}$/, 'options form: storage namespace pinned in spec.gcsFaultToleranceOptions');
  t.not(nsOptions, options.metadata.uid, 'pinned before the UID existed');

  const annotated = await createCluster(e, {
    apiVersion: 'ray.io/v1',
    kind: 'RayCluster',
    metadata: { name: 'annotated', annotations: { [FT_ENABLED_ANNOTATION]: 'TRUE' } },
    spec: {
      headGroupSpec: {
        rayStartParams: {},
        template: {
          spec: {
            containers: [
              {
                name: 'ray-head',
                image: 'rayproject/ray:2.46.0',
                env: [
                  { name: 'RAY_REDIS_ADDRESS', value: `redis://${address}` },
                  { name: 'REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: 'redis-password-secret', key: 'password' } } },
                ],
              },
            ],
          },
        },
      },
    },
  });
  t.same(annotated.metadata.finalizers, [GCS_FT_REDIS_CLEANUP_FINALIZER], 'annotation form: finalizer added');
  const nsAnnotated = annotated.metadata.annotations?.[EXTERNAL_STORAGE_NAMESPACE_ANNOTATION];
  t.match(nsAnnotated, /^[0-9a-f-]{36}$/, 'annotation form: storage namespace annotation pinned');
  t.not(nsAnnotated, nsOptions, 'each cluster gets its own namespace');

  // 2. Both clusters' GCS data in Redis, plus an unrelated key.
  const optionsKeys = await seedRay(client, nsOptions!);
  const annotatedKeys = await seedRay(client, nsAnnotated!);
  await client.set('unrelated', 'x');

  // 3. Delete one: cleanup Job created and run, its data gone, the other's intact, object gone.
  await controllerChild(t, e, ['--reconcilers', 'raycluster,rayjob']);
  await jobRunner(t, e);
  await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'external-redis' });
  await until(async () => (await getCluster(e, 'external-redis')) === undefined, 'external-redis to be gone', 90_000);
  t.same(await rayKeys(client, nsOptions!), [], 'no key of the deleted cluster namespace remains');
  t.same(await rayKeys(client, nsAnnotated!), [...annotatedKeys].sort(), 'the other cluster data is intact');
  t.equal(await client.get('unrelated'), 'x');
  t.equal(optionsKeys.length, 5);
  const job = await e.kube.getOrUndefined({ ...JOBS, namespace: e.ns.name, name: 'external-redis-redis-cleanup' });
  t.ok(
    job?.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True'),
    'the cleanup Job completed',
  );
  const pw = job?.spec?.template?.spec?.containers?.[0]?.env?.find((x) => x.name === 'REDIS_PASSWORD');
  t.same(
    pw?.valueFrom,
    { secretKeyRef: { name: 'redis-password-secret', key: 'password' } },
    'the password reaches the Job only by secretKeyRef',
  );
  t.notOk(JSON.stringify(job).includes(PASSWORD), 'the password itself is nowhere in the Job');

  await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'annotated' });
  await until(async () => (await getCluster(e, 'annotated')) === undefined, 'annotated to be gone', 90_000);
  t.same(await rayKeys(client, nsAnnotated!), [], 'annotation form cleaned too');
  t.equal(await client.get('unrelated'), 'x', 'unrelated keys survive every cleanup');

  // 4. A RayJob created without status: defaulted by the webhook, driven from New by the controller.
  const created = await e.kube.create(
    { ...RAYJOBS, namespace: e.ns.name },
    {
      apiVersion: 'ray.io/v1',
      kind: 'RayJob',
      metadata: { name: 'sample' },
      spec: { entrypoint: 'python -c "print(1)"', rayClusterSpec: (await externalRedisCluster('ignored', address)).spec! },
    },
  );
  t.equal(created.spec?.submissionMode, 'K8sJobMode', 'webhook defaulted submissionMode');
  t.notOk(created.status?.jobDeploymentStatus, 'a status sent at CREATE is dropped by the status subresource');
  const driven = await until(
    async () => {
      const j = await e.kube.getOrUndefined({ ...RAYJOBS, namespace: e.ns.name, name: 'sample' });
      return j?.status?.jobDeploymentStatus === 'Initializing' ? j : undefined;
    },
    'RayJob to leave New',
    60_000,
  );
  t.match(driven.status?.jobId, /^sample-[a-z0-9]+$/, 'jobId generated in New');
  t.ok(driven.status?.startTime, 'startTime set in New');
  const clusterName = driven.status?.rayClusterName;
  t.match(clusterName, /^sample-[a-z0-9]+$/);
  const owned = await until(() => getCluster(e, clusterName!), 'the RayJob cluster', 60_000);
  t.equal(owned.metadata.ownerReferences?.[0]?.kind, 'RayJob', 'the RayCluster is owned by the RayJob');
  t.same(owned.metadata.finalizers, [GCS_FT_REDIS_CLEANUP_FINALIZER], 'the RayJob cluster went through our webhook too');
});
