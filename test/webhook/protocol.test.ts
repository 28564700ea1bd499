// The HTTP protocol through app.inject (the TLS paths are in https.test.ts): answers, every bad input,
// health, readiness and metrics.
import t from 'tap';
import { applyPatch } from 'rfc6902';
import { buildApp, DEFAULT_BODY_LIMIT, type WebhookApp } from '../../webhook/app.ts';
import type { JsonObject } from '../../kube/model.ts';
import { counterNamespaces, FINALIZER, FT, NS_ANNOTATION, rayCluster, rayJob, review } from '../admission/fixtures.ts';
import { capturingLogger, certDir, decodePatch } from './helpers.ts';

const UID = 'e911857d-c318-11e8-bbad-025000000001';
const CLUSTER = '/mutate-ray-io-v1-raycluster';
const JOB = '/mutate-ray-io-v1-rayjob';

const certs = await certDir(t);
const log = capturingLogger();
let failNamespace = false;
const app: WebhookApp = await buildApp({
  certFile: certs.certFile,
  keyFile: certs.keyFile,
  logger: log.logger,
  finalizerEnabled: true,
  newStorageNamespace: (() => {
    const next = counterNamespaces('pinned-');
    return () => {
      if (failNamespace) throw new Error('generator broke');
      return next();
    };
  })(),
});
t.teardown(() => app.close());

function post(path: string, payload: unknown, headers: Record<string, string> = { 'content-type': 'application/json' }) {
  return app.inject({ method: 'POST', url: path, headers, payload: typeof payload === 'string' ? payload : JSON.stringify(payload) });
}

t.test('RayCluster CREATE: AdmissionReview answer with a base64 JSONPatch that applies', async (t) => {
  const object = rayCluster({ annotations: { [FT]: 'true', 'a/b~c': 'd' }, finalizers: null });
  const res = await post(CLUSTER, review('RayCluster', 'CREATE', object));
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /application\/json/);
  const body = res.json();
  t.same(Object.keys(body).sort(), ['apiVersion', 'kind', 'response']);
  t.equal(body.apiVersion, 'admission.k8s.io/v1');
  t.equal(body.kind, 'AdmissionReview');
  t.equal(body.response.uid, UID);
  t.equal(body.response.allowed, true);
  t.equal(body.response.patchType, 'JSONPatch');
  const copy = structuredClone(object);
  t.same(
    applyPatch(copy, decodePatch(body.response.patch) as never).filter((e) => e !== null),
    [],
  );
  t.same((copy.metadata as JsonObject).finalizers, [FINALIZER]);
  t.equal(((copy.metadata as JsonObject).annotations as JsonObject)[NS_ANNOTATION], 'pinned-1');
  t.equal(((copy.metadata as JsonObject).annotations as JsonObject)['a/b~c'], 'd');
  const line = log.lines().find((l) => l.msg === 'admission patched' && l.uid === UID);
  t.ok(line, 'a patched admission is logged');
  t.match(line, { kind: 'RayCluster', operation: 'CREATE', namespace: 'ray', name: 'demo' });
});

t.test('RayJob CREATE on its route; v1beta1 echoed', async (t) => {
  const res = await post(JOB, { ...review('RayJob', 'CREATE', rayJob()), apiVersion: 'admission.k8s.io/v1beta1' });
  t.equal(res.statusCode, 200);
  const body = res.json();
  t.equal(body.apiVersion, 'admission.k8s.io/v1beta1');
  t.same(
    decodePatch(body.response.patch).find((op) => op.path === '/status'),
    { op: 'add', path: '/status', value: { jobDeploymentStatus: 'New' } },
  );
});

t.test('nothing to change: allowed without patch; DELETE never patched', async (t) => {
  const plain = await post(CLUSTER, review('RayCluster', 'CREATE', rayCluster()));
  t.same(plain.json().response, { uid: UID, allowed: true });
  const del = await post(CLUSTER, review('RayCluster', 'DELETE', null, rayCluster({ annotations: { [FT]: 'true' } })));
  t.same(del.json().response, { uid: UID, allowed: true });
});

