// The validating decision as a table (validate(): allowed, denied with its message, warned), the UPDATE
// rules that protect data, and the route through app.inject: uid on every answer, 403 refusals, warnings,
// metrics.
import t from 'tap';
import fc from 'fast-check';
import { validate } from '../../src/admission/validate.ts';
import { MAX_WARNING_LENGTH, MAX_WARNINGS, boundWarnings, companionWarningOptions } from '../../src/admission/warnings.ts';
import { buildApp } from '../../webhook/app.ts';
import type { JsonObject } from '../../kube/model.ts';
import { FINALIZER, FT, NS_ANNOTATION, rayCluster, rayJob, review } from './fixtures.ts';
import { capturingLogger, certDir } from '../webhook/helpers.ts';

const UID = 'e911857d-c318-11e8-bbad-025000000001';

function withSpec(obj: JsonObject, edit: (spec: JsonObject) => void): JsonObject {
  const copy = structuredClone(obj);
  edit(copy.spec as JsonObject);
  return copy;
}

function worker(spec: JsonObject): JsonObject {
  return (spec.workerGroupSpecs as JsonObject[])[0] as JsonObject;
}

const ftCluster = rayCluster({
  options: { redisAddress: 'redis:6379', externalStorageNamespace: 'pinned-1' },
  finalizers: [FINALIZER],
  uid: 'u-1',
});
const annotationCluster = rayCluster({
  annotations: { [FT]: 'true', [NS_ANNOTATION]: 'pinned-2' },
  headEnv: [{ name: 'RAY_REDIS_ADDRESS', value: 'redis:6379' }],
  finalizers: [FINALIZER],
  uid: 'u-2',
});
const deadlineJob = rayJob({
  entrypoint: 'python x.py',
  activeDeadlineSeconds: 60,
  deletionStrategy: { deletionRules: [{ policy: 'DeleteCluster', condition: { jobStatus: 'SUCCEEDED' } }] },
  rayClusterSpec: rayCluster().spec as JsonObject,
});

const cronJob = (schedule: string, extra: JsonObject = {}): JsonObject => ({
  apiVersion: 'ray.io/v1',
  kind: 'RayCronJob',
  metadata: { name: 'nightly', namespace: 'ray' },
  spec: {
    schedule,
    jobTemplate: { entrypoint: 'python x.py', rayClusterSpec: rayCluster().spec as JsonObject },
    ...extra,
  },
});

type Row = [
  name: string,
  kind: 'RayCluster' | 'RayJob' | 'RayCronJob',
  op: string,
  object: JsonObject,
  old: JsonObject | undefined,
  result: string,
  match?: RegExp,
];

