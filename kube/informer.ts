// Informers that never die silently.
//
// Built on KubeClient's watch stream (kube/client.ts) with our own list/watch loop, because client-node's
// ListWatch stops for good on any error other than 410 /
// TimeoutError (the caller must notice and restart it), cannot be told to relist, keeps objects
// untransformed (managedFields and all) and fires its error callbacks when stopped. Here:
// - 410 Gone (status or ERROR event) -> relist at once; bookmarks keep the resourceVersion fresh.
// - A watch that ends normally or by the 30 s inactivity timeout -> re-watch from the last
//   resourceVersion at once (that is how quiet resources look, not a failure).
// - Any other error (list or watch) -> retry with exponential backoff + jitter (1 s .. 30 s), for ever;
//   `failingSince` feeds liveness, so a watch that cannot recover makes the pod restart.
// - Staleness watchdog: no connect / event / bookmark for `stalenessMs` -> abort and relist.
// - Periodic relist (`relistIntervalMs`) repairs anything a watch could have missed.
// - A relist diffs the new list against the cache: add / update (resourceVersion changed) / delete
//   handlers fire exactly as if the events had been watched.
import { Backoff, sleep, type BackoffOptions } from './backoff.ts';
import type { KubeClient, ListResult } from './client.ts';
import type { KubeObject, ObjectMeta, ObjectWithMeta } from './model.ts';
import type { Projection } from './resources.ts';

/**
 * What a cache keeps of a dependent's (a pod's, a Job's, a Service's) metadata: what maps it to its owner
 * and tells whether it is going. The rest (managedFields, annotations) is most of an object's bytes.
 */
export function slimMetadata(obj: ObjectWithMeta): ObjectMeta {
  const m = obj.metadata ?? {};
  return {
    name: m.name,
    namespace: m.namespace,
    uid: m.uid,
    resourceVersion: m.resourceVersion,
    labels: m.labels,
    ownerReferences: m.ownerReferences,
    deletionTimestamp: m.deletionTimestamp,
  };
}

export type InformerEventType = 'add' | 'update' | 'delete';
export type InformerHandler<T extends ObjectWithMeta = KubeObject> = (type: InformerEventType, obj: T, old?: T) => void;

/**
 * What an informer lists and watches: a resource (a descriptor of kube/resources.ts, or a spread of one
 * with selectors: `{ ...PODS, labelSelector }`), whose objects are K.
 */
export interface InformerSpec<K = KubeObject> {
  /** API group; '' or undefined for the core group. */
  group?: string;
  version: string;
  plural: string;
  /** The factory's default (`--watch-namespace`) when undefined; '' for every namespace or a cluster-scoped resource. */
  namespace?: string | undefined;
  labelSelector?: string;
  fieldSelector?: string;
  /** Type only, never set (kube/resources.ts). */
  readonly objectType?: K;
}

/** The objects an informer of `S` caches without a projection: its resource's K (KubeObject for a spec written by hand). */
export type CachedOf<S> = S extends { readonly objectType?: infer K extends ObjectWithMeta } ? K : KubeObject;
/** What a projection `J` keeps of each object: its P. */
export type ProjectedOf<J> = J extends Projection<never, infer P> ? P : never;

/** What an informer keeps without a projection: the object less metadata.managedFields. */
const WHOLE: Projection<KubeObject, KubeObject> = { id: '', transform: stripManagedFields };

export interface InformerTimings {
  /** Watch restart backoff after errors. */
  backoff: BackoffOptions;
  /** No connect / event for this long -> abort and relist (watchdog for silently dead watches). */
  stalenessMs: number;
  /** Full relist period (0: never). */
  relistIntervalMs: number;
}

export const DEFAULT_INFORMER_TIMINGS: InformerTimings = {
  backoff: { baseMs: 1_000, maxMs: 30_000, factor: 2, jitter: 0.3 },
  stalenessMs: 5 * 60_000,
  relistIntervalMs: 30 * 60_000,
};

