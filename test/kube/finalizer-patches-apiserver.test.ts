// Finalizer patches on the REAL kube-apiserver (issue 13 item 11): a failed JSON-patch `test` (the
// object changed since read) is re-read and retried at once; the API refusing the change itself (a
// ValidatingAdmissionPolicy, a validation rule) is a Warning event with the API's message, a metric,
// and exponential backoff through the work queue, never a 200 ms spin.
import { CreationGate } from '../../kube/creation-gate.ts';
import t, { type Test } from 'tap';
import type { Counter } from 'prom-client';
import { startController } from '../../controller/main.ts';
import { gcsFtCleanupModule } from '../../controller/gcsft-cleanup/module.ts';
import { GcsFtCleanupReconciler } from '../../controller/gcsft-cleanup/reconciler.ts';
import { FinalizerPatchRejectedError } from '../../kube/finalizers.ts';
import { KubeEventRecorder } from '../../kube/events.ts';
import { InformerFactory } from '../../kube/informer.ts';
import type { ControllerContext } from '../../kube/reconciler.ts';
import { addFinalizerPatch, removeFinalizerPatch } from '../../kube/finalizer-patches.ts';
import { EVENT_FINALIZER_PATCH_REJECTED } from '../../src/event-reasons.ts';
import { isInvalid, isPatchTestFailed, JSON_PATCH, type KubeApiError, MERGE_PATCH } from '../../kube/client.ts';
import { createMetricsRegistry, type Registry } from '../../kube/metrics.ts';
import { RAYJOB_FINALIZER } from '../../src/names.ts';
import { RAYCLUSTERS, type RayCluster, type RayJob } from '../../src/types.ts';
import { env, events, FINALIZER, getCluster, quiet, rayCluster, until, type Env } from '../helpers/harness.ts';
import { manifest, rayJobHarness } from '../rayjob/helpers/harness.ts';
import { capturingLogger } from '../webhook/helpers.ts';
import { VALIDATING_ADMISSION_POLICIES, VALIDATING_ADMISSION_POLICY_BINDINGS } from '../../kube/resources.ts';

const FROZEN_LABEL = 'raykeeper.test/frozen-finalizers';
const SECRET = 'sup3r-secret-pw';
const ENV_SECRET = 'h3ad-env-pw';

/**
 * A ValidatingAdmissionPolicy that refuses any change to the finalizers of RayClusters and RayJobs
 * labelled FROZEN_LABEL=yes in `namespace`; its message quotes the cluster's inline redis-password
 * and the head's REDIS_PASSWORD env value (as a careless policy could; neither is in the controller's
 * cache when the operator module is not running). Resolves once the API server enforces it (a dry-run is refused).
 */
async function freezeFinalizers(tt: Test, e: Env): Promise<void> {
  const name = `frozen-finalizers-${e.ns.name}`;
  const count = (side: string) => `(has(${side}.metadata.finalizers) ? size(${side}.metadata.finalizers) : 0)`;
  await e.kube.create(VALIDATING_ADMISSION_POLICIES, {
    metadata: { name },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [{ apiGroups: ['ray.io'], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['rayclusters', 'rayjobs'] }],
      },
      validations: [
        {
          expression: `${count('object')} == ${count('oldObject')}`,
          message: 'finalizers are frozen here',
          messageExpression: `'finalizers are frozen here (redis-password ' + object.spec.headGroupSpec.rayStartParams['redis-password'] + ', env ' + object.spec.headGroupSpec.template.spec.containers[0].env.filter(e, e.name == 'REDIS_PASSWORD').map(e, e.value).join(',') + ')'`,
        },
      ],
    },
  });
  await e.kube.create(VALIDATING_ADMISSION_POLICY_BINDINGS, {
    metadata: { name },
    spec: {
      policyName: name,
      validationActions: ['Deny'],
      matchResources: {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': e.ns.name } },
        objectSelector: { matchLabels: { [FROZEN_LABEL]: 'yes' } },
      },
    },
  });
  tt.teardown(async () => {
    await e.kube.delete({ ...VALIDATING_ADMISSION_POLICY_BINDINGS, name });
    await e.kube.delete({ ...VALIDATING_ADMISSION_POLICIES, name });
  });
  // A probe the controllers ignore (no GCS FT): a dry-run finalizer change is refused once the policy is live.
  const probe = rayCluster('probe', '127.0.0.1:1');
  probe.metadata.labels = { [FROZEN_LABEL]: 'yes' };
  probe.metadata.annotations = {};
  await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, probe);
  await until(
    () =>
      e.kube
        .patch(
          { ...RAYCLUSTERS, namespace: e.ns.name, name: 'probe' },
          [{ op: 'add', path: '/metadata/finalizers', value: ['example.com/x'] }],
          JSON_PATCH,
          { query: { dryRun: 'All' } },
        )
        .then(
          () => false,
          (err: unknown) => isInvalid(err),
        ),
    'the policy to be enforced',
    30_000,
    100,
  );
}

