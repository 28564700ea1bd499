// The admission webhook's HTTPS app: buildApp() wires routes, parsing, TLS reloading and metrics, and
// returns the Fastify instance without listening (tests use app.inject or listen on port 0).
import { randomUuid } from '../src/uuid.ts';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { mutate, type MutateOptions, type TargetKind } from '../src/admission/mutate.ts';
import { ANSWER_CONTENT_TYPE, answerJson, denied, type AdmissionReviewAnswer } from '../src/admission/response.ts';
import { DEFAULT_ADMISSION_API_VERSION, type AdmissionRequest } from '../src/admission/review.ts';
import { redisCleanupEnabled } from '../src/gcsft/rules.ts';
import { createLogger, type Logger } from '../kube/logger.ts';
import { createMetricsRegistry, type Registry } from '../kube/metrics.ts';
import {
  ENABLE_GCS_FT_REDIS_CLEANUP_ENV,
  MUTATE_RAYCLUSTER_PATH,
  MUTATE_RAYCRONJOB_PATH,
  MUTATE_RAYJOB_PATH,
  VALIDATE_RAYCLUSTER_PATH,
  VALIDATE_RAYCRONJOB_PATH,
  VALIDATE_RAYJOB_PATH,
} from '../src/names.ts';
import { validate, type ValidateKind } from '../src/admission/validate.ts';
import type { WarningOptions } from '../src/admission/warnings.ts';
import { createWebhookMetrics, type ErrorReason, type MetricOperation, type Resource, type WebhookMetrics } from './metrics.ts';
import { ByteBudget, CONTAINER_SCAN_THRESHOLD, jsonContainerCount, MAX_JSON_CONTAINERS } from './budget.ts';
import { BodyGate } from './body-gate.ts';
import { CertificateReloader, loadTlsMaterial, secureContextOptions } from './tls.ts';
import { sleep } from '../kube/backoff.ts';
import type { KubeCredentials } from '../kube/kubeconfig.ts';
import { startClaimsCache, type ClaimsCache } from './claims.ts';
import { errorMessage } from '../src/errors.ts';

/**
 * Largest object etcd stores: its default --max-request-bytes (1.5 MiB) bounds the JSON of one object (a
 * custom resource is stored as JSON, encoded as the API server encodes it into an AdmissionReview).
 */
export const ETCD_MAX_OBJECT_BYTES = 1.5 * 1024 * 1024;
/** The AdmissionReview around the objects: uid, kinds, resources, userInfo (groups, extra), options. */
export const ADMISSION_ENVELOPE_BYTES = 256 * 1024;
/**
 * Body limit: an UPDATE carries object + oldObject, each at most one stored object, plus the envelope
 * (3.25 MiB). A CREATE of an object up to the API server's own request limit (3 MiB) fits as well. A
 * larger review is for an object etcd would refuse to store anyway; it gets 413, and failurePolicy Ignore
 * lets the API server carry on to that refusal. (controller-runtime's generic 7 MiB allowed ~2x the heap.)
 */
export const DEFAULT_BODY_LIMIT = 2 * ETCD_MAX_OBJECT_BYTES + ADMISSION_ENVELOPE_BYTES;
/** Request bytes in flight at once (see budget.ts): one maximum-size review, or hundreds of usual ones. */
export const DEFAULT_BODY_BUDGET = DEFAULT_BODY_LIMIT;
/** How long a request waits for room in the budget; under the webhook configuration's 5 s timeout. */
export const DEFAULT_BODY_WAIT_MS = 3000;
/** Requests that may wait for room at once; more get 503 at once. */
export const DEFAULT_BODY_WAITERS = 256;

/** Fastify's default; the API server reuses its connections to the webhook. */
const KEEP_ALIVE_TIMEOUT_MS = 72_000;
/** A whole request (headers and body) must arrive within this. */
const REQUEST_TIMEOUT_MS = 30_000;

