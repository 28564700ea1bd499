// When the cleanup cannot succeed, the deletion still ends, and an admin is told what was left where.
import t from 'tap';
import { createServer } from 'node:net';
import {
  controllerInProcess,
  metricValue,
  createCluster,
  env,
  events,
  FINALIZER,
  getCluster,
  jobRunner,
  listJobs,
  rayCluster,
  rayKeys,
  redis,
  seedRay,
  until,
} from '../helpers/harness.ts';
import { RAYCLUSTERS } from '../../src/types.ts';
import {
  JOBS,
  LEASES,
  NAMESPACES,
  SECRETS,
  VALIDATING_ADMISSION_POLICIES,
  VALIDATING_ADMISSION_POLICY_BINDINGS,
} from '../../kube/resources.ts';
import { startController } from '../../controller/main.ts';
import { gcsFtCleanupModule } from '../../controller/gcsft-cleanup/module.ts';
import { microTime } from '../../kube/leader.ts';
import { capturingLogger } from '../webhook/helpers.ts';
import { isConflict, isInvalid, MERGE_PATCH } from '../../kube/client.ts';
import { EVENT_FAILED_TO_CREATE_REDIS_CLEANUP_JOB } from '../../src/event-reasons.ts';

async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

t.test('Redis unreachable: the Job fails, a Warning names the namespace and the command, the finalizer goes', async (tt) => {
  const e = await env(tt);
  await jobRunner(tt, e);
  await controllerInProcess(tt, e);
  const port = await closedPort();
  // 45 s timeout: the cleanup gets --timeout 30 and gives up well before the deletion timeout.
  const c = await createCluster(
    e,
    rayCluster('unreach', `127.0.0.1:${port}`, { finalizers: [FINALIZER], annotations: { 'ray.io/gcs-ft-deletion-timeout': '45' } }),
  );
  await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'unreach' });
  await until(async () => (await getCluster(e, 'unreach')) === undefined, 'the finalizer is released', 90_000, 250);
  const failed = await until(async () => (await events(e, 'RedisCleanupFailed'))[0], 'failure event');
  tt.equal(failed.type, 'Warning');
  tt.match(failed.message, /unreach-redis-cleanup failed/);
  tt.match(failed.message, /BackoffLimitExceeded/, 'the Job failure reason');
  tt.match(failed.message, new RegExp(`storage namespace "${c.metadata.uid}"`), 'names the namespace left in Redis');
  tt.match(
    failed.message,
    new RegExp(`RAY_external_storage_namespace=${c.metadata.uid} RAY_REDIS_ADDRESS=127.0.0.1:${port} raykeeper redis-cleanup`),
    'the command to run by hand',
  );
  tt.equal((await events(e, 'ForceDeletedStuckCluster')).length, 0, 'released because the Job failed, not by the timeout');
  const jobs = await listJobs(e);
  tt.equal(jobs.length, 1);
  tt.ok(jobs[0]!.status?.conditions?.some((x) => x.type === 'Failed' && x.status === 'True'));
});

