// Opening Redis for the cleanup: standalone, ACL users, TLS, Sentinel and Cluster, with ioredis.
// ioredis' own reconnect logic is switched off: the caller retries whole passes within its deadline,
// so a dead connection fails the current command promptly instead of queueing it.
import type { ConnectionOptions } from 'node:tls';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { formatHostPort } from '../../src/redis/address.ts';
import { chooseSentinelMaster, modeFromInfo, parseSentinelMasters, type ModeChoice, type RedisMode } from '../../src/redis/topology.ts';
import { classifyRedisError } from '../../src/redis/errors.ts';
import { errorMessage } from '../../src/errors.ts';

export interface RedisTlsMaterial {
  /** PEM CA certificates (RAY_REDIS_CA_CERT and the files of RAY_REDIS_CA_PATH); system CAs when absent. */
  ca?: string[] | undefined;
  /** PEM client certificate and key (RAY_REDIS_CLIENT_CERT / RAY_REDIS_CLIENT_KEY) for mutual TLS. */
  cert?: string | undefined;
  key?: string | undefined;
  /** SNI and the name the server certificate must carry (RAY_REDIS_SERVER_NAME). */
  servername?: string | undefined;
}

export interface RedisConnectionOptions {
  host: string;
  port: number;
  /** TLS on (rediss://, or forced). TLS 1.2 is the minimum. */
  tls: boolean;
  tlsMaterial?: RedisTlsMaterial | undefined;
  username?: string | undefined;
  password?: string | undefined;
  /** 'auto' asks the server (INFO server: redis_mode), as Ray does. */
  mode?: ModeChoice | undefined;
  /** Master group behind a Sentinel; needed only when the Sentinel monitors several. */
  sentinelMaster?: string | undefined;
  connectTimeoutMs?: number | undefined;
  commandTimeoutMs?: number | undefined;
}

export interface ScanNode {
  label: string;
  client: Redis;
}

export interface Session {
  mode: RedisMode;
  /** Human description without credentials, e.g. "127.0.0.1:6379 (standalone)". */
  describe: string;
  /** Where SCAN runs: the one server, or every cluster master. */
  nodes: ScanNode[];
  /** Routes single-key commands (the old layout's hash) to the right server. */
  router: Redis | Cluster;
  clustered: boolean;
  /** Non-fatal remarks gathered while connecting. */
  warnings: string[];
  /** A command's error with its cause from the connection's 'error' events, when it only says "closed". */
  explain(err: unknown): unknown;
  close(): Promise<void>;
}

/** A failure with a one-line reason and its handling class (see classifyRedisError). */
export class RedisCleanupError extends Error {
  override name = 'RedisCleanupError';
  kind: ReturnType<typeof classifyRedisError>;
  constructor(message: string, kind: ReturnType<typeof classifyRedisError>, options?: { cause?: unknown }) {
    super(message, options);
    this.kind = kind;
  }
}

export function tlsOptions(material: RedisTlsMaterial | undefined): ConnectionOptions {
  const out: ConnectionOptions = { minVersion: 'TLSv1.2' };
  if (material?.ca && material.ca.length > 0) out.ca = material.ca;
  if (material?.cert) out.cert = material.cert;
  if (material?.key) out.key = material.key;
  if (material?.servername) out.servername = material.servername;
  return out;
}

/** ioredis options shared by every connection we open. */
export function baseOptions(opts: RedisConnectionOptions): RedisOptions {
  const o: RedisOptions = {
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    enableReadyCheck: false, // it sends INFO, which a minimal ACL user may lack
    disableClientInfo: true, // CLIENT SETINFO: not needed, and noise for ACLs
    protocol: 2, // RESP2 works everywhere, including servers without HELLO
    connectTimeout: opts.connectTimeoutMs ?? 5000,
    commandTimeout: opts.commandTimeoutMs ?? 10000,
    disconnectTimeout: 200, // a half-closed socket must not hold the process for ioredis' default 2 s
  };
  if (opts.password !== undefined && opts.password !== '') {
    o.password = opts.password;
    if (opts.username !== undefined && opts.username !== '') o.username = opts.username;
  }
  if (opts.tls) o.tls = tlsOptions(opts.tlsMaterial);
  return o;
}

