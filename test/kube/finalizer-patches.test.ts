import t from 'tap';
import jsonpatch from 'fast-json-patch';
import {
  addFinalizerPatch,
  finalizerRejectedMessage,
  hasFinalizer,
  isDeleting,
  removeFinalizerPatch,
  type FinalizerChange,
  type PatchOp,
  type Refusal,
} from '../../kube/finalizer-patches.ts';
import { FINALIZER_REFUSAL } from '../../src/finalizer.ts';
import { inlineSecrets } from '../../src/inline-secrets.ts';

/** The Warning's message as every FinalizerPatcher writes it: the API's words, the objects' inline secrets masked. */
const finalizerRejected = (change: FinalizerChange, finalizer: string, refusal: Refusal, objects: unknown): string =>
  FINALIZER_REFUSAL.mask(finalizerRejectedMessage(change, finalizer, refusal), objects);

const F = 'ray.io/gcs-ft-redis-cleanup-finalizer';

function apply(doc: Record<string, unknown>, ops: PatchOp[]): Record<string, unknown> {
  return jsonpatch.applyPatch(structuredClone(doc), ops as never, true, false).newDocument as Record<string, unknown>;
}

t.test('add to an existing list: test the list as read, append', async (tt) => {
  const obj = { metadata: { resourceVersion: '5', finalizers: ['other/one'] } };
  const ops = addFinalizerPatch(obj.metadata, F)!;
  tt.same(ops, [
    { op: 'test', path: '/metadata/finalizers', value: ['other/one'] },
    { op: 'add', path: '/metadata/finalizers/-', value: F },
  ]);
  tt.same((apply(obj, ops).metadata as { finalizers: string[] }).finalizers, ['other/one', F]);
});

t.test('add when the list is absent: guarded by the resourceVersion', async (tt) => {
  const obj = { metadata: { resourceVersion: '5' } };
  const ops = addFinalizerPatch(obj.metadata, F)!;
  tt.same(ops, [
    { op: 'test', path: '/metadata/resourceVersion', value: '5' },
    { op: 'add', path: '/metadata/finalizers', value: [F] },
  ]);
  tt.same((apply(obj, ops).metadata as { finalizers: string[] }).finalizers, [F]);
});

t.test('a concurrent change makes the patch fail instead of clobbering', async (tt) => {
  const read = { metadata: { resourceVersion: '5', finalizers: ['other/one'] } };
  const ops = addFinalizerPatch(read.metadata, F)!;
  const meanwhile = { metadata: { resourceVersion: '6', finalizers: ['other/one', 'third/two'] } };
  tt.throws(() => apply(meanwhile, ops), 'test op fails on the changed list');

  const readAbsent = { metadata: { resourceVersion: '5' } };
  const opsAbsent = addFinalizerPatch(readAbsent.metadata, F)!;
  const meanwhileAdded = { metadata: { resourceVersion: '6', finalizers: ['third/two'] } };
  tt.throws(() => apply(meanwhileAdded, opsAbsent), 'a finalizer added meanwhile is never replaced');

  const rm = removeFinalizerPatch({ finalizers: [F, 'other/one'] }, F)!;
  tt.throws(() => apply({ metadata: { finalizers: ['other/one', F] } }, rm), 'reordered list: no removal at a wrong index');

  const old = removeFinalizerPatch({ uid: 'u1', finalizers: [F] }, F)!;
  tt.throws(() => apply({ metadata: { uid: 'u2', finalizers: [F] } }, old), 'a new object of the same name keeps its finalizer');
  tt.same(
    (apply({ metadata: { uid: 'u1', finalizers: [F] } }, old).metadata as { finalizers: string[] }).finalizers,
    [],
    'the same object loses it',
  );
});

t.test('add is a no-op when present; remove is a no-op when absent', async (tt) => {
  tt.equal(addFinalizerPatch({ finalizers: [F] }, F), undefined);
  tt.equal(removeFinalizerPatch({ finalizers: ['x/y'] }, F), undefined);
  tt.equal(removeFinalizerPatch({}, F), undefined);
});