t.test('a Job that never finishes: released at the timeout annotation with ForceDeletedStuckCluster', async (tt) => {
  const e = await env(tt);
  const { server, client } = await redis(tt);
  const controller = await controllerInProcess(tt, e); // no job runner: nothing ever runs the Job
  const held = async (name: string) =>
    (await controller.manager.ctx.metrics.getSingleMetric(name)?.get())?.values.filter((v) => v.labels.name === 'stuck') ?? [];
  const c = await createCluster(
    e,
    rayCluster('stuck', `127.0.0.1:${server.port}`, { finalizers: [FINALIZER], annotations: { 'ray.io/gcs-ft-deletion-timeout': '4' } }),
  );
  await seedRay(client, c.metadata.uid!);
  await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'stuck' });
  const job = await until(async () => (await listJobs(e))[0], 'the Job is created');
  tt.equal(job.metadata.name, 'stuck-redis-cleanup');
  const spec = (
    await e.kube.get({
      ...JOBS,
      namespace: e.ns.name,
      name: 'stuck-redis-cleanup',
    })
  ).spec;
  tt.ok(
    spec!.activeDeadlineSeconds! >= 1 && spec!.activeDeadlineSeconds! <= 4,
    `activeDeadlineSeconds from the remaining timeout: ${spec!.activeDeadlineSeconds}`,
  );
  tt.equal(spec!.backoffLimit, 0);
  // While the finalizer holds it, the cluster is in the gauges an admin alerts on, with its own timeout.
  const age = await until(async () => (await held('raykeeper_gcsft_finalizer_held_seconds'))[0], 'the held-finalizer gauge');
  tt.same(age.labels, { namespace: e.ns.name, name: 'stuck' });
  tt.ok(age.value >= 0 && age.value < 30, `held for ${age.value} s`);
  tt.same(
    (await held('raykeeper_gcsft_deletion_timeout_seconds')).map((v) => v.value),
    [4],
    'its deletion timeout from the annotation',
  );
  await until(async () => (await getCluster(e, 'stuck')) === undefined, 'released at the timeout', 30_000);
  await until(async () => (await held('raykeeper_gcsft_finalizer_held_seconds')).length === 0, 'the gauge to drop the released cluster');
  tt.same(await held('raykeeper_gcsft_deletion_timeout_seconds'), [], 'both gauges drop it');
  const release = await controller.manager.ctx.metrics.getSingleMetricAsString('raykeeper_raycluster_deletion_to_release_seconds');
  const sum = metricValue(release, 'raykeeper_raycluster_deletion_to_release_seconds_sum', 'reason="timeout"') ?? 0;
  const count = metricValue(release, 'raykeeper_raycluster_deletion_to_release_seconds_count', 'reason="timeout"');
  tt.equal(count, 1, 'one release by timeout in the deletion-to-release histogram');
  tt.ok(sum >= 4 && sum < 30, `released ${sum} s after the deletion, at its 4 s timeout`);
  const forced = await until(async () => (await events(e, 'ForceDeletedStuckCluster'))[0], 'event');
  tt.equal(forced.type, 'Warning');
  tt.match(forced.message, new RegExp(c.metadata.uid!));
  tt.equal((await rayKeys(client, c.metadata.uid!)).length, 5, 'the data is still there (and the event says so)');
  tt.equal((await listJobs(e)).length, 1, 'still exactly one Job');
});

t.test('namespace terminating (kuberay #3388): the controller cleans up itself with the Secret it may read', async (tt) => {
  const e = await env(tt);
  const { server, client } = await redis(tt, { password: 'pw-in-a-secret' });
  await controllerInProcess(tt, e);
  await e.kube.create(
    { ...SECRETS, namespace: e.ns.name },
    { metadata: { name: 'redis-auth' }, stringData: { password: 'pw-in-a-secret' } },
  );
  const c = await createCluster(
    e,
    rayCluster('nsgone', `127.0.0.1:${server.port}`, {
      finalizers: [FINALIZER],
      headEnv: [{ name: 'REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: 'redis-auth', key: 'password' } } }],
    }),
  );
  await seedRay(client, c.metadata.uid!);
  await seedRay(client, 'neighbour');
  // The namespace is deleted; the namespace controller (absent here) would then delete the cluster.
  await e.kube.delete({ ...NAMESPACES, name: e.ns.name });
  await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'nsgone' });
  await until(async () => (await getCluster(e, 'nsgone')) === undefined, 'the finalizer is released', 60_000);
  tt.same(await rayKeys(client, c.metadata.uid!), [], 'cleaned by the controller itself');
  tt.equal((await rayKeys(client, 'neighbour')).length, 5, 'neighbour intact');
  tt.equal((await listJobs(e)).length, 0, 'no Job could be created');
});

t.test('namespace terminating and a credential the controller cannot resolve: blocked, then timeout', async (tt) => {
  const e = await env(tt);
  const { server, client } = await redis(tt);
  await controllerInProcess(tt, e);
  const c = await createCluster(
    e,
    rayCluster('nsblocked', `127.0.0.1:${server.port}`, {
      finalizers: [FINALIZER],
      annotations: { 'ray.io/gcs-ft-deletion-timeout': '4' },
      headEnv: [{ name: 'REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: 'does-not-exist', key: 'password' } } }],
    }),
  );
  await seedRay(client, c.metadata.uid!);
  await e.kube.delete({ ...NAMESPACES, name: e.ns.name });
  await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'nsblocked' });
  await until(async () => (await getCluster(e, 'nsblocked')) === undefined, 'released at the timeout', 30_000);
  tt.equal((await rayKeys(client, c.metadata.uid!)).length, 5, 'nothing could be cleaned');
  // Events cannot be written in a terminating namespace; the controller logs them instead (and counts).
  tt.equal((await events(e)).length, 0);
});

