// A stand-in for the Ray dashboard's job REST API (a test double for a peer; a real Ray head is
// exercised by real-ray.test.ts when Ray is installed). It answers with Ray's JobDetails shape and
// really RUNS each submitted entrypoint as a local `bash -c` process: exit 0 -> SUCCEEDED, non-zero ->
// FAILED (message with the exit code), stopped -> STOPPED. Tests can take it down (connection reset),
// make it forget every job (a head restart that lost GCS), and see what was submitted and stopped.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface FakeJob {
  job_id: string;
  submission_id: string;
  type: 'SUBMISSION';
  status: 'PENDING' | 'RUNNING' | 'STOPPED' | 'SUCCEEDED' | 'FAILED';
  entrypoint: string;
  message: string;
  error_type: string | null;
  start_time: number;
  end_time: number | null;
  metadata: Record<string, string>;
  runtime_env: Record<string, unknown>;
  driver_exit_code: number | null;
}

export class FakeDashboard {
  readonly jobs = new Map<string, FakeJob>();
  readonly submissions: string[] = [];
  readonly stops: string[] = [];
  /** Every request as "METHOD path". */
  readonly requests: string[] = [];
  /** true: every request's connection is destroyed (head unreachable). */
  down = false;
  /**
   * A head that is up but not answering yet (a slow start, a head pod being replaced): 'unavailable'
   * answers 503 as a proxy or Service with no ready endpoint would; 'stall' holds every request unanswered
   * until this is cleared (a client's timeout ends it). Undefined: answers normally.
   */
  failing: 'unavailable' | 'stall' | undefined;
  /** Set: every submission is refused with HTTP 500 and this text (Ray's answer when its job agent does not come up). */
  rejectSubmissions: string | undefined;
  /** Requests met while `down` or `failing` (the test's clock: "the dashboard was asked N times while failing"). */
  refused = 0;
  private readonly stalled = new Set<ServerResponse>();
  /** Set: token auth as Ray's (401 without `x-ray-authorization`/`authorization`, 403 with another token). */
  token: string | undefined;
  url = '';
  private readonly server: Server;
  private readonly procs = new Map<string, ChildProcess>();
  private readonly sockets = new Set<Socket>();
  private seq = 1;

