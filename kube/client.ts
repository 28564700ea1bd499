// A small JSON REST client for the Kubernetes API: one keep-alive connection pool for the process.
//
// Why not the generated @kubernetes/client-node API classes: in client-node 2.0 every request builds a
// new undici Agent (a new TLS connection per call), errors carry the body as text, and each resource
// needs its own class. Reconcilers here do a handful of verbs on a handful of resources, so one
// generic client (auth and TLS material still come from client-node's kubeconfig code, kube/kubeconfig.ts)
// is simpler and much cheaper under load (see bench/controller.ts). Watches too go through it: client-node's
// Watch needs undici and the generated API's request context (~+27 MiB at start, bench/import-cost.ts).
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import type { HttpsOptions, KubeCredentials } from './kubeconfig.ts';
import { SupersededVersions } from './superseded.ts';
import { TokenBucket } from './rate-limit.ts';
import { sleep } from './backoff.ts';

export const JSON_PATCH = 'application/json-patch+json';
export const MERGE_PATCH = 'application/merge-patch+json';
/** Server-side apply (what `kubectl apply --server-side` sends). */
export const APPLY_PATCH = 'application/apply-patch+yaml';

/** The field manager our writes carry, so `metadata.managedFields` names raykeeper for what it wrote. */
export const FIELD_MANAGER = 'raykeeper';
/** Verbs whose requests take a `fieldManager` (create, update, patch; also on subresources like /status). */
const WRITES = new Set(['POST', 'PUT', 'PATCH']);
/** Verbs a write guard holds back (`KubeClient.fenced`): every write, deletes too. */
const FENCED = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Sent again once when a reused keep-alive connection fails before any answer (see `request`). */
const REPLAYABLE = new Set(['GET', 'HEAD', 'DELETE']);

/** The request went out on a reused kept-alive connection that the server had closed: no answer came. */
class StaleSocketError extends Error {
  override readonly cause: Error;
  constructor(cause: Error) {
    super(cause.message);
    this.cause = cause;
  }
}

function staleSocket(req: ClientRequest, err: Error & { code?: string }): boolean {
  return req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE' || err.message === 'socket hang up');
}

/** Where a write goes: the namespace in its path (undefined: cluster-scoped) and the resource's plural. */
export interface WriteTarget {
  namespace: string | undefined;
  resource: string | undefined;
}

/**
 * Whether a write may be sent now; asked synchronously at the moment the request would be written, with
 * where it goes (a sharded controller may write only in the namespaces of the shards it holds).
 */
export type WriteGuard = (target: WriteTarget) => boolean;

const NAMESPACED_PATH = /^\/(?:api\/[^/]+|apis\/[^/]+\/[^/]+)\/namespaces\/([^/]+)\/([^/?]+)/;
const CLUSTER_PATH = /^\/(?:api\/[^/]+|apis\/[^/]+\/[^/]+)\/([^/?]+)/;

/** The target of a request path (`/apis/ray.io/v1/namespaces/ns/rayclusters/x` -> ns, rayclusters). */
export function writeTarget(pathname: string): WriteTarget {
  const namespaced = NAMESPACED_PATH.exec(pathname);
  if (namespaced) return { namespace: decodeURIComponent(namespaced[1]!), resource: namespaced[2] };
  return { namespace: undefined, resource: CLUSTER_PATH.exec(pathname)?.[1] };
}

/** A write not sent because the client's write guard said no (this replica no longer leads). */
export class NotLeaderError extends Error {
  readonly method: string;
  readonly path: string;
  constructor(method: string, path: string) {
    super(`${method} ${path}: not sent: this replica no longer holds the leader lease`);
    this.name = 'NotLeaderError';
    this.method = method;
    this.path = path;
  }
}

/** A NotLeaderError, or an error caused (`cause`, transitively) by one. */
export function isNotLeader(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 10; e = e.cause, depth++) if (e instanceof NotLeaderError) return true;
  return false;
}

