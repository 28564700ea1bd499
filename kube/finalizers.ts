// Sending a finalizer patch (./finalizer-patches.ts builds it) and reading the API server's answer, the same
// for every reconciler:
// - 2xx: done; 404: the object is gone;
// - a failed `test` (or 409): the object changed since it was read: 'conflict', the caller re-reads
//   and decides again at once;
// - the API refusing the change itself (422 from validation, a CEL rule or a ValidatingAdmissionPolicy;
//   403; 400): re-reading cannot help until someone changes the policy or the object, so a Warning
//   event carries the API's message (masked as the caller's RefusalReport says: the stored object's inline
//   secrets), `raykeeper_finalizer_patches_total{result="rejected"}` counts it,
//   and FinalizerPatchRejectedError goes up to the work queue, which retries with exponential backoff.
import type { Counter } from 'prom-client';
import { addFinalizerPatch, finalizerRejectedMessage, removeFinalizerPatch, type FinalizerChange } from './finalizer-patches.ts';
import {
  isConflict,
  isForbidden,
  isInvalid,
  isNotFound,
  isPatchTestFailed,
  JSON_PATCH,
  KubeApiError,
  type KubeClient,
  type ObjectOf,
  type ResourceRef,
} from './client.ts';
import { sharedCounter, type Registry } from './metrics.ts';
import type { EventRecorder } from './events.ts';
import type { ObjectMeta } from './model.ts';

/**
 * How the caller reports a refusal: the Warning's reason, and `mask`, which makes the API's message fit
 * for an Event (the secrets `objects` carry inline masked: the stored object as the API quotes it, and
 * the copy the patch was built from).
 */
export interface RefusalReport {
  reason: string;
  mask(text: string, objects: unknown): string;
}

export type FinalizerPatchOutcome<T> = { result: 'patched'; object: T } | { result: 'unchanged' | 'gone' | 'conflict' };

/** The API server refused a finalizer patch as such; thrown so the work queue backs off. */
export class FinalizerPatchRejectedError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'FinalizerPatchRejectedError';
  }
}

function isRefusal(err: unknown): err is KubeApiError {
  return err instanceof KubeApiError && (isInvalid(err) || isForbidden(err) || err.statusCode === 400);
}

export class FinalizerPatcher {
  private readonly kube: KubeClient;
  private readonly events: EventRecorder;
  private readonly kind: string;
  private readonly apiVersion: string;
  private readonly refusal: RefusalReport;
  private readonly patches: Counter<'kind' | 'change' | 'result'>;

  /** `kind` / `apiVersion`: of the objects this patcher changes (metric label, the event's object). */
  constructor(deps: {
    kube: KubeClient;
    events: EventRecorder;
    metrics?: Registry | undefined;
    kind: string;
    apiVersion: string;
    refusal: RefusalReport;
  }) {
    this.kube = deps.kube;
    this.events = deps.events;
    this.kind = deps.kind;
    this.apiVersion = deps.apiVersion;
    this.refusal = deps.refusal;
    this.patches = sharedCounter(deps.metrics, {
      name: 'raykeeper_finalizer_patches_total',
      help: 'Finalizer patches sent, by kind, change (add, remove) and result (patched, conflict: re-read; rejected: refused by the API, retried with backoff; gone; error).',
      labelNames: ['kind', 'change', 'result'] as const,
    });
  }

  /**
   * Adds or removes `finalizer` on `obj` as read (`ref` names it). 'unchanged' when there is nothing
   * to do. Throws FinalizerPatchRejectedError after a Warning event when the API refuses the change,
   * and any other error as it came.
   */
  async patch<R extends ResourceRef>(
    ref: R,
    obj: { metadata: ObjectMeta },
    change: FinalizerChange,
    finalizer: string,
    signal?: AbortSignal,
  ): Promise<FinalizerPatchOutcome<ObjectOf<R>>> {
    const ops = change === 'add' ? addFinalizerPatch(obj.metadata, finalizer) : removeFinalizerPatch(obj.metadata, finalizer);
    if (!ops) return { result: 'unchanged' };
    const count = (result: string) => this.patches.inc({ kind: this.kind, change, result });
    try {
      const object = await this.kube.patch(ref, ops, JSON_PATCH, { signal, basedOn: obj.metadata.resourceVersion });
      count('patched');
      return { result: 'patched', object };
    } catch (err) {
      if (isNotFound(err)) {
        count('gone');
        return { result: 'gone' };
      }
      if (isPatchTestFailed(err) || isConflict(err)) {
        count('conflict');
        return { result: 'conflict' };
      }
      if (isRefusal(err)) {
        count('rejected');
        const message = this.refusal.mask(
          finalizerRejectedMessage(change, finalizer, {
            statusCode: err.statusCode,
            reason: err.reason,
            message: err.status?.message ?? err.body,
          }),
          [await this.stored(ref, signal), obj],
        );
        this.events.event({ apiVersion: this.apiVersion, kind: this.kind, ...obj }, 'Warning', this.refusal.reason, message);
        throw new FinalizerPatchRejectedError(message, { cause: err });
      }
      count('error');
      throw err;
    }
  }

  /**
   * The object as stored, which is what the API server quotes in a refusal: `obj` may be a cached
   * projection without the secrets the stored spec carries inline. Undefined if it cannot be read.
   */
  private async stored(ref: ResourceRef, signal: AbortSignal | undefined): Promise<unknown> {
    return this.kube.getOrUndefined(ref, signal ? { signal } : {}).catch(() => undefined);
  }
}