t.test('bad inputs get a 4xx AdmissionReview refusal with a clear message', async (t) => {
  const good = review('RayCluster', 'CREATE', rayCluster());
  const rows: Array<{
    name: string;
    payload: unknown;
    headers?: Record<string, string>;
    status: number;
    message: RegExp;
    uid: string;
    path?: string;
  }> = [
    { name: 'malformed JSON', payload: '{"apiVersion": "admission.k8s.io/v1", ', status: 400, message: /not valid JSON/, uid: '' },
    { name: 'empty body', payload: '', status: 400, message: /not valid JSON/, uid: '' },
    { name: 'JSON but not an object', payload: '[1,2]', status: 400, message: /AdmissionReview JSON object/, uid: '' },
    {
      name: 'missing request',
      payload: { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' },
      status: 400,
      message: /no request/,
      uid: '',
    },
    {
      name: 'missing uid',
      payload: review('RayCluster', 'CREATE', rayCluster(), undefined, { uid: null }),
      status: 400,
      message: /request\.uid/,
      uid: '',
    },
    {
      name: 'non-object object',
      payload: review('RayCluster', 'CREATE', 42),
      status: 400,
      message: /request\.object .* a number/,
      uid: UID,
    },
    {
      name: 'backend not a string',
      payload: review('RayCluster', 'CREATE', rayCluster({ options: { backend: { toString: 'x' } } })),
      status: 400,
      message: /backend must be a string/,
      uid: UID,
    },
    { name: 'unknown kind', payload: review('RayService', 'CREATE', {}), status: 400, message: /got ray\.io\/v1 RayService/, uid: UID },
    { name: 'RayCluster on the RayJob route', payload: good, path: JOB, status: 400, message: /mutates ray\.io\/v1 RayJob/, uid: UID },
    {
      name: 'wrong content type',
      payload: JSON.stringify(good),
      headers: { 'content-type': 'text/plain' },
      status: 415,
      message: /Unsupported Media Type/,
      uid: '',
    },
    {
      name: 'yaml content type',
      payload: 'a: b',
      headers: { 'content-type': 'application/yaml' },
      status: 415,
      message: /Unsupported Media Type/,
      uid: '',
    },
    { name: 'no content type', payload: JSON.stringify(good), headers: {}, status: 415, message: /Unsupported Media Type/, uid: '' },
  ];
  for (const row of rows) {
    const res = await post(row.path ?? CLUSTER, row.payload, row.headers);
    t.equal(res.statusCode, row.status, `${row.name}: HTTP ${row.status}`);
    const body = res.json();
    t.equal(body.kind, 'AdmissionReview', `${row.name}: an AdmissionReview`);
    t.equal(body.apiVersion, 'admission.k8s.io/v1', `${row.name}: apiVersion`);
    t.equal(body.response.allowed, false, `${row.name}: not allowed`);
    t.equal(body.response.uid, row.uid, `${row.name}: uid`);
    t.equal(body.response.status.code, row.status, `${row.name}: status.code`);
    t.match(body.response.status.message, row.message, `${row.name}: message`);
  }
});

t.test('content type with a charset parameter is fine', async (t) => {
  const res = await post(CLUSTER, review('RayCluster', 'CREATE', rayCluster()), { 'content-type': 'application/json; charset=utf-8' });
  t.equal(res.statusCode, 200);
});

t.test("the API server's ?timeout= query is accepted", async (t) => {
  const res = await post(`${CLUSTER}?timeout=10s`, review('RayCluster', 'CREATE', rayCluster()));
  t.equal(res.statusCode, 200);
  t.equal(res.json().response.allowed, true);
});

t.test('a body over the limit (3.25 MiB) is refused with 413; one exactly at it is answered', async (t) => {
  t.equal(DEFAULT_BODY_LIMIT, 3.25 * 1024 * 1024);
  const base = JSON.stringify(review('RayCluster', 'CREATE', rayCluster({ annotations: { filler: '' } })));
  const under = base.replace('"filler":""', `"filler":"${'x'.repeat(DEFAULT_BODY_LIMIT - base.length)}"`);
  t.equal(Buffer.byteLength(under), DEFAULT_BODY_LIMIT);
  t.equal((await post(CLUSTER, under)).statusCode, 200, 'exactly at the limit');
  const over = base.replace('"filler":""', `"filler":"${'x'.repeat(DEFAULT_BODY_LIMIT - base.length + 1)}"`);
  const res = await post(CLUSTER, over);
  t.equal(res.statusCode, 413);
  t.equal(res.json().response.allowed, false);
  t.equal(res.json().response.status.code, 413);
});

t.test('an exception while defaulting is a 500 refusal carrying the uid; the server keeps serving', async (t) => {
  failNamespace = true;
  try {
    const res = await post(CLUSTER, review('RayCluster', 'CREATE', rayCluster({ annotations: { [FT]: 'true' } })));
    t.equal(res.statusCode, 500);
    t.same(res.json().response, {
      uid: UID,
      allowed: false,
      status: { code: 500, message: 'internal error while defaulting: generator broke' },
    });
  } finally {
    failNamespace = false;
  }
  t.equal((await post(CLUSTER, review('RayCluster', 'CREATE', rayCluster({ annotations: { [FT]: 'true' } })))).statusCode, 200);
});

t.test('health and readiness', async (t) => {
  const health = await app.inject({ method: 'GET', url: '/healthz' });
  t.equal(health.statusCode, 200);
  const ready = await app.inject({ method: 'GET', url: '/readyz' });
  t.equal(ready.statusCode, 200);
  const { X509Certificate } = await import('node:crypto');
  t.equal(ready.json().certificateNotAfter, new Date(new X509Certificate(certs.bundle.cert).validTo).toISOString());
  t.equal((await app.inject({ method: 'GET', url: CLUSTER })).statusCode, 404, 'GET on a mutate route');
});

t.test('metrics count requests, patches, errors and latency', async (t) => {
  const res = await app.inject({ method: 'GET', url: '/metrics' });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /text\/plain/);
  const text = res.body;
  const value = (series: string) => {
    const line = text.split('\n').find((l) => l.startsWith(series + ' '));
    return line === undefined ? undefined : Number(line.slice(series.length + 1));
  };
  // Earlier subtests sent, to the RayCluster route: CREATE patched x2 (first test, after the 500), ...
  t.equal(value('raykeeper_webhook_patches_total{resource="raycluster",operation="CREATE"}'), 2);
  t.equal(value('raykeeper_webhook_patches_total{resource="rayjob",operation="CREATE"}'), 1);
  t.equal(value('raykeeper_webhook_errors_total{resource="raycluster",reason="invalid_json"}'), 2);
  t.equal(value('raykeeper_webhook_errors_total{resource="raycluster",reason="unsupported_media_type"}'), 3);
  t.equal(value('raykeeper_webhook_errors_total{resource="raycluster",reason="body_too_large"}'), 1);
  t.equal(value('raykeeper_webhook_errors_total{resource="raycluster",reason="internal"}'), 1);
  t.equal(value('raykeeper_webhook_errors_total{resource="raycluster",reason="invalid_review"}'), 6);
  t.equal(value('raykeeper_webhook_errors_total{resource="rayjob",reason="invalid_review"}'), 1);
  t.equal(value('raykeeper_webhook_requests_total{resource="raycluster",operation="DELETE"}'), 1);
  const clusterRequests = text
    .split('\n')
    .filter((l) => l.startsWith('raykeeper_webhook_requests_total{resource="raycluster"'))
    .reduce((sum, l) => sum + Number(l.split(' ')[1]), 0);
  t.equal(value('raykeeper_webhook_request_duration_seconds_count{resource="raycluster"}'), clusterRequests, 'every request timed');
  t.ok((value('raykeeper_webhook_certificate_not_after_timestamp_seconds') ?? 0) > Date.now() / 1000, 'certificate expiry exported');
});

