// Runs an idempotent pass over a fresh Redis session, retrying connection-class failures with
// exponential backoff until one total deadline. Auth, permission, TLS and other errors end it at once.
// A Redis that cannot be reached at all (refused, no route, no such name, connect timeout) is given up
// on after the connection budget (Ray's own cleanup: 120 x 500 ms = 60 s), so a deleted cluster whose
// Redis is gone is released in about a minute; a Redis that accepts connections but is slow (or
// restarts, loads, fails over) keeps the whole deadline.
import { sleep, type BackoffOptions } from '../../kube/backoff.ts';
import { delayWithin, isUnreachable, REDIS_BACKOFF } from '../../src/redis/errors.ts';
import type { Redis } from 'ioredis';
import { openSession, RedisCleanupError, wrapError, type RedisConnectionOptions, type Session } from './connect.ts';

export class DeadlineExceeded extends RedisCleanupError {
  constructor(message: string) {
    super(message, 'fatal');
  }
}

/** How long a Redis may stay unreachable before the cleanup gives up (KubeRay/Ray: 60 s). */
export const DEFAULT_CONNECT_BUDGET_MS = 60_000;

export interface RetryOptions {
  connection: RedisConnectionOptions;
  /** Absolute time (Date.now() scale) after which no new attempt starts and passes stop. */
  deadline: number;
  /** Consecutive time without any connection before giving up (default DEFAULT_CONNECT_BUDGET_MS). */
  connectBudgetMs?: number | undefined;
  backoff?: BackoffOptions | undefined;
  /** Ends the retries (and the wait between them) when aborted. */
  signal?: AbortSignal | undefined;
  onRetry?: ((info: { attempt: number; delayMs: number; reason: string }) => void) | undefined;
}

/** Per-command and connect timeouts shrink with short deadlines so one hung call cannot eat them. */
export function withTimeouts(connection: RedisConnectionOptions, totalMs: number): RedisConnectionOptions {
  const perCall = Math.max(300, Math.min(10_000, Math.floor(totalMs / 4)));
  return {
    ...connection,
    commandTimeoutMs: connection.commandTimeoutMs ?? perCall,
    connectTimeoutMs: connection.connectTimeoutMs ?? perCall,
  };
}

export async function withRetries<T>(
  opts: RetryOptions,
  pass: (session: Session, attempt: number) => Promise<T>,
): Promise<{ value: T; attempts: number }> {
  const started = Date.now();
  const policy = opts.backoff ?? REDIS_BACKOFF;
  const connection = withTimeouts(opts.connection, opts.deadline - started);
  const budgetMs = opts.connectBudgetMs ?? DEFAULT_CONNECT_BUDGET_MS;
  let attempts = 0;
  let lastError: RedisCleanupError | undefined;
  /** When the current run of unreachable attempts began (reset by every session that opens). */
  let unreachableSince: number | undefined;
  for (;;) {
    attempts += 1;
    let session: Session | undefined;
    const attemptStarted = Date.now();
    try {
      if (opts.signal?.aborted) throw new RedisCleanupError('aborted', 'fatal', { cause: opts.signal.reason });
      if (Date.now() >= opts.deadline) throw new DeadlineExceeded('deadline reached before connecting');
      session = await openSession(connection);
      unreachableSince = undefined;
      return { value: await pass(session, attempts), attempts };
    } catch (err) {
      const wrapped =
        err instanceof RedisCleanupError ? err : wrapError(session ? session.explain(err) : err, session?.describe ?? 'redis');
      if (wrapped instanceof DeadlineExceeded) throw giveUp(wrapped, lastError, Date.now() - started);
      if (wrapped.kind !== 'retryable') throw wrapped;
      lastError = wrapped;
      let remaining = opts.deadline - Date.now();
      if (!session && isUnreachable(wrapped.cause ?? wrapped)) {
        unreachableSince ??= attemptStarted;
        const unreachableMs = Date.now() - unreachableSince;
        if (unreachableMs >= budgetMs) throw unreachable(wrapped, unreachableMs, attempts);
        // One last attempt when the budget ends, not a sleep past it.
        remaining = Math.min(remaining, unreachableSince + budgetMs - Date.now() + Math.ceil(policy.baseMs / 4));
      }
      const delay = delayWithin(attempts, remaining, policy);
      if (delay === undefined) {
        if (unreachableSince !== undefined && remaining < opts.deadline - Date.now())
          throw unreachable(wrapped, Date.now() - unreachableSince, attempts);
        throw giveUp(new DeadlineExceeded('deadline reached'), lastError, Date.now() - started);
      }
      opts.onRetry?.({ attempt: attempts, delayMs: delay, reason: wrapped.message });
      await sleep(delay, opts.signal);
    } finally {
      await session?.close().catch(() => undefined);
    }
  }
}

/** The connection budget is spent: one line naming the address and the last reason. */
function unreachable(last: RedisCleanupError, unreachableMs: number, attempts: number): RedisCleanupError {
  const seconds = Math.round(unreachableMs / 1000);
  return new RedisCleanupError(
    `Redis unreachable for ${seconds}s (${attempts} attempts, connection budget spent): ${last.message}`,
    'retryable',
    { cause: last },
  );
}

function giveUp(err: RedisCleanupError, last: RedisCleanupError | undefined, elapsedMs: number): RedisCleanupError {
  const seconds = (elapsedMs / 1000).toFixed(1);
  const why = last ? `; last error: ${last.message}` : '';
  return new RedisCleanupError(`gave up after ${seconds}s: ${err.message}${why}`, 'retryable', { cause: last ?? err });
}

/** SCAN with binary-safe keys and pattern: [next cursor, keys]. */
export async function scan(client: Redis, cursor: string, ...args: (string | Buffer)[]): Promise<[Buffer, Buffer[]]> {
  const reply = (await client.callBuffer('SCAN', cursor, ...args)) as [Buffer, Buffer[]];
  return [reply[0], reply[1] ?? []];
}
