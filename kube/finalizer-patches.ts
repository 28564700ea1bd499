// Finalizers and deletion, for every kind (RayCluster, RayJob; the webhook and the controllers). Pure.
//
// Finalizer changes are JSON patches guarded by a `test` op, so a concurrent change to the finalizers
// (another controller adding or removing its own) makes our patch fail instead of being clobbered.
// The API server answers a failed `test` with an error; the reconciler re-reads and decides again
// (kube/finalizers.ts sends the patches and reads the answer).

import type { JsonPatchOp } from './json-patch.ts';

export type PatchOp = JsonPatchOp;

export interface FinalizerMeta {
  finalizers?: string[] | null;
  resourceVersion?: string;
  uid?: string;
}

/**
 * Adds `finalizer`; undefined when already present.
 * - finalizers array present: test it as read, then append (`/metadata/finalizers/-`).
 * - absent (the API server omits an empty list, and JSON patch cannot `test` a missing member):
 *   test the resourceVersion as read, then create the array. Any change since the read fails it.
 */
export function addFinalizerPatch(meta: FinalizerMeta, finalizer: string): PatchOp[] | undefined {
  const current = meta.finalizers;
  if (Array.isArray(current)) {
    if (current.includes(finalizer)) return undefined;
    return [
      { op: 'test', path: '/metadata/finalizers', value: [...current] },
      { op: 'add', path: '/metadata/finalizers/-', value: finalizer },
    ];
  }
  const ops: PatchOp[] = [];
  if (meta.resourceVersion) ops.push({ op: 'test', path: '/metadata/resourceVersion', value: meta.resourceVersion });
  ops.push({ op: 'add', path: '/metadata/finalizers', value: [finalizer] });
  return ops;
}

/**
 * Removes every occurrence of `finalizer` (normally one): test the UID (when read: a copy from a cache
 * may name an object since replaced by another of the same name) and the array as read, then remove by index.
 */
export function removeFinalizerPatch(meta: FinalizerMeta, finalizer: string): PatchOp[] | undefined {
  const current = meta.finalizers;
  if (!Array.isArray(current) || !current.includes(finalizer)) return undefined;
  const ops: PatchOp[] = meta.uid ? [{ op: 'test', path: '/metadata/uid', value: meta.uid }] : [];
  ops.push({ op: 'test', path: '/metadata/finalizers', value: [...current] });
  // Remove from the highest index down so earlier indexes stay valid.
  for (let i = current.length - 1; i >= 0; i--) if (current[i] === finalizer) ops.push({ op: 'remove', path: `/metadata/finalizers/${i}` });
  return ops;
}

/** `meta` may come from an unchecked object (an admission request): anything but a list is "absent". */
export function hasFinalizer(meta: { finalizers?: unknown } | null | undefined, finalizer: string): boolean {
  const list = meta?.finalizers;
  return Array.isArray(list) && list.includes(finalizer);
}

/** Marked for deletion (a deletionTimestamp is set); only finalizers keep it stored. */
export function isDeleting(obj: { metadata?: unknown } | null | undefined): boolean {
  const meta = obj?.metadata;
  if (typeof meta !== 'object' || meta === null) return false;
  const ts = (meta as { deletionTimestamp?: unknown }).deletionTimestamp;
  return typeof ts === 'string' && ts !== '';
}

export type FinalizerChange = 'add' | 'remove';

/** What the API server answered (a Kubernetes Status). */
export interface Refusal {
  statusCode: number;
  reason?: string | undefined;
  message: string;
}

/**
 * The Warning's message: the API's own words (which policy or rule refused it). A rule's message may quote
 * the stored object: the caller masks the secrets it carries inline (kube/finalizers.ts RefusalReport).
 */
export function finalizerRejectedMessage(change: FinalizerChange, finalizer: string, refusal: Refusal): string {
  return `Cannot ${change} finalizer ${finalizer}: the API server refused the change (${refusal.statusCode} ${refusal.reason ?? ''}): ${refusal.message}. Retrying with backoff until it is allowed.`;
}
