// The admission webhook's HTTPS app: buildApp() wires routes, parsing, TLS reloading and metrics, and
// returns the Fastify instance without listening (tests use app.inject or listen on port 0).
import { randomUUID } from 'node:crypto';
import type { Server as HttpsServer } from 'node:https';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { mutate, type MutateOptions, type MutateOutcome, type TargetKind } from '../src/admission/mutate.ts';
import { denied } from '../src/admission/response.ts';
import { DEFAULT_ADMISSION_API_VERSION } from '../src/admission/review.ts';
import { redisCleanupEnabled } from '../src/gcsft.ts';
import { createLogger, type Logger } from '../src/logger.ts';
import { createMetricsRegistry, type Registry } from '../src/metrics.ts';
import { ENABLE_GCS_FT_REDIS_CLEANUP_ENV, MUTATE_RAYCLUSTER_PATH, MUTATE_RAYJOB_PATH } from '../src/names.ts';
import type { Counter } from 'prom-client';
import { createWebhookMetrics, type ErrorReason, type WebhookMetrics } from './metrics.ts';
import { CertificateReloader, loadTlsMaterial, secureContextOptions } from './tls.ts';

/** controller-runtime's admission body limit. */
export const DEFAULT_BODY_LIMIT = 7 * 1024 * 1024;

export interface WebhookOptions {
  certFile: string;
  keyFile: string;
  logger?: Logger;
  registry?: Registry;
  /** Fresh storage namespace for a new RayCluster; default crypto.randomUUID. */
  newStorageNamespace?: () => string;
  /** Add the GCS FT cleanup finalizer; default: env ENABLE_GCS_FT_REDIS_CLEANUP is not "false". */
  finalizerEnabled?: boolean;
  bodyLimit?: number;
  /** Certificate files are also re-read this often (file events are the fast path). Default 30 s. */
  certificatePollIntervalMs?: number;
  /**
   * On shutdown, keep listening and answering this long first, every answer closing its connection
   * (default 0). Behind a Service, the API server keeps calling a deleted pod over its kept-alive
   * connections and kube-proxy's rules until they are updated; closing them at once would reset requests
   * already on the wire, which failurePolicy Ignore turns into silently skipped defaults.
   */
  drainMs?: number;
}

export type WebhookApp = FastifyInstance<HttpsServer> & {
  /** Re-read the certificate files now (also done on file events and periodically). */
  reloadCertificates: () => Promise<boolean>;
  metricsRegistry: Registry;
};

type Resource = 'raycluster' | 'rayjob';
const ROUTES: ReadonlyArray<{ path: string; target: TargetKind; resource: Resource }> = [
  { path: MUTATE_RAYCLUSTER_PATH, target: 'RayCluster', resource: 'raycluster' },
  { path: MUTATE_RAYJOB_PATH, target: 'RayJob', resource: 'rayjob' },
];

interface RouteConfig {
  resource?: Resource;
}

class InvalidJsonError extends Error {
  statusCode = 400;
  code = 'RAYKEEPER_INVALID_JSON';
}

