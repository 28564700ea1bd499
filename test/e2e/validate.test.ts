// The validating webhook through the real kube-apiserver: our webhook on loopback registered through both
// of our configurations (manifests/base, as `raykeeper dev` does), for this test's namespace only. A
// create of an invalid RayCluster / RayJob is refused with KubeRay's reason, a valid one is created, a
// warned one is created and the warning reaches the client in the API server's Warning header; an UPDATE of
// a GCS-FT cluster's storage namespace is refused; finalizer, label and status edits pass.
import t, { type Test } from 'tap';
import { localWebhookConfigurations } from '../../localcluster/webhook-config.ts';
import { applyObject } from '../../localcluster/apply.ts';
import { KubeApiError, MERGE_PATCH, type ResourceRef } from '../../kube/client.ts';
import { MUTATING_WEBHOOK_CONFIGURATIONS, VALIDATING_WEBHOOK_CONFIGURATIONS } from '../../kube/resources.ts';
import { RAYCLUSTERS, RAYCRONJOBS, RAYJOBS, type RayCluster, type RayCronJob, type RayJob } from '../../src/types.ts';
import { env, until, type Env } from '../helpers/harness.ts';
import { startLoopbackWebhook } from '../helpers/webhook.ts';
import { metricTextSum } from '../../bench/controller.ts';

async function registerWebhooks(tt: Test, e: Env): Promise<Awaited<ReturnType<typeof startLoopbackWebhook>>> {
  const webhook = await startLoopbackWebhook(tt);
  const name = `raykeeper-validate-${e.ns.name}`;
  const configs = await localWebhookConfigurations({
    ...webhook,
    name,
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': e.ns.name } },
  });
  t.same(
    configs.map((c) => c.kind),
    ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'],
  );
  for (const config of configs) await applyObject(e.ns.kube, config);
  tt.teardown(async () => {
    await e.kube.delete({ ...MUTATING_WEBHOOK_CONFIGURATIONS, name }).catch(() => {});
    await e.kube.delete({ ...VALIDATING_WEBHOOK_CONFIGURATIONS, name }).catch(() => {});
  });
  return webhook;
}

/** Waits until a dry-run create of `invalid` is refused: the API server calls our validating webhook. */
async function untilValidating(e: Env, ref: ResourceRef<RayCluster>, invalid: object): Promise<void> {
  await until(
    async () =>
      e.kube.create(ref, invalid, { query: { dryRun: 'All' } }).then(
        () => false,
        (err: unknown) => err instanceof KubeApiError && err.statusCode === 403,
      ),
    'the validating webhook to be called',
    30_000,
    200,
  );
}

function cluster(name: string, edit: (c: RayCluster) => void = () => {}): RayCluster {
  const c: RayCluster = {
    apiVersion: 'ray.io/v1',
    kind: 'RayCluster',
    metadata: { name },
    spec: {
      rayVersion: '2.53.0',
      headGroupSpec: { rayStartParams: {}, template: { spec: { containers: [{ name: 'ray-head', image: 'rayproject/ray:2.53.0' }] } } },
      workerGroupSpecs: [
        { groupName: 'small', replicas: 1, minReplicas: 0, maxReplicas: 2, template: { spec: { containers: [{ name: 'ray-worker' }] } } },
      ],
    },
  };
  edit(c);
  return c;
}

async function refusal(p: Promise<unknown>): Promise<KubeApiError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof KubeApiError) return err;
    throw err;
  }
  throw new Error('the API server admitted it');
}

