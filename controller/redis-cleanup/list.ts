// `--list`: the Ray storage namespaces present in Redis with their key counts and sizes (kuberay #1941:
// finding namespaces that outlived their RayCluster). SCAN MATCH `RAY*` on every node; with `legacy`,
// also every hash whose sampled fields all read `<key>@...` (older Ray's single-hash layout).
// Paced like the cleanup's sweep (src/redis/pace.ts, ./meter.ts): no SCAN and no pipeline of TYPE, HLEN,
// MEMORY USAGE or HSCAN probes takes more than the command budget of server time, so listing a shared
// Redis (a person's --list, the controller's orphan finder every 10 minutes) never stalls its clusters' GCS.
import type { Redis } from 'ioredis';
import { legacyNamespaceOf, LIST_PATTERN, NamespaceTally, type NamespaceSummary } from '../../src/redis/keys.ts';
import type { BackoffOptions } from '../../kube/backoff.ts';
import { classifyRedisError } from '../../src/redis/errors.ts';
import { errorMessage } from '../../src/errors.ts';
import type { RedisConnectionOptions, Session } from './connect.ts';
import { DeadlineExceeded, withRetries } from './retry.ts';
import { DEFAULT_DEADLINE_MS } from './cleanup.ts';
import { BATCH_PACE, DEFAULT_COMMAND_BUDGET_MS, Pace, SCAN_PACE } from '../../src/redis/pace.ts';
import { pacedPipelines, ServerClock } from './meter.ts';

export interface ListOptions {
  connection: RedisConnectionOptions;
  /** Also look for the old single-hash layout (one HSCAN probe per hash in Redis: slower). */
  legacy?: boolean | undefined;
  /** Most server time per command or pipeline, ms (default DEFAULT_COMMAND_BUDGET_MS). */
  commandBudgetMs?: number | undefined;
  /** A fixed SCAN COUNT (measured, not adapted); default: adapted to the budget. */
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
  /** The longest server time one of the listing's commands (or pipelines) took, ms, and how it was measured. */
  longestMs: number;
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
  /** Replies per key of `node.batch(...)`; undefined entries where the command is not available. */
  async run(keys: Buffer[], batch: (keys: Buffer[]) => Promise<unknown[]>): Promise<(number | undefined)[]> {
    if (!this.allowed || keys.length === 0) return keys.map(() => undefined);
    try {
      return (await batch(keys)).map((value) => (value === null || value === undefined ? undefined : Number(value)));
    } catch (err) {
      const kind = classifyRedisError(err);
      if (kind === 'permission' || /unknown command|unknown subcommand|not allowed/i.test(errorMessage(err))) {
        this.allowed = false;
        this.warnings.push(`${this.what} is not available (${errorMessage(err).split('\n')[0]}): sizes reported as unknown`);
        return keys.map(() => undefined);
      }
      throw err;
    }
  }
}

/** One node's paced commands: SCAN with an adapted COUNT, and pipelines of one command per key. */
class PacedNode {
  private readonly paces = new Map<string, Pace>();
  private readonly scanPace: Pace;
  private readonly clock: ServerClock;
  private readonly budgetMs: number;
  private readonly check: () => void;
  constructor(clock: ServerClock, budgetMs: number, scanCount: number | undefined, check: () => void) {
    this.clock = clock;
    this.budgetMs = budgetMs;
    this.check = check;
    this.scanPace = new Pace(budgetMs, SCAN_PACE, scanCount);
  }

  static async start(client: Redis, budgetMs: number, scanCount: number | undefined, check: () => void): Promise<PacedNode> {
    return new PacedNode(await ServerClock.start(client), budgetMs, scanCount, check);
  }

  async scan(cursor: string, ...args: (string | Buffer)[]): Promise<[Buffer, Buffer[]]> {
    this.check();
    const { replies, serverMs } = await this.clock.run([['SCAN', cursor, ...args, 'COUNT', String(this.scanPace.size)]], ['scan'], true);
    this.scanPace.observe(serverMs);
    const [next, keys] = replies[0] as [Buffer, Buffer[] | undefined];
    return [next, keys ?? []];
  }

  /** `command(key)` for every key; `name` as INFO commandstats counts it. Replies in key order. */
  batch(keys: Buffer[], command: (key: Buffer) => (string | Buffer)[], name: string): Promise<unknown[]> {
    let pace = this.paces.get(name);
    if (!pace) this.paces.set(name, (pace = new Pace(this.budgetMs, BATCH_PACE)));
    return pacedPipelines(this.clock, pace, keys, (chunk) => chunk.map(command), name, this.check, true);
  }

  get longestMs(): number {
    return Math.max(this.scanPace.longestMs, ...[...this.paces.values()].map((p) => p.longestMs));
  }
}

