// `--list`: the Ray storage namespaces present in Redis with their key counts and sizes (kuberay #1941:
// finding namespaces that outlived their RayCluster). SCAN MATCH `RAY*` on every node; with `legacy`,
// also every hash whose sampled fields all read `<key>@...` (older Ray's single-hash layout).
import type { Redis } from 'ioredis';
import { legacyNamespaceOf, LIST_PATTERN, NamespaceTally, type NamespaceSummary } from './keys.ts';
import type { BackoffOptions } from '../../src/backoff.ts';
import { classifyRedisError } from './errors.ts';
import { errorMessage } from '../../src/errors.ts';
import type { RedisConnectionOptions, Session } from './connect.ts';
import { DeadlineExceeded, scan, withRetries } from './retry.ts';
import { DEFAULT_DEADLINE_MS, DEFAULT_SCAN_COUNT } from './cleanup.ts';

export interface ListOptions {
  connection: RedisConnectionOptions;
  /** Also look for the old single-hash layout (one HSCAN probe per hash in Redis: slower). */
  legacy?: boolean | undefined;
  scanCount?: number | undefined;
  deadlineMs?: number | undefined;
  /** See CleanupOptions.connectBudgetMs. */
  connectBudgetMs?: number | undefined;
  backoff?: BackoffOptions | undefined;
  onRetry?: ((info: { attempt: number; delayMs: number; reason: string }) => void) | undefined;
  /** Stops between SCAN calls and during retry waits (the controller's orphan finder). */
  signal?: AbortSignal | undefined;
}

export interface NamespaceListing {
  target: string;
  mode: Session['mode'];
  namespaces: NamespaceSummary[];
  attempts: number;
  durationMs: number;
  warnings: string[];
}

/** Optional commands (HLEN, MEMORY USAGE): when denied or unknown, stop asking and report "unknown". */
class Optional {
  allowed = true;
  readonly what: string;
  private readonly warnings: string[];
  constructor(what: string, warnings: string[]) {
    this.what = what;
    this.warnings = warnings;
  }
  /** Replies per command; undefined entries where the command is not available. */
  async run(client: Redis, commands: (string | Buffer)[][]): Promise<(number | undefined)[]> {
    if (!this.allowed || commands.length === 0) return commands.map(() => undefined);
    const results = (await client.pipeline(commands).exec()) ?? [];
    const out: (number | undefined)[] = [];
    for (const [err, value] of results) {
      if (err) {
        const kind = classifyRedisError(err);
        if (kind === 'permission' || /unknown command|unknown subcommand|not allowed/i.test(errorMessage(err))) {
          this.allowed = false;
          this.warnings.push(`${this.what} is not available (${errorMessage(err).split('\n')[0]}): sizes reported as unknown`);
          return commands.map(() => undefined);
        }
        throw err;
      }
      out.push(value === null || value === undefined ? undefined : Number(value));
    }
    return out;
  }
}

async function types(client: Redis, keys: Buffer[]): Promise<string[]> {
  const results = (await client.pipeline(keys.map((k) => ['type', k])).exec()) ?? [];
  return results.map(([err, v]) => {
    if (err) throw err;
    return String(v);
  });
}

