// Seeding Redis with Ray-shaped data and decoys, and snapshots to prove what changed.
import { Redis, type Cluster, type RedisOptions } from 'ioredis';

export function client(port: number, extra: RedisOptions = {}): Redis {
  const c = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: false,
    maxRetriesPerRequest: 1,
    protocol: 2,
    disableClientInfo: true,
    ...extra,
  });
  c.on('error', () => undefined);
  return c;
}

type Writer = Redis | Cluster;

/** Current layout of one namespace: three table hashes with `fields` fields each, plus the JobCounter string. */
export async function seedCurrent(r: Writer, ns: string, fields = 3): Promise<string[]> {
  const keys: string[] = [];
  for (const table of ['JOB', 'NODE', 'ACTOR_TASK_SPEC']) {
    const key = `RAY${ns}@${table}`;
    const args: string[] = [];
    for (let i = 0; i < fields; i++) args.push(`id${i}`, `value-${ns}-${table}-${i}`);
    await r.hset(key, ...args);
    keys.push(key);
  }
  await r.set(`RAY${ns}@JobCounter`, '7');
  keys.push(`RAY${ns}@JobCounter`);
  return keys;
}

/** Old layout: one hash named <ns> with fields <ns>@<TABLE>:<key>. */
export async function seedLegacy(r: Writer, ns: string, fields = 4, extra: Record<string, string> = {}): Promise<string> {
  const args: string[] = [];
  for (let i = 0; i < fields; i++) args.push(`${ns}@${i % 2 ? 'JOB' : 'NODE'}:k${i}`, `v${i}`);
  for (const [f, v] of Object.entries(extra)) args.push(f, v);
  await r.hset(ns, ...args);
  return ns;
}

/** Look-alikes around namespace `ns`: same names with wrong types, '@' in the table, prefix neighbours. */
export async function seedDecoys(r: Writer, ns: string): Promise<string[]> {
  const keys = [
    `RAY${ns}@LISTTABLE`, // list
    `RAY${ns}@SETTABLE`, // set
    `RAY${ns}@ZTABLE`, // zset
    `RAY${ns}@STRTABLE`, // string that is not JobCounter
    `RAY${ns}@x@JOB`, // hash, '@' in the table name
    `RAY${ns}0@JOB`, // prefix neighbour: another namespace
    `RAY${ns}@`, // empty table name
    `ray${ns}@JOB`, // case differs
    `xRAY${ns}@JOB`,
  ];
  await r.rpush(keys[0]!, 'a');
  await r.sadd(keys[1]!, 'a');
  await r.zadd(keys[2]!, 1, 'a');
  await r.set(keys[3]!, 'v');
  await r.hset(keys[4]!, 'f', 'v');
  await r.hset(keys[5]!, 'f', 'v');
  await r.hset(keys[6]!, 'f', 'v');
  await r.hset(keys[7]!, 'f', 'v');
  await r.hset(keys[8]!, 'f', 'v');
  return keys;
}

/** `count` unrelated string keys, pipelined. */
export async function seedFiller(r: Redis, count: number, prefix = 'filler:'): Promise<void> {
  for (let i = 0; i < count; i += 1000) {
    const p = r.pipeline();
    for (let j = i; j < Math.min(count, i + 1000); j++) p.set(`${prefix}${j}`, 'x');
    await p.exec();
  }
}

/** Every key with its DUMP (type and content): equal snapshots mean nothing changed. */
export async function snapshot(r: Redis): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  let cursor = '0';
  do {
    const [next, keys] = await r.scan(cursor, 'COUNT', 1000);
    cursor = next;
    if (keys.length === 0) continue;
    const p = r.pipeline();
    for (const k of keys) p.dumpBuffer(k);
    const dumps = (await p.exec()) ?? [];
    keys.forEach((k, i) => out.set(k, (dumps[i]![1] as Buffer).toString('base64')));
  } while (cursor !== '0');
  return out;
}

/** Keys present in `before` and gone (or changed) in `after`; keys added in `after`. */
export function diff(before: Map<string, string>, after: Map<string, string>): { removed: string[]; changed: string[]; added: string[] } {
  const removed: string[] = [];
  const changed: string[] = [];
  for (const [k, v] of before) {
    if (!after.has(k)) removed.push(k);
    else if (after.get(k) !== v) changed.push(k);
  }
  const added = [...after.keys()].filter((k) => !before.has(k));
  return { removed: removed.sort(), changed: changed.sort(), added: added.sort() };
}
