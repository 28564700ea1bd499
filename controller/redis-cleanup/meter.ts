// How long Redis itself spent on each pipeline the cleanup sends, for the pace (src/redis/pace.ts).
//
// Preferred: `INFO commandstats` appended to the same pipeline (no extra round trip). Its `usec` counters
// are what Redis times each command with, the same clock SLOWLOG uses, so the difference between two
// snapshots is the server time of the commands in between: exact, and blind to what inflates a round
// trip on the client's side (a cleanup Job throttled at 250m CPU, the controller's busy event loop, the
// network). The counters are per command name and server-wide, so another client's commands of the same
// name in between are counted as ours: an over-estimate, which only makes the pace more careful.
// Fallback when the ACL denies INFO: the round trip on the cleanup's own connection (idle: one pipeline
// at a time) minus the fastest PING seen at the start. Never less than the server time, often more.
import type { Redis } from 'ioredis';
import { type CommandStat, parseCommandStats, spentUs } from '../../src/redis/commandstats.ts';
import type { Pace } from '../../src/redis/pace.ts';

export type Measure = 'commandstats' | 'round trip';

/** The measuring connection of one node: every pipeline the paced steps send goes through run(). */
export class ServerClock {
  private readonly client: Redis;
  measure: Measure;
  private stats: Map<string, CommandStat> | undefined;
  private readonly baselineMs: number;
  private constructor(client: Redis, measure: Measure, stats: Map<string, CommandStat> | undefined, baselineMs: number) {
    this.client = client;
    this.measure = measure;
    this.stats = stats;
    this.baselineMs = baselineMs;
  }

  static async start(client: Redis): Promise<ServerClock> {
    try {
      const info = (await client.call('INFO', 'commandstats')) as string;
      return new ServerClock(client, 'commandstats', parseCommandStats(String(info)), 0);
    } catch {
      return new ServerClock(client, 'round trip', undefined, await pingBaselineMs(client));
    }
  }

  /**
   * Sends `commands` as one pipeline; the replies (the first error thrown: ioredis reports them in
   * place) and the server time they took. `names`: the commands' names, lower case, for commandstats.
   * `buffers`: replies as Buffers (keys are bytes).
   */
  async run(commands: (string | Buffer)[][], names: readonly string[], buffers = false): Promise<{ replies: unknown[]; serverMs: number }> {
    const p = this.client.pipeline();
    for (const [name, ...args] of commands) {
      if (buffers) p.callBuffer(String(name), ...args);
      else p.call(String(name), ...args);
    }
    const measured = this.measure === 'commandstats';
    if (measured) p.call('INFO', 'commandstats');
    const sent = performance.now();
    const results = (await p.exec()) ?? [];
    const roundTripMs = performance.now() - sent;
    let serverUs: number | undefined;
    if (measured) {
      const [err, info] = results.pop() ?? [new Error('no reply')];
      if (err)
        this.measure = 'round trip'; // INFO refused from now on (an ACL change): the fallback
      else {
        const after = parseCommandStats(String(info));
        serverUs = this.stats ? spentUs(this.stats, after, names) : undefined;
        this.stats = after;
      }
    }
    const replies = results.map(([err, value]) => {
      if (err) throw err;
      return value;
    });
    return { replies, serverMs: serverUs !== undefined ? serverUs / 1000 : Math.max(0, roundTripMs - this.baselineMs) };
  }
}

/** The fastest of three PINGs: the round trip of a command that costs the server nothing (0 if refused). */
async function pingBaselineMs(client: Redis): Promise<number> {
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 3; i++) {
    const sent = performance.now();
    try {
      await client.ping();
    } catch {
      return 0;
    }
    best = Math.min(best, performance.now() - sent);
  }
  return best;
}

/**
 * Commands for `keys` in pipelines of at most pace.size keys, one pipeline at a time (Redis runs a
 * pipeline's commands back to back: their sum is what a neighbour waits), the size adapted after each.
 * The replies, in order. `between` runs before every pipeline but the first (a read-only step's
 * deadline check: it may stop there; a deleting step passes none and finishes what it started).
 * `name`: the command's name in `INFO commandstats` (`memory|usage` for MEMORY USAGE); `buffers`: replies as Buffers.
 */
export async function pacedPipelines(
  clock: ServerClock,
  pace: Pace,
  keys: Buffer[],
  commands: (chunk: Buffer[]) => (string | Buffer)[][],
  name: string,
  between?: () => void,
  buffers = false,
): Promise<unknown[]> {
  const out: unknown[] = [];
  for (let i = 0; i < keys.length; ) {
    if (i > 0) between?.();
    const chunk = keys.slice(i, i + pace.size);
    i += chunk.length;
    const { replies, serverMs } = await clock.run(commands(chunk), [name], buffers);
    pace.observe(serverMs);
    out.push(...replies);
  }
  return out;
}
