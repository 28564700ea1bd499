// Runs an idempotent pass over a fresh Redis session, retrying connection-class failures with
// exponential backoff until one total deadline. Auth, permission, TLS and other errors end it at once.
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffDelay, DEFAULT_BACKOFF, type BackoffPolicy } from '../../src/redis/errors.ts';
import type { Redis } from 'ioredis';
import { openSession, RedisCleanupError, wrapError, type RedisConnectionOptions, type Session } from './connect.ts';

export class DeadlineExceeded extends RedisCleanupError {
  constructor(message: string) {
    super(message, 'fatal');
  }
}

export interface RetryOptions {
  connection: RedisConnectionOptions;
  /** Absolute time (Date.now() scale) after which no new attempt starts and passes stop. */
  deadline: number;
  backoff?: BackoffPolicy | undefined;
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

export async function withRetries<T>(opts: RetryOptions, pass: (session: Session, attempt: number) => Promise<T>): Promise<{ value: T; attempts: number }> {
  const started = Date.now();
  const policy = opts.backoff ?? DEFAULT_BACKOFF;
  const connection = withTimeouts(opts.connection, opts.deadline - started);
  let attempts = 0;
  let lastError: RedisCleanupError | undefined;
  for (;;) {
    attempts += 1;
    let session: Session | undefined;
    try {
      if (Date.now() >= opts.deadline) throw new DeadlineExceeded('deadline reached before connecting');
      session = await openSession(connection);
      return { value: await pass(session, attempts), attempts };
    } catch (err) {
      const wrapped = err instanceof RedisCleanupError ? err : wrapError(session ? session.explain(err) : err, session?.describe ?? 'redis');
      if (wrapped instanceof DeadlineExceeded) throw giveUp(wrapped, lastError, Date.now() - started);
      if (wrapped.kind !== 'retryable') throw wrapped;
      lastError = wrapped;
      const delay = backoffDelay(attempts - 1, opts.deadline - Date.now(), policy);
      if (delay === undefined) throw giveUp(new DeadlineExceeded('deadline reached'), lastError, Date.now() - started);
      opts.onRetry?.({ attempt: attempts, delayMs: delay, reason: wrapped.message });
      await sleep(delay);
    } finally {
      await session?.close().catch(() => undefined);
    }
  }
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
