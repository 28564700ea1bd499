// Plain-JSON helpers for admission objects. Objects arrive from JSON.parse, so they hold only JSON values.
import type { Json, JsonObject } from '../types.ts';

/** A JSON object: not null, not an array. */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
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
