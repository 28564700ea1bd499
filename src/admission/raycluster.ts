// RayCluster defaulting: the GCS fault-tolerance finalizer and the pinned Redis storage namespace.
// Works in place on the copy of the admitted object (copy.ts), recording each write as patch operations.
//
// Rules (only when GCS FT is on with the Redis backend, see src/gcsft/rules.ts):
// - CREATE: add `ray.io/gcs-ft-redis-cleanup-finalizer` once; pin the storage namespace when none is set:
//   a fresh random UUID (unique per cluster, no '@') in the annotation `ray.io/external-storage-namespace`
//   (annotation mode) or in `spec.gcsFaultToleranceOptions.externalStorageNamespace` (options mode).
// - UPDATE: never add the finalizer to an object being deleted; never re-add a finalizer the old object
//   had and this update removes (the controller or an admin did it on purpose); add it when the old object
//   lacked it too (a cluster created before the webhook ran, as KubeRay's own controller would).
//   A pinned namespace the update drops is restored from the old object (GCS data in Redis lives under it);
//   no new namespace is ever generated on UPDATE (the cluster has a UID, which KubeRay uses by default).
// - Nothing at all when: FT is off; the backend is rocksdb (no Redis, no cleanup); both the annotation and
//   the options are set (KubeRay refuses to reconcile such a cluster, so no pod ever writes to Redis and
//   there is nothing to clean; once the user fixes it by an UPDATE, the UPDATE rule adds the finalizer and
//   the namespace resolves to the UID); spec.managedBy names another controller (e.g. MultiKueue: the
//   cluster runs elsewhere, cleaning Redis from here could delete a namespace still in use).
// - A user's namespace (options, annotation, or env RAY_external_storage_namespace on the head container,
//   which KubeRay leaves alone) is never changed. An empty string counts as unset (as in src/gcsft/rules.ts).
import {
  explicitStorageNamespace,
  gcsFtFinalizerRule,
  storageNamespaceProblem,
  usesRedisBackend,
  gcsFtMode,
  isManagedExternally,
} from '../gcsft/rules.ts';
import type { FtSubject } from '../gcsft/rules.ts';
import { EXTERNAL_STORAGE_NAMESPACE_ANNOTATION, GCS_FT_REDIS_CLEANUP_FINALIZER } from '../names.ts';
import { headSetsStorageNamespace } from '../gcsft/redis-env.ts';
import type { RayCluster } from '../types.ts';
import type { JsonObject } from '../../kube/model.ts';
import { isJsonObject } from './json.ts';
import { hasFinalizer, isDeleting } from '../../kube/finalizer-patches.ts';
import { addFinalizer, metadataOf, metadataShapeProblem, setAnnotation } from './metadata.ts';
import { setMember, type PatchOperation } from './patch.ts';

/** spec.managedBy value meaning "KubeRay reconciles this" (KubeRay's utils.KubeRayController). */

export interface RayClusterDefaultingContext {
  operation: 'CREATE' | 'UPDATE';
  /** The stored object before an UPDATE. */
  oldObject?: JsonObject | null;
  /** A fresh storage namespace for a new cluster (randomUuid, src/uuid.ts, in production). */
  newStorageNamespace: () => string;
  /** Add the cleanup finalizer (false when ENABLE_GCS_FT_REDIS_CLEANUP=false, as KubeRay's operator). */
  finalizerEnabled: boolean;
}

export interface DefaultingResult {
  /** The JSON patch of every write, in order (patch.ts). */
  patch: PatchOperation[];
  /** Human-readable changes, for logs (empty when nothing changed). */
  changes: string[];
  /** Sent to the client as admission warnings (kubectl prints them). */
  warnings: string[];
}

function ftSubject(obj: JsonObject): FtSubject {
  return obj as unknown as FtSubject;
}

function specOf(obj: JsonObject): JsonObject | undefined {
  return isJsonObject(obj.spec) ? obj.spec : undefined;
}

function optionsOf(obj: JsonObject): JsonObject | undefined {
  const options = specOf(obj)?.gcsFaultToleranceOptions;
  return isJsonObject(options) ? options : undefined;
}

/** Why the spec parts we write cannot be defaulted safely, or undefined. */
export function rayClusterShapeProblem(obj: JsonObject): string | undefined {
  const metaProblem = metadataShapeProblem(obj);
  if (metaProblem !== undefined) return metaProblem;
  if (obj.spec !== undefined && obj.spec !== null && !isJsonObject(obj.spec)) return 'object.spec must be an object';
  const options = specOf(obj)?.gcsFaultToleranceOptions;
  if (options !== undefined && options !== null && !isJsonObject(options)) return 'object.spec.gcsFaultToleranceOptions must be an object';
  // The fields of the options the rules read must be strings (or absent/null): anything else is refused
  // here with the uid, before a rule would try to read it as text.
  for (const field of ['backend', 'externalStorageNamespace']) {
    const value = optionsOf(obj)?.[field];
    if (value !== undefined && value !== null && typeof value !== 'string')
      return `object.spec.gcsFaultToleranceOptions.${field} must be a string`;
  }
  return undefined;
}