t.test('remove keeps other finalizers, at the right index', async (tt) => {
  const obj = { metadata: { finalizers: ['a/1', F, 'b/2'] } };
  const ops = removeFinalizerPatch(obj.metadata, F)!;
  tt.same(ops, [
    { op: 'test', path: '/metadata/finalizers', value: ['a/1', F, 'b/2'] },
    { op: 'remove', path: '/metadata/finalizers/1' },
  ]);
  tt.same((apply(obj, ops).metadata as { finalizers: string[] }).finalizers, ['a/1', 'b/2']);
  const dup = { metadata: { finalizers: [F, 'a/1', F] } };
  tt.same(
    (apply(dup, removeFinalizerPatch(dup.metadata, F)!).metadata as { finalizers: string[] }).finalizers,
    ['a/1'],
    'duplicates all go',
  );
});

t.test('hasFinalizer', async (tt) => {
  tt.equal(hasFinalizer({ finalizers: [F] }, F), true);
  tt.equal(hasFinalizer({ finalizers: null }, F), false);
  tt.equal(hasFinalizer(undefined, F), false);
});

t.test('hasFinalizer on unchecked metadata (an admission request): only a list counts', async (tt) => {
  const rows: Array<[unknown, boolean]> = [
    [{ finalizers: ['a/1', F] }, true],
    [{ finalizers: 'ray.io/gcs-ft-redis-cleanup-finalizer' }, false],
    [{ finalizers: { 0: F } }, false],
    [{}, false],
    [null, false],
  ];
  for (const [meta, want] of rows) tt.equal(hasFinalizer(meta as { finalizers?: unknown } | null, F), want, JSON.stringify(meta));
});

t.test('isDeleting: a non-empty deletionTimestamp string on object metadata', async (tt) => {
  const rows: Array<[unknown, boolean]> = [
    [{ metadata: { deletionTimestamp: '2026-01-01T00:00:00Z' } }, true],
    [{ metadata: { deletionTimestamp: '' } }, false],
    [{ metadata: { deletionTimestamp: null } }, false],
    [{ metadata: { deletionTimestamp: 5 } }, false],
    [{ metadata: {} }, false],
    [{ metadata: 'not an object' }, false],
    [{ metadata: null }, false],
    [{}, false],
    [null, false],
    [undefined, false],
  ];
  for (const [obj, want] of rows)
    tt.equal(isDeleting(obj as { metadata?: unknown } | null | undefined), want, JSON.stringify(obj) ?? 'undefined');
});

t.test('inlineSecrets: env values and map entries named like secrets, URL user information', async (tt) => {
  const cluster = {
    metadata: { name: 'c', annotations: { 'example.com/token': 'tok-123' } },
    spec: {
      headGroupSpec: {
        rayStartParams: { 'redis-password': 'pw-in-params', 'num-cpus': '1' },
        template: {
          spec: {
            containers: [
              {
                name: 'ray-head',
                env: [
                  { name: 'REDIS_PASSWORD', value: 'pw-in-env' },
                  { name: 'RAY_REDIS_ADDRESS', value: 'redis://user:pw-in-url@redis:6379' },
                  { name: 'OTHER', value: 'not-secret' },
                  { name: 'EMPTY_PASSWORD', value: '' },
                  { name: 'REF_PASSWORD', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } },
                ],
              },
            ],
          },
        },
      },
    },
  };
  tt.same(inlineSecrets(cluster).sort(), ['pw-in-env', 'pw-in-params', 'tok-123', 'user:pw-in-url'].sort());
  tt.same(inlineSecrets({ metadata: { name: 'plain' } }), []);
});

