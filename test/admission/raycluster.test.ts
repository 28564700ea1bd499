// RayCluster defaulting rules as tables: (operation, old, new) -> finalizers and storage namespace after.
import t from 'tap';
import { defaultRayCluster, type RayClusterDefaultingContext } from '../../src/admission/raycluster.ts';
import { cloneJson } from '../../src/admission/json.ts';
import type { JsonObject } from '../../kube/model.ts';
import { FINALIZER, FT, NS_ANNOTATION, rayCluster, type ClusterShape } from './fixtures.ts';

const PINNED = 'pinned-by-test';

function run(obj: JsonObject, ctx: Partial<RayClusterDefaultingContext> = {}) {
  const copy = cloneJson(obj);
  const result = defaultRayCluster(copy, {
    operation: 'CREATE',
    newStorageNamespace: () => PINNED,
    finalizerEnabled: true,
    ...ctx,
  });
  const meta = copy.metadata as JsonObject;
  const spec = copy.spec as JsonObject;
  const options = spec.gcsFaultToleranceOptions as JsonObject | null | undefined;
  return {
    copy,
    result,
    finalizers: meta.finalizers,
    annotation: (meta.annotations as JsonObject | null | undefined)?.[NS_ANNOTATION],
    optionsNs: options?.externalStorageNamespace,
  };
}

const on = { [FT]: 'true' };
const redisOptions = { redisAddress: 'redis:6379' };

t.test('CREATE', async (t) => {
  const rows: Array<{ name: string; shape: ClusterShape; finalizers: unknown; annotation?: unknown; optionsNs?: unknown }> = [
    { name: 'FT off: nothing', shape: {}, finalizers: undefined },
    { name: 'ft-enabled "false": nothing', shape: { annotations: { [FT]: 'false' } }, finalizers: undefined },
    { name: 'annotation mode, no finalizers', shape: { annotations: on }, finalizers: [FINALIZER], annotation: PINNED },
    { name: 'annotation value in any case', shape: { annotations: { [FT]: 'TrUe' } }, finalizers: [FINALIZER], annotation: PINNED },
    { name: 'finalizers null', shape: { annotations: on, finalizers: null }, finalizers: [FINALIZER], annotation: PINNED },
    { name: 'finalizers empty', shape: { annotations: on, finalizers: [] }, finalizers: [FINALIZER], annotation: PINNED },
    {
      name: 'other finalizers kept, ours appended',
      shape: { annotations: on, finalizers: ['a/b', 'x'] },
      finalizers: ['a/b', 'x', FINALIZER],
      annotation: PINNED,
    },
    { name: 'never twice', shape: { annotations: on, finalizers: [FINALIZER, 'x'] }, finalizers: [FINALIZER, 'x'], annotation: PINNED },
    {
      name: 'user namespace annotation kept',
      shape: { annotations: { ...on, [NS_ANNOTATION]: 'mine' } },
      finalizers: [FINALIZER],
      annotation: 'mine',
    },
    {
      name: 'empty namespace annotation counts as unset',
      shape: { annotations: { ...on, [NS_ANNOTATION]: '' } },
      finalizers: [FINALIZER],
      annotation: PINNED,
    },
    { name: 'options mode pins in options', shape: { options: redisOptions }, finalizers: [FINALIZER], optionsNs: PINNED },
    {
      name: 'options with explicit backend redis',
      shape: { options: { ...redisOptions, backend: 'redis' } },
      finalizers: [FINALIZER],
      optionsNs: PINNED,
    },
    { name: 'options empty object is FT on', shape: { options: {} }, finalizers: [FINALIZER], optionsNs: PINNED },
    {
      name: 'user options namespace kept',
      shape: { options: { ...redisOptions, externalStorageNamespace: 'theirs' } },
      finalizers: [FINALIZER],
      optionsNs: 'theirs',
    },
    { name: 'options null is FT off', shape: { options: null }, finalizers: undefined },
    { name: 'rocksdb: no finalizer, no namespace', shape: { options: { backend: 'rocksdb' } }, finalizers: undefined },
    { name: 'both modes: nothing (KubeRay rejects it)', shape: { annotations: on, options: redisOptions }, finalizers: undefined },
    { name: 'managed by MultiKueue: nothing', shape: { annotations: on, managedBy: 'kueue.x-k8s.io/multikueue' }, finalizers: undefined },
    {
      name: 'managedBy kuberay: as usual',
      shape: { annotations: on, managedBy: 'ray.io/kuberay-operator' },
      finalizers: [FINALIZER],
      annotation: PINNED,
    },
    {
      name: 'head env sets the namespace: finalizer only',
      shape: { annotations: on, headEnv: [{ name: 'RAY_external_storage_namespace', value: 'env-ns' }] },
      finalizers: [FINALIZER],
    },
    {
      name: 'deleting (never at CREATE, still no finalizer)',
      shape: { annotations: on, deletionTimestamp: '2026-01-01T00:00:00Z' },
      finalizers: undefined,
      annotation: PINNED,
    },
  ];
  for (const row of rows) {
    const out = run(rayCluster(row.shape));
    t.same(out.finalizers, row.finalizers, `${row.name}: finalizers`);
    t.equal(out.annotation, row.annotation, `${row.name}: namespace annotation`);
    t.equal(out.optionsNs, row.optionsNs, `${row.name}: options namespace`);
  }
});

