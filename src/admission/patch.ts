// The JSON patch of an admission answer is the DIFF of the object as received against its defaulted copy,
// so escaping ('/' -> '~1', '~' -> '~0') and absent or null parents are handled here once, not per rule.
import jsonPatch from 'fast-json-patch';
import type { Operation } from 'fast-json-patch';
import type { JsonObject } from '../types.ts';

export type { Operation };

/**
 * RFC 6902 operations turning `original` into `defaulted`. A null parent replaced by an object becomes a
 * `replace` of the parent (valid: the member exists); an absent parent becomes an `add` of the whole parent.
 */
export function diffPatch(original: JsonObject, defaulted: JsonObject): Operation[] {
  return jsonPatch.compare(original, defaulted);
}
