// Secrets written inline into an object (a RayCluster, the cleanup Job built from it), and masking them
// in text the API server answered about that object (a policy's message may quote the object) before
// the text goes into an Event, a log line or an error.
import { oneLine } from './errors.ts';

const SECRET_NAME = /pass(word)?|secret|token|credential|api[-_]?key/i;
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi;

/**
 * Secret values written into the object itself: env values and map entries whose name says secret
 * (REDIS_PASSWORD, rayStartParams redis-password, ...), the `value` of an object under such a name
 * (gcsFaultToleranceOptions.redisPassword.value) and the user information of URLs. Secrets referenced
 * from Secret objects are not in the object, so cannot leak from it. An array of objects is walked whole.
 */
export function inlineSecrets(obj: unknown): string[] {
  const found = new Set<string>();
  const add = (v: unknown) => {
    if (typeof v === 'string' && v !== '') found.add(v);
  };
  const walk = (v: unknown): void => {
    if (typeof v === 'string') {
      for (const m of v.matchAll(URL_CREDENTIALS)) found.add(m[0].slice(m[1]!.length, -1));
      return;
    }
    if (Array.isArray(v)) return v.forEach(walk);
    if (typeof v !== 'object' || v === null) return;
    const rec = v as Record<string, unknown>;
    if (typeof rec.name === 'string' && SECRET_NAME.test(rec.name)) add(rec.value);
    for (const [k, child] of Object.entries(rec)) {
      if (SECRET_NAME.test(k)) {
        add(child);
        if (typeof child === 'object' && child !== null && !Array.isArray(child)) add((child as Record<string, unknown>).value);
      }
      walk(child);
    }
  };
  walk(obj);
  // Longest first, so a password containing another is masked whole.
  return [...found].sort((a, b) => b.length - a.length);
}

/**
 * `text` fit for an Event, a log line or an error: one line, URL user information and every inline
 * secret of `objects` (one object or several: the stored object as the API quotes it, what we sent) masked.
 */
export function maskInlineSecrets(text: string, objects: unknown, max = 1000): string {
  return oneLine(text.replace(URL_CREDENTIALS, '$1***@'), inlineSecrets(objects), max);
}
