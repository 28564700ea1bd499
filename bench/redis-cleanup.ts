// Redis cleanup benchmark against a real redis-server.
//
// Data: 1,000,000 unrelated keys (DEBUG POPULATE) plus 20 Ray storage namespaces, each 5 tables
// (RAY<ns>@<TABLE> hashes) of 10,000 fields with 100-byte values: 100 hashes, 1,000,000 fields.
// Measured, each on a namespace of its own (so every run removes the same amount of data):
//   - milliseconds to remove one namespace: ours in-process (runCleanup), ours as a process
//     (`raykeeper redis-cleanup`, Node start-up included), the baseline
//     `redis-cli --scan --pattern 'RAY<ns>@*' | xargs redis-cli unlink` (through sh), and Ray's own
//     `ray._private.gcs_utils.cleanup_redis_storage` when Ray is installed (Python start-up included);
//   - the worst latency (microseconds) a concurrent client doing PING in a loop (in a worker thread,
//     its own connection) sees during our cleanup, versus during a plain `DEL` of the same 5 hashes.
//
//   npx node bench/redis-cleanup.ts              (standalone, ~1-2 min on 2 cores)
//   import { runRedisCleanupBench } from './redis-cleanup.ts'   (bench/run.ts)
import { findRay } from '../localcluster/ray.ts';
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { Redis } from 'ioredis';
import { runCleanup } from '../controller/redis-cleanup/cleanup.ts';
import { startRedisServer } from '../test/helpers/redis-server.ts';

export interface RedisCleanupBenchOptions {
  unrelatedKeys?: number;
  namespaces?: number;
  tablesPerNamespace?: number;
  fieldsPerTable?: number;
  /** Repetitions of each timing (median reported). */
  runs?: number;
  print?: boolean;
}

export interface RedisCleanupBenchFigures {
  unrelatedKeys: number;
  namespaces: number;
  tablesPerNamespace: number;
  fieldsPerTable: number;
  loadMs: number;
  /** Milliseconds to remove one namespace (median). */
  oursMs: number;
  oursCliMs: number;
  baselineMs: number;
  rayMs?: number | undefined;
  /** baselineMs / oursMs. */
  ratioBaseline: number;
  ratioRay?: number | undefined;
  /** Worst PING round trip (µs) seen by a concurrent client. */
  idleWorstUs: number;
  oursWorstUs: number;
  delWorstUs: number;
  /** delWorstUs / oursWorstUs. */
  ratioLatency: number;
  /** Longest single server-side command (SLOWLOG) during ours / during DEL, µs. */
  oursServerMaxUs: number;
  delServerMaxUs: number;
  ratioServer: number;
  /** Mean server time of one of our SCAN calls and of the DEL (commandstats), µs. */
  oursScanUsPerCall: number;
  delUsPerCall: number;
}

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = fileURLToPath(new URL('../bin/raykeeper.js', import.meta.url));

