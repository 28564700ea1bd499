// Real redis-server processes for tests and `raykeeper dev` (Debian's redis-server 7; no system service).
//
//   const redis = await startRedisServer();                 // plain, free loopback port
//   t.teardown(() => redis.stop());
//   new Redis({ host: redis.host, port: redis.port });
//
// Options: password (requirepass), aclUsers (ACL `user` lines), tls (PEM strings: TLS-only server), ipv6,
// config (extra redis.conf lines, e.g. 'cluster-enabled yes'), port + dir (restart on the same port
// with the same data dir: a dump.rdb written there by SAVE is loaded at start-up).
// Every server runs with `save ""` and `appendonly no`, bound to 127.0.0.1; the configuration lives
// in a file, so passwords never appear in `ps`. stop() ends it (SIGTERM, then SIGKILL) and removes
// the temporary directory it created; kill() ends it abruptly (a crash) and keeps the directory.
// Also: startSentinel() (a Sentinel monitoring one master) and startRedisCluster() (N masters,
// slots assigned with `redis-cli --cluster create`).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect as netConnect, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './net.ts';
import { sleep } from '../kube/backoff.ts';
import { errorMessage } from '../src/errors.ts';

export { freePort };

export interface RedisTlsFiles {
  /** PEM server certificate, key and the CA used to verify clients (and named by tls-ca-cert-file). */
  cert: string;
  key: string;
  ca: string;
  /** tls-auth-clients: 'no' (default), 'optional' or 'yes' (mutual TLS). */
  authClients?: 'no' | 'optional' | 'yes';
}

export interface RedisServerOptions {
  password?: string;
  /** ACL lines without the leading `user`, e.g. 'cleanup on >pw ~* -@all +scan +type +unlink'. */
  aclUsers?: string[];
  tls?: RedisTlsFiles;
  /** Extra redis.conf lines. */
  config?: string[];
  /** Reuse a port (restart); default: a free loopback port. */
  port?: number;
  /** Reuse a data directory (kept on stop); default: a fresh temporary one, removed on stop. */
  dir?: string;
  /** Run as a Sentinel (`--sentinel`); config must then hold the `sentinel ...` lines. */
  sentinel?: boolean;
  /** Listen on ::1 instead of 127.0.0.1. */
  ipv6?: boolean;
  startTimeoutMs?: number;
}

export interface RedisServer {
  /** 127.0.0.1, or ::1 with { ipv6: true }. */
  host: string;
  port: number;
  /** redis:// or rediss:// URL without credentials. */
  url: string;
  dir: string;
  pid: number;
  /** Output of the server so far (for failure messages). */
  log(): string;
  /** SIGTERM, then SIGKILL after 5 s; removes a temporary dir. Safe to call twice. */
  stop(): Promise<void>;
  /** SIGKILL now, keep the dir (simulates a crash; restart with { port, dir }). */
  kill(): Promise<void>;
}

/** Why redis tests cannot run here, or undefined when redis-server is installed. */
export function redisServerMissing(): string | undefined {
  const r = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  return r.status === 0 ? undefined : 'redis-server is not installed (apt-get install redis-server redis-tools)';
}

/** Resolves when 127.0.0.1:port answers PING (any reply, even -NOAUTH, means it is up); TLS: accepts TCP. */
export async function waitForRedis(
  port: number,
  tls: boolean,
  timeoutMs: number,
  alive: () => boolean = () => true,
  host = '127.0.0.1',
): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (!alive()) throw new Error('redis-server exited during start-up');
    const ok = await new Promise<boolean>((resolve) => {
      // TLS: an accepted TCP connection means it listens (a mutual-TLS server would refuse our handshake).
      const sock = netConnect({ host, port });
      const done = (v: boolean) => {
        sock.destroy();
        resolve(v);
      };
      sock.setTimeout(500, () => done(false));
      sock.once('error', () => done(false));
      sock.once('connect', () => (tls ? done(true) : sock.write('PING\r\n')));
      sock.once('data', (d) => done(/^[+-]/.test(d.toString())));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`redis on port ${port} did not answer within ${timeoutMs} ms`);
    await sleep(50);
  }
}

