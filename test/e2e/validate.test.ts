// The validating webhook through the real kube-apiserver: our webhook on loopback registered through both
// of our configurations (manifests/base, as `raykeeper dev` does), for this test's namespace only. A
// create of an invalid RayCluster / RayJob is refused with KubeRay's reason, a valid one is created, a
// warned one is created and the warning reaches the client in the API server's Warning header; an UPDATE of
// a GCS-FT cluster's storage namespace is refused; finalizer, label and status edits pass.
import t, { type Test } from 'tap';
import { localWebhookConfigurations } from '../../localcluster/webhook-config.ts';
import { applyObject } from '../../localcluster/apply.ts';
import { KubeApiError, MERGE_PATCH } from '../../kube/client.ts';
import {
  MUTATING_WEBHOOK_CONFIGURATIONS,
  RAYCLUSTERS,
  RAYCRONJOBS,
  RAYJOBS,
  VALIDATING_WEBHOOK_CONFIGURATIONS,
} from '../../kube/resources.ts';
import type { RayCluster, RayCronJob, RayJob } from '../../src/types.ts';
import { env, until, type Env } from '../raycluster/harness.ts';
import { startLoopbackWebhook } from '../helpers/webhook.ts';

async function registerWebhooks(tt: Test, e: Env): Promise<void> {
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
  await until(
    async () =>
      e.kube.create(clusters, negative, { query: { dryRun: 'All' } }).then(
        () => false,
        (err: unknown) => err instanceof KubeApiError && err.statusCode === 403,
      ),
    'the validating webhook to be called',
    30_000,
    200,
  );

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
  const goodCron = await e.kube.create<RayCronJob>(cronJobs, {
    ...cronJob,
    metadata: { name: 'good-cron' },
    spec: { ...cronJob.spec, schedule: '*/5 * * * *' },
  });
  tt.ok(goodCron.metadata.uid, 'a valid RayCronJob is created');

  const valid = await e.kube.create<RayCluster>(clusters, cluster('valid'));
  tt.ok(valid.metadata.uid, 'a valid RayCluster is created');
  const goodJob = await e.kube.create<RayJob>(jobs, { ...job, metadata: { name: 'good-job' }, spec: { ...job.spec, backoffLimit: 0 } });
  tt.ok(goodJob.metadata.uid, 'a valid RayJob is created');

  const warnings: string[] = [];
  const warned = await e.kube.create<RayCluster>(
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
  const ft = await e.kube.create<RayCluster>(
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
  const dropped = await e.kube.patch<RayCluster>(
    ftRef,
    { spec: { gcsFaultToleranceOptions: { externalStorageNamespace: null } } },
    MERGE_PATCH,
  );
  tt.equal(dropped.spec?.gcsFaultToleranceOptions?.externalStorageNamespace, 'ns-a', 'a dropped namespace is restored, not refused');

  const labelled = await e.kube.patch<RayCluster>(ftRef, { metadata: { labels: { team: 'a' } } }, MERGE_PATCH);
  tt.equal(labelled.metadata.labels?.['team'], 'a', 'a label edit passes');
  const status = await e.kube.patch<RayCluster>({ ...ftRef, subresource: 'status' }, { status: { state: 'ready' } }, MERGE_PATCH);
  tt.equal(status.status?.state, 'ready', 'a status edit passes');
  const released = await e.kube.patch<RayCluster>(ftRef, { metadata: { finalizers: null } }, MERGE_PATCH);
  tt.equal(released.metadata.finalizers, undefined, 'a finalizer removal passes');
  await e.kube.delete(ftRef);
});
