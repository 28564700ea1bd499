// Which cached copies are known to be stale: the resourceVersions this process's own successful writes
// replaced. A reconcile that starts from such a copy (the watch has not yet brought our write back) can
// only earn a 409 on its status write, or act on an older spec; it skips instead, and the watch event of
// the newer version queues the object again. KubeRay (controller-runtime) reconciles these copies and
// counts the 409s as reconcile errors; at 1,000 RayClusters that was the bulk of ours (issue 29).
//
// resourceVersions are opaque, so nothing here orders them: a copy is stale only when its version is one
// a write of ours started from. Versions only move forward in a cache, so the first copy seen at any
// other version means the cache has caught up: the object's entries are dropped then. The map is bounded
// (objects deleted before that are evicted oldest first).
export const MAX_TRACKED_OBJECTS = 10_000;
const MAX_VERSIONS_PER_OBJECT = 8;

export class SupersededVersions {
  private readonly byObject = new Map<string, string[]>();

  /** A write that started from `resourceVersion` of `object` (its API path) succeeded. */
  replaced(object: string, resourceVersion: string | undefined): void {
    if (!resourceVersion) return;
    const versions = this.byObject.get(object) ?? [];
    if (!versions.includes(resourceVersion)) versions.push(resourceVersion);
    if (versions.length > MAX_VERSIONS_PER_OBJECT) versions.shift();
    this.byObject.delete(object); // re-inserted last: eviction drops the least recently written
    this.byObject.set(object, versions);
    if (this.byObject.size > MAX_TRACKED_OBJECTS) this.byObject.delete(this.byObject.keys().next().value!);
  }

  /**
   * True when a copy of `object` at `resourceVersion` predates a write of ours. Otherwise the copy has
   * caught up (or was never written by us), and the object's entries are forgotten.
   */
  isStale(object: string, resourceVersion: string | undefined): boolean {
    const versions = this.byObject.get(object);
    if (versions === undefined) return false;
    if (resourceVersion !== undefined && versions.includes(resourceVersion)) return true;
    this.byObject.delete(object);
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