t.test('metrics: each resource its own row (a RayCronJob is counted as raycronjob, not rayjob)', async (t) => {
  const scrape = async () => (await app.inject({ method: 'GET', url: '/metrics' })).body;
  const value = (text: string, series: string) =>
    Number(
      text
        .split('\n')
        .find((l) => l.startsWith(`${series} `))
        ?.split(' ')[1] ?? 0,
    );
  const before = await scrape();
  const cronJob = {
    apiVersion: 'ray.io/v1',
    kind: 'RayCronJob',
    metadata: { name: 'nightly', namespace: 'ray' },
    spec: { schedule: '@daily' },
  };
  const res = await post('/mutate-ray-io-v1-raycronjob', review('RayCronJob', 'CREATE', cronJob));
  t.equal(res.statusCode, 200);
  const after = await scrape();
  const series = (resource: string) => `raykeeper_webhook_requests_total{resource="${resource}",operation="CREATE"}`;
  t.equal(value(after, series('raycronjob')) - value(before, series('raycronjob')), 1, 'counted under raycronjob');
  t.equal(value(after, series('rayjob')), value(before, series('rayjob')), 'not under rayjob');
  t.equal(
    value(after, 'raykeeper_webhook_request_duration_seconds_count{resource="raycronjob"}') -
      value(before, 'raykeeper_webhook_request_duration_seconds_count{resource="raycronjob"}'),
    1,
    'timed under raycronjob',
  );
});
