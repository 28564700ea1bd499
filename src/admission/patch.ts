// The JSON patch of an admission answer: the difference between the object as received and its defaulted
// copy, computed in this one place, so JSON-pointer escaping ('~' -> '~0', '/' -> '~1') and absent or null
// parents are handled once, not per rule.
//
// It walks only where the two differ BY REFERENCE. copy.ts copies just the containers the rules may write
// to and shares every other subtree with the original, so the walk visits those few containers (the
// object, metadata, annotations, finalizers, spec, gcsFaultToleranceOptions, status) and never the pod
// templates: no deep comparison, no deep clone (the values are serialized into the answer at once and never
// mutated). test/admission/patch-property.test.ts checks every patch with an independent RFC 6902 applier.
import type { Json, JsonObject } from '../types.ts';
import { isJsonObject } from './json.ts';

export type PatchOperation =
  | { op: 'add'; path: string; value: Json }
  | { op: 'replace'; path: string; value: Json }
  | { op: 'remove'; path: string };

/** One JSON-pointer reference token (RFC 6901). */
export function escapePointerToken(token: string): string {
  if (!token.includes('~') && !token.includes('/')) return token;
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

/**
 * RFC 6902 operations turning `original` into `defaulted`. A null parent replaced by an object becomes a
 * `replace` of the parent (valid: the member exists); an absent parent becomes an `add` of the whole parent.
 */
export function diffPatch(original: JsonObject, defaulted: JsonObject): PatchOperation[] {
  const ops: PatchOperation[] = [];
  diffObjects(original, defaulted, '', ops);
  return ops;
}

function diffValues(before: Json, after: Json, path: string, ops: PatchOperation[]): void {
  if (before === after) return;
  if (isJsonObject(before) && isJsonObject(after)) return diffObjects(before, after, path, ops);
  if (Array.isArray(before) && Array.isArray(after)) return diffArrays(before, after, path, ops);
  ops.push({ op: 'replace', path, value: after });
}

function diffObjects(before: JsonObject, after: JsonObject, path: string, ops: PatchOperation[]): void {
  for (const key of Object.keys(before)) {
    if (!Object.hasOwn(after, key)) ops.push({ op: 'remove', path: `${path}/${escapePointerToken(key)}` });
  }
  for (const key of Object.keys(after)) {
    const next = after[key] as Json;
    if (!Object.hasOwn(before, key)) ops.push({ op: 'add', path: `${path}/${escapePointerToken(key)}`, value: next });
    else if (before[key] !== next) diffValues(before[key] as Json, next, `${path}/${escapePointerToken(key)}`, ops);
  }
}

/** Appended elements become adds at their indexes; any other change replaces the whole array. */
function diffArrays(before: Json[], after: Json[], path: string, ops: PatchOperation[]): void {
  const sharedPrefix = after.length >= before.length && before.every((item, i) => item === after[i]);
  if (!sharedPrefix) {
    ops.push({ op: 'replace', path, value: after });
    return;
  }
  for (let i = before.length; i < after.length; i++) ops.push({ op: 'add', path: `${path}/${i}`, value: after[i] as Json });
}