const rows: Row[] = [
  ['valid RayCronJob', 'RayCronJob', 'CREATE', cronJob('*/5 * * * *'), undefined, 'allowed'],
  [
    'RayCronJob: a schedule KubeRay refuses (seconds field)',
    'RayCronJob',
    'CREATE',
    cronJob('0 */5 * * * *'),
    undefined,
    'denied',
    /exactly 5 fields, found 6/,
  ],
  [
    'RayCronJob: an unknown time zone',
    'RayCronJob',
    'CREATE',
    cronJob('@hourly', { timeZone: 'Mars/Olympus' }),
    undefined,
    'denied',
    /Mars\/Olympus/,
  ],
  [
    'RayCronJob: @every under a minute runs once a minute (names are by the minute): warned',
    'RayCronJob',
    'CREATE',
    cronJob('@every 30s'),
    undefined,
    'warned',
    /ticks in the same minute share a name/,
  ],
  ['RayCronJob: @every a minute or more: no warning', 'RayCronJob', 'CREATE', cronJob('@every 90s'), undefined, 'allowed'],
  [
    'RayCronJob: its template is checked as the RayJob it becomes (#5184 warning)',
    'RayCronJob',
    'CREATE',
    cronJob('@daily', { jobTemplate: deadlineJob.spec as JsonObject }),
    undefined,
    'warned',
    /5184|jobDeploymentStatus/,
  ],
  ['valid cluster', 'RayCluster', 'CREATE', rayCluster(), undefined, 'allowed'],
  [
    'negative minReplicas',
    'RayCluster',
    'CREATE',
    withSpec(rayCluster(), (s) => (worker(s).minReplicas = -1)),
    undefined,
    'denied',
    /^The RayCluster spec is invalid: worker group small has negative minReplicas -1$/,
  ],
  [
    'bad name',
    'RayCluster',
    'CREATE',
    { ...rayCluster(), metadata: { name: 'Demo', namespace: 'ray' } },
    undefined,
    'denied',
    /metadata is invalid: RayCluster name should be a valid DNS1035 label/,
  ],
  // spec.managedBy is the CRD's (KubeRay's CEL rules, 422 before this webhook): test/admission/managed-by-crd.test.ts.
  [
    'unknown managedBy: the CRD refuses it, not this webhook',
    'RayCluster',
    'CREATE',
    rayCluster({ managedBy: 'someone/else' }),
    undefined,
    'allowed',
  ],
  [
    'two worker groups of one name (the rule of KubeRay webhook)',
    'RayCluster',
    'CREATE',
    withSpec(rayCluster(), (s) => (s.workerGroupSpecs as JsonObject[]).push(structuredClone(worker(s)))),
    undefined,
    'denied',
    /^spec.workerGroupSpecs\[1\]: Invalid value: "small": worker group names must be unique$/,
  ],
  [
    'autoscalerOptions without enableInTreeAutoscaling',
    'RayCluster',
    'CREATE',
    withSpec(rayCluster(), (s) => (s.autoscalerOptions = { version: 'v1' })),
    undefined,
    'warned',
    /spec.autoscalerOptions is set but spec.enableInTreeAutoscaling is not true/,
  ],
  [
    'a field standalone raykeeper does not act on',
    'RayCluster',
    'CREATE',
    withSpec(rayCluster(), (s) => ((s.headGroupSpec as JsonObject).enableIngress = true)),
    undefined,
    'warned',
    /does not act on spec.headGroupSpec.enableIngress/,
  ],
  ['job without a cluster', 'RayJob', 'CREATE', rayJob(), undefined, 'denied', /one of RayClusterSpec or ClusterSelector must be set/],
  [
    'valid job with a cluster',
    'RayJob',
    'CREATE',
    rayJob({ entrypoint: 'x', rayClusterSpec: rayCluster().spec as JsonObject }),
    undefined,
    'allowed',
  ],
  [
    'job: negative backoffLimit',
    'RayJob',
    'CREATE',
    rayJob({ ...(deadlineJob.spec as JsonObject), backoffLimit: -1 }),
    undefined,
    'denied',
    /backoffLimit/,
  ],
  ['job: deadline with jobStatus-only deletion rules (#5184)', 'RayJob', 'CREATE', deadlineJob, undefined, 'warned', /KubeRay #5184/],
  [
    'job: a jobDeploymentStatus rule as well: no warning',
    'RayJob',
    'CREATE',
    withSpec(deadlineJob, (s) => {
      const rules = (s.deletionStrategy as JsonObject).deletionRules as JsonObject[];
      rules.push({ policy: 'DeleteCluster', condition: { jobDeploymentStatus: 'Failed' } });
    }),
    undefined,
    'allowed',
  ],
  // UPDATE: data rules.
  [
    'storage namespace changed',
    'RayCluster',
    'UPDATE',
    withSpec(ftCluster, (s) => ((s.gcsFaultToleranceOptions as JsonObject).externalStorageNamespace = 'other')),
    ftCluster,
    'denied',
    /spec.gcsFaultToleranceOptions.externalStorageNamespace: cannot change the storage namespace .* from "pinned-1" to "other": .*delete the RayCluster/,
  ],
  [
    'annotation namespace changed',
    'RayCluster',
    'UPDATE',
    {
      ...annotationCluster,
      metadata: { ...(annotationCluster.metadata as JsonObject), annotations: { [FT]: 'true', [NS_ANNOTATION]: 'x' } },
    },
    annotationCluster,
    'denied',
    /metadata.annotations\[ray.io\/external-storage-namespace\]: cannot change/,
  ],
  [
    'annotation namespace removed (the mutating webhook did not restore it)',
    'RayCluster',
    'UPDATE',
    { ...annotationCluster, metadata: { ...(annotationCluster.metadata as JsonObject), annotations: { [FT]: 'true' } } },
    annotationCluster,
    'denied',
    /from "pinned-2" to "u-2"/,
  ],
  [
    'redisAddress changed',
    'RayCluster',
    'UPDATE',
    withSpec(ftCluster, (s) => ((s.gcsFaultToleranceOptions as JsonObject).redisAddress = 'other:6379')),
    ftCluster,
    'denied',
    /redisAddress: cannot change the Redis address/,
  ],
  [
    'redisAddress with credentials changed: the message shows them redacted',
    'RayCluster',
    'UPDATE',
    withSpec(ftCluster, (s) => ((s.gcsFaultToleranceOptions as JsonObject).redisAddress = 'redis://admin:s3cret-2@other:6379')),
    withSpec(ftCluster, (s) => ((s.gcsFaultToleranceOptions as JsonObject).redisAddress = 'redis://admin:s3cret-1@redis:6379')),
    'denied',
    /from "redis:\/\/\*\*\*@redis:6379" to "redis:\/\/\*\*\*@other:6379"/,
  ],
  [
    "the head container's own storage namespace env changed (it wins over the options: KubeRay keeps it)",
    'RayCluster',
    'UPDATE',
    withSpec(ftCluster, (s) => {
      const head = ((s.headGroupSpec as JsonObject).template as JsonObject).spec as JsonObject;
      (head.containers as JsonObject[])[0]!.env = [{ name: 'RAY_external_storage_namespace', value: 'moved' }];
    }),
    ftCluster,
    'denied',
    /containers\[0\]\.env\[RAY_external_storage_namespace\]|from "pinned-1" to "moved"/,
  ],
  [
    'backend changed to rocksdb',
    'RayCluster',
    'UPDATE',
    withSpec(ftCluster, (s) => ((s.gcsFaultToleranceOptions as JsonObject).backend = 'rocksdb')),
    ftCluster,
    'denied',
    /backend: cannot change the GCS storage backend .* from redis to rocksdb/,
  ],
  [
    'managedBy set on an existing cluster: KubeRay accepts it (its CEL transition rule is not evaluated then)',
    'RayCluster',
    'UPDATE',
    withSpec(rayCluster(), (s) => (s.managedBy = 'kueue.x-k8s.io/multikueue')),
    rayCluster(),
    'allowed',
  ],
  [
    'managedBy set on an existing RayJob: accepted, as KubeRay',
    'RayJob',
    'UPDATE',
    rayJob({ entrypoint: 'python x.py', managedBy: 'kueue.x-k8s.io/multikueue', rayClusterSpec: rayCluster().spec as JsonObject }),
    rayJob({ entrypoint: 'python x.py', rayClusterSpec: rayCluster().spec as JsonObject }),
    'allowed',
  ],
  [
    'finalizer removed from a GCS-FT cluster',
    'RayCluster',
    'UPDATE',
    { ...ftCluster, metadata: { ...(ftCluster.metadata as JsonObject), finalizers: [] } },
    ftCluster,
    'allowed',
  ],
  [
    'label edit of an invalid cluster admitted while the webhook was down',
    'RayCluster',
    'UPDATE',
    withSpec({ ...rayCluster(), metadata: { name: 'demo', labels: { team: 'a' } } }, (s) => (worker(s).minReplicas = -1)),
    withSpec(rayCluster(), (s) => (worker(s).minReplicas = -1)),
    'allowed',
  ],
  [
    'spec edit of an invalid cluster is checked',
    'RayCluster',
    'UPDATE',
    withSpec(rayCluster(), (s) => Object.assign(worker(s), { minReplicas: -1, replicas: 3 })),
    withSpec(rayCluster(), (s) => (worker(s).minReplicas = -1)),
    'denied',
    /negative minReplicas/,
  ],
  [
    'a deleting cluster is never blocked',
    'RayCluster',
    'UPDATE',
    {
      ...withSpec(ftCluster, (s) => ((s.gcsFaultToleranceOptions as JsonObject).externalStorageNamespace = 'x')),
      metadata: { ...(ftCluster.metadata as JsonObject), deletionTimestamp: '2026-12-04T00:00:00Z', finalizers: [] },
    },
    ftCluster,
    'allowed',
  ],
];

t.test('decisions', async (t) => {
  for (const [name, kind, op, object, old, result, match] of rows) {
    const outcome = validate(review(kind, op, object, old), kind);
    t.notMatch(JSON.stringify(outcome.answer), /s3cret/, `${name}: no password in the answer`);
    t.equal(outcome.result, result, `${name}: result`);
    t.equal(outcome.answer.response.uid, UID, `${name}: uid`);
    t.equal(outcome.answer.response.allowed, result !== 'denied', `${name}: allowed`);
    if (result === 'denied') {
      t.equal(outcome.answer.response.status?.code, 403, `${name}: 403`);
      if (match) t.match(outcome.answer.response.status?.message ?? '', match, `${name}: message`);
    }
    if (result === 'warned' && match) t.match((outcome.answer.response.warnings ?? []).join('\n'), match, `${name}: warning`);
    if (result === 'allowed') t.equal(outcome.answer.response.warnings, undefined, `${name}: no warnings`);
  }
});

t.test('status subresource, DELETE, wrong kind, bad review', async (t) => {
  const bad = withSpec(rayCluster(), (s) => (worker(s).minReplicas = -1));
  t.equal(validate(review('RayCluster', 'UPDATE', bad, bad, { subResource: 'status' }), 'RayCluster').result, 'allowed');
  t.equal(validate(review('RayCluster', 'DELETE', undefined, bad), 'RayCluster').result, 'allowed');
  const wrong = validate(review('RayJob', 'CREATE', rayJob()), 'RayCluster');
  t.equal(wrong.httpStatus, 400);
  t.equal(wrong.answer.response.uid, UID);
  t.equal(wrong.reason, 'invalid_review');
  const garbage = validate({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid: 'x' } }, 'RayCluster');
  t.equal(garbage.answer.response.allowed, false);
  t.equal(garbage.answer.response.uid, 'x');
  const shape = validate(review('RayCluster', 'CREATE', { ...rayCluster(), spec: 'nope' }), 'RayCluster');
  t.equal(shape.httpStatus, 400);
  t.equal(shape.answer.response.uid, UID);
});