/** A Kubernetes `Status` returned with an error. */
export interface KubeStatus {
  kind?: string;
  status?: string;
  message?: string;
  reason?: string;
  code?: number;
  details?: { name?: string; kind?: string; causes?: Array<{ reason?: string; type?: string; message?: string; field?: string }> };
}

export class KubeApiError extends Error {
  readonly statusCode: number;
  readonly status: KubeStatus | undefined;
  readonly reason: string | undefined;
  readonly method: string;
  readonly path: string;
  /** The response body as sent (a Status object is also parsed into `status`). */
  readonly body: string;
  constructor(method: string, path: string, statusCode: number, status: KubeStatus | undefined, text: string) {
    super(`${method} ${path}: ${statusCode} ${status?.reason ?? ''} ${status?.message ?? text.slice(0, 300)}`.replace(/\s+/g, ' ').trim());
    this.name = 'KubeApiError';
    this.statusCode = statusCode;
    this.status = status;
    this.reason = status?.reason;
    this.method = method;
    this.path = path;
    this.body = text;
  }
}

function code(err: unknown): number | undefined {
  if (err instanceof KubeApiError) return err.statusCode;
  const any = err as { statusCode?: unknown; code?: unknown } | null;
  if (typeof any?.statusCode === 'number') return any.statusCode;
  if (typeof any?.code === 'number') return any.code;
  return undefined;
}

export const isNotFound = (err: unknown): boolean => code(err) === 404;
export const isConflict = (err: unknown): boolean => code(err) === 409 && (err as KubeApiError).reason !== 'AlreadyExists';
export const isAlreadyExists = (err: unknown): boolean => code(err) === 409 && (err as KubeApiError).reason === 'AlreadyExists';
export const isForbidden = (err: unknown): boolean => code(err) === 403;
/**
 * A JSON patch the API server could not apply to the stored object: a failed `test` op (the object
 * changed since we read it), or a path the stored object lacks. Re-read and decide again.
 *
 * kube-apiserver 1.35 answers these with 422 Invalid and a fixed message, no details (the JSON-patch
 * error itself is dropped: handlers/patch.go, NewGenericServerResponse). Every other 422 names the
 * object (`<kind> "<name>" is invalid: ...`, a ValidatingAdmissionPolicy's `... is forbidden: ...`):
 * the API refuses the change itself, and re-reading cannot help (see isInvalid).
 * Both shapes are asserted against the real API server in test/kube/finalizer-patches-apiserver.test.ts.
 */
export function isPatchTestFailed(err: unknown): boolean {
  if (!(err instanceof KubeApiError) || err.statusCode !== 422) return false;
  const s = err.status;
  return (
    s?.reason === 'Invalid' &&
    (s.message ?? '').startsWith(PATCH_NOT_APPLICABLE) &&
    !s.details?.name &&
    (s.details?.causes ?? []).length === 0
  );
}
const PATCH_NOT_APPLICABLE = 'the server rejected our request due to an error in our request';
/** 422 refusing the change itself (validation, CEL rules, admission policy), not a failed patch `test`. */
export const isInvalid = (err: unknown): boolean => code(err) === 422 && !isPatchTestFailed(err);
/** Creation refused because the namespace is being deleted (kuberay #3388). */
export function isNamespaceTerminating(err: unknown): boolean {
  if (!(err instanceof KubeApiError) || err.statusCode !== 403) return false;
  const causes = err.status?.details?.causes ?? [];
  return (
    causes.some((c) => c.reason === 'NamespaceTerminating' || c.type === 'NamespaceTerminating') ||
    /because it is being terminated/i.test(err.status?.message ?? '')
  );
}

/** Calls `fn` once `socket` is connected (TLS: handshake done; `alpnProtocol` is null until then), at once if it is. */
function whenConnected(socket: Socket, fn: () => void): void {
  if (socket instanceof TLSSocket) {
    if (socket.alpnProtocol !== null) fn();
    else socket.once('secureConnect', fn);
  } else if (socket.connecting) socket.once('connect', fn);
  else fn();
}

