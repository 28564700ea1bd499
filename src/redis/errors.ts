// How a Redis failure is handled: retried with backoff (the server may come back), or reported at once.
// Pure: decisions on error codes and messages, and the backoff schedule.
import { backoffDelay, type BackoffOptions } from '../../kube/backoff.ts';

export type ErrorKind =
  /** Wrong password / user, missing AUTH: retrying cannot help and may lock the account. */
  | 'auth'
  /** ACL denies a command or key. */
  | 'permission'
  /** TLS verification or handshake configuration: retrying cannot help. */
  | 'tls'
  /** Connection refused / reset / timed out, server loading, failover in progress, cluster reconfiguring. */
  | 'retryable'
  /** Anything else (unknown command, protocol errors, our own checks). */
  | 'fatal';

const RETRYABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
  'EAI_AGAIN',
  'ENOTFOUND', // in Kubernetes a Service name may not resolve for a moment
  'ECONNABORTED',
  'ERR_SOCKET_CLOSED',
]);

const TLS_CODES = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|ERR_OSSL_)/;

// Redis reply prefixes (the first word of an error reply).
const RETRYABLE_REPLIES = new Set(['LOADING', 'BUSY', 'TRYAGAIN', 'CLUSTERDOWN', 'MASTERDOWN', 'READONLY', 'MOVED', 'ASK']);
const AUTH_REPLIES = new Set(['WRONGPASS', 'NOAUTH']);

const RETRYABLE_MESSAGES = [
  /connection is closed/i,
  /command timed out/i,
  /connect etimedout/i,
  /socket (closed|hang up)/i,
  /stream isn't writeable/i,
  /reached the max retries per request/i,
  /all sentinels are unreachable/i,
  /none of the sentinels are available/i,
  /failed to refresh slots cache/i,
  /none of startup nodes is available/i,
  /cluster isn't ready/i,
  /command aborted due to connection close/i,
  /timed out while connecting/i,
];

export interface ErrorLike {
  message?: unknown;
  code?: unknown;
  name?: unknown;
}

export function classifyRedisError(err: unknown): ErrorKind {
  const e = (err ?? {}) as ErrorLike;
  const message = typeof e.message === 'string' ? e.message : String(err);
  const code = typeof e.code === 'string' ? e.code : '';
  const firstWord = message.trim().split(/\s/, 1)[0] ?? '';
  if (AUTH_REPLIES.has(firstWord) || /invalid (username-)?password|authentication required|invalid username/i.test(message)) return 'auth';
  if (firstWord === 'NOPERM' || /no permissions to (run|access)/i.test(message)) return 'permission';
  if (
    TLS_CODES.test(code) ||
    /certificate|self[- ]signed|wrong version number|ssl routines|alert handshake|tls handshake failed|hostname\/ip does not match/i.test(
      message,
    )
  )
    return 'tls';
  if (RETRYABLE_CODES.has(code) || RETRYABLE_REPLIES.has(firstWord)) return 'retryable';
  for (const re of RETRYABLE_CODES) if (message.includes(re)) return 'retryable';
  if (RETRYABLE_MESSAGES.some((re) => re.test(message))) return 'retryable';
  return 'fatal';
}

/** Codes that mean no TCP connection could be made: nothing answered at the address. */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
  'EAI_AGAIN',
  'ENOTFOUND',
  'EADDRNOTAVAIL',
]);

/**
 * Did this connection attempt fail because nothing could be reached (refused, no route, no such name,
 * connect timed out)? A server that accepted the connection and then was slow, closed it or answered
 * LOADING is reachable: those failures are not counted against the connection budget.
 */
export function isUnreachable(err: unknown): boolean {
  const e = (err ?? {}) as ErrorLike;
  const code = typeof e.code === 'string' ? e.code : '';
  const message = typeof e.message === 'string' ? e.message : String(err);
  if (UNREACHABLE_CODES.has(code)) return true;
  for (const c of UNREACHABLE_CODES) if (message.includes(c)) return true;
  return /connect etimedout|timed out while connecting/i.test(message);
}

/** The Redis cleanup's retry schedule: 250 ms doubling to 8 s, 20 % jitter. */
export const REDIS_BACKOFF: BackoffOptions = { baseMs: 250, maxMs: 8000, factor: 2, jitter: 0.2 };

/**
 * Delay before retry number `failures` (1 = first retry), never past the deadline: undefined when even
 * a minimal wait would not leave time for another try.
 */
export function delayWithin(
  failures: number,
  remainingMs: number,
  options: BackoffOptions = REDIS_BACKOFF,
  random: () => number = Math.random,
): number | undefined {
  if (remainingMs <= 0) return undefined;
  // Leave at least a quarter of the first delay for the attempt itself.
  const slice = Math.ceil(options.baseMs / 4);
  if (remainingMs < options.baseMs / 4) return undefined;
  return Math.min(backoffDelay(failures, options, random), Math.max(0, remainingMs - slice));
}