/** One watch connection, the seam tests use to inject failures. */
export type WatchFn = (
  spec: InformerSpec,
  query: Record<string, string | boolean | undefined>,
  onEvent: (type: string, obj: KubeObject) => void,
  onDone: (err: unknown) => void,
) => Promise<{ abort(): void }>;
/** Lists the collection; must apply `transform` to every item (page by page, to bound memory). */
export type ListFn = (signal: AbortSignal, transform: (obj: KubeObject) => KubeObject) => Promise<ListResult<KubeObject>>;

export interface InformerStats {
  reconnects: number;
  relists: number;
  errors: number;
  goneRelists: number;
  staleRestarts: number;
  /** ms epoch of the last watch event, bookmark or list; undefined before the first. */
  lastEventAt: number | undefined;
  /** ms epoch of the last event, connect or list (watchdog input). */
  lastActivityAt: number | undefined;
  /** ms epoch since which every attempt has failed; undefined while healthy. */
  failingSince: number | undefined;
  lastError: string | undefined;
}

export function stripManagedFields(obj: KubeObject): KubeObject {
  if (obj.metadata && 'managedFields' in obj.metadata) {
    const { managedFields: _drop, ...metadata } = obj.metadata;
    return { ...obj, metadata };
  }
  return obj;
}

function keyOf(obj: KubeObject): string {
  const ns = obj.metadata?.namespace;
  const name = obj.metadata?.name ?? '';
  return ns ? `${ns}/${name}` : name;
}

class StopWatch extends Error {}

/**
 * A cache of one resource. `T` is what it holds: the resource's objects, or its projection's (the factory
 * types it from both, kube/resources.ts); the cache holds them as the transform returned them, so the one
 * conversion to `T` is here.
 */
export class Informer<T extends ObjectWithMeta = KubeObject> {
  readonly id: string;
  readonly spec: InformerSpec;
  /** What the cache keeps of each object (WHOLE: the object less managedFields). */
  readonly projection: Projection<KubeObject, KubeObject>;
  readonly stats: InformerStats = {
    reconnects: 0,
    relists: 0,
    errors: 0,
    goneRelists: 0,
    staleRestarts: 0,
    lastEventAt: undefined,
    lastActivityAt: undefined,
    failingSince: undefined,
    lastError: undefined,
  };
  private readonly cache = new Map<string, KubeObject>();
  /**
   * The same objects by namespace: list(namespace) is what reconcilers call for each object they
   * reconcile, and copying the whole cache there made every reconcile cost O(all objects) (issue 29).
   */
  private readonly byNamespace = new Map<string, Map<string, KubeObject>>();
  private readonly handlers: InformerHandler<KubeObject>[] = [];
  private readonly errorHandlers: Array<(err: unknown) => void> = [];
  private readonly syncWaiters: Array<() => void> = [];
  private readonly transform: (obj: KubeObject) => KubeObject;
  private readonly timings: InformerTimings;
  private readonly watchFn: WatchFn;
  private readonly listFn: ListFn;
  private readonly now: () => number;
  private resourceVersion = '';
  private synced = false;
  private running = false;
  private loop: Promise<void> | undefined;
  private stopController = new AbortController();
  private currentWatch: { abort(): void } | undefined;
  private forceRelist = false;
  private abortCurrent: ((reason: string) => void) | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  private lastRelistAt = 0;

  constructor(
    id: string,
    spec: InformerSpec,
    deps: {
      watchFn: WatchFn;
      listFn: ListFn;
      projection?: Projection<KubeObject, KubeObject> | undefined;
      timings?: Partial<InformerTimings>;
      now?: () => number;
    },
  ) {
    this.id = id;
    this.spec = spec;
    this.projection = deps.projection ?? WHOLE;
    this.transform = this.projection.transform;
    this.timings = { ...DEFAULT_INFORMER_TIMINGS, ...deps.timings };
    this.watchFn = deps.watchFn;
    this.listFn = deps.listFn;
    this.now = deps.now ?? Date.now;
  }

  /** Registers a handler for add / update / delete (also fired by relist diffs). */
  on(handler: InformerHandler<T>): void {
    this.handlers.push(handler as unknown as InformerHandler<KubeObject>);
  }
  onError(handler: (err: unknown) => void): void {
    this.errorHandlers.push(handler);
  }

