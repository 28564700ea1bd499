// The admission pipeline without HTTP: answers, patches (applied with the independent rfc6902 package),
// refusals, and exceptions turned into answers.
import t from 'tap';
import { applyPatch } from 'rfc6902';
import { mutate, type MutateOptions } from '../../src/admission/mutate.ts';
import type { JsonObject } from '../../kube/model.ts';
import { counterNamespaces, FINALIZER, FT, NS_ANNOTATION, rayCluster, rayJob, review } from './fixtures.ts';

const UID = 'e911857d-c318-11e8-bbad-025000000001';
const options = (): MutateOptions => ({ newStorageNamespace: counterNamespaces(), finalizerEnabled: true });

function decode(patch: string | undefined): Array<{ op: string; path: string; value?: unknown }> {
  return JSON.parse(Buffer.from(patch ?? '', 'base64').toString('utf8'));
}

function applied(object: JsonObject, patch: string | undefined): JsonObject {
  const copy = structuredClone(object);
  const errors = applyPatch(copy, decode(patch) as never);
  if (errors.some((e) => e !== null)) throw new Error(`patch did not apply: ${JSON.stringify(errors)}`);
  return copy;
}

t.test('CREATE of an FT cluster: allowed, base64 JSONPatch that applies and adds exactly our two things', async (t) => {
  const objects: Array<[string, JsonObject]> = [
    ['options mode, annotations absent', rayCluster({ options: { redisAddress: 'r:6379' } })],
    ['options mode, annotations null', rayCluster({ annotations: null, options: { redisAddress: 'r:6379' } })],
    ['annotation mode', rayCluster({ annotations: { [FT]: 'true' } })],
    ['annotation mode, keys with ~ and /', rayCluster({ annotations: { [FT]: 'true', 'example.com/a~b/c': 'v' } })],
  ];
  for (const [annotations, object] of objects) {
    const out = mutate(review('RayCluster', 'CREATE', object), 'RayCluster', options());
    t.equal(out.httpStatus, 200);
    t.equal(out.answer.apiVersion, 'admission.k8s.io/v1');
    t.equal(out.answer.kind, 'AdmissionReview');
    t.equal(out.answer.response.uid, UID);
    t.equal(out.answer.response.allowed, true);
    t.equal(out.answer.response.patchType, 'JSONPatch');
    const after = applied(object, out.answer.response.patch);
    const meta = after.metadata as JsonObject;
    t.same(meta.finalizers, [FINALIZER], `finalizer with annotations ${JSON.stringify(annotations)}`);
    const ns =
      (after.spec as JsonObject & { gcsFaultToleranceOptions?: JsonObject }).gcsFaultToleranceOptions?.externalStorageNamespace ??
      (meta.annotations as JsonObject)[NS_ANNOTATION];
    t.equal(ns, 'ns-1', 'namespace pinned');
  }
});

t.test('null finalizers become a replace of the null that applies; null annotations stay null', async (t) => {
  const object = rayCluster({ annotations: null, finalizers: null, options: {} });
  const out = mutate(review('RayCluster', 'CREATE', object), 'RayCluster', options());
  const ops = decode(out.answer.response.patch);
  t.same(
    ops.find((op) => op.path === '/metadata/finalizers'),
    { op: 'replace', path: '/metadata/finalizers', value: [FINALIZER] },
  );
  const after = applied(object, out.answer.response.patch);
  t.same((after.metadata as JsonObject).finalizers, [FINALIZER]);
  t.equal((after.metadata as JsonObject).annotations, null, 'options mode writes no annotation');
  t.equal((after.spec as { gcsFaultToleranceOptions: JsonObject }).gcsFaultToleranceOptions.externalStorageNamespace, 'ns-1');
});

t.test('absent metadata maps become adds of the whole map', async (t) => {
  const object = rayCluster({ annotations: { [FT]: 'true' } });
  const out = mutate(review('RayCluster', 'CREATE', object), 'RayCluster', options());
  t.same(
    decode(out.answer.response.patch).find((op) => op.path === '/metadata/finalizers'),
    { op: 'add', path: '/metadata/finalizers', value: [FINALIZER] },
  );
});

t.test('keys with / and ~ are escaped in the patch paths', async (t) => {
  const object = rayCluster({ annotations: { [FT]: 'true' } });
  const out = mutate(review('RayCluster', 'CREATE', object), 'RayCluster', options());
  const paths = decode(out.answer.response.patch).map((op) => op.path);
  t.ok(paths.includes('/metadata/annotations/ray.io~1external-storage-namespace'), paths.join(' '));
});

t.test('no change, no patch', async (t) => {
  const object = rayCluster({ annotations: { [FT]: 'true', [NS_ANNOTATION]: 'mine' }, finalizers: [FINALIZER] });
  const out = mutate(review('RayCluster', 'CREATE', object), 'RayCluster', options());
  t.equal(out.answer.response.allowed, true);
  t.notOk('patch' in out.answer.response);
  t.notOk('patchType' in out.answer.response);
  t.same(out.patch, []);
});

