// A small raw-JSON REST client on top of a client-node KubeConfig (which supplies the CA and the
// credentials). client-node's typed APIs re-serialise bodies through their models (unknown fields such
// as `x-kubernetes-preserve-unknown-fields` and fields newer than the models are dropped, times become
// Date objects); for applying manifests and for the job runner's status writes we want the JSON as is.
import { request, Agent, type RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

export class ApiError extends Error {
  readonly status: number;
  readonly reason: string | undefined;
  readonly body: unknown;
  constructor(method: string, path: string, status: number, body: unknown) {
    const b = body as { message?: string; reason?: string } | undefined;
    super(`${method} ${path}: ${status} ${b?.reason ?? ''} ${b?.message ?? (typeof body === 'string' ? body : '')}`.trim());
    this.name = 'ApiError';
    this.status = status;
    this.reason = b?.reason;
    this.body = body;
  }
}

export interface RequestArgs {
  body?: unknown;
  /** Default application/json; patches: application/merge-patch+json, application/json-patch+json, application/apply-patch+yaml. */
  contentType?: string;
  query?: Record<string, string | number | boolean | undefined>;
  /** Accept header (default application/json), e.g. 'application/json;as=Table;v=v1;g=meta.k8s.io'. */
  accept?: string;
  /** Collects the server's `Warning` headers (deprecations, PodSecurity "would violate", ...). */
  warnings?: string[];
}

export const MERGE_PATCH = 'application/merge-patch+json';
export const JSON_PATCH = 'application/json-patch+json';
export const APPLY_PATCH = 'application/apply-patch+yaml';

export class KubeRest {
  readonly kc: KubeConfig;
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 8 });
  constructor(kc: KubeConfig) {
    this.kc = kc;
  }

  get server(): string {
    const cluster = this.kc.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    return cluster.server;
  }

  /** Sends a request; resolves with the parsed JSON body; rejects with ApiError on a non-2xx status. */
  async request<T = any>(method: string, path: string, args: RequestArgs = {}): Promise<T> {
    const url = new URL(this.server.replace(/\/$/, '') + path);
    for (const [k, v] of Object.entries(args.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const options: RequestOptions = { method, headers: { accept: args.accept ?? 'application/json' }, agent: this.agent };
    await this.kc.applyToHTTPSOptions(options);
    const payload = args.body === undefined ? undefined : typeof args.body === 'string' ? args.body : JSON.stringify(args.body);
    if (payload !== undefined) {
      options.headers = { ...options.headers, 'content-type': args.contentType ?? 'application/json', 'content-length': Buffer.byteLength(payload) };
    }
    return new Promise<T>((resolve, reject) => {
      const req = request(url, options, (res) => {
        if (args.warnings) {
          const w = res.headers.warning;
          for (const h of Array.isArray(w) ? w : w ? [w] : []) args.warnings.push(h.replace(/^\d{3} \S+ /, '').replace(/^"|"$/g, ''));
        }
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            // not JSON: keep the text
          }
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) resolve(parsed as T);
          else reject(new ApiError(method, url.pathname, status, parsed));
        });
      });
      req.setTimeout(60_000, () => req.destroy(new Error(`${method} ${url.pathname} timed out`)));
      req.on('error', reject);
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }

  get<T = any>(path: string, query?: RequestArgs['query']): Promise<T> {
    return this.request<T>('GET', path, { query });
  }
  post<T = any>(path: string, body: unknown, query?: RequestArgs['query']): Promise<T> {
    return this.request<T>('POST', path, { body, query });
  }
  put<T = any>(path: string, body: unknown, query?: RequestArgs['query']): Promise<T> {
    return this.request<T>('PUT', path, { body, query });
  }
  patch<T = any>(path: string, body: unknown, contentType: string = MERGE_PATCH, query?: RequestArgs['query']): Promise<T> {
    return this.request<T>('PATCH', path, { body, contentType, query });
  }
  delete<T = any>(path: string, query?: RequestArgs['query']): Promise<T> {
    return this.request<T>('DELETE', path, { query });
  }

  /** Closes idle keep-alive sockets (so a test process can exit promptly). */
  close(): void {
    this.agent.destroy();
  }
}

/** True for ApiError with one of these statuses. */
export function isStatus(err: unknown, ...statuses: number[]): boolean {
  return err instanceof ApiError && statuses.includes(err.status);
}

export interface ResourceRef {
  apiVersion: string;
  /** Plural resource name, e.g. jobs, rayclusters. */
  resource: string;
  namespace?: string;
  name?: string;
  subresource?: string;
}

/** The REST path of a resource: /api/v1/namespaces/ns/pods/name/status, /apis/ray.io/v1/rayclusters ... */
export function resourcePath(ref: ResourceRef): string {
  const base = ref.apiVersion.includes('/') ? `/apis/${ref.apiVersion}` : `/api/${ref.apiVersion}`;
  let path = base;
  if (ref.namespace) path += `/namespaces/${encodeURIComponent(ref.namespace)}`;
  path += `/${ref.resource}`;
  if (ref.name) path += `/${encodeURIComponent(ref.name)}`;
  if (ref.subresource) path += `/${ref.subresource}`;
  return path;
}
