// Orders the pod operator's creates against the GCS-FT cleanup of the same cluster, in this process.
//
// The operator decides from its informer cache; the cleanup reads the deleting cluster and its pods
// from the API. Without this, a create the operator started from a cache that did not yet show the
// deletion could land after the cleanup listed "no head pod" and created its Job: the new head's GCS
// then writes into Redis after the cleanup (a real-node CI run left `RAY<ns>@KV` behind that way).
//
// The cleanup closes the gate for the cluster (by UID: a new cluster of the same name is not
// affected) and waits for the creates already under way before it lists pods, so every pod it does
// not see is one the operator will never create. Operators in other processes (KubeRay beside us)
// are covered by the cleanup's re-check of the head pod once its Job finished (src/raycluster/decide.ts).
import type { ObjectKey } from '../runtime/reconciler.ts';

export type GatedResult<T> = { created: true; value: T } | { created: false };

export class PodCreationGate {
  /** Cluster key -> UID of the deleting cluster whose pods may no longer be created. */
  private readonly closed = new Map<ObjectKey, string>();
  private readonly underway = new Map<ObjectKey, Set<Promise<unknown>>>();

  /** Runs `create` unless the gate of this cluster (key and UID) is closed. */
  async create<T>(key: ObjectKey, uid: string | undefined, create: () => Promise<T>): Promise<GatedResult<T>> {
    if (uid !== undefined && this.closed.get(key) === uid) return { created: false };
    const p = create();
    let set = this.underway.get(key);
    if (!set) this.underway.set(key, (set = new Set()));
    set.add(p);
    try {
      return { created: true, value: await p };
    } finally {
      set.delete(p);
      if (set.size === 0 && this.underway.get(key) === set) this.underway.delete(key);
    }
  }

  /** Closes the gate for this cluster; resolves once the creates started before have ended (either way). */
  async close(key: ObjectKey, uid: string): Promise<void> {
    this.closed.set(key, uid);
    const set = this.underway.get(key);
    if (set && set.size > 0) await Promise.allSettled([...set]);
  }

  isClosed(key: ObjectKey, uid: string | undefined): boolean {
    return uid !== undefined && this.closed.get(key) === uid;
  }

  /** The cluster is gone: drop what the gate kept for it. */
  forget(key: ObjectKey): void {
    this.closed.delete(key);
  }
}

// One gate per manager: both reconcilers reach it through the informer factory they share.
const gates = new WeakMap<object, PodCreationGate>();

export function podCreationGate(shared: object): PodCreationGate {
  let gate = gates.get(shared);
  if (!gate) gates.set(shared, (gate = new PodCreationGate()));
  return gate;
}
