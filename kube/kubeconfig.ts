// Kubeconfig loading for raykeeper's own processes, from @kubernetes/client-node's parts rather than its
// index. The index, and dist/config.js (its KubeConfig) alike, import the generated API (for
// makeApiClient), undici and the proxy agents, and cost ~87 MiB of RSS at start; the parts used here
// (kubeconfig parsing in dist/config_types.js, the exec and token-file authenticators) ~2 MiB
// (`node bench/import-cost.ts`). The azure, gcp and oidc auth providers load on first use.
//
// Same behaviour as client-node's KubeConfig for what KubeClient needs: loadFromFile (paths relative to
// the file), loadFromDefault (KUBECONFIG's files merged, ~/.kube/config, the in-cluster service account),
// the current cluster and user, and applyToHTTPSOptions (CA, client certificate and key, skip-TLS,
// tls-server-name, impersonation, bearer token, auth providers). client-node's own KubeConfig satisfies
// the same `KubeCredentials` interface (tests and localcluster pass theirs).
import { accessSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import { isIPv6 } from 'node:net';
import type { Cluster, Context, User } from '@kubernetes/client-node/dist/config_types.js';
import { newClusters, newContexts, newUsers } from '@kubernetes/client-node/dist/config_types.js';
import { ExecAuth } from '@kubernetes/client-node/dist/exec_auth.js';
import { FileAuth } from '@kubernetes/client-node/dist/file_auth.js';
import { parse as parseYaml } from 'yaml';

export type { Cluster, Context, User };

/** What KubeClient reads from a kubeconfig: client-node's KubeConfig and SlimKubeConfig both have it. */
export interface KubeCredentials {
  getCurrentCluster(): Cluster | null;
  getCurrentUser(): User | null;
  applyToHTTPSOptions(opts: HttpsOptions): Promise<void>;
}

export interface HttpsOptions {
  headers?: Record<string, string | number | string[] | undefined> | undefined;
  ca?: Buffer | string | undefined;
  cert?: Buffer | string | undefined;
  key?: Buffer | string | undefined;
  rejectUnauthorized?: boolean | undefined;
  servername?: string | undefined;
  auth?: string | null | undefined;
}

interface Authenticator {
  isAuthProvider(user: User): unknown;
  applyAuthentication(user: User, opts: HttpsOptions): Promise<void>;
}

const SERVICEACCOUNT_ROOT = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The auth providers whose modules are heavy (jsonpath-plus, openid-client): loaded when a user names them. */
const LAZY_PROVIDERS: Record<string, () => Promise<Authenticator>> = {
  azure: async () => new (await import('@kubernetes/client-node/dist/azure_auth.js')).AzureAuth() as Authenticator,
  gcp: async () => new (await import('@kubernetes/client-node/dist/gcp_auth.js')).GoogleCloudPlatformAuth() as Authenticator,
  oidc: async () => new (await import('@kubernetes/client-node/dist/oidc_auth.js')).OpenIDConnectAuth() as Authenticator,
};

function exists(path: string): boolean {
  try {
    accessSync(path);
    return true;
  } catch {
    return false;
  }
}

function bufferFromFileOrString(file: string | undefined, data: string | undefined): Buffer | undefined {
  if (file) return readFileSync(file);
  if (data) return Buffer.from(data, 'base64');
  return undefined;
}

function absolute(root: string, file: string | undefined): string | undefined {
  return file === undefined || isAbsolute(file) ? file : join(root, file);
}

export class SlimKubeConfig implements KubeCredentials {
  clusters: Cluster[] = [];
  users: User[] = [];
  contexts: Context[] = [];
  currentContext = '';
  /** loadFromDefault found nothing and fell back to client-node's http://localhost:8080. */
  unconfigured = false;
  private readonly eager: Authenticator[] = [new ExecAuth() as Authenticator, new FileAuth() as Authenticator];
  private readonly lazy = new Map<string, Promise<Authenticator>>();

  loadFromString(text: string): void {
    const obj = (parseYaml(text) ?? {}) as Record<string, unknown>;
    this.clusters = newClusters(obj.clusters);
    this.contexts = newContexts(obj.contexts);
    this.users = newUsers(obj.users);
    this.currentContext = typeof obj['current-context'] === 'string' ? obj['current-context'] : '';
  }

  loadFromFile(file: string): void {
    this.loadFromString(readFileSync(file, 'utf8'));
    const root = dirname(file);
    this.clusters = this.clusters.map((c) => (c.caFile ? { ...c, caFile: absolute(root, c.caFile) } : c));
    this.users = this.users.map((u) =>
      u.certFile || u.keyFile ? { ...u, certFile: absolute(root, u.certFile), keyFile: absolute(root, u.keyFile) } : u,
    );
  }

  /** The pod's service account (client-node's loadFromCluster); `pathPrefix` is for tests. */
  loadFromCluster(pathPrefix = ''): void {
    const host = process.env.KUBERNETES_SERVICE_HOST ?? '';
    const port = process.env.KUBERNETES_SERVICE_PORT ?? '';
    const scheme = port === '80' || port === '8080' || port === '8001' ? 'http' : 'https';
    const server = `${scheme}://${isIPv6(host) ? `[${host}]` : host}:${port}`;
    this.clusters = [{ name: 'inCluster', caFile: `${pathPrefix}${SERVICEACCOUNT_ROOT}/ca.crt`, server, skipTLSVerify: false }];
    this.users = [
      { name: 'inClusterUser', authProvider: { name: 'tokenFile', config: { tokenFile: `${pathPrefix}${SERVICEACCOUNT_ROOT}/token` } } },
    ];
    const namespaceFile = `${pathPrefix}${SERVICEACCOUNT_ROOT}/namespace`;
    const namespace = exists(namespaceFile) ? readFileSync(namespaceFile, 'utf8') : undefined;
    this.contexts = [
      { cluster: 'inCluster', name: 'inClusterContext', user: 'inClusterUser', ...(namespace !== undefined ? { namespace } : {}) },
    ];
    this.currentContext = 'inClusterContext';
  }

  /** KUBECONFIG (its files merged), ~/.kube/config, the in-cluster service account, localhost:8080. */
  loadFromDefault(env: Record<string, string | undefined> = process.env, pathPrefix = ''): void {
    const files = (env.KUBECONFIG ?? '').split(delimiter).filter((f) => f);
    if (files.length > 0) {
      this.loadFromFile(files[0]!);
      for (const file of files.slice(1)) {
        const next = new SlimKubeConfig();
        next.loadFromFile(file);
        this.merge(next);
      }
      return;
    }
    const home = env.HOME ?? homedir();
    if (home && exists(join(home, '.kube', 'config'))) return this.loadFromFile(join(home, '.kube', 'config'));
    if (exists(`${pathPrefix}${SERVICEACCOUNT_ROOT}/token`)) return this.loadFromCluster(pathPrefix);
    this.unconfigured = true;
    this.clusters = [{ name: 'cluster', server: 'http://localhost:8080', skipTLSVerify: false }];
    this.users = [{ name: 'user' }];
    this.contexts = [{ name: 'loaded-context', cluster: 'cluster', user: 'user' }];
    this.currentContext = 'loaded-context';
  }

  /** client-node's mergeConfig: duplicate names are errors; a later file's current-context wins. */
  private merge(other: SlimKubeConfig): void {
    if (other.currentContext) this.currentContext = other.currentContext;
    for (const [mine, theirs, what] of [
      [this.clusters, other.clusters, 'cluster'],
      [this.users, other.users, 'user'],
      [this.contexts, other.contexts, 'context'],
    ] as const) {
      for (const item of theirs) {
        if (mine.some((m) => m.name === item.name)) throw new Error(`Duplicate ${what}: ${item.name}`);
        (mine as Array<{ name: string }>).push(item);
      }
    }
  }

  getCurrentContext(): string {
    return this.currentContext;
  }
  getContextObject(name: string): Context | null {
    return this.contexts.find((c) => c.name === name) ?? null;
  }
  getCurrentCluster(): Cluster | null {
    const ctx = this.getContextObject(this.currentContext);
    return ctx ? (this.clusters.find((c) => c.name === ctx.cluster) ?? null) : null;
  }
  getCurrentUser(): User | null {
    const ctx = this.getContextObject(this.currentContext);
    return ctx ? (this.users.find((u) => u.name === ctx.user) ?? null) : null;
  }

  async applyToHTTPSOptions(opts: HttpsOptions): Promise<void> {
    const cluster = this.getCurrentCluster();
    const user = this.getCurrentUser();
    if (!user) return;
    if (cluster?.skipTLSVerify) opts.rejectUnauthorized = false;
    if (cluster?.tlsServerName) opts.servername = cluster.tlsServerName;
    const ca = cluster ? bufferFromFileOrString(cluster.caFile, cluster.caData) : undefined;
    if (ca) opts.ca = ca;
    const cert = bufferFromFileOrString(user.certFile, user.certData);
    if (cert) opts.cert = cert;
    const key = bufferFromFileOrString(user.keyFile, user.keyData);
    if (key) opts.key = key;
    opts.headers ??= {};
    if (user.impersonateUser != null) opts.headers['Impersonate-User'] = user.impersonateUser;
    const authenticator = await this.authenticatorFor(user);
    if (authenticator) await authenticator.applyAuthentication(user, opts);
    if (user.token) opts.headers.Authorization = `Bearer ${user.token}`;
    if (user.username) opts.auth = `${user.username}:${user.password}`;
  }

  private async authenticatorFor(user: User): Promise<Authenticator | undefined> {
    const eager = this.eager.find((a) => a.isAuthProvider(user));
    if (eager) return eager;
    const name = (user.authProvider as { name?: unknown } | undefined)?.name;
    const load = typeof name === 'string' ? LAZY_PROVIDERS[name] : undefined;
    if (!load) return undefined;
    let pending = this.lazy.get(name as string);
    if (!pending) {
      pending = load();
      this.lazy.set(name as string, pending);
    }
    return pending;
  }
}

/**
 * Loads a kubeconfig: explicit file > KUBECONFIG / ~/.kube/config > in-cluster service account (then
 * client-node's localhost:8080, unless `configured`: a command a person runs says what is missing instead).
 */
export function loadKubeConfig(file?: string, options: { configured?: boolean } = {}): SlimKubeConfig {
  const kc = new SlimKubeConfig();
  if (file) kc.loadFromFile(file);
  else kc.loadFromDefault();
  if (!kc.getCurrentCluster() || (options.configured && kc.unconfigured))
    throw new Error('no Kubernetes cluster configured (use --kubeconfig, KUBECONFIG, or run in a pod)');
  return kc;
}