async function patchCount(metrics: Registry, kind: string, result: string, change?: string): Promise<number> {
  const counter = metrics.getSingleMetric('raykeeper_finalizer_patches_total') as Counter | undefined;
  const values = counter ? (await counter.get()).values : [];
  return values
    .filter((v) => v.labels.kind === kind && v.labels.result === result && (change === undefined || v.labels.change === change))
    .reduce((sum, v) => sum + v.value, 0);
}

function gcsFtCluster(name: string, labels: Record<string, string> = {}): RayCluster {
  const c = rayCluster(name, '127.0.0.1:6379');
  c.metadata.labels = labels;
  (c.spec as { headGroupSpec: { rayStartParams: Record<string, string> } }).headGroupSpec.rayStartParams['redis-password'] = SECRET;
  c.spec!.headGroupSpec!.template!.spec!.containers![0]!.env!.push({ name: 'REDIS_PASSWORD', value: ENV_SECRET });
  return c;
}

t.test('what kube-apiserver 1.35 answers: a failed `test` op vs. a refusal of the change', async (tt) => {
  const e = await env(tt);
  await freezeFinalizers(tt, e);
  const ns = e.ns.name;
  const plain = await e.kube.create({ ...RAYCLUSTERS, namespace: ns }, gcsFtCluster('plain'));
  const ref = { ...RAYCLUSTERS, namespace: ns, name: 'plain' };
  const caught = (p: Promise<unknown>) =>
    p.then(
      () => tt.fail('expected a refusal') as never,
      (err: unknown) => err as KubeApiError,
    );

  // The stored object moved on since this copy was read: the `test` op fails.
  const stale = structuredClone(plain);
  await e.kube.patch(ref, { metadata: { finalizers: ['example.com/other'] } }, MERGE_PATCH);
  const testFailed = await caught(e.kube.patch(ref, addFinalizerPatch(stale.metadata, FINALIZER), JSON_PATCH));
  tt.equal(testFailed.statusCode, 422);
  tt.equal(testFailed.status?.reason, 'Invalid');
  tt.equal(
    testFailed.status?.message,
    'the server rejected our request due to an error in our request',
    'the JSON-patch error itself is not in the answer',
  );
  tt.same(testFailed.status?.details?.causes ?? [], [], 'no causes');
  tt.ok(isPatchTestFailed(testFailed), 'a failed test op is recognised');
  tt.notOk(isInvalid(testFailed), 'and is not a refusal');

  // Validation: a finalizer name the API does not accept.
  const current = await e.kube.get(ref);
  const invalid = await caught(
    e.kube.patch(
      ref,
      [
        { op: 'test', path: '/metadata/finalizers', value: current.metadata.finalizers },
        { op: 'add', path: '/metadata/finalizers/-', value: 'not a/valid name!' },
      ],
      JSON_PATCH,
    ),
  );
  tt.equal(invalid.statusCode, 422);
  tt.equal(invalid.status?.reason, 'Invalid');
  tt.match(
    invalid.status?.message,
    /^RayCluster\.ray\.io "plain" is invalid: \[?metadata\.finalizers: Invalid value: "not a\/valid name!"/,
    'names the object and the field',
  );
  tt.ok((invalid.status?.details?.causes ?? []).length > 0, 'with causes');
  tt.notOk(isPatchTestFailed(invalid), 'a validation error is not a failed test op');
  tt.ok(isInvalid(invalid));

  // The admission policy refuses the change (its default reason is Invalid: 422 as well).
  await e.kube.patch(ref, { metadata: { labels: { [FROZEN_LABEL]: 'yes' } } }, MERGE_PATCH);
  const frozen = await e.kube.get(ref);
  const refused = await caught(e.kube.patch(ref, addFinalizerPatch(frozen.metadata, FINALIZER), JSON_PATCH));
  tt.equal(refused.statusCode, 422);
  tt.equal(refused.status?.reason, 'Invalid');
  tt.match(
    refused.status?.message,
    /^rayclusters\.ray\.io "plain" is forbidden: ValidatingAdmissionPolicy 'frozen-finalizers-[^']+' with binding '[^']+' denied request: finalizers are frozen here/,
  );
  tt.notOk(isPatchTestFailed(refused), 'an admission refusal is not a failed test op');
  tt.ok(isInvalid(refused));
});

// Both directions: adding to a new cluster (gate on), releasing from a deleted one (gate off: no
// cleanup, the finalizer goes at once; the old code retried that refusal every 200 ms for ever).
const refusedRows = [
  {
    change: 'add',
    gate: 'true',
    finalizers: undefined,
    deleteIt: false,
    after: (c: RayCluster | undefined) => c?.metadata.finalizers?.includes(FINALIZER) === true,
  },
  { change: 'remove', gate: 'false', finalizers: [FINALIZER], deleteIt: true, after: (c: RayCluster | undefined) => c === undefined },
] as const;

for (const row of refusedRows) {
  t.test(
    `a refused finalizer patch (${row.change}): Warning with the API message (no secret), metric, exponential backoff; allowed again, it goes through`,
    async (tt) => {
      const e = await env(tt);
      await freezeFinalizers(tt, e);
      const metrics = createMetricsRegistry();
      // The product's default retry (0.5 s doubling): a 200 ms spin would refuse ~18 times in 3.5 s.
      // Only the RayCluster cleanup module: its cache keeps no headGroupSpec, the API quotes the stored object.
      const log = capturingLogger();
      const controller = await startController({
        kubeConfig: e.ns.kubeConfig,
        watchNamespace: e.ns.name,
        workers: 2,
        modules: [gcsFtCleanupModule],
        env: { ENABLE_GCS_FT_REDIS_CLEANUP: row.gate },
        logger: log.logger,
        metrics,
        moduleFlags: { 'cleanup-image': 'raykeeper:test' },
      });
      tt.teardown(() => controller.stop());
      const body = gcsFtCluster('frozen', { [FROZEN_LABEL]: 'yes' });
      if (row.finalizers) body.metadata.finalizers = [...row.finalizers];
      await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, body);
      if (row.deleteIt) await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'frozen' });

      // Times of the refusals, read from the metric as they happen.
      const seen: number[] = [];
      await until(
        async () => {
          const n = await patchCount(metrics, 'RayCluster', 'rejected', row.change);
          while (seen.length < n) seen.push(Date.now());
          return n >= 4;
        },
        'four refused attempts',
        60_000,
        20,
      );
      const gaps = seen.slice(1).map((at, i) => at - seen[i]!);
      tt.comment(`${row.change}: gaps between refused attempts: ${gaps.join(', ')} ms`);
      tt.ok(seen[3]! - seen[0]! >= 2_500, `4 attempts took ${seen[3]! - seen[0]!} ms (backoff 0.5 + 1 + 2 s, jitter 20%), not 3 x 200 ms`);
      tt.ok(gaps[2]! > gaps[0]!, 'the gaps grow');
      tt.equal(await patchCount(metrics, 'RayCluster', 'conflict'), 0, 'never taken for a failed test op');

      const warning = await until(
        async () => (await events(e, EVENT_FINALIZER_PATCH_REJECTED)).find((ev) => ev.involvedObject.name === 'frozen'),
        'the Warning event',
      );
      tt.equal(warning.type, 'Warning');
      tt.equal(warning.involvedObject.kind, 'RayCluster');
      tt.match(
        warning.message,
        new RegExp(
          `^Cannot ${row.change} finalizer ray\\.io/gcs-ft-redis-cleanup-finalizer: the API server refused the change \\(422 Invalid\\): `,
        ),
      );
      tt.match(
        warning.message,
        /ValidatingAdmissionPolicy 'frozen-finalizers-[^']+' .*denied request: finalizers are frozen here \(redis-password \*\*\*, env \*\*\*\)/,
        "the API's message",
      );
      tt.notOk(warning.message.includes(SECRET), 'the inline password the policy quoted is masked');
      tt.notOk(warning.message.includes(ENV_SECRET), "the head env's inline password the policy quoted is masked");
      const lines = log.lines().map((l) => JSON.stringify(l));
      tt.ok(
        lines.some((l) => l.includes(`event ${EVENT_FINALIZER_PATCH_REJECTED}`) && l.includes('env ***')),
        'the event is logged, masked',
      );
      tt.ok(
        lines.some((l) => l.includes('reconcile failed') && l.includes('env ***')),
        'the failed reconcile is logged, masked',
      );
      tt.same(
        lines.filter((l) => l.includes(SECRET) || l.includes(ENV_SECRET)),
        [],
        'no log line carries either password',
      );
      tt.notOk(row.after(await getCluster(e, 'frozen')), 'nothing changed while refused');

      await e.kube.patch(
        { ...RAYCLUSTERS, namespace: e.ns.name, name: 'frozen' },
        { metadata: { labels: { [FROZEN_LABEL]: null } } },
        MERGE_PATCH,
      );
      await until(async () => row.after(await getCluster(e, 'frozen')), 'the change once the policy no longer applies', 30_000);
      // The server stores the change before the controller has read its answer (and counted it): wait for the count.
      await until(async () => (await patchCount(metrics, 'RayCluster', 'patched', row.change)) > 0, 'the patch to be counted', 30_000);
      tt.equal(await patchCount(metrics, 'RayCluster', 'patched', row.change), 1, 'counted once as patched');
    },
  );
}

