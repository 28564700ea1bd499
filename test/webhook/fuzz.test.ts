// Fuzz (property-based, seeded, bounded) against the real Fastify app: any JSON body, and review-shaped
// bodies with arbitrary JSON at every field the webhook reads, get a well-formed AdmissionReview answer,
// with the request's uid whenever the body carries one; an answer's patch applies (rfc6902); bodies full of
// prototype-polluting keys (`__proto__`, `constructor`, `prototype`) change no later answer and no
// prototype; and the process keeps serving over its real HTTPS listener afterwards.
import t from 'tap';
import fc from 'fast-check';
import { applyPatch } from 'rfc6902';
import { buildApp } from '../../webhook/app.ts';
import type { Json, JsonObject } from '../../kube/model.ts';
import { FINALIZER, FT, NS_ANNOTATION, rayCluster, rayJob } from '../admission/fixtures.ts';
import { capturingLogger, certDir, httpsCall } from './helpers.ts';

const SEED = 20261201;
const RUNS = 300;
const ROUTES = { RayCluster: '/mutate-ray-io-v1-raycluster', RayJob: '/mutate-ray-io-v1-rayjob' } as const;

const certs = await certDir(t);
const app = await buildApp({
  certFile: certs.certFile,
  keyFile: certs.keyFile,
  logger: capturingLogger().logger,
  finalizerEnabled: true,
  newStorageNamespace: () => 'fuzz-ns',
});
t.teardown(() => app.close());
await app.listen({ host: '127.0.0.1', port: 0 });
const port = (app.server.address() as { port: number }).port;

const POLLUTING = ['__proto__', 'constructor', 'prototype'] as const;
const anything: fc.Arbitrary<Json> = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>;
/** A valid value most of the time, arbitrary JSON (or absent) otherwise. */
const mostly = <T>(valid: fc.Arbitrary<T>): fc.Arbitrary<T | Json | undefined> =>
  fc.oneof({ arbitrary: valid, weight: 40 }, { arbitrary: anything, weight: 1 }, { arbitrary: fc.constant(undefined), weight: 1 });

