// The byte budget's gate (budget.ts) in front of Fastify: a request with a body holds its declared size
// from before the body is read until its response is closed (sent, or the connection gone). It wraps the
// server's request handler (Fastify's serverFactory) rather than running as a Fastify onRequest hook: a
// route hook costs every request several microseconds of hook machinery, the gate an integer compare.
// Every request with a body is charged whatever its path: the router also takes spellings of the
// admission paths (percent-encoded, absolute-form) that a string match would miss. Chunked bodies count
// as the limit; ones declared over the limit count as nothing (refused with 413 unread); requests
// without a body pass straight through.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ANSWER_CONTENT_TYPE, answerJson, type AdmissionReviewAnswer } from '../src/admission/response.ts';
import type { ByteBudget } from './budget.ts';
import type { Resource } from './metrics.ts';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export interface BodyGateOptions {
  budget: ByteBudget;
  bodyLimit: number;
  /** The admission resource served at a path (query string removed), for metrics; undefined otherwise. */
  resourceOf: (path: string) => Resource | undefined;
  /** Records the refusal and returns the AdmissionReview answer for a request that found no room. */
  refuse: (resource: Resource | undefined, waitedMs: number) => AdmissionReviewAnswer;
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

  /** Bytes a request holds: its declared length, the limit when chunked, 0 without a body or over the limit. */
  #weight(req: IncomingMessage): number {
    const length = req.headers['content-length'];
    if (length === undefined) return req.headers['transfer-encoding'] === undefined ? 0 : this.#o.bodyLimit;
    const declared = Number(length);
    if (!Number.isFinite(declared) || declared < 0) return this.#o.bodyLimit;
    return declared <= this.#o.bodyLimit ? declared : 0;
  }

  wrap(handler: Handler): Handler {
    const { budget } = this.#o;
    return (req, res) => {
      const weight = this.#weight(req);
      if (weight === 0) return handler(req, res);
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
        // The client left while waiting (its response may never close if it was queued behind another
        // on the same connection): take nothing, start nothing.
        if (gated[HELD] === CLOSED || req.socket.destroyed) return ok ? budget.release(weight) : undefined;
        if (!ok) return this.#refuse(this.#o.resourceOf(pathOf(req.url ?? '')), res, waited);
        gated[HELD] = weight;
        (req as GatedRequest)[WAITED_MS] = waited;
        handler(req, res);
      });
    };
  }

  /** 503 before the body is read (no uid is known yet); the connection closes so the body is never read. */
  #refuse(resource: Resource | undefined, res: ServerResponse, waitedMs: number): void {
    const body = answerJson(this.#o.refuse(resource, waitedMs));
    res.writeHead(503, {
      'content-type': ANSWER_CONTENT_TYPE,
      'content-length': Buffer.byteLength(body),
      connection: 'close',
      'retry-after': '1',
    });
    res.end(body);
  }
}

function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}
