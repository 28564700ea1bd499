import t from 'tap';
import jsonpatch from 'fast-json-patch';
import { addFinalizerPatch, hasFinalizer, removeFinalizerPatch, type PatchOp } from '../../src/finalizer.ts';

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
  tt.same((apply(dup, removeFinalizerPatch(dup.metadata, F)!).metadata as { finalizers: string[] }).finalizers, ['a/1'], 'duplicates all go');
});

t.test('hasFinalizer', async (tt) => {
  tt.equal(hasFinalizer({ finalizers: [F] }, F), true);
  tt.equal(hasFinalizer({ finalizers: null }, F), false);
  tt.equal(hasFinalizer(undefined, F), false);
});
