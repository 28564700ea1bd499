// A gate on the children an owner gets, by the owner's UID: one reconciler closes it (and waits for the
// creates under way) before it acts on what exists, the others create only through it. On the
// controller's context (ctx.creationGate), one per process.
//
// raykeeper's use: it orders the pod operator's creates against the GCS-FT cleanup of the same cluster.
//
// The operator decides from its informer cache; the cleanup decides from the deleting cluster's pods (as
// the pod cache shows them when this gate says it is complete, else listed from the API) before it creates
// the Job. Without the gate, a create the operator started from a cache that did not yet show the
// deletion could land after the cleanup saw "no head pod" and created its Job: the new head's GCS
// then writes into Redis after the cleanup (a real-node CI run left `RAY<ns>@KV` behind that way).
//
// The cleanup closes the gate of the cluster's UID (a new cluster of the same name has another) and
// waits for the creates already under way before it looks at the pods: from then on the operator starts no
// create for it. The gate stays closed for KEEP_CLOSED_MS after the last close, longer than any
// operator pass that read the cluster before it was deleted can still be running. What this cannot
// cover, the cleanup's re-check of the head pod (in its pod cache) once its Job finished does (src/gcsft/decide.ts):
// operators in other processes (KubeRay beside us), and a create whose request timed out here but
// that the API server still committed.
//
// Once `trackCreates()` was called (by whoever feeds `observe` from the children's informer), the gate
// also knows whether that cache shows this process's creates (`cacheShowsCreates`): true only for an
// owner this process has created children for (pods an earlier leader or another replica made are not
// known here: the cleanup lists those from the API), when each child a create returned has been reported
// by the informer (`observe`, also when the watch event came first) and no create of it failed (a
// failed create may have been committed). Records go with the closed gate of their owner, or
// KEEP_CLOSED_MS after their last create; at most MAX_OWNERS_CREATED_FOR owners are remembered as
// created for (the oldest forgotten: that only costs a pod list).
export type GatedResult<T> = { created: true; value: T } | { created: false };

export const KEEP_CLOSED_MS = 10 * 60_000;
export const MAX_OWNERS_CREATED_FOR = 50_000;

/** A child whose create failed: it may exist all the same, so the cache never shows "all of them". */
const UNKNOWN = '\u0000unknown';

function childUid(value: unknown): string | undefined {
  const uid = (value as { metadata?: { uid?: unknown } } | null)?.metadata?.uid;
  return typeof uid === 'string' && uid !== '' ? uid : undefined;
}

export class CreationGate {
  /** UID of a deleting cluster -> when its gate was closed (ms), oldest first. */
  private readonly closed = new Map<string, number>();
  private readonly underway = new Map<string, Set<Promise<unknown>>>();
  /** Creates are recorded for `cacheShowsCreates` (someone observes the children's informer). */
  private tracking = false;
  /** Owner UIDs this process has created children for, oldest first. */
  private readonly createdFor = new Set<string>();
  /** Owner UID -> UIDs of the children this process created that the cache has not shown yet (UNKNOWN: a create failed), and the last create's time; oldest first. */
  private readonly unseen = new Map<string, { children: Set<string>; at: number }>();
  /** Owner UID -> children the cache showed while a create of that owner was under way (their create had not returned). */
  private readonly seenEarly = new Map<string, Set<string>>();
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
      const value = await p;
      const child = childUid(value);
      if (this.tracking) this.record(uid, child !== undefined && this.seenEarly.get(uid)?.delete(child) ? undefined : (child ?? UNKNOWN));
      return { created: true, value };
    } catch (err) {
      if (this.tracking) this.record(uid, UNKNOWN); // the API server may have committed it all the same
      throw err;
    } finally {
      set.delete(p);
      if (set.size === 0 && this.underway.get(uid) === set) {
        this.underway.delete(uid);
        this.seenEarly.delete(uid);
      }
    }
  }

  /** From now on creates are recorded: the caller feeds `observe` from the children's informer. */
  trackCreates(): void {
    this.tracking = true;
  }

  /** The cache (the children's informer) shows child `childUid` of owner `ownerUid`. */
  observe(ownerUid: string, childUid: string): void {
    const u = this.unseen.get(ownerUid);
    if (u?.children.delete(childUid)) {
      if (u.children.size === 0) this.unseen.delete(ownerUid);
      return;
    }
    if (!this.underway.has(ownerUid)) return;
    let early = this.seenEarly.get(ownerUid);
    if (!early) this.seenEarly.set(ownerUid, (early = new Set()));
    early.add(childUid);
  }

  /** True when this process created children for this owner and the cache shows every one (none failed half-way). */
  cacheShowsCreates(ownerUid: string): boolean {
    return this.createdFor.has(ownerUid) && !this.unseen.has(ownerUid) && !this.underway.has(ownerUid);
  }

  /** A create of this process for `ownerUid` ended; `unseen`: the child the cache has not shown yet (undefined: it has). */
  private record(ownerUid: string, unseen: string | undefined): void {
    const now = this.now();
    for (const [old, u] of this.unseen) {
      if (now - u.at < KEEP_CLOSED_MS) break;
      this.unseen.delete(old);
      this.createdFor.delete(old); // not known complete any more
    }
    if (unseen !== undefined) {
      const u = this.unseen.get(ownerUid);
      this.unseen.delete(ownerUid); // re-inserted last: the map stays in order of the last create
      this.unseen.set(ownerUid, { children: u ? u.children.add(unseen) : new Set([unseen]), at: now });
    }
    this.createdFor.delete(ownerUid);
    this.createdFor.add(ownerUid);
    if (this.createdFor.size > MAX_OWNERS_CREATED_FOR) this.createdFor.delete(this.createdFor.values().next().value!);
  }

  /** Closes the gate of this cluster; resolves once the creates started before have ended (either way). */
  async close(uid: string): Promise<void> {
    const now = this.now();
    for (const [old, at] of this.closed) {
      if (now - at < KEEP_CLOSED_MS) break;
      this.closed.delete(old);
      this.unseen.delete(old);
      this.createdFor.delete(old);
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

  /** How many owners have children the cache has not shown (for tests). */
  get unseenOwners(): number {
    return this.unseen.size;
  }
}
