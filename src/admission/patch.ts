// The JSON patch of an admission answer, recorded by the defaulting rules as they write (they know the
// few paths they touch), through the writers below. JSON-pointer escaping ('~' -> '~0', '/' -> '~1') and
// absent or null parents are handled here once, not per rule: a member that exists (null included) is
// replaced, an absent one added; a container created by a rule is recorded as one operation with a value
// of its own, so later writes into the copy never change an operation already recorded. No diff, no
// deep comparison, no deep clone. test/admission/patch-property.test.ts checks every patch with an
// independent RFC 6902 applier against the rules run on a full deep copy.
import type { JsonPatchOp } from '../../kube/json-patch.ts';
import type { Json, JsonObject } from '../../kube/model.ts';

/** What the defaulting rules write: no `test` guards (an admission patch applies to the request's object). */
export type PatchOperation = Exclude<JsonPatchOp<Json>, { op: 'test' }>;

/** One JSON-pointer reference token (RFC 6901). */
export function escapePointerToken(token: string): string {
  if (!token.includes('~') && !token.includes('/')) return token;
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

/**
 * The pointers of the few members the rules write (fixed names under fixed parents), made once: no
 * request re-escapes or re-joins them, and the patch's serialization gets the same flat string every
 * time. Bounded, in case a rule ever writes a member named by user input.
 */
const pointers = new Map<string, Map<string, string>>();
const MAX_CACHED_POINTERS = 64;

function memberPointer(parent: string, key: string): string {
  let children = pointers.get(parent);
  if (children === undefined) {
    children = new Map();
    if (pointers.size < MAX_CACHED_POINTERS) pointers.set(parent, children);
  }
  let at = children.get(key);
  if (at === undefined) {
    at = `${parent}/${escapePointerToken(key)}`;
    if (children.size < MAX_CACHED_POINTERS) children.set(key, at);
  }
  return at;
}

/** `obj[key] = value` on the copy, recorded as a replace of an existing member or an add of an absent one. */
export function setMember(ops: PatchOperation[], path: string, obj: JsonObject, key: string, value: Json): void {
  const at = memberPointer(path, key);
  ops.push(Object.hasOwn(obj, key) ? { op: 'replace', path: at, value } : { op: 'add', path: at, value });
  obj[key] = value;
}

/**
 * `obj[key] = make()` for a container the rule creates (the member was absent, null or not an object):
 * the copy and the recorded operation get two separate results of `make`.
 */
export function setContainer(ops: PatchOperation[], path: string, obj: JsonObject, key: string, make: () => Json): void {
  const at = memberPointer(path, key);
  const value = make();
  ops.push(Object.hasOwn(obj, key) ? { op: 'replace', path: at, value } : { op: 'add', path: at, value });
  obj[key] = make();
}

/** `array.push(value)` on the copy, recorded as an add at its index. */
export function appendItem(ops: PatchOperation[], path: string, array: Json[], value: Json): void {
  ops.push({ op: 'add', path: `${path}/${array.length}`, value });
  array.push(value);
}
