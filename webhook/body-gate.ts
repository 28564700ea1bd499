// The byte budget's gate (budget.ts) in front of Fastify: an admission request holds its declared body
// size from before its body is read until its response is closed (sent, or the connection gone). It wraps
// the server's request handler (Fastify's serverFactory) rather than running as a Fastify onRequest hook:
// a route hook costs every request several microseconds of hook machinery, the gate an integer compare.
// Bodies without a length (chunked) count as the limit; ones over the limit count as nothing (Fastify
// refuses them with 413 without reading them). Other paths pass straight through.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AdmissionReviewAnswer } from '../src/admission/response.ts';
import type { ByteBudget } from './budget.ts';
import type { Resource } from './metrics.ts';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export interface BodyGateOptions {
  budget: ByteBudget;
  bodyLimit: number;
  /** The admission resource served at a path (query string removed), or undefined for other paths. */
  resourceOf: (path: string) => Resource | undefined;
  /** Records the refusal and returns the AdmissionReview answer for a request that found no room. */
  refuse: (resource: Resource, waitedMs: number) => AdmissionReviewAnswer;
}

/** Per-response state, kept on the response object (one shape for all; no closure per request). */
const HELD = Symbol('raykeeper.heldBytes');
const WAITED_MS = Symbol('raykeeper.waitedMs');
/** HELD once the response has closed: a request that was waiting takes nothing. */
const CLOSED = -1;

interface GatedResponse extends ServerResponse {
  [HELD]?: number;
}
interface GatedRequest extends IncomingMessage {
  [WAITED_MS]?: number;
}

export class BodyGate {
  readonly #o: BodyGateOptions;
  readonly #release: (this: GatedResponse) => void;

  constructor(options: BodyGateOptions) {
    this.#o = options;
    const budget = options.budget;
    this.#release = function (this: GatedResponse) {
      const held = this[HELD] ?? 0;
      this[HELD] = CLOSED;
      if (held > 0) budget.release(held);
    };
  }

  /** How long the request waited for room before Fastify saw it (0 for most). */
  waitedMs(req: IncomingMessage): number {
    return (req as GatedRequest)[WAITED_MS] ?? 0;
  }

  wrap(handler: Handler): Handler {
    const { budget, bodyLimit, resourceOf } = this.#o;
    return (req, res) => {
      const resource = req.method === 'POST' ? resourceOf(pathOf(req.url ?? '')) : undefined;
      if (resource === undefined) return handler(req, res);
      const declared = Number(req.headers['content-length'] ?? bodyLimit);
      const weight = Number.isFinite(declared) && declared <= bodyLimit ? Math.max(0, declared) : 0;
      const gated = res as GatedResponse;
      gated[HELD] = 0;
      res.on('close', this.#release);
      if (budget.tryAcquire(weight)) {
        gated[HELD] = weight;
        return handler(req, res);
      }
      const started = performance.now();
      void budget.acquire(weight).then((ok) => {
        const waited = performance.now() - started;
        if (gated[HELD] === CLOSED) return ok ? budget.release(weight) : undefined; // the client left while waiting
        if (!ok) return this.#refuse(resource, res, waited);
        gated[HELD] = weight;
        (req as GatedRequest)[WAITED_MS] = waited;
        handler(req, res);
      });
    };
  }

  /** 503 before the body is read (no uid is known yet); the connection closes so the body is never read. */
  #refuse(resource: Resource, res: ServerResponse, waitedMs: number): void {
    const body = JSON.stringify(this.#o.refuse(resource, waitedMs));
    res.writeHead(503, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close', 'retry-after': '1' });
    res.end(body);
  }
}

function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}
