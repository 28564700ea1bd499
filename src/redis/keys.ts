// Which Redis keys belong to a Ray GCS storage namespace, in both layouts Ray has used. Pure: no I/O.
//
// Current Ray (>= ~2.35, ray PR #46861): one HASH per table named `RAY<ns>@<TABLE>`, plus the STRING
// counter `RAY<ns>@JobCounter` (INCRBY). Older Ray: ONE hash named `<ns>` whose fields are
// `<ns>@<TABLE>:<key>`. Ray forbids '@' in a namespace, so the first '@' after `RAY` ends it.
//
// Keys are Buffers throughout: Redis keys are bytes, and a lossy UTF-8 round trip could make us
// UNLINK a different key than the one SCAN returned.

export const CURRENT_PREFIX = 'RAY';
export const SEPARATOR = '@';
/** The one current-layout key that is a string, not a hash (RedisStoreClient::AsyncGetNextJobID). */
export const JOB_COUNTER_TABLE = 'JobCounter';

/**
 * The tables Ray's GCS may write, by name: every value of Ray's `TablePrefix` enum
 * (src/ray/protobuf/gcs.proto; read from ray 2.60's `ray.core.generated.gcs_pb2.TablePrefix`, without
 * TABLE_PREFIX_MIN and UNUSED). The GCS of Ray 2.x writes JOB, ACTOR, ACTOR_TASK_SPEC, PLACEMENT_GROUP,
 * NODE, WORKERS and KV (gcs_table_storage.h, StoreClientInternalKV); the rest are older names, and
 * unlinking a key that does not exist costs nothing. These keys are unlinked first, so a namespace's
 * data is gone in one round trip; the SCAN sweep, when it runs (src/redis/sweep.ts), then finds anything
 * else (new tables, odd keys).
 */
export const RAY_TABLES: readonly string[] = [
  'TASK',
  'RAYLET_TASK',
  'NODE',
  'OBJECT',
  'ACTOR',
  'FUNCTION',
  'TASK_RECONSTRUCTION',
  'RESOURCE_USAGE_BATCH',
  'JOB',
  'TASK_LEASE',
  'NODE_RESOURCE',
  'DIRECT_ACTOR',
  'WORKERS',
  'PLACEMENT_GROUP_SCHEDULE',
  'PLACEMENT_GROUP',
  'KV',
  'ACTOR_TASK_SPEC',
  JOB_COUNTER_TABLE,
];

/**
 * Where a Ray head records its own version, on every start (ray/_common/usage/usage_lib.py
 * put_cluster_metadata: InternalKV namespace `cluster`, key `CLUSTER_METADATA`, JSON with `ray_version`;
 * InternalKV fields are `@namespace_<ns>:<key>` in the hash `RAY<storage ns>@KV`).
 */
export const CLUSTER_METADATA_FIELD = '@namespace_cluster:CLUSTER_METADATA';

/** The `ray_version` of a CLUSTER_METADATA value, or undefined. */
export function metadataRayVersion(value: Buffer | string | null | undefined): string | undefined {
  if (value === null || value === undefined) return undefined;
  try {
    const v = (JSON.parse(value.toString()) as { ray_version?: unknown }).ray_version;
    return typeof v === 'string' ? v : undefined;
  } catch {
    return undefined;
  }
}

/** `RAY<ns>@<TABLE>` for every table Ray is known to write: the keys unlinked before the sweep. */
export function knownKeys(ns: string): Buffer[] {
  return RAY_TABLES.map((table) => Buffer.from(`${CURRENT_PREFIX}${ns}${SEPARATOR}${table}`, 'utf8'));
}

/** Characters special in Redis glob patterns (util.c stringmatchlen): escaped with a backslash. */
const GLOB_SPECIAL = /[*?[\]\\^-]/g;

/** Escapes a literal for use in SCAN/HSCAN MATCH. Escaping '^' and '-' too (as Ray does) is harmless. */
export function escapeGlob(literal: string): string {
  return literal.replace(GLOB_SPECIAL, (c) => `\\${c}`);
}

/** `RAY<ns>@` as bytes: every current-layout key of the namespace starts with it. */
export function currentPrefix(ns: string): Buffer {
  return Buffer.from(`${CURRENT_PREFIX}${ns}${SEPARATOR}`, 'utf8');
}

/** SCAN MATCH pattern for the current layout: `RAY<escaped ns>@*`. */
export function currentPattern(ns: string): Buffer {
  return Buffer.from(`${CURRENT_PREFIX}${escapeGlob(ns)}${SEPARATOR}*`, 'utf8');
}