t.test('a Job left by an earlier cluster of the same name is not taken for ours', async (tt) => {
  const e = await env(tt);
  const { server, client } = await redis(tt);
  await jobRunner(tt, e);
  await controllerInProcess(tt, e);
  // A completed Job owned by a RayCluster UID that no longer exists (GC has not run: no controller-manager).
  await e.kube.create(
    { ...JOBS, namespace: e.ns.name },
    {
      metadata: {
        name: 'reborn-redis-cleanup',
        labels: { 'ray.io/node-type': 'redis-cleanup', 'ray.io/cluster': 'reborn' },
        ownerReferences: [
          { apiVersion: 'ray.io/v1', kind: 'RayCluster', name: 'reborn', uid: '11111111-2222-3333-4444-555555555555', controller: true },
        ],
      },
      spec: { suspend: true, template: { spec: { restartPolicy: 'Never', containers: [{ name: 'x', image: 'x', command: ['true'] }] } } },
    },
  );
  const c = await createCluster(e, rayCluster('reborn', `127.0.0.1:${server.port}`, { finalizers: [FINALIZER] }));
  await seedRay(client, c.metadata.uid!);
  await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'reborn' });
  await until(async () => (await getCluster(e, 'reborn')) === undefined, 'released after a cleanup of its own', 60_000);
  tt.same(await rayKeys(client, c.metadata.uid!), [], 'its own Job ran');
  const jobs = await listJobs(e);
  tt.equal(jobs.length, 1);
  const owner = (
    await e.kube.get({
      ...JOBS,
      namespace: e.ns.name,
      name: 'reborn-redis-cleanup',
    })
  ).metadata.ownerReferences![0]!.uid;
  tt.equal(owner, c.metadata.uid, 'the stale Job was replaced by one owned by this cluster');
});

t.test('leadership lost during the in-process cleanup: the cleanup stops, nothing more is written, the finalizer stays', async (tt) => {
  const e = await env(tt);
  const { logger, lines } = capturingLogger();
  const lease = { ...LEASES, namespace: 'default', name: `rk-${e.ns.name}` };
  const c = await startController({
    kubeConfig: e.ns.kubeConfig,
    watchNamespace: e.ns.name,
    modules: [gcsFtCleanupModule],
    env: {},
    logger,
    moduleFlags: { 'cleanup-image': 'raykeeper:test' },
    leaderElect: true,
    leaseNamespace: lease.namespace,
    leaseName: lease.name,
    identity: 'first',
    leaseDurationMs: 3000,
    renewDeadlineMs: 2000,
    retryPeriodMs: 400,
  });
  tt.teardown(() => c.stop());
  await until(() => c.manager.isLeader(), 'leading');
  // Redis refuses connections: the cleanup retries for its whole connection budget (60 s).
  await createCluster(e, rayCluster('abort', `127.0.0.1:${await closedPort()}`, { finalizers: [FINALIZER] }));
  await e.kube.delete({ ...NAMESPACES, name: e.ns.name });
  await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'abort' });
  await until(
    () => lines().some((l) => l.msg === 'namespace is terminating: running the Redis cleanup in the controller'),
    'the in-process cleanup runs',
  );

  // Another replica takes the Lease (it saw it expire, say): at its next renew this one has lost it.
  let taken = 0;
  for (;;) {
    const current = await e.kube.get(lease);
    taken = Date.now();
    try {
      await e.kube.replace(lease, {
        ...current,
        spec: { ...current.spec, holderIdentity: 'second', acquireTime: microTime(taken), renewTime: microTime(taken) },
      });
      break;
    } catch (err) {
      if (!isConflict(err)) throw err; // renewed in between: read again
    }
  }
  tt.equal(await c.done, 'lost-leadership');
  await until(() => lines().some((l) => l.msg === 'in-process Redis cleanup aborted: the finalizer stays'), 'the cleanup aborted');
  const stoppedMs = Date.now() - taken;
  tt.comment(`stopped ${stoppedMs} ms after the Lease was taken`);
  tt.ok(stoppedMs < 10_000, "stopped at once, not after the cleanup's retries or the 20 s shutdown grace");
  tt.ok((await getCluster(e, 'abort'))?.metadata.finalizers?.includes(FINALIZER), 'the finalizer stays for the next leader');
  const after = lines()
    .filter((l) => Number(l.time) >= taken)
    .map((l) => String(l.msg));
  tt.notOk(
    after.some((m) => /released the GCS FT|RedisCleanupFailed|reconcile failed; will retry/.test(m)),
    `nothing released, no Event, no retry: ${after.join(' | ')}`,
  );
  const m = c.manager.ctx.metrics.getSingleMetric('raykeeper_raycluster_inprocess_cleanups_total');
  const results = (await m!.get()).values.map((v) => `${v.labels.result}=${v.value}`);
  tt.same(results, ['aborted=1'], 'counted as aborted (not failed)');
});

