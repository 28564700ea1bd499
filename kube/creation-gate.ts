// A gate on the children an owner gets, by the owner's UID: one reconciler closes it (and waits for the
// creates under way) before it acts on what exists, the others create only through it. On the
// controller's context (ctx.creationGate), one per process.
//
// raykeeper's use: it orders the pod operator's creates against the GCS-FT cleanup of the same cluster.
//
// The operator decides from its informer cache; the cleanup lists the deleting cluster's pods from the
// API before it creates the Job. Without this, a create the operator started from a cache that did not yet show the
// deletion could land after the cleanup listed "no head pod" and created its Job: the new head's GCS
// then writes into Redis after the cleanup (a real-node CI run left `RAY<ns>@KV` behind that way).
//
// The cleanup closes the gate of the cluster's UID (a new cluster of the same name has another) and
// waits for the creates already under way before it lists pods: from then on the operator starts no
// create for it. The gate stays closed for KEEP_CLOSED_MS after the last close, longer than any
// operator pass that read the cluster before it was deleted can still be running. What this cannot
// cover, the cleanup's re-check of the head pod (in its pod cache) once its Job finished does (src/gcsft/decide.ts):
// operators in other processes (KubeRay beside us), and a create whose request timed out here but
// that the API server still committed.
export type GatedResult<T> = { created: true; value: T } | { created: false };

export const KEEP_CLOSED_MS = 10 * 60_000;

export class CreationGate {
  /** UID of a deleting cluster -> when its gate was closed (ms), oldest first. */
  private readonly closed = new Map<string, number>();
  private readonly underway = new Map<string, Set<Promise<unknown>>>();
  private readonly now: () => number;

  constructor(now: () => number = Date.now) {
    this.now = now;
  }

  /** Runs `create` unless the gate of this cluster is closed. */
  async create<T>(uid: string | undefined, create: () => Promise<T>): Promise<GatedResult<T>> {
    if (uid === undefined) return { created: true, value: await create() };
    if (this.closed.has(uid)) return { created: false };
    const p = create();
    let set = this.underway.get(uid);
    if (!set) this.underway.set(uid, (set = new Set()));
    set.add(p);
    try {
      return { created: true, value: await p };
    } finally {
      set.delete(p);
      if (set.size === 0 && this.underway.get(uid) === set) this.underway.delete(uid);
    }
  }

  /** Closes the gate of this cluster; resolves once the creates started before have ended (either way). */
  async close(uid: string): Promise<void> {
    const now = this.now();
    for (const [old, at] of this.closed) {
      if (now - at < KEEP_CLOSED_MS) break;
      this.closed.delete(old);
    }
    this.closed.delete(uid); // re-inserted last: the map stays in closing order
    this.closed.set(uid, now);
    const set = this.underway.get(uid);
    if (set && set.size > 0) await Promise.allSettled([...set]);
  }

  isClosed(uid: string | undefined): boolean {
    return uid !== undefined && this.closed.has(uid);
  }

  /** How many clusters the gate keeps closed (for tests). */
  get size(): number {
    return this.closed.size;
  }
}