t.test(
  'a removal from a copy of a cluster since replaced by another of the same name: the UID test fails, the new one keeps ours',
  async (tt) => {
    const e = await env(tt);
    const ns = e.ns.name;
    const ref = { ...RAYCLUSTERS, namespace: ns, name: 'again' };
    const body = { ...gcsFtCluster('again'), metadata: { ...gcsFtCluster('again').metadata, finalizers: [FINALIZER] } };
    const old = await e.kube.create({ ...RAYCLUSTERS, namespace: ns }, body);
    await e.kube.patch(ref, [{ op: 'replace', path: '/metadata/finalizers', value: [] }], JSON_PATCH);
    await e.kube.delete(ref);
    await until(async () => (await getCluster(e, 'again')) === undefined, 'the first cluster is gone');
    const current = await e.kube.create({ ...RAYCLUSTERS, namespace: ns }, body);
    tt.not(current.metadata.uid, old.metadata.uid);
    tt.same(current.metadata.finalizers, old.metadata.finalizers, 'the same finalizers: only the UID tells them apart');
    const err = await e.kube.patch(ref, removeFinalizerPatch(old.metadata, FINALIZER)!, JSON_PATCH).then(
      () => undefined,
      (x: unknown) => x as KubeApiError,
    );
    tt.ok(err && isPatchTestFailed(err), 'refused as a failed test op (the reconciler decides again on fresh reads)');
    tt.same((await getCluster(e, 'again'))?.metadata.finalizers, [FINALIZER], 'the new cluster keeps our finalizer');
    await e.kube.patch(ref, removeFinalizerPatch(current.metadata, FINALIZER)!, JSON_PATCH);
    tt.same((await getCluster(e, 'again'))?.metadata.finalizers ?? [], [], 'a copy of this cluster removes it');
  },
);