/** Absent most of the time. */
const rarely = <T>(value: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> =>
  fc.oneof({ arbitrary: fc.constant(undefined), weight: 7 }, { arbitrary: value, weight: 1 });

function withDefined(entries: Record<string, unknown>): JsonObject {
  const o: JsonObject = {};
  for (const [k, v] of Object.entries(entries)) if (v !== undefined) o[k] = v as Json;
  return o;
}

const annotations = fc
  .record({
    ft: fc.option(mostly(fc.constantFrom('true', 'TRUE', 'false')), { nil: undefined, freq: 4 }),
    ns: fc.option(mostly(fc.constantFrom('', 'ns-1', 'a@b')), { nil: undefined, freq: 2 }),
    other: fc.option(mostly(fc.string({ maxLength: 3 })), { nil: undefined }),
  })
  .map((g) => withDefined({ [FT]: g.ft, [NS_ANNOTATION]: g.ns, 'a/b~c': g.other }));
const options = fc
  .record({
    backend: mostly(fc.constantFrom('redis', 'rocksdb', '')),
    externalStorageNamespace: mostly(fc.constantFrom('', 'theirs')),
    redisAddress: mostly(fc.constant('redis:6379')),
  })
  .map(withDefined);
const clusterObject: fc.Arbitrary<Json | undefined> = mostly(
  fc
    .record({
      annotations: mostly(annotations),
      finalizers: mostly(fc.array(fc.oneof(fc.constant(FINALIZER), fc.string({ maxLength: 4 })), { maxLength: 3 })),
      deletionTimestamp: rarely(fc.constant('2026-12-01T00:00:00Z')),
      options: fc.oneof(fc.constant(undefined), mostly(options)),
      managedBy: mostly(fc.constantFrom('ray.io/kuberay-operator', 'kueue.x-k8s.io/multikueue')),
      spec: fc.oneof({ arbitrary: fc.constant('keep'), weight: 6 }, { arbitrary: anything, weight: 1 }),
    })
    .map((g) => {
      const c = rayCluster();
      const metadata = c.metadata as JsonObject;
      if (g.annotations !== undefined) metadata.annotations = g.annotations as Json;
      if (g.finalizers !== undefined) metadata.finalizers = g.finalizers as Json;
      if (g.deletionTimestamp !== undefined) metadata.deletionTimestamp = g.deletionTimestamp;
      const spec = c.spec as JsonObject;
      if (g.options !== undefined) spec.gcsFaultToleranceOptions = g.options as Json;
      if (g.managedBy !== undefined) spec.managedBy = g.managedBy as Json;
      if (g.spec !== 'keep') c.spec = g.spec;
      return c;
    }),
);
const jobObject: fc.Arbitrary<Json | undefined> = mostly(
  fc
    .record({
      spec: mostly(fc.record({ submissionMode: mostly(fc.constant('HTTPMode')), entrypoint: fc.constant('x') }).map(withDefined)),
      status: mostly(fc.record({ jobDeploymentStatus: mostly(fc.constantFrom('', 'Running')) }).map(withDefined)),
    })
    .map((g) => rayJob(g.spec as JsonObject | undefined, g.status as JsonObject | undefined)),
);

const reviewBody = (target: 'RayCluster' | 'RayJob') =>
  fc
    .record({
      apiVersion: mostly(fc.constantFrom('admission.k8s.io/v1', 'admission.k8s.io/v1beta1')),
      kind: mostly(fc.constant('AdmissionReview')),
      uid: mostly(fc.uuid()),
      gvk: mostly(
        fc.record({
          group: fc.constant('ray.io'),
          version: fc.constant('v1'),
          kind: fc.constantFrom(target, target, target, target, 'Pod'),
        }),
      ),
      operation: mostly(fc.constantFrom('CREATE', 'CREATE', 'CREATE', 'UPDATE', 'UPDATE', 'DELETE', 'CONNECT')),
      subResource: rarely(fc.constantFrom('status', 'scale')),
      object: target === 'RayCluster' ? clusterObject : jobObject,
      oldObject: target === 'RayCluster' ? clusterObject : jobObject,
      dryRun: mostly(fc.boolean()),
      request: fc.oneof({ arbitrary: fc.constant('keep'), weight: 12 }, { arbitrary: anything, weight: 1 }),
    })
    .map((g) => {
      const request = withDefined({
        uid: g.uid,
        kind: g.gvk,
        operation: g.operation,
        subResource: g.subResource,
        object: g.object,
        oldObject: g.oldObject,
        dryRun: g.dryRun,
      });
      return withDefined({ apiVersion: g.apiVersion, kind: g.kind, request: g.request === 'keep' ? request : g.request });
    });

type Route = keyof typeof ROUTES;
/** A body and the route it goes to: mostly a review on its own route, sometimes on the other, or any JSON. */
const anyPost: fc.Arbitrary<[Json, Route]> = fc.oneof(
  { arbitrary: fc.tuple(anything, fc.constantFrom<Route>('RayCluster', 'RayJob')), weight: 1 },
  { arbitrary: fc.tuple(reviewBody('RayCluster'), fc.constant<Route>('RayCluster')), weight: 4 },
  { arbitrary: fc.tuple(reviewBody('RayJob'), fc.constant<Route>('RayJob')), weight: 2 },
  { arbitrary: fc.tuple(reviewBody('RayCluster'), fc.constant<Route>('RayJob')), weight: 1 },
);

/** The uid the answer must carry: the request's, when it is a non-empty string. */
function expectedUid(body: Json): string | undefined {
  const request = typeof body === 'object' && body !== null && !Array.isArray(body) ? body.request : undefined;
  const uid = typeof request === 'object' && request !== null && !Array.isArray(request) ? request.uid : undefined;
  return typeof uid === 'string' && uid !== '' ? uid : undefined;
}

async function answer(path: string, payload: string): Promise<{ status: number; review: JsonObject }> {
  const res = await app.inject({ method: 'POST', url: path, headers: { 'content-type': 'application/json' }, payload });
  return { status: res.statusCode, review: res.json() as JsonObject };
}

/** Throws unless `res` is a well-formed answer to `body`. */
function checkAnswer(body: Json, status: number, review: JsonObject): void {
  if (review.kind !== 'AdmissionReview') throw new Error(`not an AdmissionReview: ${JSON.stringify(review)}`);
  if (review.apiVersion !== 'admission.k8s.io/v1' && review.apiVersion !== 'admission.k8s.io/v1beta1')
    throw new Error(`apiVersion ${String(review.apiVersion)}`);
  const response = review.response as JsonObject;
  if (typeof response?.uid !== 'string' || typeof response.allowed !== 'boolean')
    throw new Error(`malformed response ${JSON.stringify(response)}`);
  const uid = expectedUid(body);
  if (uid !== undefined && response.uid !== uid && status !== 413) throw new Error(`uid ${response.uid} instead of ${uid}`);
  if (status >= 500) throw new Error(`HTTP ${status}: ${JSON.stringify(response)}`);
  if (response.allowed) {
    if (status !== 200) throw new Error(`allowed with HTTP ${status}`);
    if (response.patch !== undefined) {
      if (response.patchType !== 'JSONPatch') throw new Error('patch without patchType');
      const ops = JSON.parse(Buffer.from(response.patch as string, 'base64').toString('utf8'));
      const object = structuredClone((body as { request: { object: JsonObject } }).request.object);
      const errors = applyPatch(object, ops).filter((e) => e !== null);
      if (errors.length > 0) throw new Error(`patch does not apply: ${errors.join('; ')}`);
    }
  } else {
    const s = response.status as JsonObject | undefined;
    if (s?.code !== status || typeof s.message !== 'string' || s.message === '')
      throw new Error(`refusal without a matching status: HTTP ${status} ${JSON.stringify(s)}`);
  }
}

t.test('any JSON body, on either route, gets a well-formed AdmissionReview answer (with the uid when there is one)', async (t) => {
  const statuses = new Map<number, number>();
  let patched = 0;
  await fc.assert(
    fc.asyncProperty(anyPost, async ([body, route]) => {
      const { status, review } = await answer(ROUTES[route], JSON.stringify(body));
      checkAnswer(body, status, review);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      if ((review.response as JsonObject).patch !== undefined) patched++;
    }),
    { seed: SEED, numRuns: RUNS },
  );
  t.ok((statuses.get(200) ?? 0) > RUNS / 10, `answered 200: ${statuses.get(200)}`);
  t.ok((statuses.get(400) ?? 0) > RUNS / 10, `refused 400: ${statuses.get(400)}`);
  t.ok(patched > RUNS / 20, `patched: ${patched}`);
});

/** Inserts each polluting key, with a value that would matter if it reached a prototype, into every object of the JSON text. */
function pollute(value: Json, key: (typeof POLLUTING)[number], payload: Json): Json {
  if (Array.isArray(value)) return value.map((v) => pollute(v, key, payload));
  if (typeof value !== 'object' || value === null) return value;
  const copy: JsonObject = {};
  for (const [k, v] of Object.entries(value)) copy[k] = pollute(v, key, payload);
  Object.defineProperty(copy, key, { value: payload, enumerable: true, writable: true, configurable: true });
  return copy;
}

const pollution: Json = {
  [FT]: 'true',
  backend: 'rocksdb',
  finalizers: ['evil'],
  annotations: { [NS_ANNOTATION]: 'evil' },
  managedBy: 'evil',
  externalStorageNamespace: 'evil',
  jobDeploymentStatus: 'Complete',
  submissionMode: 'evil',
  allowed: false,
  uid: 'evil',
  polluted: 'yes',
};

t.test('prototype-polluting keys change no later answer and no prototype', async (t) => {
  const prototypes = [Object.prototype, Array.prototype, Function.prototype, String.prototype];
  const before = prototypes.map((p) => Object.getOwnPropertyNames(p).sort().join(','));
  await fc.assert(
    fc.asyncProperty(anyPost, fc.constantFrom(...POLLUTING), async ([body, route], key) => {
      const clean = JSON.stringify(body);
      const first = await answer(ROUTES[route], clean);
      const polluted = pollute(body, key, pollution);
      const dirty = await answer(ROUTES[route], JSON.stringify(polluted));
      checkAnswer(polluted, dirty.status, dirty.review);
      const again = await answer(ROUTES[route], clean);
      if (JSON.stringify(again) !== JSON.stringify(first))
        throw new Error(`the answer changed after ${key}: ${JSON.stringify(first)} -> ${JSON.stringify(again)}`);
      if (({} as Record<string, unknown>).polluted !== undefined || ([] as unknown as Record<string, unknown>).polluted !== undefined)
        throw new Error('a prototype was polluted');
    }),
    { seed: SEED + 1, numRuns: RUNS / 2 },
  );
  t.same(
    prototypes.map((p) => Object.getOwnPropertyNames(p).sort().join(',')),
    before,
    'no prototype gained a property',
  );
});

t.test('after the fuzzing the process still serves over HTTPS', async (t) => {
  const health = await httpsCall(port, '/healthz', { ca: certs.bundle.caCert });
  t.equal(health.status, 200);
  const res = await httpsCall(port, ROUTES.RayCluster, {
    ca: certs.bundle.caCert,
    body: JSON.stringify({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'u',
        kind: { group: 'ray.io', version: 'v1', kind: 'RayCluster' },
        operation: 'CREATE',
        object: rayCluster({ annotations: { [FT]: 'true' } }),
      },
    }),
  });
  t.equal(res.status, 200);
  t.equal(JSON.parse(res.body).response.uid, 'u');
});