t.test('CREATE: annotations absent, null or empty all get the pinned annotation', async (t) => {
  for (const annotations of [undefined, null, {}]) {
    const out = run(rayCluster({ annotations, options: redisOptions }));
    t.equal(out.optionsNs, PINNED, `options mode with annotations ${JSON.stringify(annotations)}`);
    t.same((out.copy.metadata as JsonObject).annotations, annotations, 'annotations untouched in options mode');
  }
});

t.test('CREATE: each new cluster gets its own namespace from the generator', async (t) => {
  let n = 0;
  const gen = () => `gen-${++n}`;
  const a = run(rayCluster({ annotations: on }), { newStorageNamespace: gen });
  const b = run(rayCluster({ annotations: on }), { newStorageNamespace: gen });
  t.equal(a.annotation, 'gen-1');
  t.equal(b.annotation, 'gen-2');
});

t.test('CREATE: a generated namespace with @ is an error, not a silent bad value', async (t) => {
  t.throws(() => run(rayCluster({ annotations: on }), { newStorageNamespace: () => 'a@b' }), /'@'/);
});

t.test('CREATE: a user namespace with @ is kept but warned about', async (t) => {
  const out = run(rayCluster({ annotations: { ...on, [NS_ANNOTATION]: 'x@y' } }));
  t.equal(out.annotation, 'x@y');
  t.match(out.result.warnings.join('\n'), /'@'/);
});

t.test('CREATE: both modes produce a warning', async (t) => {
  const out = run(rayCluster({ annotations: on, options: redisOptions }));
  t.match(out.result.warnings.join('\n'), /both/);
  t.same(out.result.changes, []);
});

t.test('CREATE: ENABLE_GCS_FT_REDIS_CLEANUP=false means no finalizer, still a pinned namespace', async (t) => {
  const out = run(rayCluster({ annotations: on }), { finalizerEnabled: false });
  t.equal(out.finalizers, undefined);
  t.equal(out.annotation, PINNED);
});