t.test('validating admission through the kube-apiserver', async (tt) => {
  const e = await env(tt);
  await registerWebhooks(tt, e);
  const clusters = { ...RAYCLUSTERS, namespace: e.ns.name };
  const jobs = { ...RAYJOBS, namespace: e.ns.name };
  const negative = cluster('negative', (c) => {
    const w = c.spec?.workerGroupSpecs?.[0];
    if (w) w.minReplicas = -1;
  });

  // The API server picks up new webhook configurations within a moment: probe with a dry run until ours answers.
  await untilValidating(e, clusters, negative);

  const denied = await refusal(e.kube.create(clusters, negative));
  tt.equal(denied.statusCode, 403, 'invalid RayCluster: 403');
  tt.match(
    denied.status?.message ?? '',
    /admission webhook "raycluster.validate.raykeeper.io" denied the request: The RayCluster spec is invalid: worker group small has negative minReplicas -1/,
  );
  tt.equal(await e.kube.getOrUndefined({ ...clusters, name: 'negative' }), undefined, 'nothing stored');

  const job: RayJob = {
    apiVersion: 'ray.io/v1',
    kind: 'RayJob',
    metadata: { name: 'bad-job' },
    spec: { entrypoint: 'python -c "print(1)"', rayClusterSpec: cluster('x').spec, backoffLimit: -1 },
  };
  const jobDenied = await refusal(e.kube.create(jobs, job));
  tt.equal(jobDenied.statusCode, 403, 'invalid RayJob: 403');
  tt.match(jobDenied.status?.message ?? '', /"rayjob.validate.raykeeper.io" denied the request: The RayJob spec is invalid: backoffLimit/);

  // A RayCronJob whose schedule KubeRay's cron library refuses (a seconds field): refused at admission with
  // the controller's own reason, where the CRD's schema alone would have stored it.
  const cronJob: RayCronJob = {
    apiVersion: 'ray.io/v1',
    kind: 'RayCronJob',
    metadata: { name: 'bad-cron' },
    spec: { schedule: '0 */5 * * * *', jobTemplate: { entrypoint: 'python -c "print(1)"', rayClusterSpec: cluster('x').spec } },
  };
  const cronJobs = { ...RAYCRONJOBS, namespace: e.ns.name };
  const cronDenied = await refusal(e.kube.create(cronJobs, cronJob));
  tt.equal(cronDenied.statusCode, 403, 'invalid RayCronJob: 403');
  tt.match(cronDenied.status?.message ?? '', /"raycronjob.validate.raykeeper.io" denied the request: .*exactly 5 fields, found 6/);
  const goodCron = await e.kube.create(cronJobs, {
    ...cronJob,
    metadata: { name: 'good-cron' },
    spec: { ...cronJob.spec, schedule: '*/5 * * * *' },
  });
  tt.ok(goodCron.metadata.uid, 'a valid RayCronJob is created');

  const valid = await e.kube.create(clusters, cluster('valid'));
  tt.ok(valid.metadata.uid, 'a valid RayCluster is created');
  const goodJob = await e.kube.create(jobs, { ...job, metadata: { name: 'good-job' }, spec: { ...job.spec, backoffLimit: 0 } });
  tt.ok(goodJob.metadata.uid, 'a valid RayJob is created');

  const warnings: string[] = [];
  const warned = await e.kube.create(
    clusters,
    cluster('warned', (c) => {
      if (c.spec) c.spec['autoscalerOptions'] = { version: 'v2' };
    }),
    { warnings },
  );
  tt.ok(warned.metadata.uid, 'a warned RayCluster is created');
  tt.match(
    warnings.join('\n'),
    /spec.autoscalerOptions is set but spec.enableInTreeAutoscaling is not true/,
    'the warning reaches the client',
  );

  // A GCS-FT cluster (options form): the mutating webhook adds the finalizer; its storage namespace is kept.
  const ft = await e.kube.create(
    clusters,
    cluster('ft', (c) => {
      if (c.spec) c.spec.gcsFaultToleranceOptions = { redisAddress: 'redis:6379', externalStorageNamespace: 'ns-a' };
    }),
  );
  tt.same(ft.metadata.finalizers, ['ray.io/gcs-ft-redis-cleanup-finalizer']);
  const ftRef = { ...clusters, name: 'ft' };
  const nsDenied = await refusal(
    e.kube.patch(ftRef, { spec: { gcsFaultToleranceOptions: { externalStorageNamespace: 'ns-b' } } }, MERGE_PATCH),
  );
  tt.equal(nsDenied.statusCode, 403);
  tt.match(nsDenied.status?.message ?? '', /cannot change the storage namespace .* from "ns-a" to "ns-b".*delete the RayCluster/);
  const addressDenied = await refusal(
    e.kube.patch(ftRef, { spec: { gcsFaultToleranceOptions: { redisAddress: 'other:6379' } } }, MERGE_PATCH),
  );
  tt.match(addressDenied.status?.message ?? '', /cannot change the Redis address/);

  // Dropping the namespace: the mutating webhook restores it, so the validating one sees no change.
  const dropped = await e.kube.patch(ftRef, { spec: { gcsFaultToleranceOptions: { externalStorageNamespace: null } } }, MERGE_PATCH);
  tt.equal(dropped.spec?.gcsFaultToleranceOptions?.externalStorageNamespace, 'ns-a', 'a dropped namespace is restored, not refused');

  const labelled = await e.kube.patch(ftRef, { metadata: { labels: { team: 'a' } } }, MERGE_PATCH);
  tt.equal(labelled.metadata.labels?.['team'], 'a', 'a label edit passes');
  const status = await e.kube.patch({ ...ftRef, subresource: 'status' }, { status: { state: 'ready' } }, MERGE_PATCH);
  tt.equal(status.status?.state, 'ready', 'a status edit passes');
  const released = await e.kube.patch(ftRef, { metadata: { finalizers: null } }, MERGE_PATCH);
  tt.equal(released.metadata.finalizers, undefined, 'a finalizer removal passes');
  await e.kube.delete(ftRef);
});

