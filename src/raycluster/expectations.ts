// Creation / deletion expectations (kube-controller-manager's ControllerExpectations, KubeRay's
// rayClusterScaleExpectation): after creating or deleting a pod, the informer cache lags behind; a
// reconcile that trusted it would create a second head pod or delete a worker twice. Each write is
// recorded per (cluster, group) with the pod's name; the group is acted on again only once the cache
// shows every recorded write (the created pod present, the deleted pod gone or terminating), or the
// record is older than the timeout (a watch event lost: the periodic relist repairs the cache).
// In-memory: a new leader starts with none, after its caches have synced.

export type ExpectedAction = 'create' | 'delete';

interface Expectation {
  pod: string;
  action: ExpectedAction;
  at: number;
}

/** What the cache says about a pod name. */
export type CacheLookup = (pod: string) => 'present' | 'terminating' | 'absent';

export const DEFAULT_EXPECTATION_TIMEOUT_MS = 60_000;

export class Expectations {
  private readonly byGroup = new Map<string, Expectation[]>();
  private readonly now: () => number;
  private readonly timeoutMs: number;

  constructor(options: { now?: () => number; timeoutMs?: number } = {}) {
    this.now = options.now ?? Date.now;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_EXPECTATION_TIMEOUT_MS;
  }

  private static key(cluster: string, group: string): string {
    return `${cluster}\u0000${group}`;
  }

  expect(cluster: string, group: string, pod: string, action: ExpectedAction): void {
    const k = Expectations.key(cluster, group);
    const list = this.byGroup.get(k) ?? [];
    list.push({ pod, action, at: this.now() });
    this.byGroup.set(k, list);
  }

  /** True when every recorded write of the group shows in the cache (those that do are forgotten). */
  satisfied(cluster: string, group: string, lookup: CacheLookup): boolean {
    const k = Expectations.key(cluster, group);
    const list = this.byGroup.get(k);
    if (!list) return true;
    const now = this.now();
    const left = list.filter((e) => {
      if (now - e.at >= this.timeoutMs) return false;
      const seen = lookup(e.pod);
      return e.action === 'create' ? seen === 'absent' : seen === 'present';
    });
    if (left.length === 0) this.byGroup.delete(k);
    else this.byGroup.set(k, left);
    return left.length === 0;
  }

  /** Forget a cluster (deleted). */
  forget(cluster: string): void {
    for (const k of this.byGroup.keys()) if (k.startsWith(`${cluster}\u0000`)) this.byGroup.delete(k);
  }

  get size(): number {
    return this.byGroup.size;
  }
}