/** The old layout's single hash key: the namespace itself. */
export function legacyKey(ns: string): Buffer {
  return Buffer.from(ns, 'utf8');
}

/** The prefix every field of an old-layout hash carries: `<ns>@`. */
export function legacyFieldPrefix(ns: string): Buffer {
  return Buffer.from(`${ns}${SEPARATOR}`, 'utf8');
}

/** SCAN MATCH pattern for --list: everything that could be a current-layout key. */
export const LIST_PATTERN = Buffer.from(`${CURRENT_PREFIX}*`, 'utf8');

export type Verdict = { ray: true; table: string } | { ray: false; reason: string };

function startsWith(buf: Buffer, prefix: Buffer): boolean {
  return buf.length >= prefix.length && buf.subarray(0, prefix.length).equals(prefix);
}

const decoder = new TextDecoder('utf-8', { fatal: true });

function strictUtf8(buf: Buffer): string | undefined {
  try {
    return decoder.decode(buf);
  } catch {
    return undefined;
  }
}

/**
 * Is this key (found by SCAN MATCH `RAY<ns>@*`, with its TYPE) one of Ray's tables of `ns`?
 * The prefix is re-checked here, so a wrong MATCH pattern can never widen what is deleted.
 */
export function classifyCurrentKey(key: Buffer, type: string, ns: string): Verdict {
  const prefix = currentPrefix(ns);
  if (!startsWith(key, prefix)) return { ray: false, reason: `does not start with ${displayKey(prefix)}` };
  const table = strictUtf8(key.subarray(prefix.length));
  if (table === undefined) return { ray: false, reason: 'table name is not valid UTF-8' };
  if (table === '') return { ray: false, reason: 'empty table name' };
  if (table.includes(SEPARATOR)) return { ray: false, reason: `table name ${JSON.stringify(table)} contains '@'` };
  if (type === 'none') return { ray: false, reason: 'already gone' };
  if (table === JOB_COUNTER_TABLE) {
    return type === 'string' ? { ray: true, table } : { ray: false, reason: `${JOB_COUNTER_TABLE} is a ${type}, Ray's is a string` };
  }
  return type === 'hash' ? { ray: true, table } : { ray: false, reason: `is a ${type}, Ray's tables are hashes` };
}

/** Fields of an old-layout hash: all must start with `<ns>@` for the hash to be Ray's. */
export function firstForeignField(fields: Buffer[], ns: string): Buffer | undefined {
  const prefix = legacyFieldPrefix(ns);
  return fields.find((f) => !startsWith(f, prefix));
}

/** The key of the old layout when its TYPE is known and before its fields are read. */
export function classifyLegacyType(type: string): { check: 'fields' } | { ray: false; reason: string } | { absent: true } {
  if (type === 'none') return { absent: true };
  if (type === 'hash') return { check: 'fields' };
  return { ray: false, reason: `is a ${type}, Ray's old layout is a hash` };
}

/** For --list: the namespace and table encoded in a `RAY<ns>@<TABLE>` key, or undefined. */
export function parseCurrentKey(key: Buffer): { namespace: string; table: string } | undefined {
  const text = strictUtf8(key);
  if (text === undefined || !text.startsWith(CURRENT_PREFIX)) return undefined;
  const at = text.indexOf(SEPARATOR, CURRENT_PREFIX.length);
  if (at < 0) return undefined;
  const namespace = text.slice(CURRENT_PREFIX.length, at);
  const table = text.slice(at + 1);
  if (namespace === '' || table === '' || table.includes(SEPARATOR)) return undefined;
  return { namespace, table };
}

/**
 * For --list --legacy: could this hash be an old-layout namespace? Every sampled field must start with
 * `<key>@`. The key must itself be a valid namespace (non-empty, no '@').
 */
export function legacyNamespaceOf(key: Buffer, sampleFields: Buffer[]): string | undefined {
  const ns = strictUtf8(key);
  if (ns === undefined || ns === '' || ns.includes(SEPARATOR) || sampleFields.length === 0) return undefined;
  return firstForeignField(sampleFields, ns) === undefined ? ns : undefined;
}