t.test('matchConditions: UPDATEs the rules do not read, and finalizer removals, never reach the webhook', async (tt) => {
  const e = await env(tt);
  const webhook = await registerWebhooks(tt, e);
  const clusters = { ...RAYCLUSTERS, namespace: e.ns.name };
  const jobs = { ...RAYJOBS, namespace: e.ns.name };
  await untilValidating(
    e,
    clusters,
    cluster('negative', (c) => {
      if (c.spec?.workerGroupSpecs?.[0]) c.spec.workerGroupSpecs[0].minReplicas = -1;
    }),
  );
  // UPDATE calls our webhook answered since the last look: validating, and all (mutating + validating).
  const text = async () => webhook.metrics();
  const counted = async (resource: string) => {
    const m = await text();
    const labels = new RegExp(`resource="${resource}",operation="UPDATE"`);
    return {
      validating: metricTextSum(m, 'raykeeper_webhook_validations_total', labels),
      all: metricTextSum(m, 'raykeeper_webhook_requests_total', labels),
    };
  };
  let last = { rayjob: await counted('rayjob'), raycluster: await counted('raycluster') };
  const calls = async (resource: 'rayjob' | 'raycluster') => {
    const now = await counted(resource);
    const delta = {
      validating: now.validating - last[resource].validating,
      mutating: now.all - now.validating - (last[resource].all - last[resource].validating),
    };
    last = { ...last, [resource]: now };
    return delta;
  };

  // A RayJob without annotations or labels (the conditions read absent maps as empty).
  const job: RayJob = {
    apiVersion: 'ray.io/v1',
    kind: 'RayJob',
    metadata: { name: 'plain' },
    spec: { entrypoint: 'python -c "print(1)"', rayClusterSpec: cluster('x').spec },
  };
  const jobRef = { ...jobs, name: 'plain' };
  await e.kube.create(jobs, job);
  await e.kube.patch(jobRef, { metadata: { finalizers: ['raykeeper.test/hold'] } }, MERGE_PATCH);
  tt.same(await calls('rayjob'), { validating: 0, mutating: 0 }, 'a finalizer added to a RayJob: no webhook call');
  await e.kube.patch(jobRef, { metadata: { labels: { team: 'a' } } }, MERGE_PATCH);
  tt.same(await calls('rayjob'), { validating: 1, mutating: 0 }, 'a label added: validated');
  const bad = await refusal(e.kube.patch(jobRef, { spec: { backoffLimit: -1 } }, MERGE_PATCH));
  tt.match(
    bad.status?.message ?? '',
    /rayjob.validate.raykeeper.io" denied the request: The RayJob spec is invalid: backoffLimit/,
    'a spec edit: validated and refused',
  );
  tt.same(await calls('rayjob'), { validating: 1, mutating: 0 }, 'one call');
  await e.kube.delete(jobRef);
  await e.kube.patch(jobRef, { metadata: { finalizers: null } }, MERGE_PATCH);
  await until(async () => (await e.kube.getOrUndefined(jobRef)) === undefined, 'the RayJob gone', 30_000);
  tt.same(await calls('rayjob'), { validating: 0, mutating: 0 }, 'its finalizer removed while deleting: no webhook call');

  // A GCS-FT RayCluster without annotations of its own (options form), once the mutating configuration is
  // active too (the API server picks up each configuration on its own).
  const ftRef = { ...clusters, name: 'ft' };
  const ftCluster = cluster('ft', (c) => {
    if (c.spec) c.spec.gcsFaultToleranceOptions = { redisAddress: 'redis:6379', externalStorageNamespace: 'ns-a' };
  });
  await until(
    async () => ((await e.kube.create(clusters, ftCluster, { query: { dryRun: 'All' } })).metadata.finalizers ?? []).length > 0,
    'the mutating webhook to be called',
    30_000,
    200,
  );
  const ft = await e.kube.create(clusters, ftCluster);
  tt.same(ft.metadata.finalizers, ['ray.io/gcs-ft-redis-cleanup-finalizer'], 'the mutating webhook added its finalizer');
  await calls('raycluster');
  await e.kube.patch(ftRef, { metadata: { finalizers: ['ray.io/gcs-ft-redis-cleanup-finalizer', 'raykeeper.test/hold'] } }, MERGE_PATCH);
  tt.same(
    await calls('raycluster'),
    { validating: 0, mutating: 1 },
    'a finalizer added to a live cluster: mutating only (it may add its own)',
  );
  await e.kube.patch(ftRef, { metadata: { annotations: { note: 'live' } } }, MERGE_PATCH);
  tt.same(await calls('raycluster'), { validating: 1, mutating: 1 }, 'an annotation on a live cluster: both');
  await e.kube.delete(ftRef);
  await e.kube.patch(ftRef, { metadata: { annotations: { note: 'going' } } }, MERGE_PATCH);
  tt.same(await calls('raycluster'), { validating: 0, mutating: 1 }, 'an annotation on a deleting cluster: mutating only');
  await e.kube.patch(ftRef, { metadata: { finalizers: ['raykeeper.test/hold'] } }, MERGE_PATCH);
  tt.same(await calls('raycluster'), { validating: 0, mutating: 0 }, 'the cleanup finalizer removed while deleting: no webhook call');
  await e.kube.patch(ftRef, { metadata: { finalizers: null } }, MERGE_PATCH);
  await until(async () => (await e.kube.getOrUndefined(ftRef)) === undefined, 'the cluster gone', 30_000);
});