t.test('warnings are bounded in count and length', async (t) => {
  const many = Array.from({ length: 20 }, (_, i) => `w${i} ${'x'.repeat(400)}\u0007`);
  const out = boundWarnings(many);
  t.equal(out.length, MAX_WARNINGS);
  t.ok(out.every((w) => w.length <= MAX_WARNING_LENGTH && /^[\x20-\x7e]*$/.test(w)));
  t.match(out[MAX_WARNINGS - 1], /and 13 more warnings/);
});

t.test('the route: 403 with the message and the uid, warnings, metrics', async (t) => {
  const certs = await certDir(t);
  const log = capturingLogger();
  const app = await buildApp({ certFile: certs.certFile, keyFile: certs.keyFile, logger: log.logger, finalizerEnabled: true });
  t.teardown(() => app.close());
  const post = (url: string, payload: unknown) =>
    app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(payload) });

  const bad = withSpec(rayCluster(), (s) => (worker(s).minReplicas = -1));
  const deniedReply = await post('/validate-ray-io-v1-raycluster', review('RayCluster', 'CREATE', bad));
  t.equal(deniedReply.statusCode, 200);
  const denied = deniedReply.json();
  t.same(denied.response, {
    uid: UID,
    allowed: false,
    status: { code: 403, message: 'The RayCluster spec is invalid: worker group small has negative minReplicas -1' },
  });
  const warned = (await post('/validate-ray-io-v1-rayjob', review('RayJob', 'CREATE', deadlineJob))).json();
  t.equal(warned.response.allowed, true);
  t.match(warned.response.warnings[0], /KubeRay #5184/);
  const broken = await post('/validate-ray-io-v1-rayjob', {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: { uid: 'u9' },
  });
  t.equal(broken.statusCode, 400);
  t.equal(broken.json().response.uid, 'u9');
  // The mutating route answers as before (no validation there).
  const mutated = (await post('/mutate-ray-io-v1-raycluster', review('RayCluster', 'CREATE', bad))).json();
  t.equal(mutated.response.allowed, true);

  const metrics = await app.metricsRegistry.metrics();
  t.match(
    metrics,
    /raykeeper_webhook_validations_total\{resource="raycluster",operation="CREATE",result="denied",reason="invalid_spec"\} 1/,
  );
  t.match(metrics, /raykeeper_webhook_validations_total\{resource="rayjob",operation="CREATE",result="warned",reason="none"\} 1/);
  t.match(
    metrics,
    /raykeeper_webhook_validations_total\{resource="rayjob",operation="invalid",result="denied",reason="invalid_review"\} 1/,
  );
});

