// The contract between the controller runtime and every reconciler (RayCluster, RayJob, ...).
//
// HOW TO ADD A RECONCILER
//   1. Write a module exporting a `ReconcilerModule` (below): its name, optional CLI flags, and
//      `create(ctx, flags)` returning a `ControllerRegistration` (the reconciler + what triggers it).
//   2. Add ONE line to `RECONCILER_MODULES` in controller/reconcilers.ts.
//   The runtime then gives it its own work queue and workers, feeds it keys from the informers it
//   listed, runs it only while this replica holds the leader Lease, and exposes its metrics.
//
// Example (a RayJob reconciler):
//
//   export const rayJobModule: ReconcilerModule = {
//     name: 'rayjob',
//     flags: { 'rayjob-grace-seconds': { type: 'string' } },
//     create(ctx, flags) {
//       const jobs = ctx.informers.get(RAYJOBS);                                   // Informer<RayJob>
//       const submitters = ctx.informers.get({ ...JOBS, labelSelector: 'app.kubernetes.io/created-by=rayjob' });
//       return {
//         name: 'rayjob',
//         reconciler: { reconcile: (key, signal) => reconcileRayJob(ctx, jobs, key, signal) },
//         watches: [
//           { informer: jobs },                                   // key = the object's own key
//           { informer: submitters, toKeys: ownerKeys('RayJob') }, // key = the owning RayJob's key
//         ],
//       };
//     },
//   };
import type { CreationGate } from './creation-gate.ts';
import type { KubeCredentials } from './kubeconfig.ts';
import type { Logger } from './logger.ts';
import type { Registry } from './metrics.ts';
import type { EventRecorder } from './events.ts';
import type { Informer, InformerFactory } from './informer.ts';
import type { ObjectWithMeta } from './model.ts';
import type { KubeClient } from './client.ts';

/**
 * A work-queue key: "namespace/name" for namespaced objects, "name" for cluster-scoped ones.
 * Build and split keys with `objectKey` / `splitKey`, never by hand.
 */
export type ObjectKey = string;

/** What a reconcile asks of the runtime when it returns normally. */
export interface ReconcileResult {
  /**
   * Reconcile this key again after this many milliseconds (level-triggered polling, e.g. "wait for
   * the Job"). Absent or <= 0: no timed requeue; the key comes back on the next watch event or resync.
   * An event for the key before the delay elapses reconciles it earlier (the queue deduplicates).
   */
  requeueAfterMs?: number;
}

/**
 * A Reconciler brings ONE object, named by its key, towards its desired state.
 *
 * Contract (the runtime guarantees the first three; the reconciler must honour the rest):
 * - Never concurrent for the same key: at most one `reconcile(key)` is in flight per key, across all
 *   workers. Different keys run in parallel (`--workers`, default 4, per reconciler).
 * - Keys are deduplicated: ten events for one object while it waits in the queue cause ONE call.
 * - Called only while this replica is the leader (when `--leader-elect` is on), or holds the shard of
 *   the key's namespace (`--shards`). On leadership or shard loss or SIGTERM, `signal` is aborted; finish or abandon quickly (the runtime waits a bounded time). Once the
 *   lease may be another's, `ctx.kube` sends no write (NotLeaderError): let it propagate (or keep it
 *   as `cause`), the runtime ends the reconcile without a retry.
 * - LEVEL-TRIGGERED: the key is all you get. Read the current state (informer cache for cheap reads,
 *   the API via `ctx.kube` when acting on something a stale cache could get wrong), decide, act.
 *   Never rely on which event caused the call; events are squashed and some are never delivered.
 * - The object may be gone (deleted, or never existed): return normally (nothing to do).
 * - IDEMPOTENT: the process may die between any two API calls and the next replica starts over
 *   from the key. Use deterministic names, treat AlreadyExists / NotFound as progress, guard
 *   writes with resourceVersion or JSON-patch `test` ops (a 409 / failed test means "re-read").
 * - Return `{ requeueAfterMs }` to be called again later, or nothing when done until the next event.
 * - THROW to retry with per-key exponential backoff (jittered, 0.5 s doubling, capped at 5 min by
 *   default); the backoff resets after the first successful return. Throwing is the right answer for
 *   transient API errors and conflicts; do not loop or sleep inside reconcile. Throw a
 *   `RetryNoLaterError` when the retry must not come later than a deadline you track.
 * - Periodic resync (default every 10 min) re-enqueues every key the watched informers hold, so a
 *   missed event costs latency, not correctness.
 */
export interface Reconciler {
  reconcile(key: ObjectKey, signal: AbortSignal): Promise<ReconcileResult | void>;
}

/**
 * Throw this (instead of a plain Error) when a retry must come no later than some time, e.g. a
 * deadline the reconciler has to act on: the key is retried after min(backoff, notLaterThanMs).
 */
export class RetryNoLaterError extends Error {
  readonly notLaterThanMs: number;
  constructor(message: string, notLaterThanMs: number, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RetryNoLaterError';
    this.notLaterThanMs = notLaterThanMs;
  }
}

/**
 * Thrown inside a decide-and-act pass when the object changed under it (a conflict, or a stored
 * resourceVersion other than the decided one): the pass ends and the object is decided again from a
 * fresh read, never acted on from the stale decision.
 */