/** Records the latest 'error' event: ioredis rejects connect() with "Connection is closed." and emits the cause. */
class ErrorTrap {
  last: Error | undefined;
  watch(emitter: { on(event: string, fn: (err: Error) => void): unknown }, ...events: string[]): void {
    for (const ev of events.length > 0 ? events : ['error']) emitter.on(ev, (err: Error) => (this.last = err));
  }
  /** The most telling error: the trapped cause when the given one is a generic closed-connection error. */
  explain(err: unknown): unknown {
    const msg = errorMessage(err);
    const last = this.last;
    if (!last || !/connection is closed|none of startup nodes|all sentinels are unreachable|failed to refresh slots cache/i.test(msg))
      return err;
    // An auth, permission or TLS cause is the real reason: report it as such (and do not retry).
    const causeKind = classifyRedisError(last);
    if (causeKind === 'auth' || causeKind === 'permission' || causeKind === 'tls') return last;
    const cause = errorMessage(last);
    if (msg.includes(cause)) return err;
    const e = new Error(`${msg.replace(/\.$/, '')} (${cause})`) as Error & { code?: unknown };
    e.code = (last as Error & { code?: unknown }).code;
    return e;
  }

  /** connect() with this trap watching `events`; on failure the client is dropped and the cause explained. */
  async connect<C extends { connect(): Promise<unknown>; disconnect(): void; on(event: string, fn: (err: Error) => void): unknown }>(
    client: C,
    ...events: string[]
  ): Promise<C> {
    this.watch(client, ...events);
    try {
      await client.connect();
    } catch (err) {
      client.disconnect();
      throw this.explain(err);
    }
    return client;
  }
}

/** Wraps any error into a RedisCleanupError with a class and a short message naming the server. */
export function wrapError(err: unknown, where: string): RedisCleanupError {
  if (err instanceof RedisCleanupError) return err;
  const kind = classifyRedisError(err);
  return new RedisCleanupError(`${where}: ${errorMessage(err)}`, kind, { cause: err });
}

async function connectStandalone(opts: RedisConnectionOptions, host: string, port: number, trap: ErrorTrap): Promise<Redis> {
  const client = new Redis({ ...baseOptions(opts), host, port });
  await trap.connect(client);
  return client;
}

async function detectMode(client: Redis, warnings: string[]): Promise<RedisMode> {
  try {
    return modeFromInfo(await client.info('server'));
  } catch (err) {
    const kind = classifyRedisError(err);
    if (kind === 'permission' || /unknown command/i.test(errorMessage(err))) {
      warnings.push('INFO is not permitted: assuming a standalone Redis (use --mode to choose)');
      return 'standalone';
    }
    throw err;
  }
}

/**
 * Connects to the address and returns the scan targets. Throws a RedisCleanupError whose kind says
 * whether a retry could help.
 */
export async function openSession(opts: RedisConnectionOptions): Promise<Session> {
  const where = formatHostPort(opts.host, opts.port);
  const trap = new ErrorTrap();
  const warnings: string[] = [];
  let probe: Redis | undefined;
  try {
    probe = await connectStandalone(opts, opts.host, opts.port, trap);
    const mode = opts.mode === undefined || opts.mode === 'auto' ? await detectMode(probe, warnings) : opts.mode;
    if (mode === 'standalone') {
      const client = probe;
      return {
        mode,
        describe: `${where} (standalone${opts.tls ? ', TLS' : ''})`,
        nodes: [{ label: where, client }],
        router: client,
        clustered: false,
        warnings,
        explain: (err) => trap.explain(err),
        close: async () => closeClient(client),
      };
    }
    if (mode === 'sentinel') {
      const masters = parseSentinelMasters(await probe.call('SENTINEL', 'MASTERS'));
      const choice = chooseSentinelMaster(masters, opts.sentinelMaster);
      if ('error' in choice) throw new RedisCleanupError(`Sentinel ${where}: ${choice.error}`, 'fatal');
      closeClient(probe);
      probe = undefined;
      return await openSentinel(opts, choice.name, where, trap, warnings);
    }
    closeClient(probe);
    probe = undefined;
    return await openCluster(opts, where, trap, warnings);
  } catch (err) {
    if (probe) closeClient(probe);
    throw wrapError(trap.explain(err), where);
  }
}