t.test('a failed `test` op (stale cache) is re-read and retried in the same reconcile: no event, no backoff', async (tt) => {
  const e = await env(tt);
  const metrics = createMetricsRegistry();
  const factory = new InformerFactory(e.kube, { namespace: e.ns.name });
  const recorder = new KubeEventRecorder({ kube: e.kube, component: 'raykeeper-test', instance: 'test', logger: quiet });
  const ctx: ControllerContext = {
    kubeConfig: e.ns.kubeConfig,
    kube: e.kube,
    informers: factory,
    watchNamespace: e.ns.name,
    events: recorder,
    logger: quiet,
    metrics,
    env: {},
    now: Date.now,
    creationGate: new CreationGate(),
    isLeader: () => true,
  };
  const reconciler = new GcsFtCleanupReconciler(ctx, { gateEnabled: true, job: { image: 'raykeeper:test', cpu: '100m', memory: '64Mi' } });
  tt.teardown(() => factory.stop());
  factory.start();
  await factory.waitForSync();
  await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, gcsFtCluster('stale'));
  const key = `${e.ns.name}/stale`;
  await until(() => factory.all().some((i) => i.get(key)), 'the cluster in the cache');
  // Freeze the cache, then change the finalizers behind its back: the cached copy is stale.
  await factory.stop();
  await e.kube.patch(
    { ...RAYCLUSTERS, namespace: e.ns.name, name: 'stale' },
    { metadata: { finalizers: ['example.com/other'] } },
    MERGE_PATCH,
  );

  const started = Date.now();
  const result = await reconciler.reconcile(key);
  tt.comment(`reconcile with one failed test op took ${Date.now() - started} ms`);
  tt.equal(result, undefined, 'done in one reconcile: nothing left for the queue');
  tt.same(
    (await getCluster(e, 'stale'))?.metadata.finalizers,
    ['example.com/other', FINALIZER],
    'added after the re-read, the other finalizer kept',
  );
  tt.equal(await patchCount(metrics, 'RayCluster', 'conflict'), 1, 'the stale patch failed its test op');
  tt.equal(await patchCount(metrics, 'RayCluster', 'patched'), 1);
  tt.equal(await patchCount(metrics, 'RayCluster', 'rejected'), 0);
  await recorder.flush();
  tt.same(await events(e, EVENT_FINALIZER_PATCH_REJECTED), [], 'no Warning for a conflict');
});