export async function listNamespaces(options: ListOptions): Promise<NamespaceListing> {
  const started = Date.now();
  const deadline = started + (options.deadlineMs ?? DEFAULT_DEADLINE_MS);
  const scanCount = options.scanCount ?? DEFAULT_SCAN_COUNT;
  const { value, attempts } = await withRetries(
    {
      connection: options.connection,
      deadline,
      connectBudgetMs: options.connectBudgetMs,
      backoff: options.backoff,
      onRetry: options.onRetry,
      signal: options.signal,
    },
    async (session) => {
      const warnings = [...session.warnings];
      const tally = new NamespaceTally();
      const hlen = new Optional('HLEN', warnings);
      const memory = new Optional('MEMORY USAGE', warnings);
      for (const node of session.nodes) {
        let cursor = '0';
        do {
          options.signal?.throwIfAborted();
          if (Date.now() >= deadline) throw new DeadlineExceeded(`deadline reached while listing ${node.label}`);
          const [next, keys] = await scan(node.client, cursor, 'MATCH', LIST_PATTERN, 'COUNT', String(scanCount));
          cursor = next.toString();
          if (keys.length > 0) {
            const kinds = await types(node.client, keys);
            const hashes = keys.filter((_, i) => kinds[i] === 'hash');
            const lens = await hlen.run(
              node.client,
              hashes.map((k) => ['hlen', k]),
            );
            const fieldsOf = new Map(hashes.map((k, i) => [k.toString('latin1'), lens[i]]));
            const bytes = await memory.run(
              node.client,
              keys.map((k) => ['memory', 'usage', k]),
            );
            keys.forEach((k, i) => tally.addCurrent(k, kinds[i]!, kinds[i] === 'hash' ? fieldsOf.get(k.toString('latin1')) : 0, bytes[i]));
          }
        } while (cursor !== '0');
        if (options.legacy) await legacyScan(node.client, scanCount, deadline, tally, hlen, memory);
      }
      return { describe: session.describe, mode: session.mode, namespaces: tally.summaries(), warnings };
    },
  );
  return {
    target: value.describe,
    mode: value.mode,
    namespaces: value.namespaces,
    attempts,
    durationMs: Date.now() - started,
    warnings: [...new Set(value.warnings)],
  };
}

async function legacyScan(
  client: Redis,
  scanCount: number,
  deadline: number,
  tally: NamespaceTally,
  hlen: Optional,
  memory: Optional,
): Promise<void> {
  let typeFilter = true;
  const scanHashes = async (cursor: string): Promise<[Buffer, Buffer[]]> => {
    if (typeFilter) {
      try {
        return await scan(client, cursor, 'COUNT', String(scanCount), 'TYPE', 'hash');
      } catch (err) {
        // SCAN ... TYPE needs Redis 6; without it, ask TYPE per key.
        if (!/syntax/i.test(errorMessage(err))) throw err;
        typeFilter = false;
      }
    }
    const [next, keys] = await scan(client, cursor, 'COUNT', String(scanCount));
    if (keys.length === 0) return [next, keys];
    const kinds = await types(client, keys);
    return [next, keys.filter((_, i) => kinds[i] === 'hash')];
  };
  let cursor = '0';
  do {
    if (Date.now() >= deadline) throw new DeadlineExceeded('deadline reached while looking for old-layout namespaces');
    const [next, hashes] = await scanHashes(cursor);
    cursor = next.toString();
    // Keys containing '@' can never be a namespace (Ray forbids it), which also skips RAY<ns>@<TABLE>.
    await probeLegacy(
      client,
      hashes.filter((k) => !k.includes(0x40)),
      tally,
      hlen,
      memory,
    );
  } while (cursor !== '0');
}

/** Samples up to ~20 fields of each hash: Ray's old layout has every field starting with `<key>@`. */
async function probeLegacy(client: Redis, keys: Buffer[], tally: NamespaceTally, hlen: Optional, memory: Optional): Promise<void> {
  if (keys.length === 0) return;
  const probes = (await client.pipeline(keys.map((k) => ['hscanBuffer', k, '0', 'COUNT', '20'] as (string | Buffer)[])).exec()) ?? [];
  const found: { key: Buffer; ns: string }[] = [];
  probes.forEach(([err, reply], i) => {
    if (err) throw err;
    const flat = (reply as [Buffer, Buffer[]])[1] ?? [];
    const ns = legacyNamespaceOf(
      keys[i]!,
      flat.filter((_, j) => j % 2 === 0),
    );
    if (ns !== undefined) found.push({ key: keys[i]!, ns });
  });
  if (found.length === 0) return;
  const fields = await hlen.run(
    client,
    found.map((f) => ['hlen', f.key]),
  );
  const bytes = await memory.run(
    client,
    found.map((f) => ['memory', 'usage', f.key]),
  );
  found.forEach((f, i) => tally.addLegacy(f.ns, fields[i], bytes[i]));
}
