// Random (version 4) UUIDs for storage namespaces, made on the webhook's request path. Same randomness as
// crypto.randomUUID (the CSPRNG, each byte used once), but drawn 1024 UUIDs at a time and written as one
// flat string: crypto.randomUUID refills every 128 and returns a string built from 20 concatenated
// pieces, which each later search or serialization of it first has to flatten (about 1 µs per admission
// under load, measured with the webhook bench's profiles).
import { randomFillSync } from 'node:crypto';

const UUIDS_PER_DRAW = 1024;
const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');
const DASH = 0x2d;

const pool = Buffer.allocUnsafe(16 * UUIDS_PER_DRAW);
let next = pool.length;
const text = Buffer.allocUnsafe(36);

/** A random UUID, RFC 9562 version 4, lower-case hex: xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx. */
export function randomUuid(): string {
  if (next === pool.length) {
    randomFillSync(pool);
    next = 0;
  }
  const at = next;
  next += 16;
  pool[at + 6] = (pool[at + 6]! & 0x0f) | 0x40; // version 4
  pool[at + 8] = (pool[at + 8]! & 0x3f) | 0x80; // variant 10
  let w = 0;
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) text[w++] = DASH;
    const byte = pool[at + i]!;
    text[w++] = HEX_DIGITS[byte >> 4]!;
    text[w++] = HEX_DIGITS[byte & 15]!;
  }
  return text.toString('latin1', 0, 36);
}
