// Plain-JSON helpers for admission objects. Objects arrive from JSON.parse, so they hold only JSON values.
import type { Json, JsonObject } from '../../kube/model.ts';

/** A JSON object: not null, not an array. */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A string of printable ASCII without '"' or '\\', which JSON writes as is between quotes. */
function isPlainJsonString(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return false;
  }
  return true;
}

/**
 * JSON.stringify(value), with a plain ASCII string (the admission uid, as the API server makes it) quoted
 * directly: the generic serializer costs several times more on the webhook's request path.
 */
export function jsonText(value: Json): string {
  return typeof value === 'string' && isPlainJsonString(value) ? `"${value}"` : JSON.stringify(value);
}

/**
 * Full deep copy of a JSON value, keeping own keys such as "__proto__" as plain data (defineProperty),
 * exactly as JSON.parse produced them. The admission path copies less (see copy.ts); tests use this as the
 * independent reference copy.
 */
export function cloneJson<T extends Json>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map((item) => cloneJson(item)) as T;
  const copy: JsonObject = {};
  for (const key of Object.keys(value)) {
    const item = cloneJson(value[key] as Json);
    if (key === '__proto__') Object.defineProperty(copy, key, { value: item, enumerable: true, writable: true, configurable: true });
    else copy[key] = item;
  }
  return copy as T;
}