function applyFinalizerRule(cluster: JsonObject, ctx: RayClusterDefaultingContext, result: DefaultingResult): void {
  if (!ctx.finalizerEnabled) return;
  if (isDeleting(cluster)) return; // never add a finalizer to an object being deleted
  if (hasFinalizer(metadataOf(cluster), GCS_FT_REDIS_CLEANUP_FINALIZER)) return;
  if (ctx.operation === 'UPDATE') {
    // The old object had it and this update removes it: the controller (after cleanup) or an admin did it.
    if (ctx.oldObject && hasFinalizer(metadataOf(ctx.oldObject), GCS_FT_REDIS_CLEANUP_FINALIZER)) return;
    if (isDeleting(ctx.oldObject)) return;
  }
  if (addFinalizer(cluster, GCS_FT_REDIS_CLEANUP_FINALIZER, result.patch))
    result.changes.push(`added finalizer ${GCS_FT_REDIS_CLEANUP_FINALIZER}`);
}

function pinStorageNamespace(cluster: JsonObject, mode: 'annotation' | 'options', value: string, ops: PatchOperation[]): string {
  if (mode === 'options') {
    setMember(ops, '/spec/gcsFaultToleranceOptions', optionsOf(cluster) as JsonObject, 'externalStorageNamespace', value);
    return 'spec.gcsFaultToleranceOptions.externalStorageNamespace';
  }
  setAnnotation(cluster, EXTERNAL_STORAGE_NAMESPACE_ANNOTATION, value, ops);
  return `annotation ${EXTERNAL_STORAGE_NAMESPACE_ANNOTATION}`;
}

function applyStorageNamespaceRule(
  cluster: JsonObject,
  mode: 'annotation' | 'options',
  ctx: RayClusterDefaultingContext,
  result: DefaultingResult,
): void {
  // The user's env wins in KubeRay: leave it (the one rule, src/gcsft/redis-env.ts storageNamespaceSource).
  if (headSetsStorageNamespace(cluster as unknown as RayCluster)) return;
  const current = explicitStorageNamespace(ftSubject(cluster));
  if (current !== undefined) {
    const problem = storageNamespaceProblem(current);
    if (problem !== undefined) result.warnings.push(`${problem}; GCS fault tolerance will not work with it`);
    return;
  }
  if (ctx.operation === 'CREATE') {
    const value = ctx.newStorageNamespace();
    const problem = storageNamespaceProblem(value);
    if (problem !== undefined) throw new Error(`generated ${problem}`);
    const where = pinStorageNamespace(cluster, mode, value, result.patch);
    result.changes.push(`pinned storage namespace ${value} in ${where}`);
    return;
  }
  // UPDATE: restore what the old object pinned; never invent one (the UID is the default from now on).
  const previous = explicitStorageNamespace(ctx.oldObject && ftSubject(ctx.oldObject));
  if (previous === undefined) return;
  const where = pinStorageNamespace(cluster, mode, previous, result.patch);
  result.changes.push(`restored storage namespace ${previous} in ${where} (the update dropped it)`);
}

export function defaultRayCluster(cluster: JsonObject, ctx: RayClusterDefaultingContext): DefaultingResult {
  const result: DefaultingResult = { patch: [], changes: [], warnings: [] };
  const subject = ftSubject(cluster);
  const mode = gcsFtMode(subject);
  if (!gcsFtFinalizerRule(subject).wanted) {
    if (mode === 'both' && usesRedisBackend(subject) && !isManagedExternally(subject)) {
      result.warnings.push(
        `both the ray.io/ft-enabled annotation and spec.gcsFaultToleranceOptions are set; KubeRay rejects this, ` +
          `so raykeeper adds no ${GCS_FT_REDIS_CLEANUP_FINALIZER} and pins no storage namespace until only one is set`,
      );
    }
    return result; // FT off, rocksdb (no Redis to clean), managed elsewhere, or both switches set
  }
  if (mode === 'off' || mode === 'both') return result; // never: the rule wanted FT on by one switch (narrows mode)
  applyFinalizerRule(cluster, ctx, result);
  applyStorageNamespaceRule(cluster, mode, ctx, result);
  return result;
}