t.test('UPDATE', async (t) => {
  const uid = '3f5a1c9e-0000-4000-8000-000000000001';
  const rows: Array<{
    name: string;
    old: ClusterShape;
    now: ClusterShape;
    finalizers: unknown;
    annotation?: unknown;
    optionsNs?: unknown;
  }> = [
    {
      name: 'old had the finalizer, update removes it: respected',
      old: { annotations: { ...on, [NS_ANNOTATION]: 'p' }, finalizers: [FINALIZER], uid },
      now: { annotations: { ...on, [NS_ANNOTATION]: 'p' }, finalizers: [], uid },
      finalizers: [],
      annotation: 'p',
    },
    {
      name: 'old lacked it too (created before the webhook): added',
      old: { annotations: on, uid },
      now: { annotations: on, uid },
      finalizers: [FINALIZER],
    },
    {
      name: 'deleting: never added',
      old: { annotations: on, uid, deletionTimestamp: '2026-01-01T00:00:00Z' },
      now: { annotations: on, uid, deletionTimestamp: '2026-01-01T00:00:00Z' },
      finalizers: undefined,
    },
    {
      name: 'deleting, controller removes the finalizer after cleanup: respected',
      old: { annotations: on, uid, finalizers: [FINALIZER, 'other'], deletionTimestamp: '2026-01-01T00:00:00Z' },
      now: { annotations: on, uid, finalizers: ['other'], deletionTimestamp: '2026-01-01T00:00:00Z' },
      finalizers: ['other'],
    },
    {
      name: 'finalizer kept as is',
      old: { annotations: on, uid, finalizers: ['x', FINALIZER] },
      now: { annotations: on, uid, finalizers: ['x', FINALIZER] },
      finalizers: ['x', FINALIZER],
    },
    {
      name: 'no new namespace on UPDATE (the UID is the default)',
      old: { annotations: on, uid, finalizers: [FINALIZER] },
      now: { annotations: on, uid, finalizers: [FINALIZER] },
      finalizers: [FINALIZER],
      annotation: undefined,
    },
    {
      name: 'pinned annotation dropped by the update: restored',
      old: { annotations: { ...on, [NS_ANNOTATION]: 'p1' }, uid, finalizers: [FINALIZER] },
      now: { annotations: on, uid, finalizers: [FINALIZER] },
      finalizers: [FINALIZER],
      annotation: 'p1',
    },
    {
      name: 'pinned annotation dropped with all annotations null: restored',
      old: { annotations: { ...on, [NS_ANNOTATION]: 'p1' }, uid, finalizers: [FINALIZER] },
      now: { annotations: null, options: redisOptions, uid, finalizers: [FINALIZER] },
      finalizers: [FINALIZER],
      optionsNs: 'p1',
    },
    {
      name: 'pinned options namespace dropped: restored',
      old: { options: { ...redisOptions, externalStorageNamespace: 'p2' }, uid, finalizers: [FINALIZER] },
      now: { options: redisOptions, uid, finalizers: [FINALIZER] },
      finalizers: [FINALIZER],
      optionsNs: 'p2',
    },
    {
      name: 'user changes the namespace explicitly: kept',
      old: { annotations: { ...on, [NS_ANNOTATION]: 'p1' }, uid, finalizers: [FINALIZER] },
      now: { annotations: { ...on, [NS_ANNOTATION]: 'p9' }, uid, finalizers: [FINALIZER] },
      finalizers: [FINALIZER],
      annotation: 'p9',
    },
    {
      name: 'pinned namespace dropped while deleting: restored (cleanup needs it), no finalizer',
      old: { annotations: { ...on, [NS_ANNOTATION]: 'p1' }, uid, deletionTimestamp: '2026-01-01T00:00:00Z' },
      now: { annotations: on, uid, deletionTimestamp: '2026-01-01T00:00:00Z' },
      finalizers: undefined,
      annotation: 'p1',
    },
    {
      name: 'FT turned off by the update: nothing',
      old: { annotations: { ...on, [NS_ANNOTATION]: 'p1' }, uid, finalizers: [FINALIZER] },
      now: { annotations: { [FT]: 'false' }, uid, finalizers: [FINALIZER] },
      finalizers: [FINALIZER],
      annotation: undefined,
    },
    {
      name: 'both modes fixed by this update: finalizer added, namespace stays the UID default',
      old: { annotations: on, options: redisOptions, uid },
      now: { options: redisOptions, uid },
      finalizers: [FINALIZER],
      optionsNs: undefined,
    },
  ];
  for (const row of rows) {
    const out = run(rayCluster(row.now), {
      operation: 'UPDATE',
      oldObject: rayCluster(row.old),
      newStorageNamespace: () => t.fail('generated on UPDATE') as never,
    });
    t.same(out.finalizers, row.finalizers, `${row.name}: finalizers`);
    t.equal(out.annotation, row.annotation, `${row.name}: namespace annotation`);
    t.equal(out.optionsNs, row.optionsNs, `${row.name}: options namespace`);
  }
});

t.test('the input object is not touched (defaulting works on the copy it is given)', async (t) => {
  const original = rayCluster({ annotations: on });
  const before = JSON.stringify(original);
  const copy = cloneJson(original);
  defaultRayCluster(copy, { operation: 'CREATE', newStorageNamespace: () => PINNED, finalizerEnabled: true });
  t.equal(JSON.stringify(original), before);
  t.not(JSON.stringify(copy), before);
});