/** Fastify's own errors before the handler runs, mapped to an HTTP status and a metrics reason. */
function classify(err: FastifyError): { status: number; reason: ErrorReason } {
  if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return { status: 413, reason: 'body_too_large' };
  if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return { status: 415, reason: 'unsupported_media_type' };
  if (err instanceof InvalidJsonError || err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return { status: 400, reason: 'invalid_json' };
  const status = err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 600 ? err.statusCode : 500;
  return { status, reason: status >= 500 ? 'internal' : 'other' };
}

export async function buildApp(options: WebhookOptions): Promise<WebhookApp> {
  const logger = options.logger ?? createLogger('raykeeper-webhook');
  const registry = options.registry ?? createMetricsRegistry();
  const metrics: WebhookMetrics = createWebhookMetrics(registry);
  const counters = {
    requests: bound(metrics.requests, 'resource', 'operation'),
    patches: bound(metrics.patches, 'resource', 'operation'),
    errors: bound(metrics.errors, 'resource', 'reason'),
  };
  const durations = { raycluster: metrics.duration.labels({ resource: 'raycluster' }), rayjob: metrics.duration.labels({ resource: 'rayjob' }) };
  const mutateOptions: MutateOptions = {
    newStorageNamespace: options.newStorageNamespace ?? randomUUID,
    finalizerEnabled: options.finalizerEnabled ?? redisCleanupEnabled(process.env[ENABLE_GCS_FT_REDIS_CLEANUP_ENV]),
  };

  const material = await loadTlsMaterial(options.certFile, options.keyFile);
  const app = Fastify({
    https: secureContextOptions(material),
    loggerInstance: logger as FastifyBaseLogger,
    // No per-request access lines and no per-request child logger: the handler logs refusals at warn and
    // routine patches at debug with the admission uid (the API server's audit log records patches too).
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: (parent) => parent,
    bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
    requestTimeout: 30_000,
    // While draining (drainMs) admission calls are still answered; /readyz says 503 on its own.
    return503OnClosing: !options.drainMs,
  }) as unknown as FastifyInstance<HttpsServer>;

  metrics.certificateNotAfter.set(material.notAfter.getTime() / 1000);
  const reloader = new CertificateReloader({
    certFile: options.certFile,
    keyFile: options.keyFile,
    initial: material,
    apply: (m) => app.server.setSecureContext(secureContextOptions(m)),
    log: logger,
    pollIntervalMs: options.certificatePollIntervalMs ?? 30_000,
    onReload: (result, m) => {
      metrics.certificateReloads.inc({ result });
      metrics.certificateNotAfter.set(m.notAfter.getTime() / 1000);
    },
  });
  reloader.start();
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
    if (options.drainMs) await new Promise((r) => setTimeout(r, options.drainMs));
  });
  app.addHook('onClose', async () => reloader.stop());

  // Only JSON is accepted (anything else: 415). Plain JSON.parse: we never merge the body into other
  // objects, and a "__proto__" key in a user's map must not get a valid cluster refused.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, JSON.parse(body as string));
    } catch (err) {
      done(new InvalidJsonError(`the body is not valid JSON: ${(err as Error).message}`), undefined);
    }
  });

  app.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const { status, reason } = classify(err);
    const resource = (request.routeOptions.config as RouteConfig | undefined)?.resource;
    if (resource !== undefined) {
      counters.requests(resource, 'invalid').inc();
      counters.errors(resource, reason).inc();
      durations[resource].observe(reply.elapsedTime / 1000);
    }
    if (closing) void reply.header('connection', 'close');
    const message = status >= 500 ? `internal error: ${err.message}` : err.message;
    if (status >= 500) logger.error({ err, resource, status, url: request.url }, 'request failed');
    else logger.warn({ resource, status, code: err.code, error: err.message }, 'admission request refused');
    if (resource === undefined) return void reply.code(status).send({ error: message });
    // The body could not be read, so no uid is known: still an AdmissionReview refusal with the reason.
    void reply.code(status).send(denied(DEFAULT_ADMISSION_API_VERSION, undefined, status, message));
  });

  for (const { path, target, resource } of ROUTES) {
    app.post(path, {
      config: { resource } satisfies RouteConfig,
      handler: async (request, reply) => {
        const outcome = mutate(request.body, target, mutateOptions);
        const operation = outcome.request?.operation ?? 'invalid';
        counters.requests(resource, operation).inc();
        if (outcome.error !== undefined) {
          const internal = outcome.httpStatus >= 500;
          counters.errors(resource, internal ? 'internal' : 'invalid_review').inc();
          logger[internal ? 'error' : 'warn']({ ...admissionContext(target, outcome), error: outcome.error }, 'admission request refused');
        } else if (outcome.patch.length > 0) {
          counters.patches(resource, operation).inc();
          if (logger.isLevelEnabled('debug')) {
            logger.debug({ ...admissionContext(target, outcome), changes: outcome.changes, warnings: outcome.warnings }, 'admission patched');
          }
        } else if (outcome.warnings.length > 0 && logger.isLevelEnabled('debug')) {
          logger.debug({ ...admissionContext(target, outcome), warnings: outcome.warnings }, 'admission allowed with warnings');
        }
        // While shutting down, answers close their keep-alive connection so close() need not wait for the
        // client's idle timeout (in-flight requests still complete).
        if (closing) void reply.header('connection', 'close');
        // Latency: from the request's arrival (Fastify's onRequest clock) to the answer being ready.
        durations[resource].observe(reply.elapsedTime / 1000);
        return reply.code(outcome.httpStatus).send(outcome.answer);
      },
    });
  }

  app.get('/healthz', async () => 'ok\n');
  app.get('/readyz', async (_request, reply) => {
    if (closing) return reply.code(503).send({ status: 'shutting down' });
    return { status: 'ready', certificateNotAfter: reloader.current.notAfter.toISOString() };
  });
  app.get('/metrics', async (_request, reply) => {
    reply.type(registry.contentType);
    return registry.metrics();
  });

  app.decorate('reloadCertificates', () => reloader.reload());
  app.decorate('metricsRegistry', registry);
  return app as WebhookApp;
}

type CounterChild = { inc: () => void };

/**
 * A two-label counter's children, bound to their label values on first use: the hot path then does two Map
 * lookups instead of prom-client hashing a label object on every request.
 */
function bound<A extends string, B extends string>(counter: Counter<A | B>, first: A, second: B): (a: string, b: string) => CounterChild {
  const cache = new Map<string, Map<string, CounterChild>>();
  return (a, b) => {
    let inner = cache.get(a);
    if (inner === undefined) cache.set(a, (inner = new Map()));
    let child = inner.get(b);
    if (child === undefined) {
      child = counter.labels({ [first]: a, [second]: b } as Record<A | B, string>);
      inner.set(b, child);
    }
    return child;
  };
}

function admissionContext(kind: TargetKind, outcome: MutateOutcome) {
  const request = outcome.request;
  return {
    uid: request?.uid,
    kind,
    namespace: request?.namespace,
    name: request?.name ?? generatedName(request?.object),
    operation: request?.operation ?? 'invalid',
    dryRun: request?.dryRun,
  };
}

function generatedName(object: unknown): string | undefined {
  const meta = (object as { metadata?: { name?: unknown; generateName?: unknown } } | null | undefined)?.metadata;
  if (typeof meta?.name === 'string') return meta.name;
  return typeof meta?.generateName === 'string' ? `${meta.generateName}*` : undefined;
}