/** A key for humans: UTF-8 when it is, with control and non-UTF-8 bytes as \xNN. Bounded length. */
export function displayKey(key: Buffer, max = 200): string {
  const text = strictUtf8(key);
  let out = '';
  if (text !== undefined) {
    for (const ch of text) {
      const code = ch.codePointAt(0)!;
      out += code < 0x20 || code === 0x7f || ch === '\\' ? (ch === '\\' ? '\\\\' : `\\x${code.toString(16).padStart(2, '0')}`) : ch;
    }
  } else {
    for (const byte of key)
      out +=
        byte >= 0x20 && byte < 0x7f && byte !== 0x5c
          ? String.fromCharCode(byte)
          : byte === 0x5c
            ? '\\\\'
            : `\\x${byte.toString(16).padStart(2, '0')}`;
  }
  return out.length > max ? `${out.slice(0, max)}...` : out;
}

export interface NamespaceSummary {
  namespace: string;
  layout: 'current' | 'legacy';
  /** Ray keys (current: tables incl. JobCounter; legacy: 1). */
  keys: number;
  tables: string[];
  /** Sum of HLEN over the hashes; undefined when not permitted. */
  fields?: number | undefined;
  /** Sum of MEMORY USAGE; undefined when MEMORY USAGE is denied or unsupported. */
  bytes?: number | undefined;
  /** Keys that look like the namespace's but are not Ray's (wrong type, '@' in the table name). */
  lookalikes: number;
}

/** Accumulates --list results; memory grows with the number of namespaces, not keys. */
export class NamespaceTally {
  private readonly byName = new Map<string, NamespaceSummary>();

  private entry(namespace: string, layout: 'current' | 'legacy'): NamespaceSummary {
    const id = `${layout}\u0000${namespace}`;
    let s = this.byName.get(id);
    if (!s) {
      s = { namespace, layout, keys: 0, tables: [], fields: 0, bytes: 0, lookalikes: 0 };
      this.byName.set(id, s);
    }
    return s;
  }

  /** One current-layout key with its TYPE, HLEN (hashes; undefined if unknown) and MEMORY USAGE. */
  addCurrent(key: Buffer, type: string, fields: number | undefined, bytes: number | undefined): void {
    const parsed = parseCurrentKey(key);
    if (!parsed) return;
    const verdict = classifyCurrentKey(key, type, parsed.namespace);
    if (!verdict.ray) {
      if (type !== 'none') this.entry(parsed.namespace, 'current').lookalikes += 1;
      return;
    }
    this.add(this.entry(parsed.namespace, 'current'), verdict.table, type === 'hash' ? fields : 0, bytes);
  }

  addLegacy(namespace: string, fields: number | undefined, bytes: number | undefined): void {
    this.add(this.entry(namespace, 'legacy'), namespace, fields, bytes);
  }

  private add(s: NamespaceSummary, table: string, fields: number | undefined, bytes: number | undefined): void {
    s.keys += 1;
    if (!s.tables.includes(table)) s.tables.push(table);
    s.fields = s.fields === undefined || fields === undefined ? undefined : s.fields + fields;
    s.bytes = s.bytes === undefined || bytes === undefined ? undefined : s.bytes + bytes;
  }

  /** Namespaces with at least one Ray key (look-alike-only prefixes are dropped), sorted by name. */
  summaries(): NamespaceSummary[] {
    return [...this.byName.values()]
      .filter((s) => s.keys > 0)
      .map((s) => ({ ...s, tables: [...s.tables].sort() }))
      .sort((a, b) => (a.namespace < b.namespace ? -1 : a.namespace > b.namespace ? 1 : a.layout < b.layout ? -1 : 1));
  }
}

/** Human table for --list. */
/** With `orphans` (--list --orphans): a last column ORPHAN, `yes` for those namespaces. */
export function formatNamespaceTable(rows: NamespaceSummary[], orphans?: ReadonlySet<string>): string {
  if (rows.length === 0) return 'no Ray storage namespaces found';
  const header = ['NAMESPACE', 'LAYOUT', 'KEYS', 'FIELDS', 'BYTES', 'LOOK-ALIKES', ...(orphans ? ['ORPHAN'] : [])];
  const lines = rows.map((r) => [
    r.namespace,
    r.layout,
    String(r.keys),
    r.fields === undefined ? '?' : String(r.fields),
    r.bytes === undefined ? '?' : String(r.bytes),
    String(r.lookalikes),
    ...(orphans ? [orphans.has(r.namespace) ? 'yes' : ''] : []),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  return [header, ...lines]
    .map((cols) =>
      cols
        .map((c, i) => (i === cols.length - 1 ? c : c.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
