// The raw-JSON REST surface the local control plane, the job runner and the manifest tests use: paths
// and ApiError with a numeric status, over the project's one HTTP client (src/kube.ts KubeClient). client-node's typed APIs re-serialise bodies through their models (unknown fields such
// as `x-kubernetes-preserve-unknown-fields` and fields newer than the models are dropped, times become
// Date objects); for applying manifests and for the job runner's status writes we want the JSON as is.
import type { KubeConfig } from '@kubernetes/client-node';
import { KubeApiError, KubeClient, MERGE_PATCH, type RequestOptionsLite } from '../src/kube.ts';

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

export type RequestArgs = Pick<RequestOptionsLite, 'body' | 'contentType' | 'query' | 'accept' | 'warnings'>;

export { JSON_PATCH, MERGE_PATCH } from '../src/kube.ts';
export const APPLY_PATCH = 'application/apply-patch+yaml';

export class KubeRest {
  readonly kc: KubeConfig;
  private readonly client: KubeClient;
  /** `fieldManager`: who the writes are recorded as (default raykeeper; the stand-ins name themselves). */
  constructor(kc: KubeConfig, options: { fieldManager?: string } = {}) {
    this.kc = kc;
    this.client = new KubeClient(kc, { timeoutMs: 60_000, ...options });
  }

  get server(): string {
    return this.client.server.toString().replace(/\/$/, '');
  }

  /** Sends a request; resolves with the parsed JSON body; rejects with ApiError on a non-2xx status. */
  async request<T = any>(method: string, path: string, args: RequestArgs = {}): Promise<T> {
    try {
      return await this.client.request<T>(method, path, args);
    } catch (err) {
      if (err instanceof KubeApiError) throw new ApiError(method, err.path, err.statusCode, err.status ?? err.body);
      throw err;
    }
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
    this.client.close();
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
