// Reading and changing metadata on a (copied) object, each change recorded as patch operations.
// Absent and null maps/lists are treated alike.
import { hasFinalizer } from '../../kube/finalizer-patches.ts';
import type { JsonObject } from '../../kube/model.ts';
import { isJsonObject } from './json.ts';
import { appendItem, setContainer, setMember, type PatchOperation } from './patch.ts';

export function metadataOf(obj: JsonObject): JsonObject | undefined {
  return isJsonObject(obj.metadata) ? obj.metadata : undefined;
}

/** Appends the finalizer once (recorded in `ops`); other finalizers and their order are kept. */
export function addFinalizer(obj: JsonObject, finalizer: string, ops: PatchOperation[]): boolean {
  if (hasFinalizer(metadataOf(obj), finalizer)) return false;
  const meta = obj.metadata;
  if (!isJsonObject(meta)) setContainer(ops, '', obj, 'metadata', () => ({ finalizers: [finalizer] }));
  else if (Array.isArray(meta.finalizers)) appendItem(ops, '/metadata/finalizers', meta.finalizers, finalizer);
  else setContainer(ops, '/metadata', meta, 'finalizers', () => [finalizer]);
  return true;
}

/** A string annotation, or undefined when absent, null or not a string. */
export function annotationOf(obj: JsonObject | null | undefined, key: string): string | undefined {
  if (!obj) return undefined;
  const annotations = metadataOf(obj)?.annotations;
  if (!isJsonObject(annotations)) return undefined;
  const value = annotations[key];
  return typeof value === 'string' ? value : undefined;
}

/** Sets one annotation (recorded in `ops`), creating metadata and annotations when absent or null. */
export function setAnnotation(obj: JsonObject, key: string, value: string, ops: PatchOperation[]): void {
  const meta = obj.metadata;
  if (!isJsonObject(meta)) setContainer(ops, '', obj, 'metadata', () => ({ annotations: { [key]: value } }));
  else if (!isJsonObject(meta.annotations)) setContainer(ops, '/metadata', meta, 'annotations', () => ({ [key]: value }));
  else setMember(ops, '/metadata/annotations', meta.annotations, key, value);
}

/**
 * Why the metadata cannot be defaulted safely (a shape the API server would never store), or undefined.
 * Checked before defaulting so a malformed object gets a clear refusal instead of a half-applied rule.
 */
export function metadataShapeProblem(obj: JsonObject): string | undefined {
  const meta = obj.metadata;
  if (meta === undefined || meta === null) return undefined;
  if (!isJsonObject(meta)) return 'object.metadata must be an object';
  const annotations = meta.annotations;
  if (annotations !== undefined && annotations !== null) {
    if (!isJsonObject(annotations)) return 'object.metadata.annotations must be an object of strings';
    // for-in, not Object.entries: no pair arrays per request. A JSON object has only own keys.
    for (const key in annotations) {
      if (typeof annotations[key] !== 'string') return `object.metadata.annotations[${JSON.stringify(key)}] must be a string`;
    }
  }
  const finalizers = meta.finalizers;
  if (finalizers !== undefined && finalizers !== null) {
    if (!Array.isArray(finalizers)) return 'object.metadata.finalizers must be an array of strings';
    for (const f of finalizers) if (typeof f !== 'string') return 'object.metadata.finalizers must be an array of strings';
  }
  return undefined;
}
