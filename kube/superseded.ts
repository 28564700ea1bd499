// Which cached copies are known to be stale: the resourceVersions this process's own successful writes
// replaced. A reconcile that starts from such a copy (the watch has not yet brought our write back) can
// only earn a 409 on its status write, or act on an older spec; it skips instead, and the watch event of
// the newer version queues the object again. KubeRay (controller-runtime) reconciles these copies and
// counts the 409s as reconcile errors; at 1,000 RayClusters that was the bulk of ours (issue 29).
//
// resourceVersions are opaque, so nothing here orders them: a copy is stale only when its version is one
// a write of ours started from, and that write produced a new version (a write that changed nothing keeps
// the version and sends no watch event: recording it would skip the object for good). The entries go
// when the cache shows the version our last write produced (caught up), when the object is gone, or
// oldest first past a bound. A copy at any other version is not known stale: it may be older than a copy
// we wrote from (read fresh from the API) or newer (another writer after us).
export const MAX_TRACKED_OBJECTS = 10_000;
const MAX_VERSIONS_PER_OBJECT = 8;

interface Written {
  /** Versions our writes started from. */
  replaced: string[];
  /** The version our last write produced. */
  produced: string;
}

export class SupersededVersions {
  private readonly byObject = new Map<string, Written>();

  /** A write to `object` (its API path) that started from version `from` succeeded and produced `to`. */
  replaced(object: string, from: string | undefined, to: string | undefined): void {
    if (!from || !to || from === to) return;
    const w = this.byObject.get(object) ?? { replaced: [], produced: to };
    if (!w.replaced.includes(from)) w.replaced.push(from);
    if (w.replaced.length > MAX_VERSIONS_PER_OBJECT) w.replaced.shift();
    w.produced = to;
    this.byObject.delete(object); // re-inserted last: eviction drops the least recently written
    this.byObject.set(object, w);
    if (this.byObject.size > MAX_TRACKED_OBJECTS) this.byObject.delete(this.byObject.keys().next().value!);
  }

  /** True when a copy of `object` at `resourceVersion` predates a write of ours. */
  isStale(object: string, resourceVersion: string | undefined): boolean {
    const w = this.byObject.get(object);
    if (w === undefined || resourceVersion === undefined) return false;
    if (w.replaced.includes(resourceVersion)) return true;
    if (resourceVersion === w.produced) this.byObject.delete(object); // caught up
    return false;
  }

  /** The object is gone. */
  forget(object: string): void {
    this.byObject.delete(object);
  }

  get size(): number {
    return this.byObject.size;
  }
}
