// One pino logger factory for every process, so redaction is configured in one place.
import { pino, type Logger, type LoggerOptions } from 'pino';

/** Paths that may carry secrets; pino replaces their values before anything is written. */
export const REDACT_PATHS = [
  'password',
  '*.password',
  'redisPassword',
  '*.redisPassword',
  'env.REDIS_PASSWORD',
  'headers.authorization',
  'req.headers.authorization',
  'headers["x-ray-authorization"]',
  'req.headers["x-ray-authorization"]',
  'token',
  '*.token',
];

export function createLogger(name: string, options: LoggerOptions = {}): Logger {
  return pino({
    name,
    level: process.env.LOG_LEVEL ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    ...options,
  });
}

export type { Logger };