const PING_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const net = require('node:net');
const sock = net.connect(workerData.port, '127.0.0.1');
sock.setNoDelay(true);
let max = 0n, count = 0, stop = false, sent = 0n, buf = '';
const latencies = [];
function ping() { sent = process.hrtime.bigint(); sock.write('PING\\r\\n'); }
sock.on('connect', ping);
sock.on('data', (d) => {
  buf += d.toString();
  if (!buf.endsWith('\\r\\n')) return;
  buf = '';
  const took = process.hrtime.bigint() - sent;
  if (took > max) max = took;
  count++;
  if (count === 200) parentPort.postMessage({ warm: true });
  if (stop) { sock.end(); parentPort.postMessage({ maxNs: Number(max), count }); return; }
  ping();
});
parentPort.on('message', (m) => { if (m === 'reset') { max = 0n; count = 200; } if (m === 'stop') stop = true; });
`;

interface Latency {
  /** Worst PING round trip seen by the looping client (includes OS scheduling noise of a busy machine). */
  worstUs: number;
  pings: number;
  /** Longest single command the server executed meanwhile (SLOWLOG): the time it blocked everyone. */
  serverMaxUs: number;
  serverMaxCommand: string;
  /** INFO commandstats meanwhile (PING excluded): calls and mean server time per call, by command. */
  perCall: Record<string, { calls: number; usPerCall: number }>;
}

function commandStats(info: string): Record<string, { calls: number; usPerCall: number }> {
  const out: Record<string, { calls: number; usPerCall: number }> = {};
  for (const m of info.matchAll(/^cmdstat_([a-z|]+):calls=(\d+),usec=\d+,usec_per_call=([\d.]+)/gm)) {
    if (['ping', 'slowlog', 'config', 'info'].includes(m[1]!.split('|')[0]!)) continue;
    out[m[1]!.toUpperCase()] = { calls: Number(m[2]), usPerCall: Number(m[3]) };
  }
  return out;
}

/** Runs `during` while a worker thread PINGs in a loop; worst round trip and longest server command. */
async function latencyDuring(admin: Redis, port: number, during: () => Promise<unknown>): Promise<Latency> {
  await admin.config('SET', 'slowlog-log-slower-than', '20');
  await admin.config('SET', 'slowlog-max-len', '100000');
  const worker = new Worker(PING_WORKER, { eval: true, workerData: { port } });
  await new Promise<void>((resolve, reject) => {
    worker.once('error', reject);
    worker.on('message', (m: { warm?: boolean }) => m.warm && resolve());
  });
  await admin.slowlog('RESET');
  await admin.config('RESETSTAT');
  worker.postMessage('reset');
  await during();
  const result = await new Promise<{ maxNs: number; count: number }>((resolve) => {
    worker.on('message', (m: { maxNs?: number; count: number }) => m.maxNs !== undefined && resolve(m as { maxNs: number; count: number }));
    worker.postMessage('stop');
  });
  await worker.terminate();
  const perCall = commandStats(await admin.info('commandstats'));
  const entries = (await admin.call('SLOWLOG', 'GET', '-1')) as [number, number, number, string[]][];
  let serverMaxUs = 0;
  let serverMaxCommand = '-';
  for (const [, , us, argv] of entries) {
    const name = String(argv[0]).toUpperCase();
    if (name === 'SLOWLOG' || name === 'CONFIG') continue;
    if (Number(us) > serverMaxUs) {
      serverMaxUs = Number(us);
      serverMaxCommand = name;
    }
  }
  await admin.config('SET', 'slowlog-log-slower-than', '10000');
  return { worstUs: Math.round(result.maxNs / 1000), pings: result.count - 200, serverMaxUs, serverMaxCommand, perCall };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)]!;
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number((process.hrtime.bigint() - t0) / 1_000_000n);
}

function exec(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, out }));
  });
}

/** Python with Ray's cleanup_redis_storage importable (localcluster/ray.ts finds Ray). */
function rayPython(): string | undefined {
  const found = findRay();
  if ('missing' in found) return undefined;
  return spawnSync(found.python, ['-c', 'import ray._private.gcs_utils'], { timeout: 60_000 }).status === 0 ? found.python : undefined;
}

export async function runRedisCleanupBench(options: RedisCleanupBenchOptions = {}): Promise<RedisCleanupBenchFigures> {
  const unrelatedKeys = options.unrelatedKeys ?? 1_000_000;
  const namespaces = options.namespaces ?? 20;
  const tables = options.tablesPerNamespace ?? 5;
  const fields = options.fieldsPerTable ?? 10_000;
  const runs = options.runs ?? 3;
  const print = options.print ?? true;
  const log = (s: string) => print && process.stdout.write(s + '\n');
  const needed = 3 * runs + 1 + 1 + 2 * runs;
  if (namespaces < needed) throw new Error(`need at least ${needed} namespaces for ${runs} runs`);

  const server = await startRedisServer({ config: ['enable-debug-command local'] });
  const r = new Redis({ host: '127.0.0.1', port: server.port, protocol: 2, disableClientInfo: true });
  r.on('error', () => undefined);
  try {
    const loadMs = await timed(async () => {
      await r.call('DEBUG', 'POPULATE', String(unrelatedKeys), 'unrelated', '16');
      const value = 'v'.repeat(100);
      for (let n = 0; n < namespaces; n++) {
        const p = r.pipeline();
        for (let tbl = 0; tbl < tables; tbl++) {
          for (let f = 0; f < fields; f += 1000) {
            const args: string[] = [];
            for (let i = f; i < Math.min(fields, f + 1000); i++) args.push(`id-${i.toString(16).padStart(8, '0')}`, value);
            p.hset(`RAYns${String(n).padStart(2, '0')}@TABLE${tbl}`, ...args);
          }
        }
        await p.exec();
      }
    });
    const dbsize = await r.dbsize();
    log(`redis-cleanup bench: ${unrelatedKeys.toLocaleString('en')} unrelated keys + ${namespaces} namespaces x ${tables} tables x ${fields.toLocaleString('en')} fields (${dbsize.toLocaleString('en')} keys, loaded in ${loadMs} ms)`);

    let next = 0;
    const ns = () => `ns${String(next++).padStart(2, '0')}`;
    const connection = { host: '127.0.0.1', port: server.port, tls: false };
    const gone = async (name: string) => {
      const [, left] = await r.scan('0', 'MATCH', `RAY${name}@*`, 'COUNT', 100_000_000);
      if (left.length > 0) throw new Error(`namespace ${name} not removed: ${left.join(', ')}`);
    };

    const ours: number[] = [];
    for (let i = 0; i < runs; i++) {
      const name = ns();
      ours.push(await timed(() => runCleanup({ connection, namespace: name })));
      await gone(name);
    }
    const cliName = ns();
    let cliOut = '';
    const oursCliMs = await timed(async () => {
      const res = await exec(process.execPath, [BIN, 'redis-cleanup', '--quiet'], { PATH: process.env.PATH, RAY_REDIS_ADDRESS: `127.0.0.1:${server.port}`, RAY_external_storage_namespace: cliName });
      cliOut = res.out;
      if (res.code !== 0) throw new Error(`raykeeper redis-cleanup failed: ${res.out}`);
    });
    await gone(cliName);

    const baseline: number[] = [];
    for (let i = 0; i < runs; i++) {
      const name = ns();
      const cmd = `redis-cli -p ${server.port} --scan --pattern 'RAY${name}@*' | xargs redis-cli -p ${server.port} unlink`;
      baseline.push(await timed(async () => {
        const res = await exec('sh', ['-c', cmd]);
        if (res.code !== 0) throw new Error(`baseline failed: ${res.out}`);
      }));
      await gone(name);
    }

    let rayMs: number | undefined;
    const python = rayPython();
    const rayName = ns();
    if (python) {
      rayMs = await timed(async () => {
        const res = await exec(python, ['-c', `from ray._private.gcs_utils import cleanup_redis_storage as c\nimport sys\nsys.exit(0 if c(host="127.0.0.1", port=${server.port}, password="", use_ssl=False, storage_namespace="${rayName}") else 1)`]);
        if (res.code !== 0) throw new Error(`Ray's cleanup failed: ${res.out.slice(-500)}`);
      });
      await gone(rayName);
    }

    const idle = await latencyDuring(r, server.port, () => new Promise((res) => setTimeout(res, 1000)));
    const oursLatency: Latency[] = [];
    const delLatency: Latency[] = [];
    for (let i = 0; i < runs; i++) {
      const a = ns();
      oursLatency.push(await latencyDuring(r, server.port, () => runCleanup({ connection, namespace: a })));
      await gone(a);
      const b = ns();
      const keys = Array.from({ length: tables }, (_, tbl) => `RAY${b}@TABLE${tbl}`);
      delLatency.push(await latencyDuring(r, server.port, () => r.del(...keys)));
      await gone(b);
    }
    const worst = (xs: Latency[]) => median(xs.map((l) => l.worstUs));
    const server_ = (xs: Latency[]) => median(xs.map((l) => l.serverMaxUs));

    const figures: RedisCleanupBenchFigures = {
      unrelatedKeys,
      namespaces,
      tablesPerNamespace: tables,
      fieldsPerTable: fields,
      loadMs,
      oursMs: median(ours),
      oursCliMs,
      baselineMs: median(baseline),
      rayMs,
      ratioBaseline: median(baseline) / Math.max(1, median(ours)),
      ratioRay: rayMs === undefined ? undefined : rayMs / Math.max(1, median(ours)),
      idleWorstUs: idle.worstUs,
      oursWorstUs: worst(oursLatency),
      delWorstUs: worst(delLatency),
      ratioLatency: worst(delLatency) / Math.max(1, worst(oursLatency)),
      oursServerMaxUs: server_(oursLatency),
      delServerMaxUs: server_(delLatency),
      ratioServer: server_(delLatency) / Math.max(1, server_(oursLatency)),
      oursScanUsPerCall: oursLatency.at(-1)!.perCall.SCAN?.usPerCall ?? 0,
      delUsPerCall: delLatency.at(-1)!.perCall.DEL?.usPerCall ?? 0,
    };
    const row = (label: string, value: string, note = '') => log(`  ${label.padEnd(46)} ${value.padStart(9)}  ${note}`);
    const x = (v: number) => `${v.toFixed(1)}x`;
    log(`remove one namespace (${tables} hashes, ${(tables * fields).toLocaleString('en')} fields), ms, median of ${runs}:`);
    row('raykeeper runCleanup (in-process)', String(figures.oursMs), `runs: ${ours.join(', ')}`);
    row('raykeeper redis-cleanup (process, Node start)', String(oursCliMs), cliOut.trim().split('\n')[0]?.replace(/^.*?: /, '') ?? '');
    row("baseline: redis-cli --scan | xargs unlink", String(figures.baselineMs), `${x(figures.ratioBaseline)} ours; runs: ${baseline.join(', ')}`);
    if (rayMs !== undefined) row("Ray cleanup_redis_storage (Python start)", String(rayMs), `${x(figures.ratioRay!)} ours`);
    else row("Ray cleanup_redis_storage", 'n/a', 'Ray not installed');
    const runsOf = (xs: Latency[], f: (l: Latency) => number) => `runs: ${xs.map(f).join(', ')}`;
    log(`worst PING round trip seen by a concurrent client (worker thread, own connection), us, median of ${runs}:`);
    row('idle for 1 s (noise floor of this machine)', String(idle.worstUs), `${idle.pings} pings`);
    row('during raykeeper cleanup (SCAN + UNLINK)', String(figures.oursWorstUs), runsOf(oursLatency, (l) => l.worstUs));
    row(`during plain DEL of the same ${tables} hashes`, String(figures.delWorstUs), `${x(figures.ratioLatency)} ours; ${runsOf(delLatency, (l) => l.worstUs)}`);
    log(`longest single command the server executed meanwhile (SLOWLOG, blocks every client), us, median of ${runs}:`);
    row('idle', String(idle.serverMaxUs), idle.serverMaxCommand);
    row('raykeeper cleanup', String(figures.oursServerMaxUs), `${oursLatency.map((l) => l.serverMaxCommand).join(', ')}; ${runsOf(oursLatency, (l) => l.serverMaxUs)}`);
    row(`plain DEL of the same ${tables} hashes`, String(figures.delServerMaxUs), `${x(figures.ratioServer)} ours; ${runsOf(delLatency, (l) => l.serverMaxUs)}`);
    const stats = (l: Latency) => Object.entries(l.perCall).map(([c, v]) => `${c} ${v.calls} x ${v.usPerCall.toFixed(1)} us`).join(', ');
    log(`mean server time per call (INFO commandstats; robust to scheduling noise), last run:`);
    row('raykeeper cleanup', '', stats(oursLatency.at(-1)!));
    row(`plain DEL of the same ${tables} hashes`, '', stats(delLatency.at(-1)!));
    return figures;
  } finally {
    r.disconnect();
    await server.stop();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runRedisCleanupBench().catch((err) => {
    process.stderr.write(`redis-cleanup bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  });
}