export class Moved extends Error {
  constructor(why: string) {
    super(why);
    this.name = 'Moved';
  }
}

/** An informer that triggers reconciles, and how its objects map to this reconciler's keys. */
// Method signatures (not function-typed properties): a registration of a typed informer
// (WatchRegistration<BatchJob>) is a WatchRegistration, so a module's list can mix kinds.
export interface WatchRegistration<T extends ObjectWithMeta = ObjectWithMeta> {
  informer: Informer<T>;
  /**
   * Keys to enqueue for an added / updated / deleted object. Default: the object's own key.
   * For dependents (Pods, Jobs) map to the owner, e.g. `ownerKeys('RayCluster')`.
   */
  toKeys?(obj: T): ObjectKey[];
  /**
   * Which events enqueue at all (default: every add / update / delete). E.g. react to a dependent Job
   * only when it finishes or disappears: `(type, job) => type === 'delete' || isFinished(job)`.
   */
  filter?(type: 'add' | 'update' | 'delete', obj: T): boolean;
  /** Keys to enqueue on periodic resync / leadership start: default every cached object's keys. */
  resync?: boolean;
}

/** What a module hands the runtime: one reconciler and its triggers. */
export interface ControllerRegistration {
  /** Short lowercase name: metrics label `controller`, log field, queue name. Unique per process. */
  name: string;
  reconciler: Reconciler;
  watches: WatchRegistration[];
  /** Workers for this reconciler; default: the `--workers` flag. */
  workers?: number;
}

/** Everything a reconciler may use; one instance per process, shared by all reconcilers. */
export interface ControllerContext {
  kubeConfig: KubeCredentials;
  /** Small JSON REST client with a keep-alive connection pool (get/list/create/patch/delete). */
  kube: KubeClient;
  /** Shared informers: asking twice for the same resource/selector returns the same informer. */
  informers: InformerFactory;
  /** Namespace to watch, or undefined for all namespaces (`--watch-namespace`). */
  watchNamespace: string | undefined;
  events: EventRecorder;
  logger: Logger;
  metrics: Registry;
  /** The process environment (feature gates); tests pass their own. */
  env: Record<string, string | undefined>;
  /** Injectable clock (ms since epoch); tests may freeze it. */
  now: () => number;
  /** The process's one gate on children creation by owner UID (kube/creation-gate.ts). */
  creationGate: CreationGate;
  /**
   * Whether this replica runs the reconcilers now (holds the Lease; without leader election: once running).
   * With `--shards`: whether it holds shard 0, where the singleton work and the per-object gauges run.
   */
  isLeader: () => boolean;
  /**
   * Names of the reconciler modules this process runs, set before any is created (controller/main.ts);
   * a module may cache less when another is absent. Undefined: unknown (assume all).
   */
  reconcilers?: readonly string[] | undefined;
  /** Beside KubeRay's operator (controller/companion.ts), decided before any module is created. */
  companion?: boolean | undefined;
  /** The leader Lease (with `--shards`: shard 0's), when leader election is on (a place for Events about no particular object). */
  lease?: { namespace: string; name: string } | undefined;
}

/** A flag a module adds to `raykeeper controller` (node:util parseArgs option + help text). */
export interface ModuleFlag {
  type: 'string' | 'boolean';
  help: string;
  default?: string | boolean;
}

/** The unit listed in controller/reconcilers.ts. */
export interface ReconcilerModule {
  name: string;
  /** One-line description for `raykeeper controller --help`. */
  summary: string;
  /** Extra flags for `raykeeper controller`; their parsed values arrive in `create`'s `flags`. */
  flags?: Record<string, ModuleFlag>;
  create(
    ctx: ControllerContext,
    flags: Record<string, string | boolean | undefined>,
  ): ControllerRegistration | Promise<ControllerRegistration>;
}

/** Whether this process runs the named module (true when nobody said: a test's or a library's context). */
export function runsModule(ctx: Pick<ControllerContext, 'reconcilers'>, name: string): boolean {
  return ctx.reconcilers === undefined || ctx.reconcilers.includes(name);
}

/** "namespace/name" (or "name" when cluster-scoped). */
export function objectKey(obj: { metadata?: { namespace?: string | undefined; name?: string | undefined } | undefined }): ObjectKey {
  const ns = obj.metadata?.namespace;
  const name = obj.metadata?.name ?? '';
  return ns ? `${ns}/${name}` : name;
}

/** Inverse of objectKey. */
export function splitKey(key: ObjectKey): { namespace: string | undefined; name: string } {
  const i = key.indexOf('/');
  return i < 0 ? { namespace: undefined, name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

/** `toKeys` for dependents: the keys of the owners of the given kind (same namespace). */
export function ownerKeys(kind: string, apiGroup?: string): (obj: ObjectWithMeta) => ObjectKey[] {
  return (obj) => {
    const ns = obj.metadata?.namespace;
    const owners = obj.metadata?.ownerReferences ?? [];
    return owners
      .filter((o) => o.kind === kind && (apiGroup === undefined || o.apiVersion.split('/')[0] === apiGroup))
      .map((o) => (ns ? `${ns}/${o.name}` : o.name));
  };
}