export interface WebhookOptions {
  certFile: string;
  keyFile: string;
  logger?: Logger;
  registry?: Registry;
  /** Fresh storage namespace for a new RayCluster; default randomUuid (src/uuid.ts). */
  newStorageNamespace?: () => string;
  /** Add the GCS FT cleanup finalizer; default: env ENABLE_GCS_FT_REDIS_CLEANUP is not "false". */
  finalizerEnabled?: boolean;
  bodyLimit?: number;
  /** Request body bytes in flight at once across all requests (memory bound). Default DEFAULT_BODY_BUDGET. */
  bodyBudget?: number;
  /** Longest wait for room in the budget before a 503. Default DEFAULT_BODY_WAIT_MS. */
  bodyWaitMs?: number;
  /** Certificate files are also re-read this often (file events are the fast path). Default 30 s. */
  certificatePollIntervalMs?: number;
  /**
   * On shutdown, keep listening and answering this long first, every answer closing its connection
   * (default 0). Behind a Service, the API server keeps calling a deleted pod over its kept-alive
   * connections and kube-proxy's rules until they are updated; closing them at once would reset requests
   * already on the wire, which failurePolicy Ignore turns into silently skipped defaults.
   */
  drainMs?: number;
  /** Beside KubeRay (`--companion=on`): no warnings about what raykeeper's own RayCluster operator does not do. */
  companion?: boolean;
  /**
   * Credentials to list and watch every namespace's RayClusters: with them a RayCluster claiming a storage
   * namespace another cluster holds on the same Redis is refused (./claims.ts); /readyz waits for that cache.
   */
  kubeConfig?: KubeCredentials | undefined;
}

export type WebhookApp = FastifyInstance<HttpsServer> & {
  /** Re-read the certificate files now (also done on file events and periodically). */
  reloadCertificates: () => Promise<boolean>;
  metricsRegistry: Registry;
  /** The process logger (Fastify itself is given none: no per-request child loggers). */
  logger: Logger;
  /** Request bytes in flight (tests, benchmarks). */
  bodyBudget: ByteBudget;
  /** The RayCluster cache of the storage-namespace check, when kubeConfig was given. */
  claims: ClaimsCache | undefined;
};

const ROUTES: ReadonlyArray<{ path: string; target: TargetKind; resource: Resource }> = [
  { path: MUTATE_RAYCLUSTER_PATH, target: 'RayCluster', resource: 'raycluster' },
  { path: MUTATE_RAYJOB_PATH, target: 'RayJob', resource: 'rayjob' },
  { path: MUTATE_RAYCRONJOB_PATH, target: 'RayCronJob', resource: 'raycronjob' },
];
/**
 * The validating routes (KubeRay's paths), beside the mutating ones: their own handler, so the mutating
 * path does no validation work. A kind comes with its rules in src/admission/validate.ts.
 */
const VALIDATE_ROUTES: ReadonlyArray<{ path: string; kind: ValidateKind; resource: Resource }> = [
  { path: VALIDATE_RAYCLUSTER_PATH, kind: 'RayCluster', resource: 'raycluster' },
  { path: VALIDATE_RAYJOB_PATH, kind: 'RayJob', resource: 'rayjob' },
  { path: VALIDATE_RAYCRONJOB_PATH, kind: 'RayCronJob', resource: 'raycronjob' },
];
// Every admission path passes the body gate and budget.
const RESOURCE_BY_PATH: ReadonlyMap<string, Resource> = new Map([...ROUTES, ...VALIDATE_ROUTES].map((r) => [r.path, r.resource]));

interface RouteConfig {
  resource?: Resource;
}

class InvalidJsonError extends Error {
  statusCode = 400;
  code = 'RAYKEEPER_INVALID_JSON';
}

/** Refused before parsing: parsing it would cost more memory than any real review (see budget.ts). */
class TooManyContainersError extends Error {
  statusCode = 413;
  code = 'RAYKEEPER_TOO_MANY_CONTAINERS';
}

/** Fastify's own errors before the handler runs, mapped to an HTTP status and a metrics reason. */
function classify(err: FastifyError): { status: number; reason: ErrorReason } {
  if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || err instanceof TooManyContainersError) return { status: 413, reason: 'body_too_large' };
  if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return { status: 415, reason: 'unsupported_media_type' };
  if (err instanceof InvalidJsonError || err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return { status: 400, reason: 'invalid_json' };
  const status = err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 600 ? err.statusCode : 500;
  return { status, reason: status >= 500 ? 'internal' : 'other' };
}