async function openSentinel(
  opts: RedisConnectionOptions,
  name: string,
  where: string,
  trap: ErrorTrap,
  warnings: string[],
): Promise<Session> {
  const base = baseOptions(opts);
  const options: RedisOptions = {
    ...base,
    sentinels: [{ host: opts.host, port: opts.port }],
    name,
    role: 'master',
    sentinelRetryStrategy: () => null,
    sentinelCommandTimeout: opts.commandTimeoutMs ?? 10000,
    failoverDetector: false,
    updateSentinels: false,
  };
  // Ray authenticates to the Sentinel with the same credentials as to the master.
  if (base.password !== undefined) options.sentinelPassword = base.password;
  if (base.username !== undefined) options.sentinelUsername = base.username;
  if (opts.tls) {
    options.enableTLSForSentinelMode = true;
    options.sentinelTLS = tlsOptions(opts.tlsMaterial);
  }
  const client = new Redis(options);
  await trap.connect(client);
  const stream = (client as unknown as { stream?: { remoteAddress?: string; remotePort?: number } }).stream;
  const master = stream?.remoteAddress ? formatHostPort(stream.remoteAddress, stream.remotePort ?? 0) : 'its master';
  return {
    mode: 'sentinel',
    describe: `Sentinel ${where} master ${JSON.stringify(name)} at ${master}${opts.tls ? ' (TLS)' : ''}`,
    nodes: [{ label: master, client }],
    router: client,
    clustered: false,
    warnings,
    explain: (err) => trap.explain(err),
    close: async () => closeClient(client),
  };
}

async function openCluster(opts: RedisConnectionOptions, where: string, trap: ErrorTrap, warnings: string[]): Promise<Session> {
  const { lazyConnect: _l, retryStrategy: _r, maxRetriesPerRequest: _m, ...redisOptions } = baseOptions(opts);
  const cluster = new Cluster([{ host: opts.host, port: opts.port }], {
    redisOptions,
    lazyConnect: true,
    clusterRetryStrategy: () => null,
    enableOfflineQueue: true,
    enableReadyCheck: true,
    scaleReads: 'master',
    maxRedirections: 8,
    slotsRefreshTimeout: opts.connectTimeoutMs ?? 5000,
    // Keep host names as given: TLS certificates name hosts, not resolved IPs.
    dnsLookup: (address, callback) => callback(null, address),
  });
  await trap.connect(cluster, 'error', 'node error');
  const masters = cluster.nodes('master');
  if (masters.length === 0) {
    cluster.disconnect();
    throw new RedisCleanupError(`cluster ${where}: no master nodes known`, 'retryable');
  }
  const nodes = masters.map((client) => {
    trap.watch(client);
    return { label: formatHostPort(String(client.options.host), Number(client.options.port)), client };
  });
  return {
    mode: 'cluster',
    describe: `cluster via ${where} (${nodes.length} masters: ${nodes.map((n) => n.label).join(', ')}${opts.tls ? '; TLS' : ''})`,
    nodes,
    router: cluster,
    clustered: true,
    warnings,
    explain: (err) => trap.explain(err),
    close: async () => {
      cluster.disconnect();
    },
  };
}

function closeClient(client: Redis): void {
  // disconnect(), not quit(): QUIT waits for a reply from a server that may be gone.
  client.disconnect();
}