/**
 * A resource collection, or one object of it (`name`), as the REST paths name them. `K`: the type of its
 * objects, which the calls below return. A descriptor of kube/resources.ts carries it (`RAYCLUSTERS.at(ns, name)`
 * is a ResourceRef<RayCluster>, and so is a spread of one); a reference written by hand has none (unknown).
 */
export interface ResourceRef<K = unknown> {
  /** API group; '' or undefined for the core group. */
  group?: string;
  version: string;
  /** Lowercase plural resource name, e.g. 'rayclusters'. */
  plural: string;
  namespace?: string | undefined;
  name?: string;
  subresource?: string;
  /** Type only, never set: the type of the objects this resource holds (kube/resources.ts). */
  readonly objectType?: K;
}

/**
 * The type of the objects `R` names: K for a ResourceRef<K> (a descriptor, a spread of one, an InformerSpec<K>),
 * unknown for a reference written by hand. The calls below are generic in the reference, not in K, so the
 * type comes from the resource and a caller cannot choose another (`kube.get<View>(ref)` does not compile).
 */
export type ObjectOf<R> = R extends { readonly objectType?: infer K } ? K : unknown;

/**
 * `path` (maybe with a query) under the API server's URL, keeping a path prefix the server URL has
 * (e.g. https://rancher.example/k8s/clusters/c-1, as client-node does); `new URL(path, server)` drops it.
 */
export function apiUrl(server: URL, path: string): URL {
  const url = new URL(server);
  const q = path.indexOf('?');
  url.pathname = url.pathname.replace(/\/+$/, '') + (q < 0 ? path : path.slice(0, q));
  url.search = q < 0 ? '' : path.slice(q);
  return url;
}

/** The REST path of a resource collection or object. */
export function resourcePath(ref: ResourceRef): string {
  const base = ref.group ? `/apis/${ref.group}/${ref.version}` : `/api/${ref.version}`;
  const ns = ref.namespace ? `/namespaces/${encodeURIComponent(ref.namespace)}` : '';
  const name = ref.name !== undefined ? `/${encodeURIComponent(ref.name)}` : '';
  const sub = ref.subresource && ref.name !== undefined ? `/${ref.subresource}` : '';
  return `${base}${ns}/${ref.plural}${name}${sub}`;
}

const LEASES_PREFIX = '/apis/coordination.k8s.io/';

function versionOf(obj: unknown): string | undefined {
  return (obj as { metadata?: { resourceVersion?: string } } | null | undefined)?.metadata?.resourceVersion;
}

/** The object's own path (a subresource write changes the object's resourceVersion too). */
function objectPath(ref: ResourceRef): string {
  return resourcePath({ ...ref, subresource: undefined });
}

export interface RequestOptionsLite {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Accept header (default application/json), e.g. 'application/json;as=Table;v=v1;g=meta.k8s.io'. */
  accept?: string;
  /** Collects the server's `Warning` headers (deprecations, PodSecurity "would violate", ...). */
  warnings?: string[];
}

export interface ListResult<T> {
  items: T[];
  resourceVersion: string;
}

interface TlsMaterial {
  ca?: Buffer | string | undefined;
  cert?: Buffer | string | undefined;
  key?: Buffer | string | undefined;
  rejectUnauthorized?: boolean | undefined;
  servername?: string | undefined;
  headers: Record<string, string>;
}

/** One watch stream; `abort()` ends it without calling `onDone`. */
export interface WatchHandle {
  abort(): void;
}