export async function buildApp(options: WebhookOptions): Promise<WebhookApp> {
  const logger = options.logger ?? createLogger('raykeeper-webhook');
  const registry = options.registry ?? createMetricsRegistry(undefined, { gcDurations: false });
  const mutateOptions: MutateOptions = {
    newStorageNamespace: options.newStorageNamespace ?? randomUuid,
    finalizerEnabled: options.finalizerEnabled ?? redisCleanupEnabled(process.env[ENABLE_GCS_FT_REDIS_CLEANUP_ENV]),
  };
  const warningOptions: WarningOptions = { companion: options.companion === true };

  const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const budget = new ByteBudget({
    capacity: options.bodyBudget ?? DEFAULT_BODY_BUDGET,
    maxWaitMs: options.bodyWaitMs ?? DEFAULT_BODY_WAIT_MS,
    maxWaiters: DEFAULT_BODY_WAITERS,
  });
  const metrics: WebhookMetrics = createWebhookMetrics(registry, budget);
  const record = metrics.record;

  const material = await loadTlsMaterial(options.certFile, options.keyFile);
  const claims: ClaimsCache | undefined = options.kubeConfig
    ? startClaimsCache({ kubeConfig: options.kubeConfig, logger, registry })
    : undefined;
  const gate = new BodyGate({
    budget,
    bodyLimit,
    resourceOf: (path) => RESOURCE_BY_PATH.get(path),
    refuse: (resource, waitedMs) => {
      if (resource !== undefined) {
        record.error(resource, 'overloaded');
        record.request(resource, 'invalid', waitedMs / 1000);
      }
      logger.warn(
        { resource, bytesInFlight: budget.used, waiting: budget.waiting },
        'admission request refused: too many request bytes in flight',
      );
      const message = `the webhook is at its limit of ${budget.capacity} request bytes in flight; retry`;
      return denied(DEFAULT_ADMISSION_API_VERSION, undefined, 503, message);
    },
  });
  const app = Fastify({
    // Our own HTTPS server, so that admission bodies pass the byte budget (body-gate.ts) before Fastify
    // reads them, without a per-request Fastify hook.
    serverFactory: (handler) => {
      const server = createHttpsServer(secureContextOptions(material), gate.wrap(handler));
      server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
      server.requestTimeout = REQUEST_TIMEOUT_MS;
      return server;
    },
    // Fastify gets no logger, so it makes no per-request child logger and writes no access lines: the
    // handlers log refusals at warn and routine patches at debug with the admission uid, through `logger`
    // (the API server's audit log records patches too).
    logger: false,
    bodyLimit,
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
    if (options.drainMs) await sleep(options.drainMs);
  });
  app.addHook('onClose', async () => {
    reloader.stop();
    await claims?.stop();
  });

  // Only JSON is accepted (anything else: 415). Plain JSON.parse: we never merge the body into other
  // objects, and a "__proto__" key in a user's map must not get a valid cluster refused.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = body as string;
    if (text.length >= CONTAINER_SCAN_THRESHOLD) {
      const containers = jsonContainerCount(text);
      if (containers > MAX_JSON_CONTAINERS) {
        return done(
          new TooManyContainersError(
            `the body holds ${containers} JSON objects and arrays, more than the ${MAX_JSON_CONTAINERS} any storable object has`,
          ),
          undefined,
        );
      }
    }
    try {
      done(null, JSON.parse(text));
    } catch (err) {
      done(new InvalidJsonError(`the body is not valid JSON: ${errorMessage(err)}`), undefined);
    }
  });

  app.setErrorHandler((err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const { status, reason } = classify(err);
    const resource = (request.routeOptions.config as RouteConfig | undefined)?.resource;
    if (resource !== undefined) {
      record.error(resource, reason);
      record.request(resource, 'invalid', (reply.elapsedTime + gate.waitedMs(request.raw)) / 1000);
    }
    if (closing) void reply.header('connection', 'close');
    const text = typeof err?.message === 'string' ? err.message : String(err);
    const message = status >= 500 ? `internal error: ${text}` : text;
    if (status >= 500) logger.error({ err, resource, status, url: request.url }, 'request failed');
    else logger.warn({ resource, status, code: err.code, error: text }, 'admission request refused');
    if (resource === undefined) return void reply.code(status).send({ error: message });
    // The body could not be read, so no uid is known: still an AdmissionReview refusal with the reason.
    sendAnswer(reply, status, denied(DEFAULT_ADMISSION_API_VERSION, undefined, status, message));
  });

  for (const { path, target, resource } of ROUTES) {
    app.post(path, {
      config: { resource } satisfies RouteConfig,
      // Synchronous: an async handler costs a promise and a microtask per request for nothing.
      handler: (request, reply) => {
        const outcome = mutate(request.body, target, mutateOptions);
        const operation: MetricOperation = outcome.request?.operation ?? 'invalid';
        if (outcome.error !== undefined) {
          const internal = outcome.httpStatus >= 500;
          record.error(resource, internal ? 'internal' : 'invalid_review');
          logger[internal ? 'error' : 'warn']({ ...admissionContext(target, outcome), error: outcome.error }, 'admission request refused');
        } else if (outcome.patch.length > 0) {
          record.patched(resource, operation);
          if (logger.isLevelEnabled('debug')) {
            logger.debug(
              { ...admissionContext(target, outcome), changes: outcome.changes, warnings: outcome.warnings },
              'admission patched',
            );
          }
        } else if (outcome.warnings.length > 0 && logger.isLevelEnabled('debug')) {
          logger.debug({ ...admissionContext(target, outcome), warnings: outcome.warnings }, 'admission allowed with warnings');
        }
        // While shutting down, answers close their keep-alive connection so close() need not wait for the
        // client's idle timeout (in-flight requests still complete).
        if (closing) void reply.header('connection', 'close');
        // Latency: from the request's arrival (Fastify's clock, plus any wait for the budget before it) to the answer being ready.
        record.request(resource, operation, (reply.elapsedTime + gate.waitedMs(request.raw)) / 1000);
        sendAnswer(reply, outcome.httpStatus, outcome.answer);
      },
    });
  }

  for (const { path, kind, resource } of VALIDATE_ROUTES) {
    app.post(path, {
      config: { resource } satisfies RouteConfig,
      handler: (request, reply) => {
        const outcome = validate(request.body, kind, { ...warningOptions, claims: claims?.lookup() });
        const operation: MetricOperation = outcome.request?.operation ?? 'invalid';
        record.validated(resource, operation, outcome.result, outcome.reason ?? 'none');
        if (outcome.httpStatus !== 200) {
          const internal = outcome.httpStatus >= 500;
          record.error(resource, internal ? 'internal' : 'invalid_review');
          logger[internal ? 'error' : 'warn']({ ...admissionContext(kind, outcome), error: outcome.message }, 'admission request refused');
        } else if (outcome.result === 'denied') {
          logger.info({ ...admissionContext(kind, outcome), reason: outcome.reason, error: outcome.message }, 'admission denied');
        } else if (outcome.result === 'warned' && logger.isLevelEnabled('debug')) {
          logger.debug({ ...admissionContext(kind, outcome), warnings: outcome.warnings }, 'admission allowed with warnings');
        }
        if (closing) void reply.header('connection', 'close');
        record.request(resource, operation, (reply.elapsedTime + gate.waitedMs(request.raw)) / 1000);
        sendAnswer(reply, outcome.httpStatus, outcome.answer);
      },
    });
  }

  app.get('/healthz', async () => 'ok\n');
  app.get('/readyz', async (_request, reply) => {
    if (closing) return reply.code(503).send({ status: 'shutting down' });
    if (claims?.state() === 'listing') return reply.code(503).send({ status: 'listing RayClusters for the storage-namespace check' });
    return { status: 'ready', certificateNotAfter: reloader.current.notAfter.toISOString() };
  });
  app.get('/metrics', async (_request, reply) => {
    reply.type(registry.contentType);
    return registry.metrics();
  });

  app.decorate('reloadCertificates', () => reloader.reload());
  app.decorate('metricsRegistry', registry);
  app.decorate('logger', logger);
  app.decorate('bodyBudget', budget);
  app.decorate('claims', claims);
  return app as WebhookApp;
}

/** The answer as JSON text (answerJson), so Fastify sends it as is instead of serializing the object. */
function sendAnswer(reply: FastifyReply, status: number, answer: AdmissionReviewAnswer): void {
  void reply.code(status).header('content-type', ANSWER_CONTENT_TYPE).send(answerJson(answer));
}

/** The log fields of one admission request (mutating or validating). */
function admissionContext(kind: string, outcome: { request?: AdmissionRequest | undefined }) {
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
