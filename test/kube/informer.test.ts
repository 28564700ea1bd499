// The informer's recovery logic, driven through its list/watch seam by a small scripted fake (the
// real-API-server behaviour is covered by test/kube/runtime-apiserver.test.ts).
import t from 'tap';
import { Informer, type ListFn, type WatchFn } from '../../kube/informer.ts';
import type { KubeObject } from '../../kube/model.ts';
import { until } from '../helpers/until.ts';

interface OpenWatch {
  query: Record<string, string | boolean | undefined>;
  onEvent: (type: string, obj: KubeObject) => void;
  onDone: (err: unknown) => void;
  aborted: boolean;
}

class FakeApi {
  objects = new Map<string, KubeObject>();
  rv = 100;
  lists = 0;
  listFailures = 0;
  watchFailures = 0;
  watches: OpenWatch[] = [];
  listFn: ListFn = async (_signal, transform) => {
    this.lists += 1;
    if (this.listFailures > 0) {
      this.listFailures -= 1;
      throw Object.assign(new Error('list: 503'), { statusCode: 503 });
    }
    return { items: [...this.objects.values()].map((o) => transform(structuredClone(o))), resourceVersion: String(this.rv) };
  };
  watchFn: WatchFn = async (_spec, query, onEvent, onDone) => {
    const w: OpenWatch = { query, onEvent, onDone, aborted: false };
    this.watches.push(w);
    if (this.watchFailures > 0) {
      this.watchFailures -= 1;
      queueMicrotask(() => onDone(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })));
    }
    return { abort: () => (w.aborted = true) };
  };
  get current(): OpenWatch | undefined {
    const w = this.watches[this.watches.length - 1];
    return w && !w.aborted ? w : undefined;
  }
  put(name: string, extra: Record<string, unknown> = {}, emit = true): KubeObject {
    this.rv += 1;
    const existed = this.objects.has(name);
    const obj: KubeObject = {
      metadata: { name, namespace: 'ns', resourceVersion: String(this.rv), managedFields: [{ manager: 'x' }] },
      ...extra,
    };
    this.objects.set(name, obj);
    if (emit) this.current?.onEvent(existed ? 'MODIFIED' : 'ADDED', structuredClone(obj));
    return obj;
  }
  remove(name: string, emit = true): void {
    this.rv += 1;
    const obj = this.objects.get(name);
    this.objects.delete(name);
    if (emit && obj) this.current?.onEvent('DELETED', { ...obj, metadata: { ...obj.metadata, resourceVersion: String(this.rv) } });
  }
}

const fast = { backoff: { baseMs: 5, maxMs: 20, jitter: 0 }, stalenessMs: 60_000, relistIntervalMs: 0 };

function recorder(informer: Informer): string[] {
  const seen: string[] = [];
  informer.on((type, obj) => seen.push(`${type}:${obj.metadata?.name}`));
  return seen;
}

t.test('initial list, then watch events keep the cache current; managedFields are dropped', async (tt) => {
  const api = new FakeApi();
  api.put('a', {}, false);
  const inf = new Informer('test', { version: 'v1', plural: 'things' }, { watchFn: api.watchFn, listFn: api.listFn, timings: fast });
  const seen = recorder(inf);
  inf.start();
  tt.teardown(() => inf.stop());
  tt.equal(await inf.waitForSync(), true);
  tt.same(seen, ['add:a']);
  tt.equal((inf.get('ns/a')?.metadata as Record<string, unknown>).managedFields, undefined);
  await until(() => api.current !== undefined, 'watch', 3000, 2);
  tt.equal(api.current!.query.resourceVersion, '101', 'watches from the list resourceVersion');
  tt.equal(api.current!.query.allowWatchBookmarks, true);
  api.put('b');
  api.put('a', { spec: { x: 1 } });
  api.remove('b');
  tt.same(seen, ['add:a', 'add:b', 'update:a', 'delete:b']);
  tt.same(inf.keys(), ['ns/a']);
  api.current!.onEvent('BOOKMARK', { metadata: { resourceVersion: '999' } });
  api.current!.onDone(null); // server closed the watch normally
  await until(() => api.watches.length === 2 && api.current !== undefined, 're-watch', 3000, 2);
  tt.equal(api.current!.query.resourceVersion, '999', 'resumes from the bookmark');
  tt.equal(api.lists, 1, 'no relist for a normal close');
  tt.equal(inf.stats.errors, 0);
});