/** What a client and the clients made from it with `fenced` share: credentials, connections, counters. */
interface Pool {
  material: Promise<TlsMaterial> | undefined;
  materialAt: number;
  agent: HttpsAgent | HttpAgent | undefined;
  agentKey: string;
  requestCounts: Map<string, number>;
  fencedCounts: Map<string, number>;
  superseded: SupersededVersions;
  /** `--qps` / `--burst` (kube/rate-limit.ts); undefined: no cap. */
  limiter: TokenBucket | undefined;
  /** Milliseconds requests have waited for the cap. */
  throttledMs: number;
  /** Told of each answered request (not watches): verb, resource (plural), seconds from send to the whole answer. */
  onAnswered: ((verb: string, resource: string, seconds: number) => void) | undefined;
}

export class KubeClient {
  readonly kubeConfig: KubeCredentials;
  readonly server: URL;
  private readonly defaultTimeoutMs: number;
  /** Sent as `fieldManager` on every write unless the request's query names one; '' sends none. */
  readonly fieldManager: string;
  private pool: Pool = {
    material: undefined,
    materialAt: 0,
    agent: undefined,
    agentKey: '',
    requestCounts: new Map(),
    fencedCounts: new Map(),
    superseded: new SupersededVersions(),
    limiter: undefined,
    throttledMs: 0,
    onAnswered: undefined,
  };
  private writeGuard: WriteGuard | undefined;

  constructor(
    kubeConfig: KubeCredentials,
    options: { timeoutMs?: number; fieldManager?: string; rateLimit?: { qps: number; burst: number } | undefined } = {},
  ) {
    this.kubeConfig = kubeConfig;
    if (options.rateLimit) this.pool.limiter = new TokenBucket(options.rateLimit.qps, options.rateLimit.burst);
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('no current cluster in kubeconfig');
    this.server = new URL(cluster.server);
    this.defaultTimeoutMs = options.timeoutMs ?? 30_000;
    this.fieldManager = options.fieldManager ?? FIELD_MANAGER;
  }

  /**
   * Counts of requests keyed `VERB code resource` (`GET 200 pods`; WATCH apart from GET), read by the
   * metrics collector (shared with `fenced` clients).
   */
  get requestCounts(): Map<string, number> {
    return this.pool.requestCounts;
  }

  /** Requests so far with this verb (and status code), over every resource. */
  requestCount(verb: string, code?: number): number {
    const prefix = code === undefined ? `${verb} ` : `${verb} ${code} `;
    let n = 0;
    for (const [k, v] of this.pool.requestCounts) if (k.startsWith(prefix)) n += v;
    return n;
  }

  /** Tells `observe` of each answered request from now on (shared with `fenced` clients): the latency metric. */
  observeLatency(observe: (verb: string, resource: string, seconds: number) => void): void {
    this.pool.onAnswered = observe;
  }

  /** Counts a request; `seconds` (send to the whole answer) also for the latency metric, watches have none. */
  private countRequest(verb: string, statusCode: number, pathname: string, seconds?: number): void {
    const resource = writeTarget(pathname).resource ?? '';
    const key = `${verb} ${statusCode} ${resource}`;
    this.pool.requestCounts.set(key, (this.pool.requestCounts.get(key) ?? 0) + 1);
    if (seconds !== undefined) this.pool.onAnswered?.(verb, resource, seconds);
  }

  /**
   * A cached copy of `ref` at `resourceVersion` predates a successful write of this process (the watch
   * has not brought it yet; kube/superseded.ts). Shared with `fenced` clients.
   */
  isStale(ref: ResourceRef, resourceVersion: string | undefined): boolean {
    return this.pool.superseded.isStale(objectPath(ref), resourceVersion);
  }

  /** `ref` is gone: its superseded versions are of no more use. */
  forgetVersions(ref: ResourceRef): void {
    this.pool.superseded.forget(objectPath(ref));
  }

  /** Seconds requests have waited for the `--qps` cap (0 without one). */
  get throttledSeconds(): number {
    return this.pool.throttledMs / 1000;
  }

  /** Writes a guard refused, by verb (shared with `fenced` clients). */
  get fencedCounts(): Map<string, number> {
    return this.pool.fencedCounts;
  }