  get(key: string): T | undefined {
    return this.cache.get(key) as T | undefined;
  }
  getByName(namespace: string | undefined, name: string): T | undefined {
    return this.get(namespace ? `${namespace}/${name}` : name);
  }
  list(namespace?: string): T[] {
    const objects = namespace === undefined ? this.cache : this.byNamespace.get(namespace);
    return objects ? ([...objects.values()] as unknown as T[]) : [];
  }
  keys(): string[] {
    return [...this.cache.keys()];
  }
  get size(): number {
    return this.cache.size;
  }
  hasSynced(): boolean {
    return this.synced;
  }
  get isRunning(): boolean {
    return this.running;
  }

  /** Healthy: running, and not failing continuously for longer than `graceMs`. */
  healthy(graceMs: number): boolean {
    if (!this.running) return false;
    const since = this.stats.failingSince;
    return since === undefined || this.now() - since <= graceMs;
  }

  /** Resolves once the first list has been cached (or the signal aborts: resolves false). */
  waitForSync(signal?: AbortSignal): Promise<boolean> {
    if (this.synced) return Promise.resolve(true);
    if (signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const onAbort = (): void => resolve(false);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.syncWaiters.push(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve(true);
      });
    });
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.stopController = new AbortController();
    this.loop = this.run();
    this.watchdog = setInterval(() => this.checkStaleness(), Math.max(250, Math.min(this.timings.stalenessMs / 4, 30_000)));
    this.watchdog.unref?.();
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    if (this.watchdog) clearInterval(this.watchdog);
    this.stopController.abort();
    this.abortCurrent?.('stopped');
    await this.loop;
  }

  /** Forces a relist now (e.g. after suspecting the cache); the watch restarts after it. */
  relist(): void {
    this.forceRelist = true;
    this.abortCurrent?.('relist requested');
  }

  private checkStaleness(): void {
    const now = this.now();
    const last = this.stats.lastActivityAt;
    if (this.abortCurrent && last !== undefined && now - last > this.timings.stalenessMs) {
      this.stats.staleRestarts += 1;
      this.forceRelist = true;
      this.abortCurrent('stale: no watch activity');
    } else if (this.abortCurrent && this.timings.relistIntervalMs > 0 && now - this.lastRelistAt > this.timings.relistIntervalMs) {
      this.forceRelist = true;
      this.abortCurrent('periodic relist');
    }
  }

  private emit(type: InformerEventType, obj: KubeObject, old?: KubeObject): void {
    for (const h of this.handlers) {
      try {
        h(type, obj, old);
      } catch {
        // a handler bug must not break the informer
      }
    }
  }

  private markActivity(event: boolean): void {
    const now = this.now();
    this.stats.lastActivityAt = now;
    if (event) this.stats.lastEventAt = now;
  }

  private store(key: string, obj: KubeObject): void {
    this.cache.set(key, obj);
    const ns = obj.metadata?.namespace;
    if (ns === undefined) return;
    let objects = this.byNamespace.get(ns);
    if (!objects) this.byNamespace.set(ns, (objects = new Map()));
    objects.set(key, obj);
  }

  private remove(key: string, obj: KubeObject): void {
    this.cache.delete(key);
    const ns = obj.metadata?.namespace;
    const objects = ns === undefined ? undefined : this.byNamespace.get(ns);
    if (!objects) return;
    objects.delete(key);
    if (objects.size === 0) this.byNamespace.delete(ns!);
  }

  private async doList(): Promise<void> {
    const result = await this.listFn(this.stopController.signal, this.transform);
    if (!this.running) return;
    const seen = new Set<string>();
    for (const obj of result.items) {
      const key = keyOf(obj);
      seen.add(key);
      const old = this.cache.get(key);
      this.store(key, obj);
      if (!old) this.emit('add', obj);
      else if (old.metadata?.resourceVersion !== obj.metadata?.resourceVersion) this.emit('update', obj, old);
    }
    for (const [key, old] of [...this.cache]) {
      if (!seen.has(key)) {
        this.remove(key, old);
        this.emit('delete', old);
      }
    }
    this.resourceVersion = result.resourceVersion;
    this.stats.relists += 1;
    this.lastRelistAt = this.now();
    this.markActivity(true);
    if (!this.synced) {
      this.synced = true;
      for (const w of this.syncWaiters.splice(0)) w();
    }
  }

  /** One watch connection; resolves with why it ended. */
  private watchOnce(): Promise<'closed' | 'gone' | 'aborted'> {
    return new Promise((resolve, reject) => {
      let finished = false;
      let gone = false;
      const finish = (outcome: 'closed' | 'gone' | 'aborted' | Error): void => {
        if (finished) return;
        finished = true;
        this.abortCurrent = undefined;
        const w = this.currentWatch;
        this.currentWatch = undefined;
        try {
          w?.abort();
        } catch {
          // already closed
        }
        if (outcome instanceof Error) reject(outcome);
        else resolve(outcome);
      };
      this.abortCurrent = () => finish('aborted');
      const query: Record<string, string | boolean | undefined> = {
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
        labelSelector: this.spec.labelSelector,
        fieldSelector: this.spec.fieldSelector,
      };
      const onEvent = (type: string, raw: KubeObject): void => {
        if (finished) return;
        if (type === 'ERROR') {
          const status = raw as { code?: number; message?: string };
          if (status.code === 410) {
            gone = true;
            finish('gone');
          } else {
            finish(Object.assign(new Error(`watch ERROR event: ${status.message ?? JSON.stringify(raw)}`), { statusCode: status.code }));
          }
          return;
        }
        const rv = raw.metadata?.resourceVersion;
        if (type === 'BOOKMARK') {
          if (rv) this.resourceVersion = rv;
          this.markActivity(true);
          return;
        }
        const obj = this.transform(raw);
        const key = keyOf(obj);
        if (type === 'ADDED' || type === 'MODIFIED') {
          const old = this.cache.get(key);
          this.store(key, obj);
          if (!old) this.emit('add', obj);
          else if (old.metadata?.resourceVersion !== rv) this.emit('update', obj, old);
        } else if (type === 'DELETED') {
          const old = this.cache.get(key);
          this.remove(key, old ?? obj);
          this.emit('delete', old ?? obj);
        }
        if (rv) this.resourceVersion = rv;
        this.markActivity(true);
        this.stats.failingSince = undefined;
      };
      const onDone = (err: unknown): void => {
        if (finished) return;
        if (gone) return finish('gone');
        if (!err) return finish('closed');
        const e = err as { statusCode?: number; code?: number; name?: string };
        if (e.statusCode === 410 || e.code === 410) return finish('gone');
        if (e.name === 'TimeoutError') return finish('closed'); // the stream's inactivity timeout: quiet resource
        if (e.name === 'AbortError' && !this.running) return finish('aborted');
        finish(err instanceof Error ? err : new Error(String(err)));
      };
      this.watchFn(this.spec, query, onEvent, onDone).then(
        (handle) => {
          if (finished) {
            handle.abort();
            return;
          }
          this.currentWatch = handle;
          this.markActivity(false);
          this.stats.failingSince = undefined;
        },
        (err: unknown) => finish(err instanceof Error ? err : new Error(String(err))),
      );
    });
  }

  private async run(): Promise<void> {
    const backoff = new Backoff(this.timings.backoff);
    let connectedBefore = false;
    while (this.running) {
      try {
        if (!this.resourceVersion || this.forceRelist) {
          this.forceRelist = false;
          await this.doList();
          if (!this.running) break;
        }
        if (connectedBefore) this.stats.reconnects += 1;
        connectedBefore = true;
        const startedAt = this.now();
        const eventsBefore = this.stats.lastEventAt;
        const outcome = await this.watchOnce();
        if (outcome === 'gone') {
          this.stats.goneRelists += 1;
          this.resourceVersion = '';
        }
        if (outcome !== 'aborted' && this.now() - startedAt < 1_000 && this.stats.lastEventAt === eventsBefore) {
          // Ended at once without delivering anything: do not hammer the API server.
          await sleep(backoff.next(), this.stopController.signal);
        } else {
          backoff.reset();
        }
      } catch (err) {
        if (!this.running || err instanceof StopWatch) break;
        this.stats.errors += 1;
        this.stats.lastError = err instanceof Error ? err.message : String(err);
        this.stats.failingSince ??= this.now();
        if ((err as { statusCode?: number }).statusCode === 410) this.resourceVersion = '';
        for (const h of this.errorHandlers) {
          try {
            h(err);
          } catch {
            // ignore
          }
        }
        await sleep(backoff.next(), this.stopController.signal);
      }
    }
  }
}