t.test('410 Gone relists, and the relist diff fires the missed add/update/delete', async (tt) => {
  const api = new FakeApi();
  api.put('keep', {}, false);
  api.put('change', {}, false);
  api.put('vanish', {}, false);
  const inf = new Informer('test', { version: 'v1', plural: 'things' }, { watchFn: api.watchFn, listFn: api.listFn, timings: fast });
  const seen = recorder(inf);
  inf.start();
  tt.teardown(() => inf.stop());
  await inf.waitForSync();
  await until(() => api.current !== undefined, 'watch', 3000, 2);
  seen.length = 0;
  // Changes happen while the watch is broken: the informer never sees them as events.
  api.put('change', { spec: { v: 2 } }, false);
  api.remove('vanish', false);
  api.put('new', {}, false);
  api.current!.onEvent('ERROR', { code: 410, message: 'too old resource version' } as unknown as KubeObject);
  await until(() => api.lists === 2, 'relist', 3000, 2);
  await until(() => seen.length === 3, 'diff events', 3000, 2);
  tt.same(seen.sort(), ['add:new', 'delete:vanish', 'update:change']);
  tt.same(inf.keys().sort(), ['ns/change', 'ns/keep', 'ns/new']);
  tt.equal(inf.stats.goneRelists, 1);
  tt.equal(inf.stats.errors, 0, '410 is not an error');
});

t.test('a 410 status on connect relists too', async (tt) => {
  const api = new FakeApi();
  const inf = new Informer('test', { version: 'v1', plural: 'things' }, { watchFn: api.watchFn, listFn: api.listFn, timings: fast });
  inf.start();
  tt.teardown(() => inf.stop());
  await inf.waitForSync();
  await until(() => api.current !== undefined, 'watch', 3000, 2);
  api.current!.onDone(Object.assign(new Error('Gone'), { statusCode: 410 }));
  await until(() => api.lists === 2, 'relist', 3000, 2);
  tt.equal(inf.stats.goneRelists, 1);
});

t.test('other errors: restart with backoff for ever, cache kept, health reflects it', async (tt) => {
  let now = 0;
  const api = new FakeApi();
  api.put('a', {}, false);
  const inf = new Informer(
    'test',
    { version: 'v1', plural: 'things' },
    { watchFn: api.watchFn, listFn: api.listFn, timings: fast, now: () => now },
  );
  const errors: unknown[] = [];
  inf.onError((e) => errors.push(e));
  inf.start();
  tt.teardown(() => inf.stop());
  await inf.waitForSync();
  await until(() => api.current !== undefined, 'watch', 3000, 2);
  api.watchFailures = 3;
  now = 1000;
  api.current!.onDone(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }));
  await until(() => errors.length >= 1, 'first error', 3000, 2);
  tt.equal(inf.stats.failingSince, 1000);
  tt.equal(inf.healthy(5000), true, 'within the grace period');
  now = 10_000;
  tt.equal(inf.healthy(5000), false, 'failing for longer than the grace period');
  await until(() => api.watches.length === 5 && api.current !== undefined, 'recovered after 3 more failures', 3000, 2);
  tt.equal(inf.stats.errors, 4);
  tt.equal(inf.stats.failingSince, undefined, 'healthy again once connected');
  tt.equal(inf.healthy(5000), true);
  tt.same(inf.keys(), ['ns/a'], 'cache survived');
  tt.equal(api.lists, 1, 'resumed from the resourceVersion, no relist needed');
});

t.test('list failures are retried too', async (tt) => {
  const api = new FakeApi();
  api.listFailures = 2;
  api.put('a', {}, false);
  const inf = new Informer('test', { version: 'v1', plural: 'things' }, { watchFn: api.watchFn, listFn: api.listFn, timings: fast });
  inf.start();
  tt.teardown(() => inf.stop());
  tt.equal(await inf.waitForSync(), true);
  tt.equal(api.lists, 3);
  tt.equal(inf.stats.errors, 2);
  tt.equal(inf.hasSynced(), true);
});

