// Redis Cluster hash slots (cluster spec: CRC16-XMODEM of the key, or of its {hash tag}, mod 16384).
// Multi-key UNLINK in a cluster must stay within one slot, so batches are grouped by slot. Pure.

const TABLE = (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let b = 0; b < 8; b++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    t[i] = crc;
  }
  return t;
})();

export function crc16(data: Uint8Array): number {
  let crc = 0;
  for (const byte of data) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ byte) & 0xff]!;
  return crc;
}

export const SLOT_COUNT = 16384;

/** The slot of a key; only a non-empty `{...}` (first '{', then the first '}' after it) is hashed. */
export function keySlot(key: Buffer): number {
  const open = key.indexOf(0x7b); // '{'
  if (open >= 0) {
    const close = key.indexOf(0x7d, open + 1); // '}'
    if (close > open + 1) return crc16(key.subarray(open + 1, close)) % SLOT_COUNT;
  }
  return crc16(key) % SLOT_COUNT;
}

/** Splits keys into groups that one command may carry: by slot when clustered, then by size. */
export function batchKeys(keys: Buffer[], maxPerCommand: number, clustered: boolean): Buffer[][] {
  const groups = new Map<number, Buffer[]>();
  for (const key of keys) {
    const slot = clustered ? keySlot(key) : 0;
    const g = groups.get(slot);
    if (g) g.push(key);
    else groups.set(slot, [key]);
  }
  const out: Buffer[][] = [];
  for (const g of groups.values()) {
    for (let i = 0; i < g.length; i += maxPerCommand) out.push(g.slice(i, i + maxPerCommand));
  }
  return out;
}
