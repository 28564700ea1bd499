// A small client for the Ray dashboard's job REST API (ray: dashboard/modules/job/job_head.py):
//   GET  /api/jobs/<submission_id>        JobDetails, 404 when the id is unknown
//   POST /api/jobs/                       JobSubmitRequest -> {job_id, submission_id}
//   POST /api/jobs/<submission_id>/stop   -> {stopped: bool}
// Every call has a timeout. getJob never throws: the state machine gets "found", "notFound" or "error".
// A token-auth cluster's token goes in KubeRay's header (x-ray-authorization: Bearer); it is in no
// message this client makes (Ray's 401 / 403 bodies do not quote it).
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { JobSubmitRequest } from '../../src/rayjob/builders.ts';
import type { DashboardObservation, RayJobInfo } from '../../src/rayjob/machine/vocabulary.ts';
import { errorMessage } from '../../src/errors.ts';
import { authHeaders } from '../../src/raycluster/auth.ts';

/** A dashboard's base URL, with the cluster's auth token when it has token auth. */
export type DashboardAddress = string | { url: string; token?: string | undefined };

function target(address: DashboardAddress): { url: string; token?: string | undefined } {
  return typeof address === 'string' ? { url: address } : address;
}

export const DEFAULT_DASHBOARD_TIMEOUT_MS = 5_000;

export class DashboardError extends Error {
  readonly statusCode: number | undefined;
  constructor(message: string, statusCode?: number) {
    super(message);
    this.name = 'DashboardError';
    this.statusCode = statusCode;
  }
}

export interface DashboardClientOptions {
  timeoutMs?: number;
}

function describe(err: unknown): string {
  const e = err as { name?: string; message?: string; code?: string };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return 'timed out';
  return e?.code && !(e.message ?? '').includes(e.code) ? `${e.message} (${e.code})` : (e?.message ?? String(err));
}

/**
 * Plain node:http(s) rather than fetch: undici's fetch adds `Sec-Fetch-Mode`, and Ray's dashboard
 * refuses POSTs it takes for browser traffic (HTTP 405 "'POST' method not allowed for browser
 * traffic"), which broke submit and stop against a real Ray head.
 */
function send(
  method: string,
  url: string,
  body: string | undefined,
  signal: AbortSignal,
  token: string | undefined,
): Promise<{ status: number; text: string }> {
  const to = new URL(url);
  const request = to.protocol === 'https:' ? httpsRequest : httpRequest;
  const headers: Record<string, string> = { Accept: 'application/json', 'User-Agent': 'raykeeper', ...authHeaders(token) };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    headers['Content-Length'] = String(Buffer.byteLength(body));
  }
  return new Promise((resolve, reject) => {
    const req = request(to, { method, headers, signal }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', (err) => reject(signal.aborted && signal.reason instanceof Error ? signal.reason : err));
    req.end(body);
  });
}

export class DashboardClient {
  private readonly timeoutMs: number;

  constructor(options: DashboardClientOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_DASHBOARD_TIMEOUT_MS;
  }

  private signal(signal?: AbortSignal): AbortSignal {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    return signal ? AbortSignal.any([signal, timeout]) : timeout;
  }

  private async call(
    method: string,
    url: string,
    token: string | undefined,
    body: unknown,
    signal?: AbortSignal,
  ): Promise<{ status: number; text: string }> {
    try {
      return await send(method, url, body === undefined ? undefined : JSON.stringify(body), this.signal(signal), token);
    } catch (err) {
      throw new DashboardError(`${method} ${url}: ${describe(err)}`);
    }
  }

  /** The Ray job with this submission id, as an observation for the state machine. */
  async getJob(address: DashboardAddress, submissionId: string, signal?: AbortSignal): Promise<DashboardObservation> {
    const { url: baseUrl, token } = target(address);
    const url = `${baseUrl}/api/jobs/${encodeURIComponent(submissionId)}`;
    let reply: { status: number; text: string };
    try {
      reply = await this.call('GET', url, token, undefined, signal);
    } catch (err) {
      return { kind: 'error', message: errorMessage(err) };
    }
    if (reply.status === 404) return { kind: 'notFound' };
    if (reply.status !== 200) return { kind: 'error', message: `GET ${url}: HTTP ${reply.status} ${reply.text.slice(0, 200)}`.trim() };
    try {
      const info = JSON.parse(reply.text) as RayJobInfo;
      if (info === null || typeof info !== 'object' || typeof info.status !== 'string') {
        return { kind: 'error', message: `GET ${url}: not a Ray JobDetails document` };
      }
      return { kind: 'found', info };
    } catch {
      return { kind: 'error', message: `GET ${url}: invalid JSON` };
    }
  }

  /** Submits (HTTPMode). A submission id the dashboard already has counts as submitted (idempotent). */
  async submitJob(
    address: DashboardAddress,
    request: JobSubmitRequest,
    signal?: AbortSignal,
  ): Promise<{ submissionId: string; duplicate: boolean }> {
    const { url: baseUrl, token } = target(address);
    const url = `${baseUrl}/api/jobs/`;
    const reply = await this.call('POST', url, token, request, signal);
    if (reply.status === 200) {
      let parsed: { submission_id?: string } = {};
      try {
        parsed = JSON.parse(reply.text) as { submission_id?: string };
      } catch {
        // An answer we cannot read after a 200 still means the job was accepted.
      }
      return { submissionId: parsed.submission_id ?? request.submission_id, duplicate: false };
    }
    if (reply.status === 400 && /already exists/i.test(reply.text)) return { submissionId: request.submission_id, duplicate: true };
    throw new DashboardError(`POST ${url}: HTTP ${reply.status} ${reply.text.slice(0, 300)}`.trim(), reply.status);
  }

  /** Asks Ray to stop the job; false when the dashboard does not know it (nothing to stop). */
  async stopJob(address: DashboardAddress, submissionId: string, signal?: AbortSignal): Promise<boolean> {
    const { url: baseUrl, token } = target(address);
    const url = `${baseUrl}/api/jobs/${encodeURIComponent(submissionId)}/stop`;
    const reply = await this.call('POST', url, token, undefined, signal);
    if (reply.status === 404) return false;
    if (reply.status !== 200)
      throw new DashboardError(`POST ${url}: HTTP ${reply.status} ${reply.text.slice(0, 300)}`.trim(), reply.status);
    try {
      return (JSON.parse(reply.text) as { stopped?: boolean }).stopped === true;
    } catch {
      return true;
    }
  }
}