t.test("client-node's inactivity TimeoutError is a quiet reconnect, not an error", async (tt) => {
  const api = new FakeApi();
  const inf = new Informer('test', { version: 'v1', plural: 'things' }, { watchFn: api.watchFn, listFn: api.listFn, timings: fast });
  inf.start();
  tt.teardown(() => inf.stop());
  await inf.waitForSync();
  await until(() => api.current !== undefined, 'watch', 3000, 2);
  api.put('x');
  api.current!.onDone(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
  await until(() => api.watches.length === 2 && api.current !== undefined, 'reconnect', 3000, 2);
  tt.equal(inf.stats.errors, 0);
  tt.equal(inf.stats.reconnects, 1);
});

t.test('staleness watchdog: a watch that silently delivers nothing is replaced by a relist', async (tt) => {
  let now = 0;
  const api = new FakeApi();
  const inf = new Informer(
    'test',
    { version: 'v1', plural: 'things' },
    { watchFn: api.watchFn, listFn: api.listFn, timings: { ...fast, stalenessMs: 1000 }, now: () => now },
  );
  inf.start();
  tt.teardown(() => inf.stop());
  await inf.waitForSync();
  await until(() => api.current !== undefined, 'watch', 3000, 2);
  api.put('missed', {}, false); // never delivered
  now = 5000; // no activity for 5 s > 1 s
  await until(() => inf.stats.staleRestarts === 1, 'watchdog', 5000, 2);
  await until(() => inf.get('ns/missed') !== undefined, 'relist picked it up', 3000, 2);
  tt.ok(api.watches[0]!.aborted, 'the silent watch was aborted');
  tt.equal(api.lists, 2);
});

t.test('periodic relist', async (tt) => {
  let now = 0;
  const api = new FakeApi();
  const inf = new Informer(
    'test',
    { version: 'v1', plural: 'things' },
    { watchFn: api.watchFn, listFn: api.listFn, timings: { ...fast, stalenessMs: 1000, relistIntervalMs: 2000 }, now: () => now },
  );
  inf.start();
  tt.teardown(() => inf.stop());
  await inf.waitForSync();
  await until(() => api.current !== undefined, 'watch', 3000, 2);
  now = 500;
  api.put('x'); // activity, so the staleness watchdog stays quiet
  now = 2500;
  api.put('y');
  await until(() => api.lists === 2, 'periodic relist', 5000, 2);
  tt.equal(inf.stats.staleRestarts, 0);
});

t.test('stop: no error callbacks, no restarts', async (tt) => {
  const api = new FakeApi();
  const inf = new Informer('test', { version: 'v1', plural: 'things' }, { watchFn: api.watchFn, listFn: api.listFn, timings: fast });
  const errors: unknown[] = [];
  inf.onError((e) => errors.push(e));
  inf.start();
  await inf.waitForSync();
  await until(() => api.current !== undefined, 'watch', 3000, 2);
  const w = api.current!;
  // The control: a running informer with the same timings, whose watch ends too, restarts it.
  const controlApi = new FakeApi();
  const control = new Informer(
    'control',
    { version: 'v1', plural: 'things' },
    { watchFn: controlApi.watchFn, listFn: controlApi.listFn, timings: fast },
  );
  control.start();
  tt.teardown(() => control.stop());
  await control.waitForSync();
  await until(() => controlApi.current !== undefined, 'the control watch', 3000, 2);
  await inf.stop();
  tt.ok(w.aborted);
  w.onDone(new DOMException('aborted', 'AbortError'));
  controlApi.current!.onDone(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
  await until(() => controlApi.watches.length === 2, 'the control to restart its watch', 3000, 2);
  tt.same(errors, []);
  tt.equal(api.watches.length, 1);
  tt.equal(inf.healthy(1000), false, 'a stopped informer is not healthy');
});

t.test('list(namespace) follows adds, deletes and relists, namespace by namespace', async (tt) => {
  const api = new FakeApi();
  const at = (namespace: string, name: string): KubeObject => ({ metadata: { name, namespace, resourceVersion: String(++api.rv) } });
  api.objects.set('x/a', at('x', 'a'));
  api.objects.set('y/b', at('y', 'b'));
  const inf = new Informer('test', { version: 'v1', plural: 'things' }, { watchFn: api.watchFn, listFn: api.listFn, timings: fast });
  inf.start();
  tt.teardown(() => inf.stop());
  await inf.waitForSync();
  await until(() => api.current !== undefined, 'watch', 3000, 2);
  const names = (ns?: string) => inf.list(ns).map((o) => o.metadata?.name);
  tt.same([names('x'), names('y'), names('z'), names().length], [['a'], ['b'], [], 2], 'each namespace its own');
  api.current!.onEvent('ADDED', at('x', 'c'));
  api.current!.onEvent('MODIFIED', at('x', 'a'));
  api.current!.onEvent('DELETED', at('y', 'b'));
  tt.same([names('x'), names('y')], [['a', 'c'], []], 'an update keeps its place; a namespace emptied lists nothing');
  // Missed while the watch was broken: the relist's diff updates the namespaces too.
  api.objects.clear();
  api.objects.set('x/c', at('x', 'c'));
  api.objects.set('z/d', at('z', 'd'));
  api.current!.onEvent('ERROR', { code: 410, message: 'too old resource version' } as unknown as KubeObject);
  await until(() => api.lists === 2 && names('z').length === 1, 'relist', 3000, 2);
  tt.same([names('x'), names('y'), names('z'), names().sort()], [['c'], [], ['d'], ['c', 'd']]);
});
