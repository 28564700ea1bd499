// The controller's HTTP endpoints: /healthz (liveness), /readyz (readiness), /metrics (Prometheus).
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Registry } from '../../src/metrics.ts';
import type { Logger } from '../../src/logger.ts';

export interface HealthReport {
  ok: boolean;
  /** Named checks and whether each passed (shown in the response body). */
  checks: Record<string, boolean | string>;
}

export interface HealthServerOptions {
  live: () => HealthReport;
  ready: () => HealthReport;
  metrics: Registry;
  logger?: Logger | undefined;
}

/** Builds the app without listening (tests use `inject`; main listens). */
export function buildHealthServer(options: HealthServerOptions): FastifyInstance {
  const app = Fastify({ loggerInstance: options.logger?.child({ component: 'http' }) as FastifyBaseLogger | undefined });
  const report = (fn: () => HealthReport) => async (_req: unknown, reply: { code(n: number): unknown }) => {
    const r = fn();
    reply.code(r.ok ? 200 : 503);
    return { status: r.ok ? 'ok' : 'failing', checks: r.checks };
  };
  // Probes and scrapes are frequent: no request logs for them.
  const quiet = { logLevel: 'silent' } as const;
  app.get('/healthz', quiet, report(options.live));
  app.get('/livez', quiet, report(options.live));
  app.get('/readyz', quiet, report(options.ready));
  app.get('/metrics', quiet, async (_req, reply) => {
    reply.header('Content-Type', options.metrics.contentType);
    return options.metrics.metrics();
  });
  return app;
}