t.test('the cleanup Job refused by a policy that quotes its env: the Warning and the logs mask the inline password', async (tt) => {
  const e = await env(tt);
  const secret = 'j0b-env-pw';
  const name = `no-cleanup-jobs-${e.ns.name}`;
  await e.kube.create(VALIDATING_ADMISSION_POLICIES, {
    metadata: { name },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: { resourceRules: [{ apiGroups: ['batch'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['jobs'] }] },
      validations: [
        {
          expression: 'false',
          message: 'no Jobs here',
          messageExpression: `'no Jobs here (env ' + object.spec.template.spec.containers[0].env.filter(e, e.name == 'REDIS_PASSWORD').map(e, e.value).join(',') + ')'`,
        },
      ],
    },
  });
  await e.kube.create(VALIDATING_ADMISSION_POLICY_BINDINGS, {
    metadata: { name },
    spec: {
      policyName: name,
      validationActions: ['Deny'],
      matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': e.ns.name } } },
    },
  });
  tt.teardown(async () => {
    await e.kube.delete({ ...VALIDATING_ADMISSION_POLICY_BINDINGS, name });
    await e.kube.delete({ ...VALIDATING_ADMISSION_POLICIES, name });
  });
  const probe = {
    metadata: { name: 'probe' },
    spec: {
      template: {
        spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'x', env: [{ name: 'REDIS_PASSWORD', value: 'p' }] }] },
      },
    },
  };
  await until(
    () =>
      e.kube.create({ ...JOBS, namespace: e.ns.name }, probe, { query: { dryRun: 'All' } }).then(
        () => false,
        (err: unknown) => isInvalid(err),
      ),
    'the policy to be enforced',
    30_000,
  );

  const { logger, lines } = capturingLogger();
  await controllerInProcess(tt, e, { logger });
  const body = rayCluster('refused', '127.0.0.1:1', { finalizers: [FINALIZER] });
  (body.spec as { headGroupSpec: { rayStartParams: Record<string, string> } }).headGroupSpec.rayStartParams['redis-password'] = secret;
  await createCluster(e, body);
  await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'refused' });
  const warning = await until(async () => (await events(e, EVENT_FAILED_TO_CREATE_REDIS_CLEANUP_JOB))[0], 'the Warning');
  tt.equal(warning.type, 'Warning');
  tt.match(
    warning.message,
    /^Failed to create Redis cleanup Job [^/]+\/refused-redis-cleanup: .*ValidatingAdmissionPolicy 'no-cleanup-jobs-[^']+' .*denied request: no Jobs here \(env \*\*\*\)/,
    "the API's message, the password masked",
  );
  tt.notOk(warning.message.includes(secret), 'no password in the Warning');
  await until(() => lines().some((l) => l.msg === 'reconcile failed; will retry'), 'the failed reconcile logged');
  const text = lines().map((l) => JSON.stringify(l));
  tt.ok(
    text.some((l) => l.includes(`event ${EVENT_FAILED_TO_CREATE_REDIS_CLEANUP_JOB}`) && l.includes('no Jobs here (env ***)')),
    'the event is logged, masked',
  );
  tt.ok(
    text.some((l) => l.includes('reconcile failed') && l.includes('no Jobs here (env ***)')),
    'the failed reconcile is logged, masked',
  );
  tt.same(
    text.filter((l) => l.includes(secret)),
    [],
    'no log line carries the password',
  );
  tt.equal((await listJobs(e)).length, 0, 'no Job');
  // Let the namespace go on teardown (nothing will run the cleanup).
  await e.kube.patch({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'refused' }, { metadata: { finalizers: null } }, MERGE_PATCH);
});