t.test('inlineSecrets: the `value` of an object under a secret name, several objects at once', async (tt) => {
  const rows: Array<{ name: string; obj: unknown; want: string[] }> = [
    {
      name: 'gcsFaultToleranceOptions.redisPassword.value',
      obj: { spec: { gcsFaultToleranceOptions: { redisAddress: 'redis:6379', redisPassword: { value: 'pw-in-ft' } } } },
      want: ['pw-in-ft'],
    },
    {
      name: 'redisUsername.value is no secret',
      obj: { spec: { gcsFaultToleranceOptions: { redisUsername: { value: 'default' } } } },
      want: [],
    },
    {
      name: 'redisPassword from a Secret',
      obj: { spec: { gcsFaultToleranceOptions: { redisPassword: { valueFrom: { secretKeyRef: { name: 's', key: 'k' } } } } } },
      want: [],
    },
    { name: 'empty value', obj: { redisPassword: { value: '' } }, want: [] },
    {
      name: 'stored object and cached projection',
      obj: [{ spec: { rayStartParams: { 'redis-password': 'pw-stored' } } }, { spec: { gcsFaultToleranceOptions: {} } }],
      want: ['pw-stored'],
    },
    {
      name: 'nothing stored (undefined) and the given object',
      obj: [undefined, { env: [{ name: 'REDIS_PASSWORD', value: 'pw-given' }] }],
      want: ['pw-given'],
    },
  ];
  for (const row of rows) tt.same(inlineSecrets(row.obj), row.want, row.name);
});

t.test("the refusal Warning: the API's message, one line, no secret of the object", async (tt) => {
  const obj = { metadata: { name: 'c' }, spec: { rayStartParams: { 'redis-password': 'hunter22' } } };
  const rows: Array<{ name: string; message: string; want: RegExp[]; never: string[] }> = [
    {
      name: 'admission policy quoting the object',
      message: "rayclusters.ray.io \"c\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: frozen (hunter22)",
      want: [
        /^Cannot add finalizer ray\.io\/gcs-ft-redis-cleanup-finalizer: the API server refused the change \(422 Invalid\): /,
        /ValidatingAdmissionPolicy 'p'/,
        /frozen \(\*\*\*\)/,
        /Retrying with backoff/,
      ],
      never: ['hunter22'],
    },
    {
      name: 'URL credentials not in the object, multi-line',
      message: 'RayCluster.ray.io "c" is invalid:\n spec: Invalid value: "redis://u:p4ss@h:1"',
      want: [/redis:\/\/\*\*\*@h:1/, /is invalid: spec:/],
      never: ['p4ss', '\n'],
    },
  ];
  const cached = { metadata: { name: 'c' }, spec: { gcsFaultToleranceOptions: { redisAddress: 'redis:6379' } } };
  const stored = {
    metadata: { name: 'c' },
    spec: {
      gcsFaultToleranceOptions: { redisPassword: { value: 'ft-pw-9' } },
      headGroupSpec: { template: { spec: { containers: [{ env: [{ name: 'REDIS_PASSWORD', value: 'env-pw-7' }] }] } } },
    },
  };
  const fromStored: Array<{ name: string; message: string; objects: unknown; never: string[] }> = [
    {
      name: 'stored secrets, cached projection given',
      message: 'denied: frozen (env-pw-7, ft-pw-9)',
      objects: [stored, cached],
      never: ['env-pw-7', 'ft-pw-9'],
    },
    {
      name: 'the stored object could not be read: the given one',
      message: 'denied: frozen (hunter22)',
      objects: [undefined, obj],
      never: ['hunter22'],
    },
  ];
  for (const row of fromStored) {
    const text = finalizerRejected('add', F, { statusCode: 422, reason: 'Invalid', message: row.message }, row.objects);
    tt.match(text, /denied: frozen \(\*\*\*(, \*\*\*)?\)/, `${row.name}: masked`);
    for (const s of row.never) tt.notOk(text.includes(s), `${row.name}: no ${s}`);
  }
  for (const row of rows) {
    const text = finalizerRejected('add', F, { statusCode: 422, reason: 'Invalid', message: row.message }, obj);
    for (const re of row.want) tt.match(text, re, `${row.name}: ${re}`);
    for (const s of row.never) tt.notOk(text.includes(s), `${row.name}: no ${JSON.stringify(s)}`);
  }
  tt.match(
    finalizerRejected('remove', F, { statusCode: 403, reason: 'Forbidden', message: 'no' }, obj),
    /^Cannot remove finalizer .*\(403 Forbidden\): no\./,
  );
});