  constructor() {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Answers normally again; requests held by 'stall' get a 503 (what a proxy says when its upstream never answered). */
  heal(): void {
    this.down = false;
    this.failing = undefined;
    for (const res of this.stalled) this.reply(res, 503, 'upstream request timeout');
    this.stalled.clear();
  }

  async close(): Promise<void> {
    for (const p of this.procs.values()) p.kill('SIGKILL');
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** A head restart without GCS fault tolerance: every job is forgotten (kuberay #3903). */
  forget(): void {
    for (const p of this.procs.values()) p.kill('SIGKILL');
    this.procs.clear();
    this.jobs.clear();
  }

  /** Finishes a job by hand (its process, if any, is killed first). */
  finish(id: string, status: 'SUCCEEDED' | 'FAILED' | 'STOPPED', message = `Job ${status.toLowerCase()} by the test`): void {
    const job = this.jobs.get(id);
    if (!job) throw new Error(`no job ${id}`);
    const proc = this.procs.get(id);
    this.procs.delete(id);
    proc?.kill('SIGKILL');
    job.status = status;
    job.message = message;
    job.end_time = Date.now();
  }

  private reply(res: ServerResponse, status: number, body: unknown): void {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    res.writeHead(status, { 'Content-Type': typeof body === 'string' ? 'text/plain' : 'application/json' });
    res.end(text);
  }

  private async body(req: IncomingMessage): Promise<unknown> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    return text === '' ? {} : JSON.parse(text);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // A proxy's absolute form too (http://head-svc.ns.svc:8265/api/...): the scale bench sends KubeRay here as its HTTP_PROXY.
    const path = new URL(req.url ?? '/', 'http://stand-in').pathname;
    this.requests.push(`${req.method} ${path}`);
    if (this.down) {
      this.refused++;
      req.socket.destroy();
      return;
    }
    if (this.failing === 'unavailable') {
      this.refused++;
      return this.reply(res, 503, 'no healthy upstream');
    }
    if (this.failing === 'stall') {
      this.refused++;
      this.stalled.add(res);
      res.on('close', () => this.stalled.delete(res));
      return;
    }
    // Ray's dashboard refuses POST/PUT from what looks like a browser (Sec-Fetch-* headers, which
    // undici's fetch sends, or a Mozilla User-Agent), exactly with this answer.
    const browser =
      Object.keys(req.headers).some((h) => h.startsWith('sec-fetch-')) || (req.headers['user-agent'] ?? '').startsWith('Mozilla');
    if (browser && (req.method === 'POST' || req.method === 'PUT'))
      return this.reply(res, 405, `'${req.method}' method not allowed for browser traffic.`);
    if (this.token !== undefined) {
      const auth = req.headers.authorization ?? req.headers['x-ray-authorization'];
      if (auth === undefined) return this.reply(res, 401, 'Unauthorized: Missing authentication token');
      if (auth !== `Bearer ${this.token}`) return this.reply(res, 403, 'Forbidden: Invalid authentication token');
    }
    try {
      if (req.method === 'POST' && (path === '/api/jobs/' || path === '/api/jobs')) {
        if (this.rejectSubmissions !== undefined) return this.reply(res, 500, this.rejectSubmissions);
        return this.submit(await this.body(req), res);
      }
      const stop = /^\/api\/jobs\/([^/]+)\/stop$/.exec(path);
      if (req.method === 'POST' && stop) return this.stop(decodeURIComponent(stop[1] ?? ''), res);
      const get = /^\/api\/jobs\/([^/]+)$/.exec(path);
      if (req.method === 'GET' && get) {
        const job = this.jobs.get(decodeURIComponent(get[1] ?? ''));
        return job ? this.reply(res, 200, job) : this.reply(res, 404, `Job ${get[1]} does not exist`);
      }
      this.reply(res, 404, 'not found');
    } catch (err) {
      this.reply(res, 500, String(err));
    }
  }

  private submit(raw: unknown, res: ServerResponse): void {
    const req = raw as {
      entrypoint?: string;
      submission_id?: string;
      metadata?: Record<string, string>;
      runtime_env?: Record<string, unknown>;
    };
    const id = req.submission_id || `raysubmit_${this.seq}`;
    if (this.jobs.has(id))
      return this.reply(res, 400, `Job with submission_id ${id} already exists. Please use a different submission_id.`);
    const entrypoint = req.entrypoint ?? '';
    const job: FakeJob = {
      job_id: `0${this.seq++}000000`,
      submission_id: id,
      type: 'SUBMISSION',
      status: 'PENDING',
      entrypoint,
      message: 'Job has not started yet.',
      error_type: null,
      start_time: Date.now(),
      end_time: null,
      metadata: req.metadata ?? {},
      runtime_env: req.runtime_env ?? {},
      driver_exit_code: null,
    };
    this.jobs.set(id, job);
    this.submissions.push(id);
    const env = { ...process.env, ...(((req.runtime_env?.['env_vars'] ?? {}) as Record<string, string>) ?? {}) };
    const proc = spawn('/bin/bash', ['-c', entrypoint], { stdio: 'ignore', env });
    this.procs.set(id, proc);
    job.status = 'RUNNING';
    job.message = 'Job is currently running.';
    proc.on('exit', (code) => {
      if (this.procs.get(id) !== proc) return; // stopped, finished by hand, or forgotten
      this.procs.delete(id);
      job.end_time = Date.now();
      job.driver_exit_code = code;
      if (code === 0) {
        job.status = 'SUCCEEDED';
        job.message = 'Job finished successfully.';
      } else {
        job.status = 'FAILED';
        job.error_type = 'JOB_ENTRYPOINT_COMMAND_ERROR';
        job.message = `Job entrypoint command failed with exit code ${code}, last available logs (truncated to 20,000 chars):\n`;
      }
    });
    this.reply(res, 200, { job_id: job.job_id, submission_id: id });
  }

  private stop(id: string, res: ServerResponse): void {
    this.stops.push(id);
    const job = this.jobs.get(id);
    if (!job) return this.reply(res, 404, `Job ${id} does not exist`);
    if (job.status === 'SUCCEEDED' || job.status === 'FAILED' || job.status === 'STOPPED') return this.reply(res, 200, { stopped: false });
    this.finish(id, 'STOPPED', 'Job was intentionally stopped.');
    this.reply(res, 200, { stopped: true });
  }
}

export async function startFakeDashboard(): Promise<FakeDashboard> {
  return new FakeDashboard().start();
}