/** Creates and shares informers; one per (resource, namespace, selectors, projection id). */
export class InformerFactory {
  private readonly informers = new Map<string, Informer<KubeObject>>();
  private readonly kube: KubeClient;
  private readonly timings: Partial<InformerTimings>;
  private readonly defaultNamespace: string | undefined;
  private started = false;

  constructor(kube: KubeClient, options: { timings?: Partial<InformerTimings>; namespace?: string | undefined } = {}) {
    this.kube = kube;
    this.timings = options.timings ?? {};
    this.defaultNamespace = options.namespace;
  }

  /**
   * The shared informer of a resource's objects (K), or of their `projection` (P). `namespace` defaults to
   * the process's `--watch-namespace`; pass `namespace: ''` explicitly for an all-namespaces or
   * cluster-scoped informer. Generic in the spec and the projection, not in K or P: the cache's type comes
   * from them (kube/resources.ts), never from the caller.
   */
  get<S extends InformerSpec<ObjectWithMeta>>(spec: S): Informer<CachedOf<S>>;
  get<S extends InformerSpec<ObjectWithMeta>, J extends Projection<CachedOf<S>, ObjectWithMeta>>(
    spec: S,
    projection: J,
  ): Informer<ProjectedOf<J>>;
  get(spec: InformerSpec<ObjectWithMeta>, projection?: Projection<never, ObjectWithMeta>): Informer<ObjectWithMeta> {
    const namespace = spec.namespace === undefined ? this.defaultNamespace : spec.namespace || undefined;
    // What the wire carries: any object of the resource.
    const full: InformerSpec<KubeObject> = {
      group: spec.group,
      version: spec.version,
      plural: spec.plural,
      namespace,
      labelSelector: spec.labelSelector,
      fieldSelector: spec.fieldSelector,
    };
    const id = [
      full.group ?? '',
      full.version,
      full.plural,
      namespace ?? '*',
      full.labelSelector ?? '',
      full.fieldSelector ?? '',
      projection?.id ?? '',
    ].join('|');
    let informer = this.informers.get(id);
    if (!informer) {
      const watchFn: WatchFn = (watched, query, onEvent, onDone) => this.kube.watch(watched, query, onEvent, onDone);
      const listFn: ListFn = (signal, transform) =>
        this.kube.listMapped(full, transform, {
          labelSelector: full.labelSelector,
          fieldSelector: full.fieldSelector,
          signal,
        });
      // The one place a projection's K and P meet the untyped objects of the wire.
      const stored = projection as unknown as Projection<KubeObject, KubeObject> | undefined;
      informer = new Informer(id, full, { watchFn, listFn, projection: stored, timings: this.timings });
      this.informers.set(id, informer);
      if (this.started) informer.start();
    }
    return informer; // shared: every caller of this (resource, selectors, projection) reads it as the overloads say
  }

  all(): Informer[] {
    return [...this.informers.values()];
  }

  start(): void {
    this.started = true;
    for (const i of this.informers.values()) i.start();
  }

  async stop(): Promise<void> {
    this.started = false;
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
  }

  /** Resolves true when every informer has listed once (false if the signal aborts first). */
  async waitForSync(signal?: AbortSignal): Promise<boolean> {
    const results = await Promise.all([...this.informers.values()].map((i) => i.waitForSync(signal)));
    return results.every(Boolean);
  }
}