t.test('beside KubeRay (--companion on): no warning about what our own operator does not do; the others stay', async (t) => {
  const ingress = withSpec(rayCluster(), (s) => ((s.headGroupSpec as JsonObject).enableIngress = true));
  const options = companionWarningOptions('on');
  t.same(options, { companion: true });
  t.same(companionWarningOptions(undefined), { companion: false }, 'absent: off');
  t.throws(() => companionWarningOptions('auto'), /--companion must be on or off, got "auto"/);
  t.equal(validate(review('RayCluster', 'CREATE', ingress), 'RayCluster').result, 'warned', 'standalone: warned');
  t.equal(validate(review('RayCluster', 'CREATE', ingress), 'RayCluster', options).result, 'allowed', 'companion: allowed, no warning');
  const job = withSpec(deadlineJob, (s) => ((s.rayClusterSpec as JsonObject).enableInTreeAutoscaling = true));
  const warned = validate(review('RayJob', 'CREATE', job), 'RayJob', options);
  t.same(
    warned.answer.response.warnings?.map((w) => (/KubeRay #5184/.test(w) ? '#5184' : w)),
    ['#5184'],
    'companion: the #5184 warning stays (KubeRay leaks the cluster too); the operator note goes',
  );

  const certs = await certDir(t);
  const app = await buildApp({ certFile: certs.certFile, keyFile: certs.keyFile, logger: capturingLogger().logger, companion: true });
  t.teardown(() => app.close());
  const reply = await app.inject({
    method: 'POST',
    url: '/validate-ray-io-v1-raycluster',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify(review('RayCluster', 'CREATE', ingress)),
  });
  t.same(reply.json().response, { uid: UID, allowed: true }, 'the app with companion: true answers without warnings');
});

t.test(
  "embedded GCS storage (backend rocksdb): admitted standalone and beside KubeRay; KubeRay v1.7's rules refuse with its messages",
  async (t) => {
    const rocks = { backend: 'rocksdb', storage: { size: '1Gi', deletionPolicy: 'DeleteWithCluster' } };
    const withOptions = (options: JsonObject) => ({
      RayCluster: withSpec(rayCluster(), (s) => (s.gcsFaultToleranceOptions = options)),
      RayJob: withSpec(deadlineJob, (s) => ((s.rayClusterSpec as JsonObject).gcsFaultToleranceOptions = options)),
      RayCronJob: withSpec(
        cronJob('@hourly'),
        (s) => (((s.jobTemplate as JsonObject).rayClusterSpec as JsonObject).gcsFaultToleranceOptions = options),
      ),
    });
    const kinds = ['RayCluster', 'RayJob', 'RayCronJob'] as const;
    for (const kind of kinds) {
      const obj = withOptions(rocks)[kind];
      t.not(validate(review(kind, 'CREATE', obj), kind).result, 'denied', `${kind}: admitted (raykeeper builds it)`);
      t.not(validate(review(kind, 'CREATE', obj), kind, companionWarningOptions('on')).result, 'denied', `${kind}, companion: admitted`);
      const bad = withOptions({ ...rocks, redisAddress: 'redis:6379' })[kind];
      const out = validate(review(kind, 'CREATE', bad), kind);
      t.equal(out.result, 'denied', `${kind} with redisAddress: denied`);
      t.equal(out.reason, 'invalid_spec', `${kind}: metrics reason`);
      t.equal(out.answer.response.status?.code, 403);
      t.match(
        out.answer.response.status?.message,
        /cannot set GcsFaultToleranceOptions\.RedisAddress when backend is 'rocksdb'$/,
        `${kind}: message`,
      );
    }
    const claimAndSize = withOptions({ backend: 'rocksdb', storage: { claimName: 'mine', size: '1Gi' } }).RayCluster;
    t.equal(
      validate(review('RayCluster', 'CREATE', claimAndSize), 'RayCluster').answer.response.status?.message,
      'The RayCluster spec is invalid: GcsFaultToleranceOptions.Storage.ClaimName is mutually exclusive with size, storageClassName, and accessModes',
    );
    const redisWithStorage = withOptions({ redisAddress: 'redis:6379', storage: { size: '1Gi' } }).RayCluster;
    t.equal(
      validate(review('RayCluster', 'CREATE', redisWithStorage), 'RayCluster').answer.response.status?.message,
      "The RayCluster spec is invalid: cannot set GcsFaultToleranceOptions.Storage when backend is 'redis' - it only applies to the 'rocksdb' backend",
    );
    t.equal(validate(review('RayCluster', 'CREATE', ftCluster), 'RayCluster').result, 'allowed', 'backend redis (default): allowed');
    const explicit = withSpec(ftCluster, (s) => ((s.gcsFaultToleranceOptions as JsonObject).backend = 'redis'));
    t.equal(validate(review('RayCluster', 'CREATE', explicit), 'RayCluster').result, 'allowed', 'backend redis: allowed');
  },
);

t.test('fuzz: arbitrary JSON at every field the rules read never makes an internal error, and the uid is kept', async (t) => {
  const anything = fc.jsonValue({ maxDepth: 3 });
  const maybe = (arb: fc.Arbitrary<unknown>) => fc.option(arb, { nil: undefined });
  const group = fc.record(
    {
      groupName: maybe(anything),
      minReplicas: maybe(anything),
      maxReplicas: maybe(anything),
      idleTimeoutSeconds: maybe(anything),
      suspend: maybe(anything),
      rayStartParams: maybe(anything),
      resources: maybe(anything),
      labels: maybe(anything),
      template: maybe(
        fc.oneof(anything, fc.constant({ spec: { containers: [{ name: 'c', env: [{ name: 'RAY_REDIS_ADDRESS', value: 'x' }] }] } })),
      ),
    },
    { requiredKeys: [] },
  );
  const clusterSpec = fc.record(
    {
      headGroupSpec: maybe(fc.oneof(anything, group)),
      workerGroupSpecs: maybe(fc.oneof(anything, fc.array(fc.oneof(group, anything), { maxLength: 3 }))),
      gcsFaultToleranceOptions: maybe(anything),
      enableInTreeAutoscaling: maybe(anything),
      autoscalerOptions: maybe(anything),
      authOptions: maybe(anything),
      rayVersion: maybe(anything),
      upgradeStrategy: maybe(anything),
      managedBy: maybe(anything),
    },
    { requiredKeys: [] },
  );
  const metadata = fc.record(
    {
      name: maybe(fc.oneof(fc.constant('demo'), anything)),
      annotations: maybe(anything),
      labels: maybe(anything),
      deletionTimestamp: maybe(anything),
    },
    { requiredKeys: [] },
  );
  const jobSpec = fc.record(
    {
      entrypoint: maybe(anything),
      rayClusterSpec: maybe(fc.oneof(clusterSpec, anything)),
      clusterSelector: maybe(anything),
      submissionMode: maybe(anything),
      deletionStrategy: maybe(anything),
      activeDeadlineSeconds: maybe(anything),
      backoffLimit: maybe(anything),
      suspend: maybe(anything),
      shutdownAfterJobFinishes: maybe(anything),
      runtimeEnvYAML: maybe(anything),
      submitterPodTemplate: maybe(anything),
      submitterConfig: maybe(anything),
      managedBy: maybe(anything),
    },
    { requiredKeys: [] },
  );
  const strip = (v: unknown): JsonObject => JSON.parse(JSON.stringify(v)) as JsonObject;
  const object = (kind: 'RayCluster' | 'RayJob') =>
    fc
      .tuple(metadata, kind === 'RayCluster' ? clusterSpec : jobSpec)
      .map(([m, spec]) => strip({ apiVersion: 'ray.io/v1', kind, metadata: m, spec }));
  let checked = 0;
  for (const kind of ['RayCluster', 'RayJob'] as const) {
    fc.assert(
      fc.property(object(kind), fc.option(object(kind), { nil: undefined }), (obj, old) => {
        const outcome = validate(review(kind, old === undefined ? 'CREATE' : 'UPDATE', obj, old), kind);
        checked++;
        return outcome.httpStatus !== 500 && outcome.answer.response.uid === UID;
      }),
      { seed: 20261204, numRuns: 400 },
    );
  }
  t.equal(checked, 800, 'every generated review answered without an internal error');
});