t.test('RayJob: a refused finalizer patch is one attempt per reconcile, a Warning, an error for the backoff', async (tt) => {
  const h = await rayJobHarness(tt);
  const e: Env = { ns: h.ns, kube: h.kube };
  await freezeFinalizers(tt, e);
  await h.create(manifest('frozen-job', {}, { labels: { [FROZEN_LABEL]: 'yes' } }));
  const before = h.kube.requestCount('PATCH', 422);
  await tt.rejects(h.reconciler.reconcile(`${h.namespace}/frozen-job`), FinalizerPatchRejectedError);
  tt.equal(h.kube.requestCount('PATCH', 422) - before, 1, 'one refused patch, not a re-read loop');
  const job = (await h.get('frozen-job')) as RayJob;
  tt.notOk(job.metadata.finalizers?.includes(RAYJOB_FINALIZER), 'no finalizer');
  tt.equal(job.status, undefined, 'no transition written past the refused action');
  const warnings = (await h.events('frozen-job')).filter((ev) => ev.reason === EVENT_FINALIZER_PATCH_REJECTED);
  tt.equal(warnings.length, 1);
  tt.equal(warnings[0]?.type, 'Warning');
  tt.match(
    warnings[0]?.message,
    /^Cannot add finalizer ray\.io\/rayjob-finalizer: the API server refused the change \(422 Invalid\): rayjobs\.ray\.io "frozen-job" is forbidden: ValidatingAdmissionPolicy/,
  );
});
