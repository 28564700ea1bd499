// Random (version 4) UUIDs for storage namespaces, made on the webhook's request path. Same randomness as
// crypto.randomUUID (the CSPRNG, each byte used once), but drawn and written as hex 1024 at a time into
// one Buffer (outside the JS heap); each UUID is then one flat 36-character string copied out of it.
// crypto.randomUUID refills every 128 and returns a string of 20 concatenated pieces that each later
// search or serialization must first flatten (together about 1 µs per admission under load, measured with
// the webhook bench's profiles). Not one JS string for the whole batch with each UUID a slice of it: a
// slice keeps its 36 KB parent alive, which outlived two young-generation collections under load and was
// promoted to the old generation every 1024 admissions (36 bytes per request, garbage that only a full
// collection reclaims; measured with --trace-gc-nvp).
import { randomFillSync } from 'node:crypto';

const UUIDS_PER_BATCH = 1024;
const UUID_LENGTH = 36;
const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');
const DASH = 0x2d;

const random = Buffer.allocUnsafe(16 * UUIDS_PER_BATCH);
const text = Buffer.allocUnsafe(UUID_LENGTH * UUIDS_PER_BATCH);
let next = UUIDS_PER_BATCH;

function refill(): void {
  randomFillSync(random);
  let w = 0;
  for (let u = 0; u < UUIDS_PER_BATCH; u++) {
    const at = u * 16;
    random[at + 6] = (random[at + 6]! & 0x0f) | 0x40; // version 4
    random[at + 8] = (random[at + 8]! & 0x3f) | 0x80; // variant 10
    for (let i = 0; i < 16; i++) {
      if (i === 4 || i === 6 || i === 8 || i === 10) text[w++] = DASH;
      const byte = random[at + i]!;
      text[w++] = HEX_DIGITS[byte >> 4]!;
      text[w++] = HEX_DIGITS[byte & 15]!;
    }
  }
  next = 0;
}

/** A random UUID, RFC 9562 version 4, lower-case hex: xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx. */
export function randomUuid(): string {
  if (next === UUIDS_PER_BATCH) refill();
  const at = next++ * UUID_LENGTH;
  return text.toString('latin1', at, at + UUID_LENGTH);
}
