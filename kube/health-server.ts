// The controller's HTTP endpoints: /healthz and /livez (liveness), /readyz (readiness), /metrics
// (Prometheus). Plain node:http: four GET routes do not need Fastify, which costs the controller ~20 MiB
// of RSS at start (the webhook keeps it).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Registry } from './metrics.ts';
import type { Logger } from './logger.ts';

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

function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

/** Builds the server without listening (main listens; tests listen on port 0). */
export function buildHealthServer(options: HealthServerOptions): Server {
  const log = options.logger?.child({ component: 'http' });
  const report = (res: ServerResponse, fn: () => HealthReport): void => {
    const r = fn();
    send(res, r.ok ? 200 : 503, 'application/json; charset=utf-8', JSON.stringify({ status: r.ok ? 'ok' : 'failing', checks: r.checks }));
  };
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'text/plain', 'method not allowed\n');
    if (path === '/healthz' || path === '/livez') return report(res, options.live);
    if (path === '/readyz') return report(res, options.ready);
    if (path === '/metrics') return send(res, 200, options.metrics.contentType, await options.metrics.metrics());
    send(res, 404, 'text/plain', 'not found\n');
  };
  return createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      log?.error({ err, url: req.url }, 'health server request failed');
      if (!res.headersSent) send(res, 500, 'text/plain', 'internal error\n');
      else res.destroy();
    });
  });
}

/** Listens; resolves with the bound port. */
export function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : port);
    });
  });
}

/** Stops accepting and ends idle keep-alive connections (scrapers keep them open). */
export function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}