  /**
   * A client on the same connections and counters that sends a write (POST, PUT, PATCH, DELETE) only
   * when `guard()` says yes, asked synchronously as the request is handed to a connected socket (after
   * any wait for credentials or a connection); a refused write rejects with NotLeaderError and nothing
   * of it is sent. Reads and watches are not guarded.
   */
  fenced(guard: WriteGuard): KubeClient {
    const client = new KubeClient(this.kubeConfig, { timeoutMs: this.defaultTimeoutMs, fieldManager: this.fieldManager });
    client.pool = this.pool;
    client.writeGuard = guard;
    return client;
  }

  /** True unless this client has a write guard that says no now (for a write to `target`: default cluster-scoped). */
  mayWrite(target: WriteTarget = { namespace: undefined, resource: undefined }): boolean {
    return this.writeGuard === undefined || this.writeGuard(target);
  }

  /** Auth headers and TLS material from the KubeConfig, refreshed at most every 5 s (rotating tokens). */
  private async tls(force = false): Promise<TlsMaterial> {
    const now = Date.now();
    const pool = this.pool;
    if (force || !pool.material || now - pool.materialAt > 5_000) {
      pool.materialAt = now;
      pool.material = (async () => {
        const opts: HttpsOptions = { headers: {} };
        await this.kubeConfig.applyToHTTPSOptions(opts);
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(opts.headers ?? {})) if (v !== undefined) headers[k] = String(v);
        const user = this.kubeConfig.getCurrentUser();
        if (user?.username && user.password)
          headers.Authorization = `Basic ${Buffer.from(`${user.username}:${user.password}`).toString('base64')}`;
        return {
          ca: opts.ca as Buffer | undefined,
          cert: opts.cert as Buffer | undefined,
          key: opts.key as Buffer | undefined,
          rejectUnauthorized: opts.rejectUnauthorized,
          servername: opts.servername,
          headers,
        };
      })();
      pool.material.catch(() => {
        pool.material = undefined;
      });
    }
    return pool.material;
  }

  private agentFor(m: TlsMaterial): HttpsAgent | HttpAgent {
    const key =
      [m.ca, m.cert, m.key].map((b) => (b === undefined ? '' : b.toString().length + ':' + b.toString().slice(-64))).join('|') +
      `|${m.rejectUnauthorized}|${m.servername}`;
    const pool = this.pool;
    if (pool.agent && key === pool.agentKey) return pool.agent;
    pool.agent?.destroy();
    pool.agentKey = key;
    pool.agent =
      this.server.protocol === 'http:'
        ? new HttpAgent({ keepAlive: true, maxSockets: 64 })
        : new HttpsAgent({
            keepAlive: true,
            maxSockets: 64,
            ca: m.ca,
            cert: m.cert,
            key: m.key,
            rejectUnauthorized: m.rejectUnauthorized ?? true,
            servername: m.servername,
            minVersion: 'TLSv1.2',
          });
    return pool.agent;
  }

  /** Closes pooled connections (call on shutdown so the process can exit). */
  close(): void {
    this.pool.agent?.destroy();
    this.pool.agent = undefined;
  }

  private refuse(method: string, path: string): NotLeaderError {
    this.pool.fencedCounts.set(method, (this.pool.fencedCounts.get(method) ?? 0) + 1);
    return new NotLeaderError(method, path);
  }

  private url(path: string): URL {
    return apiUrl(this.server, path);
  }

  async request<T = unknown>(method: string, path: string, options: RequestOptionsLite = {}): Promise<T> {
    const fence = FENCED.has(method) ? this.writeGuard : undefined;
    // The request's own path, not the URL's: a server URL with a path prefix (a proxy's /k8s/clusters/x) would hide it.
    const target = fence ? writeTarget(new URL(path, 'http://path.invalid').pathname) : undefined;
    const guard = fence && (() => fence(target!));
    if (guard && !guard()) throw this.refuse(method, this.url(path).pathname);
    // Lease renewals never wait behind the cap (a late renew loses leadership): client-go's leader
    // election has a client of its own for the same reason.
    const limiter = path.startsWith(LEASES_PREFIX) ? undefined : this.pool.limiter;
    const wait = limiter?.reserve() ?? 0;
    if (wait > 0) {
      const started = performance.now();
      await sleep(wait, options.signal);
      this.pool.throttledMs += performance.now() - started;
      if (options.signal?.aborted) {
        limiter!.cancel();
        options.signal.throwIfAborted();
      }
    }
    const m = await this.tls();
    const url = this.url(path);
    if (WRITES.has(method) && this.fieldManager !== '') url.searchParams.set('fieldManager', this.fieldManager);
    for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const payload =
      options.body === undefined ? undefined : Buffer.from(typeof options.body === 'string' ? options.body : JSON.stringify(options.body));
    const headers: Record<string, string> = { Accept: options.accept ?? 'application/json', ...m.headers };
    if (payload) {
      headers['Content-Type'] = options.contentType ?? 'application/json';
      headers['Content-Length'] = String(payload.length);
    }
    const send = this.server.protocol === 'http:' ? httpRequest : httpsRequest;
    const agent = this.agentFor(m);
    const timeoutMs = options.timeoutMs ?? this.defaultTimeoutMs;
    const sent = performance.now();
    const attempt = () =>
      new Promise<{ statusCode: number; text: string }>((resolve, reject) => {
        const req = send(url, { method, headers, agent, signal: options.signal }, (res: IncomingMessage) => {
          if (options.warnings) {
            const w = res.headers.warning;
            for (const h of Array.isArray(w) ? w : w ? [w] : []) options.warnings.push(h.replace(/^\d{3} \S+ /, '').replace(/^"|"$/g, ''));
          }
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ statusCode: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', reject);
        });
        req.setTimeout(timeoutMs, () => req.destroy(new Error(`${method} ${url.pathname}: no response within ${timeoutMs} ms`)));
        req.on('error', (err) => reject(staleSocket(req, err) ? new StaleSocketError(err) : err));
        if (!guard) {
          req.end(payload);
          return;
        }
        // Nothing of a request is written before end(): hold it until its socket can take the bytes at
        // once (a new connection only after its TCP/TLS handshake), then ask the guard in the same tick.
        // A process paused before this point asks on resume, whatever its I/O did first.
        req.once('socket', (socket) => {
          const write = (): void => {
            if (guard()) req.end(payload);
            else req.destroy(this.refuse(method, url.pathname));
          };
          whenConnected(socket, write);
        });
      });
    // A kept-alive connection the API server closed while idle fails the next request on it before any
    // answer (Node does not replay one, Go's transport does for reads): a read or a DELETE is sent
    // again once, on a new connection. A write is not (it may have been applied).
    const { statusCode, text } = await attempt().catch((err: unknown) => {
      if (err instanceof StaleSocketError && REPLAYABLE.has(method) && !options.signal?.aborted) return attempt();
      throw err instanceof StaleSocketError ? err.cause : err;
    });
    this.countRequest(method, statusCode, new URL(path, 'http://path.invalid').pathname, (performance.now() - sent) / 1000);
    if (statusCode === 401) this.pool.materialAt = 0; // token may have rotated: reload on the next call
    if (statusCode < 200 || statusCode >= 300) {
      let status: KubeStatus | undefined;
      try {
        status = JSON.parse(text) as KubeStatus;
      } catch {
        status = undefined;
      }
      throw new KubeApiError(method, url.pathname, statusCode, status, text);
    }
    if (text === '') return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch {
      return text as T; // a 2xx that is not JSON (e.g. /healthz)
    }
  }

  /**
   * A watch stream on the collection `ref` names (`GET path?watch=true&...`) on the pooled connections:
   * `onEvent(type, object)` for each JSON line (an ERROR event's object is a Status, a BOOKMARK's only
   * metadata.resourceVersion); `onDone` once, with null when the server ends the stream, the error when it
   * fails (a KubeApiError for a non-200 answer), or an error named `TimeoutError` after `inactivityMs`
   * without a byte (client-node's Watch has the same 30 s rule; bookmarks keep a healthy watch talking).
   */
  async watch<R extends ResourceRef>(
    ref: R,
    query: Record<string, string | number | boolean | undefined>,
    onEvent: (type: string, obj: ObjectOf<R>) => void,
    onDone: (err: Error | null) => void,
    inactivityMs = 30_000,
  ): Promise<WatchHandle> {
    const m = await this.tls();
    const path = resourcePath(ref);
    const url = this.url(path);
    url.searchParams.set('watch', 'true');
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
    const send = this.server.protocol === 'http:' ? httpRequest : httpsRequest;
    let finished = false;
    let timer: NodeJS.Timeout | undefined;
    let req: ClientRequest | undefined;
    const end = (): boolean => {
      if (finished) return false;
      finished = true;
      clearTimeout(timer);
      req?.destroy();
      return true;
    };
    const finish = (err: Error | null): void => {
      if (end()) onDone(err);
    };
    const arm = (): void => {
      clearTimeout(timer);
      timer = setTimeout(
        () => finish(Object.assign(new Error(`WATCH ${url.pathname}: nothing received for ${inactivityMs} ms`), { name: 'TimeoutError' })),
        inactivityMs,
      );
      timer.unref();
    };
    req = send(
      url,
      { method: 'GET', headers: { Accept: 'application/json', ...m.headers }, agent: this.agentFor(m) },
      (res: IncomingMessage) => {
        const statusCode = res.statusCode ?? 0;
        this.countRequest('WATCH', statusCode, path);
        res.setEncoding('utf8');
        let pending = '';
        if (statusCode !== 200) {
          if (statusCode === 401) this.pool.materialAt = 0;
          res.on('data', (c: string) => (pending += c));
          res.on('end', () => {
            let status: KubeStatus | undefined;
            try {
              status = JSON.parse(pending) as KubeStatus;
            } catch {
              status = undefined;
            }
            finish(new KubeApiError('WATCH', url.pathname, statusCode, status, pending));
          });
          res.on('error', (e) => finish(e));
          return;
        }
        arm();
        res.on('data', (chunk: string) => {
          arm();
          pending += chunk;
          let start = 0;
          for (let nl = pending.indexOf('\n'); nl >= 0 && !finished; nl = pending.indexOf('\n', start)) {
            const line = pending.slice(start, nl);
            start = nl + 1;
            if (line.trim() === '') continue;
            let event: { type?: string; object?: ObjectOf<R> };
            try {
              event = JSON.parse(line) as { type?: string; object?: ObjectOf<R> };
            } catch {
              continue; // client-node's Watch skips unparsable lines too
            }
            onEvent(event.type ?? '', event.object as ObjectOf<R>);
          }
          pending = pending.slice(start);
        });
        res.on('end', () => finish(null));
        res.on('error', (e) => finish(e));
        res.on('close', () => finish(null));
      },
    );
    req.on('error', (e) => finish(e));
    arm();
    req.end();
    return { abort: () => void end() };
  }

  // The calls below return the type of the objects `ref`'s resource holds (kube/resources.ts).

  get<R extends ResourceRef>(ref: R, options: RequestOptionsLite = {}): Promise<ObjectOf<R>> {
    return this.request('GET', resourcePath(ref), options);
  }

  /** GET that answers undefined for 404. */
  async getOrUndefined<R extends ResourceRef>(ref: R, options: RequestOptionsLite = {}): Promise<ObjectOf<R> | undefined> {
    try {
      return await this.get(ref, options);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** Lists a collection, following `continue` pages; returns items and the list's resourceVersion. */
  async list<R extends ResourceRef>(
    ref: R,
    options: { labelSelector?: string; fieldSelector?: string; limit?: number; signal?: AbortSignal } = {},
  ): Promise<ListResult<ObjectOf<R>>> {
    return this.listMapped(ref, (item) => item, options);
  }

  /** `list`, each item mapped page by page (an informer's projection: a big list never holds more than one page of whole objects). */
  async listMapped<R extends ResourceRef, P>(
    ref: R,
    map: (item: ObjectOf<R>) => P,
    options: { labelSelector?: string; fieldSelector?: string; limit?: number; signal?: AbortSignal } = {},
  ): Promise<ListResult<P>> {
    const items: P[] = [];
    let cont: string | undefined;
    let resourceVersion = '';
    do {
      const page = await this.request<{ items?: ObjectOf<R>[]; metadata?: { resourceVersion?: string; continue?: string } }>(
        'GET',
        resourcePath({ ...ref, name: undefined } as ResourceRef),
        {
          query: {
            labelSelector: options.labelSelector,
            fieldSelector: options.fieldSelector,
            limit: options.limit ?? 500,
            continue: cont,
          },
          signal: options.signal,
          timeoutMs: 120_000,
        },
      );
      for (const item of page.items ?? []) items.push(map(item));
      resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
      cont = page.metadata?.continue || undefined;
    } while (cont);
    return { items, resourceVersion };
  }

  /** POST to the collection, or to an object's subresource when `subresource` is set (e.g. a ServiceAccount's token). */
  create<R extends ResourceRef>(ref: R, body: unknown, options: RequestOptionsLite = {}): Promise<ObjectOf<R>> {
    return this.request('POST', resourcePath(ref.subresource ? ref : ({ ...ref, name: undefined } as ResourceRef)), {
      ...options,
      body,
    });
  }

  /**
   * PATCH with an explicit content type (JSON_PATCH or MERGE_PATCH). `basedOn`: the resourceVersion of
   * the copy the patch was computed from; once it succeeds with a new version, a cached copy at that version is stale.
   */
  async patch<R extends ResourceRef>(
    ref: R,
    body: unknown,
    contentType: string = JSON_PATCH,
    options: RequestOptionsLite & { basedOn?: string | undefined } = {},
  ): Promise<ObjectOf<R>> {
    const { basedOn, ...rest } = options;
    const out = await this.request<ObjectOf<R>>('PATCH', resourcePath(ref), { ...rest, body, contentType });
    this.pool.superseded.replaced(objectPath(ref), basedOn, versionOf(out));
    return out;
  }

  /** PUT; once it succeeds with a new version, a cached copy at the body's resourceVersion (the one replaced) is stale. */
  async replace<R extends ResourceRef>(ref: R, body: unknown, options: RequestOptionsLite = {}): Promise<ObjectOf<R>> {
    const out = await this.request<ObjectOf<R>>('PUT', resourcePath(ref), { ...options, body });
    this.pool.superseded.replaced(objectPath(ref), versionOf(body), versionOf(out));
    return out;
  }

  /** DELETE; 404 counts as success (returns false). Preconditions guard against deleting a newer object. */
  async delete(
    ref: ResourceRef,
    options: {
      propagationPolicy?: 'Background' | 'Foreground' | 'Orphan';
      preconditions?: { uid?: string; resourceVersion?: string };
      gracePeriodSeconds?: number;
      signal?: AbortSignal;
    } = {},
  ): Promise<boolean> {
    const body: Record<string, unknown> = { apiVersion: 'v1', kind: 'DeleteOptions' };
    if (options.propagationPolicy) body.propagationPolicy = options.propagationPolicy;
    if (options.preconditions) body.preconditions = options.preconditions;
    if (options.gracePeriodSeconds !== undefined) body.gracePeriodSeconds = options.gracePeriodSeconds;
    try {
      await this.request('DELETE', resourcePath(ref), { body, signal: options.signal });
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }
}