t.test('DELETE, CONNECT and subresources are allowed without a patch', async (t) => {
  const ft = rayCluster({ annotations: { [FT]: 'true' } });
  for (const [name, body] of [
    ['DELETE', review('RayCluster', 'DELETE', null, ft)],
    ['CONNECT', review('RayCluster', 'CONNECT', {})],
    ['status subresource', review('RayCluster', 'UPDATE', ft, ft, { subResource: 'status' })],
  ] as const) {
    const out = mutate(body, 'RayCluster', options());
    t.equal(out.httpStatus, 200, name);
    t.same(out.answer.response, { uid: UID, allowed: true }, name);
  }
});

t.test('RayJob CREATE: status New and spec defaults, patch applies', async (t) => {
  const object = rayJob({ entrypoint: 'python x.py' });
  const out = mutate(review('RayJob', 'CREATE', object), 'RayJob', options());
  const after = applied(object, out.answer.response.patch);
  t.same(after.status, { jobDeploymentStatus: 'New' });
  t.equal((after.spec as JsonObject).submissionMode, 'K8sJobMode');
  t.same(after.metadata, object.metadata, 'no finalizer from the webhook');
});

t.test('the kind must match the endpoint', async (t) => {
  const out = mutate(review('RayJob', 'CREATE', rayJob()), 'RayCluster', options());
  t.equal(out.httpStatus, 400);
  t.equal(out.answer.response.allowed, false);
  t.equal(out.answer.response.uid, UID);
  t.match(out.answer.response.status?.message, /mutates ray\.io\/v1 RayCluster, got ray\.io\/v1 RayJob/);
  const pods = review('Pod', 'CREATE', {}, undefined, { kind: { group: '', version: 'v1', kind: 'Pod' } });
  t.match(mutate(pods, 'RayJob', options()).answer.response.status?.message, /got core\/v1 Pod/);
});

t.test('malformed metadata the rules would write into: refused with the uid', async (t) => {
  const rows: Array<[string, JsonObject, RegExp]> = [
    ['annotations an array', { ...rayCluster(), metadata: { name: 'x', annotations: ['a'] } }, /annotations must be an object/],
    ['annotation value a number', { ...rayCluster(), metadata: { name: 'x', annotations: { [FT]: true } } }, /must be a string/],
    ['finalizers a string', { ...rayCluster(), metadata: { name: 'x', finalizers: FINALIZER } }, /finalizers must be an array/],
    ['metadata a string', { ...rayCluster(), metadata: 'x' }, /metadata must be an object/],
    ['spec an array', { ...rayCluster(), spec: [] }, /spec must be an object/],
    ['options a string', { ...rayCluster(), spec: { gcsFaultToleranceOptions: 'redis' } }, /gcsFaultToleranceOptions must be an object/],
    [
      'backend an object with a toString key',
      rayCluster({ options: { backend: { toString: 'x' } } }),
      /gcsFaultToleranceOptions\.backend must be a string/,
    ],
    ['backend an array', rayCluster({ options: { backend: ['redis'] } }), /backend must be a string/],
    ['backend a number', rayCluster({ options: { backend: 1 } }), /backend must be a string/],
    ['namespace an object', rayCluster({ options: { externalStorageNamespace: {} } }), /externalStorageNamespace must be a string/],
  ];
  for (const [name, object, message] of rows) {
    const out = mutate(review('RayCluster', 'CREATE', object), 'RayCluster', options());
    t.equal(out.httpStatus, 400, name);
    t.equal(out.answer.response.allowed, false, name);
    t.equal(out.answer.response.uid, UID, name);
    t.equal(out.answer.response.status?.code, 400, name);
    t.match(out.answer.response.status?.message, message, name);
  }
  const job = mutate(review('RayJob', 'CREATE', { ...rayJob(), status: 'New' }), 'RayJob', options());
  t.match(job.answer.response.status?.message, /status must be an object/);
});

t.test('an exception inside defaulting becomes a 500 refusal, never a throw', async (t) => {
  const boom: MutateOptions = {
    finalizerEnabled: true,
    newStorageNamespace: () => {
      throw new Error('entropy exhausted');
    },
  };
  const out = mutate(review('RayCluster', 'CREATE', rayCluster({ annotations: { [FT]: 'true' } })), 'RayCluster', boom);
  t.equal(out.httpStatus, 500);
  t.equal(out.answer.response.allowed, false);
  t.equal(out.answer.response.uid, UID);
  t.same(out.answer.response.status, { code: 500, message: 'internal error while defaulting: entropy exhausted' });
});

t.test('warnings reach the answer (both FT modes set)', async (t) => {
  const object = rayCluster({ annotations: { [FT]: 'true' }, options: { redisAddress: 'r:6379' } });
  const out = mutate(review('RayCluster', 'CREATE', object), 'RayCluster', options());
  t.equal(out.answer.response.allowed, true);
  t.notOk('patch' in out.answer.response);
  t.match(out.answer.response.warnings?.[0], /both/);
});

t.test('a "__proto__" key in a user map survives untouched', async (t) => {
  const body = JSON.parse(
    JSON.stringify(review('RayCluster', 'CREATE', rayCluster({ annotations: { [FT]: 'true' } }))).replace(
      '"rayStartParams":{}',
      '"rayStartParams":{"__proto__":{"polluted":"yes"}}',
    ),
  );
  const out = mutate(body, 'RayCluster', options());
  t.equal(out.httpStatus, 200);
  const paths = decode(out.answer.response.patch).map((op) => op.path);
  t.notOk(
    paths.some((p) => p.includes('proto')),
    paths.join(' '),
  );
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'no prototype pollution');
});