export async function listNamespaces(options: ListOptions): Promise<NamespaceListing> {
  const started = Date.now();
  const deadline = started + (options.deadlineMs ?? DEFAULT_DEADLINE_MS);
  const budgetMs = options.commandBudgetMs ?? DEFAULT_COMMAND_BUDGET_MS;
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
      let longestMs = 0;
      for (const n of session.nodes) {
        const node = await PacedNode.start(n.client, budgetMs, options.scanCount, () => {
          options.signal?.throwIfAborted();
          if (Date.now() >= deadline) throw new DeadlineExceeded(`deadline reached while listing ${n.label}`);
        });
        let cursor = '0';
        do {
          const [next, keys] = await node.scan(cursor, 'MATCH', LIST_PATTERN);
          cursor = next.toString();
          if (keys.length > 0) {
            const kinds = (await node.batch(keys, (k) => ['type', k], 'type')).map((v) => String(v));
            const hashes = keys.filter((_, i) => kinds[i] === 'hash');
            const lens = await hlen.run(hashes, (ks) => node.batch(ks, (k) => ['hlen', k], 'hlen'));
            const fieldsOf = new Map(hashes.map((k, i) => [k.toString('latin1'), lens[i]]));
            const bytes = await memory.run(keys, (ks) => node.batch(ks, (k) => ['memory', 'usage', k], 'memory|usage'));
            keys.forEach((k, i) => tally.addCurrent(k, kinds[i]!, kinds[i] === 'hash' ? fieldsOf.get(k.toString('latin1')) : 0, bytes[i]));
          }
        } while (cursor !== '0');
        if (options.legacy) await legacyScan(node, tally, hlen, memory);
        longestMs = Math.max(longestMs, node.longestMs);
      }
      return { describe: session.describe, mode: session.mode, namespaces: tally.summaries(), warnings, longestMs };
    },
  );
  return {
    target: value.describe,
    mode: value.mode,
    namespaces: value.namespaces,
    attempts,
    durationMs: Date.now() - started,
    warnings: [...new Set(value.warnings)],
    longestMs: value.longestMs,
  };
}

async function legacyScan(node: PacedNode, tally: NamespaceTally, hlen: Optional, memory: Optional): Promise<void> {
  let typeFilter = true;
  const scanHashes = async (cursor: string): Promise<[Buffer, Buffer[]]> => {
    if (typeFilter) {
      try {
        return await node.scan(cursor, 'TYPE', 'hash');
      } catch (err) {
        // SCAN ... TYPE needs Redis 6; without it, ask TYPE per key.
        if (!/syntax/i.test(errorMessage(err))) throw err;
        typeFilter = false;
      }
    }
    const [next, keys] = await node.scan(cursor);
    if (keys.length === 0) return [next, keys];
    const kinds = (await node.batch(keys, (k) => ['type', k], 'type')).map((v) => String(v));
    return [next, keys.filter((_, i) => kinds[i] === 'hash')];
  };
  let cursor = '0';
  do {
    const [next, hashes] = await scanHashes(cursor);
    cursor = next.toString();
    // Keys containing '@' can never be a namespace (Ray forbids it), which also skips RAY<ns>@<TABLE>.
    await probeLegacy(
      node,
      hashes.filter((k) => !k.includes(0x40)),
      tally,
      hlen,
      memory,
    );
  } while (cursor !== '0');
}

/** Samples up to ~20 fields of each hash: Ray's old layout has every field starting with `<key>@`. */
async function probeLegacy(node: PacedNode, keys: Buffer[], tally: NamespaceTally, hlen: Optional, memory: Optional): Promise<void> {
  if (keys.length === 0) return;
  const probes = await node.batch(keys, (k) => ['HSCAN', k, '0', 'COUNT', '20'], 'hscan');
  const found: { key: Buffer; ns: string }[] = [];
  probes.forEach((reply, i) => {
    const flat = (reply as [Buffer, Buffer[]])[1] ?? [];
    const ns = legacyNamespaceOf(
      keys[i]!,
      flat.filter((_, j) => j % 2 === 0),
    );
    if (ns !== undefined) found.push({ key: keys[i]!, ns });
  });
  if (found.length === 0) return;
  const foundKeys = found.map((f) => f.key);
  const fields = await hlen.run(foundKeys, (ks) => node.batch(ks, (k) => ['hlen', k], 'hlen'));
  const bytes = await memory.run(foundKeys, (ks) => node.batch(ks, (k) => ['memory', 'usage', k], 'memory|usage'));
  found.forEach((f, i) => tally.addLegacy(f.ns, fields[i], bytes[i]));
}