function quote(v: string): string {
  return `"${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

async function exited(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return true;
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

// Servers still running when the test process exits (a crash, a thrown top-level await) are killed,
// so a failing test does not leave redis-server processes behind.
const live = new Set<ChildProcess>();
const tempDirs = new Set<string>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const ownDir = options.dir === undefined;
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'raykeeper-redis-')));
  if (ownDir) tempDirs.add(dir);
  // A port picked by freePort() can be taken before redis binds it: try a few.
  for (let attempt = 0; ; attempt++) {
    const port = options.port ?? (await freePort(options.ipv6 ? '::1' : '127.0.0.1'));
    try {
      return await startOnce(options, dir, ownDir, port);
    } catch (err) {
      if (options.port !== undefined || attempt >= 3 || !/Address already in use/i.test(String(err))) {
        if (ownDir) {
          await rm(dir, { recursive: true, force: true });
          tempDirs.delete(dir);
        }
        throw err;
      }
    }
  }
}

async function startOnce(options: RedisServerOptions, dir: string, ownDir: boolean, port: number): Promise<RedisServer> {
  const host = options.ipv6 ? '::1' : '127.0.0.1';
  const lines = [`bind ${host}`, `dir ${quote(dir)}`, 'logfile ""', 'daemonize no', 'protected-mode no'];
  if (!options.sentinel) lines.push('save ""', 'appendonly no', `dbfilename dump.rdb`);
  if (options.tls) {
    await writeFile(join(dir, 'server.crt'), options.tls.cert);
    await writeFile(join(dir, 'server.key'), options.tls.key, { mode: 0o600 });
    await writeFile(join(dir, 'ca.crt'), options.tls.ca);
    lines.push(
      'port 0',
      `tls-port ${port}`,
      `tls-cert-file ${quote(join(dir, 'server.crt'))}`,
      `tls-key-file ${quote(join(dir, 'server.key'))}`,
      `tls-ca-cert-file ${quote(join(dir, 'ca.crt'))}`,
      `tls-auth-clients ${options.tls.authClients ?? 'no'}`,
      'tls-protocols "TLSv1.2 TLSv1.3"',
    );
  } else {
    lines.push(`port ${port}`);
  }
  if (options.password !== undefined) lines.push(`requirepass ${quote(options.password)}`);
  for (const u of options.aclUsers ?? []) lines.push(`user ${u}`);
  lines.push(...(options.config ?? []));
  const confName = options.sentinel ? `sentinel-${port}.conf` : `redis-${port}.conf`;
  const conf = join(dir, confName);
  await writeFile(conf, lines.join('\n') + '\n', { mode: 0o600 });

  const args = options.sentinel ? [conf, '--sentinel'] : [conf];
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(child);
  child.once('exit', () => live.delete(child));
  // The server does not keep the test process alive; the exit hook above ends it with the process.
  child.unref();
  for (const stream of [child.stdout, child.stderr]) if (stream instanceof Socket) stream.unref();
  let output = '';
  child.stdout!.on('data', (d) => (output += d.toString()));
  child.stderr!.on('data', (d) => (output += d.toString()));
  const alive = () => child.exitCode === null && child.signalCode === null;
  try {
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', () => resolve());
      child.once('error', reject);
    });
    await waitForRedis(port, options.tls !== undefined, options.startTimeoutMs ?? 10_000, alive, host);
  } catch (err) {
    child.kill('SIGKILL');
    await exited(child, 2000);
    throw new Error(`${errorMessage(err)}: ${output.trim().split('\n').slice(-5).join(' | ')}`);
  }
  let stopped = false;
  const server: RedisServer = {
    host,
    port,
    url: `${options.tls ? 'rediss' : 'redis'}://${options.ipv6 ? '[::1]' : '127.0.0.1'}:${port}`,
    dir,
    pid: child.pid!,
    log: () => output,
    async stop() {
      if (!stopped) {
        stopped = true;
        if (alive()) {
          child.kill('SIGTERM');
          if (!(await exited(child, 5000))) {
            child.kill('SIGKILL');
            await exited(child, 2000);
          }
        }
      }
      if (ownDir) {
        await rm(dir, { recursive: true, force: true });
        tempDirs.delete(dir);
      }
    },
    async kill() {
      stopped = true;
      if (alive()) {
        child.kill('SIGKILL');
        await exited(child, 2000);
      }
    },
  };
  return server;
}

export interface SentinelOptions {
  masterName: string;
  masterPort: number;
  /** The master's requirepass (sentinel auth-pass). */
  masterPassword?: string;
  /** requirepass of the Sentinel itself. */
  password?: string;
  tls?: RedisTlsFiles;
}

/** A Sentinel monitoring one master on 127.0.0.1 (quorum 1). */
export async function startSentinel(options: SentinelOptions): Promise<RedisServer> {
  const config = [`sentinel monitor ${options.masterName} 127.0.0.1 ${options.masterPort} 1`, 'sentinel resolve-hostnames no'];
  if (options.masterPassword !== undefined) config.push(`sentinel auth-pass ${options.masterName} ${quote(options.masterPassword)}`);
  if (options.tls) config.push('tls-replication yes');
  const opts: RedisServerOptions = { sentinel: true, config };
  if (options.password !== undefined) opts.password = options.password;
  if (options.tls) opts.tls = options.tls;
  return startRedisServer(opts);
}

export interface RedisCluster {
  nodes: RedisServer[];
  host: '127.0.0.1';
  /** The first node's port (any node works as a seed). */
  port: number;
  stop(): Promise<void>;
}

/** N masters (default 3, no replicas) with all 16384 slots assigned; resolves when cluster_state is ok. */
export async function startRedisCluster(count = 3, options: Pick<RedisServerOptions, 'password' | 'aclUsers'> = {}): Promise<RedisCluster> {
  const nodes: RedisServer[] = [];
  const stopAll = async () => {
    await Promise.all(nodes.map((n) => n.stop()));
  };
  try {
    for (let i = 0; i < count; i++) {
      const opts: RedisServerOptions = { config: ['cluster-enabled yes', 'cluster-config-file nodes.conf', 'cluster-node-timeout 5000'] };
      if (options.password !== undefined) {
        opts.password = options.password;
        opts.config!.push(`masterauth ${quote(options.password)}`);
      }
      if (options.aclUsers) opts.aclUsers = options.aclUsers;
      nodes.push(await startRedisServer(opts));
    }
    const env = { ...process.env };
    if (options.password !== undefined) env.REDISCLI_AUTH = options.password;
    const create = spawnSync(
      'redis-cli',
      ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '0', '--cluster-yes'],
      { encoding: 'utf8', env, timeout: 30_000 },
    );
    if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stdout}${create.stderr}`);
    const until = Date.now() + 20_000;
    for (const n of nodes) {
      for (;;) {
        const info = spawnSync('redis-cli', ['-p', String(n.port), 'cluster', 'info'], { encoding: 'utf8', env });
        if (/cluster_state:ok/.test(info.stdout)) break;
        if (Date.now() > until) throw new Error(`cluster did not become ok: ${info.stdout}`);
        await sleep(100);
      }
    }
    return { nodes, host: '127.0.0.1', port: nodes[0]!.port, stop: stopAll };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
