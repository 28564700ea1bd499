// Redis cleanup benchmark against a real redis-server: one Ray storage namespace (5 tables of Ray's
// names + the JobCounter string) among N unrelated keys (DEBUG POPULATE; 1,000,000 by default).
//
// Each round seeds a fresh namespace before every measurement and measures, in a rotating order:
//   - walk:    the floor in process: one connected client, SCAN MATCH RAY<ns>@* COUNT 10000 over the
//              whole keyspace, UNLINK of what it finds (no TYPE checks, no old layout): what any
//              SCAN-based cleanup must at least spend;
//   - ours:    runCleanup in process (connect, INFO, read-only checks, known tables, adaptive sweep);
//   - ours as a process: `raykeeper redis-cleanup --sweep never` (what the Job runs for a Ray 2.60
//              cluster; Node start included) from the package as the image runs it (compiled JavaScript,
//              test/helpers/package.ts), and from the TypeScript sources of the checkout (Node strips the
//              types as modules load); and `--sweep always` (what the Job runs for a newer Ray, and for an
//              unknown one whose head recorded no version in Redis, as the bench's namespaces: `auto` then
//              sweeps), from the package;
//   - Ray as a process: `python -c cleanup_redis_storage(...)` (what KubeRay's Job runs) when Ray is
//              installed (tools/install-ray.sh);
//   - time-to-data-gone: when the namespace's keys were all unlinked (ours: result.dataGoneMs; walk:
//              the end of the UNLINK that removed the last of them);
//   - node -e 0: Node's own start-up, for context;
//   - walk at the budget: the same raw walk with the COUNT our cleanup settles at under the command
//              budget (read from a calibration run before the rounds): the floor at the same budget;
//   - per method, what a shared Redis's other clients feel: the longest single server command
//              (SLOWLOG, the bench's and the neighbour's own commands left out), and the latency of a
//              neighbour, a separate process doing a GCS's HSET/HGET on its own namespace once a
//              millisecond (bench/redis-neighbour.ts), p50/p99/max, against the same neighbour in an
//              idle window of one second in the same round (ratio of p99s, goal <= 2x);
//   - CPU: for walk, ours and the processes, the CPU milliseconds they cost, client + redis-server
//              (/proc: the server's, and the bench's own or its waited-for children's), which a loaded
//              machine's scheduling does not inflate as it does wall time.
// Whole milliseconds side by side, every run printed, medians and ratios; the load average before and
// after (this machine is shared: read the ratios, not the absolute numbers).
//
// What bounds the process ratio: Ray 2.60's cleanup walks the whole keyspace as well (SCAN MATCH
// RAY<ns>@* COUNT 1000, then one DEL per key) after ~450 ms CPU of Python imports. A SCAN walk costs
// redis-server the same CPU at any COUNT (Redis 7.0 allocates every key it visits: ~0.65 s per 1M keys
// here, KEYS ~0.15 s), so with a SCAN sweep ours as a process is at most (450 + walk) / walk faster,
// 1.7x at 1M keys. Without it (--sweep never) what is left is start-up (Node, ioredis, our modules
// compiled, as the image runs them), connect, the checks and one UNLINK round trip.
//
// --cores split: redis-server and the neighbour on one core, the bench and every cleanup it starts on another
// (taskset), as a Job on a node of its own and a GCS on another would be; default shared (as scheduled).
// The in-process cleanup also runs at budgets of 1 and 0.2 ms: the neighbour's p99 follows the budget.
//
//   node bench/redis-cleanup.ts [keys] [runs] [--cores split]   (defaults 1000000 3; 200000 for quick iterations)
//   npm run bench -- redis-cleanup [--cores split]
//   import { runRedisCleanupBench } from './redis-cleanup.ts'   (bench/run.ts)
import { median, percentile } from './stats.ts';
import { fork, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg, setPriority } from 'node:os';
import { parseArgs } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { runCleanup } from '../controller/redis-cleanup/cleanup.ts';
import { findRay } from '../localcluster/ray.ts';
import { startRedisServer } from '../test/helpers/redis-server.ts';
import { unpackedPackage } from '../test/helpers/package.ts';

export interface RedisCleanupBenchOptions {
  unrelatedKeys?: number;
  fieldsPerTable?: number;
  /** Rounds; each measures every contender once (median reported). */
  runs?: number;
  print?: boolean;
  /**
   * 'shared' (default): every process on every core, as the machine schedules them. 'split': redis-server
   * and the neighbour on one core, the bench and every cleanup it runs (its processes inherit it) on another,
   * as if the cleanup ran on a machine of its own: the neighbour then waits for Redis, not for a core.
   */
  cores?: 'shared' | 'split';
}

export interface RedisCleanupBenchFigures {
  unrelatedKeys: number;
  runs: number;
  /** Medians, ms. */
  walkMs: number;
  oursMs: number;
  walkDataGoneMs: number;
  oursDataGoneMs: number;
  /** `--sweep never` from the package, as the image runs it: the Job for Ray <= 2.60. */
  oursProcessMs: number;
  /** The same from the checkout's TypeScript sources. */
  oursProcessSourcesMs: number;
  /** `--sweep always`, from the package: the Job for a newer or unknown Ray. */
  oursProcessAlwaysMs: number;
  rayProcessMs?: number | undefined;
  nodeStartMs: number;
  /** ours / walk (goal <= 1.1). */
  ratioWalk: number;
  /** Ray process / ours process (goal >= 2). */
  ratioRay?: number | undefined;
  /** Ray process / ours process with --sweep always. */
  ratioRayAlways?: number | undefined;
  /** CPU ms, client + redis-server, medians. */
  walkCpuMs: number;
  oursCpuMs: number;
  oursProcessCpuMs: number;
  oursProcessSourcesCpuMs: number;
  oursProcessAlwaysCpuMs: number;
  rayProcessCpuMs?: number | undefined;
  /** Ray process CPU / ours process CPU. */
  ratioRayCpu?: number | undefined;
  ratioRayAlwaysCpu?: number | undefined;
  /** Longest single server command during ours (SLOWLOG), us, median. */
  oursServerMaxUs: number;
  walkServerMaxUs: number;
  /** Per method (walk, walkBudget, ours, oursProcess, oursProcessAlways, rayProcess, ...): medians, us. */
  serverMaxUs: Record<string, number>;
  neighbour: Record<string, { p50Us: number; p99Us: number; maxUs: number; p99VsIdle: number }>;
  /** The COUNT of the walk at the budget (where ours settled in the calibration run). */
  walkBudgetCount: number;
  /** ours / walk at the budget (goal <= 1.1). */
  ratioWalkBudget: number;
  /** Whether redis-server ran at a raised CPU priority (root), so preemption inflates SLOWLOG less. */
  serverFavoured: boolean;
  cores: 'shared' | 'split';
  loadBefore: number[];
  loadAfter: number[];
}

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = fileURLToPath(new URL('../bin/raykeeper.js', import.meta.url));
/** Five of the tables Ray's GCS writes, so the run looks like a real namespace (src/redis/keys.ts RAY_TABLES). */
const TABLES = ['JOB', 'ACTOR', 'NODE', 'ACTOR_TASK_SPEC', 'PLACEMENT_GROUP'];

/** CPU ms so far of redis-server `serverPid` plus this process and its waited-for children (Linux /proc, 100 Hz ticks). */
function cpuMs(serverPid: number): number {
  const ticks = (pid: number | 'self', fields: number[]) => {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields.reduce((sum, i) => sum + Number(f[i]), 0);
  };
  const own = process.cpuUsage();
  // After the command name: utime, stime are fields 11 and 12; cutime, cstime 13 and 14.
  return (ticks(serverPid, [11, 12]) + ticks('self', [13, 14])) * 10 + (own.user + own.system) / 1000;
}

function exec(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(cmd, args, { env, cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, out, ms: Math.round(performance.now() - started) }));
  });
}

/** Python with Ray's cleanup_redis_storage importable, or undefined. */
function rayPython(): string | undefined {
  const found = findRay();
  if ('missing' in found) return undefined;
  return spawnSync(found.python, ['-c', 'import ray._private.gcs_utils'], { timeout: 120_000 }).status === 0 ? found.python : undefined;
}

/** The floor: SCAN MATCH COUNT `count` over everything, UNLINK what matches. */
async function walk(r: Redis, ns: string, keys: number, count = 10_000): Promise<{ ms: number; dataGoneMs: number }> {
  const started = performance.now();
  let unlinked = 0;
  let dataGoneMs = Number.NaN;
  let cursor = '0';
  do {
    const [next, found] = await r.scan(cursor, 'MATCH', `RAY${ns}@*`, 'COUNT', count);
    cursor = next;
    if (found.length > 0) {
      unlinked += await r.unlink(...found);
      if (unlinked >= keys && Number.isNaN(dataGoneMs)) dataGoneMs = performance.now() - started;
    }
  } while (cursor !== '0');
  return { ms: Math.round(performance.now() - started), dataGoneMs: Math.round(dataGoneMs) };
}

/**
 * Of the commands in SLOWLOG not sent by the bench's own client or the neighbour (by client name): the
 * longest and its name, how many there were and how many took over 5 ms.
 */
async function longestCommand(r: Redis): Promise<{ us: number; command: string; count: number; over: number }> {
  const entries = (await r.call('SLOWLOG', 'GET', '-1')) as [number, number, number, string[], string, string][];
  const out = { us: 0, command: '', count: 0, over: 0 };
  for (const [, , us, argv, , name] of entries) {
    if (name === 'bench' || name === 'neighbour') continue;
    out.count += 1;
    if (Number(us) > 5000) out.over += 1;
    if (Number(us) > out.us) Object.assign(out, { us: Number(us), command: String(argv[0]).toUpperCase() });
  }
  return out;
}

/** Pins every thread of `pid` to `cpus` (taskset's list form, "0" or "0,1"). */
function pinToCores(pid: number, cpus: string): void {
  const r = spawnSync('taskset', ['--all-tasks', '--cpu-list', '--pid', cpus, String(pid)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`taskset -a -c -p ${cpus} ${pid} failed: ${r.error?.message ?? r.stderr.trim()}`);
}

/** The neighbour process (bench/redis-neighbour.ts): window() measures its latencies while `fn` runs. */
async function startNeighbour(port: number): Promise<{ pid: number; window(fn: () => Promise<void>): Promise<number[]>; stop(): void }> {
  const child: ChildProcess = fork(fileURLToPath(new URL('./redis-neighbour.ts', import.meta.url)), [String(port), 'neighbour'], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`the neighbour exited (${code})`)));
  });
  try {
    // A live cluster's GCS runs on a machine of its own: here it must not wait for a core behind the
    // cleanup's own CPU (a node process starting, the bench), only behind Redis. Root only, like the server's.
    setPriority(child.pid!, -10);
  } catch {
    // unprivileged: measured as it comes
  }
  return {
    pid: child.pid!,
    async window(fn) {
      child.send('start');
      await fn();
      const answer = new Promise<number[]>((resolve) => child.once('message', (m) => resolve((m as { samples: number[] }).samples)));
      child.send('stop');
      return answer;
    },
    stop: () => child.send('exit'),
  };
}

/**
 * The bench's flags: `[keys] [runs] [--cores shared|split]`. Not strict when other parts' flags share the
 * list (bench/run.ts): their flags and values are then ignored, and so are positionals.
 */
export function parseRedisCleanupArgs(argv: string[], strict = true): RedisCleanupBenchOptions {
  const { values, positionals } = parseArgs({ args: argv, options: { cores: { type: 'string' } }, allowPositionals: true, strict });
  const cores = values.cores;
  if (cores !== undefined && cores !== 'shared' && cores !== 'split') throw new Error(`--cores: shared or split, not ${String(cores)}`);
  const [keys, runs] = strict ? positionals.map(Number) : [];
  return { unrelatedKeys: keys || undefined, runs: runs || undefined, cores };
}

/** The CPUs this process may run on (/proc/self/status Cpus_allowed_list, e.g. "0-1"), as a list and expanded. */
function allowedCpus(): { list: string; cpus: number[] } {
  const list = /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '0';
  const cpus = list.split(',').flatMap((part) => {
    const [a, b = a] = part.split('-').map(Number) as [number, number?];
    return Array.from({ length: b - a + 1 }, (_, i) => a + i);
  });
  return { list, cpus };
}

export async function runRedisCleanupBench(options: RedisCleanupBenchOptions = {}): Promise<RedisCleanupBenchFigures> {
  if ((options.cores ?? 'shared') === 'shared') return measureRedisCleanup(options, undefined);
  const before = allowedCpus();
  if (before.cpus.length < 2) throw new Error(`--cores split needs 2 cores; this process may use ${before.list}`);
  const [server, bench] = before.cpus as [number, number];
  pinToCores(process.pid, String(bench));
  try {
    return await measureRedisCleanup(options, { server: String(server) });
  } finally {
    pinToCores(process.pid, before.list);
  }
}

/** `split`: the core redis-server and the neighbour go to (the bench itself already runs on another). */
async function measureRedisCleanup(
  options: RedisCleanupBenchOptions,
  split: { server: string } | undefined,
): Promise<RedisCleanupBenchFigures> {
  const unrelatedKeys = options.unrelatedKeys ?? 1_000_000;
  const fields = options.fieldsPerTable ?? 1000;
  const runs = options.runs ?? 3;
  const print = options.print ?? true;
  const log = (s: string) => print && process.stdout.write(s + '\n');
  const cores = split ? 'split' : 'shared';
  const loadBefore = loadavg().map((l) => Math.round(l * 10) / 10);

  const server = await startRedisServer({ config: ['enable-debug-command local', 'slowlog-log-slower-than 0', 'slowlog-max-len 1000000'] });
  // Everything started from here on is stopped in the `finally` below, even when the set-up fails half-way.
  let neighbour: Awaited<ReturnType<typeof startNeighbour>> | undefined;
  let image: { bin: string; remove: () => void } | undefined;
  const r = new Redis({
    host: '127.0.0.1',
    port: server.port,
    protocol: 2,
    disableClientInfo: true,
    connectionName: 'bench',
    lazyConnect: true,
  });
  r.on('error', () => undefined);
  const w = new Redis({ host: '127.0.0.1', port: server.port, protocol: 2, disableClientInfo: true });
  w.on('error', () => undefined);
  try {
    if (split) pinToCores(server.pid, split.server);
    let serverFavoured = true;
    try {
      setPriority(server.pid, -10); // root only: fewer preemptions of redis-server inside a command on a loaded machine
    } catch {
      serverFavoured = false;
    }
    const measuring = await startNeighbour(server.port);
    neighbour = measuring;
    if (split) pinToCores(measuring.pid, split.server);
    const python = rayPython();
    // The package as the image runs it (Dockerfile): compiled JavaScript, no type stripping.
    image = unpackedPackage();
    const imageBin = image.bin;
    await r.call('DEBUG', 'POPULATE', String(unrelatedKeys), 'unrelated', '16');
    let serial = 0;
    const value = 'v'.repeat(100);
    /** A fresh namespace with its 6 keys; returns its name. */
    const seed = async (): Promise<string> => {
      const ns = `bench${serial++}`;
      const p = r.pipeline();
      for (const table of TABLES) {
        const args: string[] = [];
        for (let i = 0; i < fields; i++) args.push(`id-${i.toString(16).padStart(8, '0')}`, value);
        p.hset(`RAY${ns}@${table}`, ...args);
      }
      p.set(`RAY${ns}@JobCounter`, '12');
      await p.exec();
      return ns;
    };
    const gone = async (ns: string) => {
      const left = await r.keys(`RAY${ns}@*`);
      if (left.length > 0) throw new Error(`namespace ${ns} not removed: ${left.join(', ')}`);
    };
    const connection = { host: '127.0.0.1', port: server.port, tls: false };
    const KEYS = TABLES.length + 1;

    const results: Record<string, number[]> = {
      walk: [],
      ours: [],
      walkGone: [],
      oursGone: [],
      oursProcess: [],
      oursProcessSources: [],
      oursProcessAlways: [],
      rayProcess: [],
      nodeStart: [],
      oursServerMax: [],
      walkServerMax: [],
      walkCpu: [],
      oursCpu: [],
      oursProcessCpu: [],
      oursProcessSourcesCpu: [],
      oursProcessAlwaysCpu: [],
      rayProcessCpu: [],
      walkBudget: [],
      oursBudget1: [],
      oursBudget02: [],
    };
    const longestNames: Record<string, string[]> = {};
    const WINDOWED = [
      'idle',
      'walk',
      'walkBudget',
      'ours',
      'oursBudget1',
      'oursBudget02',
      'oursProcess',
      'oursProcessSources',
      'oursProcessAlways',
      'rayProcess',
    ];
    for (const k of WINDOWED) for (const suffix of ['Max', 'NbP50', 'NbP99', 'NbMax']) results[`${k}${suffix}`] = [];
    /** Runs `fn` with SLOWLOG reset and the neighbour measuring; records both under `key`. */
    const windowed = async (key: string, fn: () => Promise<void>) => {
      await r.slowlog('RESET');
      const samples = (await measuring.window(fn)).sort((a, b) => a - b);
      const longest = await longestCommand(r);
      results[`${key}Max`]!.push(longest.us);
      (longestNames[key] ??= []).push(`${longest.command} (${longest.over} of ${longest.count} over 5 ms)`);
      results[`${key}NbP50`]!.push(percentile(samples, 50));
      results[`${key}NbP99`]!.push(percentile(samples, 99));
      results[`${key}NbMax`]!.push(samples.at(-1) ?? 0);
    };
    const cpu = () => cpuMs(server.pid);
    const lastSummary: Record<string, string> = {};
    const oursProcess = async (key: string, sweep: 'never' | 'always', bin: string) => {
      const ns = await seed();
      const c0 = cpu();
      let res = { code: null as number | null, out: '', ms: 0 };
      await windowed(key, async () => {
        res = await exec(process.execPath, [bin, 'redis-cleanup', '--quiet', '--sweep', sweep], {
          PATH: process.env.PATH,
          RAY_REDIS_ADDRESS: `127.0.0.1:${server.port}`,
          RAY_external_storage_namespace: ns,
        });
      });
      results[`${key}Cpu`]!.push(Math.round(cpu() - c0));
      if (res.code !== 0) throw new Error(`raykeeper redis-cleanup failed: ${res.out}`);
      lastSummary[key] = res.out.trim().split('\n')[0] ?? '';
      results[key]!.push(res.ms);
      await gone(ns);
    };
    /** runCleanup in process at another command budget. */
    const oursAtBudget = async (key: string, commandBudgetMs: number) => {
      const ns = await seed();
      await windowed(key, async () => {
        const started = performance.now();
        await runCleanup({ connection, namespace: ns, commandBudgetMs });
        results[key]!.push(Math.round(performance.now() - started));
      });
      await gone(ns);
    };
    // Calibration: where our COUNT settles under the default budget on this server, for the walk at the budget.
    const calibration = await runCleanup({ connection, namespace: await seed() });
    const walkBudgetCount = calibration.pace?.scanCount ?? 1000;
    const contenders: Array<[string, () => Promise<void>]> = [
      ['idle', () => windowed('idle', () => new Promise((resolve) => setTimeout(resolve, 1000)))],
      [
        'walk',
        async () => {
          const ns = await seed();
          const c0 = cpu();
          let res = { ms: 0, dataGoneMs: 0 };
          await windowed('walk', async () => {
            res = await walk(w, ns, KEYS);
          });
          results.walkCpu!.push(Math.round(cpu() - c0));
          results.walkServerMax!.push(results.walkMax!.at(-1)!);
          results.walk!.push(res.ms);
          results.walkGone!.push(res.dataGoneMs);
          await gone(ns);
        },
      ],
      [
        'walkBudget',
        async () => {
          const ns = await seed();
          await windowed('walkBudget', async () => {
            results.walkBudget!.push((await walk(w, ns, KEYS, walkBudgetCount)).ms);
          });
          await gone(ns);
        },
      ],
      [
        'ours',
        async () => {
          const ns = await seed();
          const c0 = cpu();
          let started = 0;
          let res: Awaited<ReturnType<typeof runCleanup>> | undefined;
          await windowed('ours', async () => {
            started = performance.now();
            res = await runCleanup({ connection, namespace: ns });
            results.ours!.push(Math.round(performance.now() - started));
          });
          results.oursCpu!.push(Math.round(cpu() - c0));
          results.oursServerMax!.push(results.oursMax!.at(-1)!);
          results.oursGone!.push(res?.dataGoneMs ?? Number.NaN);
          await gone(ns);
        },
      ],
      ['oursBudget1', () => oursAtBudget('oursBudget1', 1)],
      ['oursBudget02', () => oursAtBudget('oursBudget02', 0.2)],
      ['oursProcess', () => oursProcess('oursProcess', 'never', imageBin)],
      ['oursProcessSources', () => oursProcess('oursProcessSources', 'never', BIN)],
      ['oursProcessAlways', () => oursProcess('oursProcessAlways', 'always', imageBin)],
      [
        'nodeStart',
        async () => {
          results.nodeStart!.push((await exec(process.execPath, ['-e', '0'], { PATH: process.env.PATH })).ms);
        },
      ],
    ];
    if (python) {
      contenders.push([
        'rayProcess',
        async () => {
          const ns = await seed();
          const script = `from ray._private.gcs_utils import cleanup_redis_storage as c\nimport sys\nsys.exit(0 if c(host="127.0.0.1", port=${server.port}, password="", use_ssl=False, storage_namespace="${ns}") else 1)`;
          const c0 = cpu();
          let res = { code: null as number | null, out: '', ms: 0 };
          await windowed('rayProcess', async () => {
            res = await exec(python, ['-c', script], { PATH: process.env.PATH, HOME: process.env.HOME });
          });
          results.rayProcessCpu!.push(Math.round(cpu() - c0));
          if (res.code !== 0) throw new Error(`Ray's cleanup failed: ${res.out.slice(-500)}`);
          results.rayProcess!.push(res.ms);
          await gone(ns);
        },
      ]);
    }
    log(
      `redis-cleanup bench: one namespace (${TABLES.length} tables x ${fields} fields + JobCounter) among ${unrelatedKeys.toLocaleString('en')} keys; ${runs} rounds, order rotating; load average ${loadBefore.join(' ')}`,
    );
    for (let round = 0; round < runs; round++) {
      for (let i = 0; i < contenders.length; i++) await contenders[(i + round) % contenders.length]![1]();
    }
    const loadAfter = loadavg().map((l) => Math.round(l * 10) / 10);
    const m = (k: string) => median(results[k]!);
    const figures: RedisCleanupBenchFigures = {
      unrelatedKeys,
      runs,
      walkMs: m('walk'),
      oursMs: m('ours'),
      walkDataGoneMs: m('walkGone'),
      oursDataGoneMs: m('oursGone'),
      oursProcessMs: m('oursProcess'),
      oursProcessSourcesMs: m('oursProcessSources'),
      oursProcessAlwaysMs: m('oursProcessAlways'),
      rayProcessMs: python ? m('rayProcess') : undefined,
      nodeStartMs: m('nodeStart'),
      ratioWalk: m('ours') / Math.max(1, m('walk')),
      ratioRay: python ? m('rayProcess') / Math.max(1, m('oursProcess')) : undefined,
      ratioRayAlways: python ? m('rayProcess') / Math.max(1, m('oursProcessAlways')) : undefined,
      walkCpuMs: m('walkCpu'),
      oursCpuMs: m('oursCpu'),
      oursProcessCpuMs: m('oursProcessCpu'),
      oursProcessSourcesCpuMs: m('oursProcessSourcesCpu'),
      oursProcessAlwaysCpuMs: m('oursProcessAlwaysCpu'),
      rayProcessCpuMs: python ? m('rayProcessCpu') : undefined,
      ratioRayCpu: python ? m('rayProcessCpu') / Math.max(1, m('oursProcessCpu')) : undefined,
      ratioRayAlwaysCpu: python ? m('rayProcessCpu') / Math.max(1, m('oursProcessAlwaysCpu')) : undefined,
      oursServerMaxUs: m('oursServerMax'),
      walkServerMaxUs: m('walkServerMax'),
      serverMaxUs: Object.fromEntries(WINDOWED.filter((k) => results[`${k}Max`]!.length > 0).map((k) => [k, m(`${k}Max`)])),
      neighbour: Object.fromEntries(
        WINDOWED.filter((k) => results[`${k}NbP99`]!.length > 0).map((k) => [
          k,
          { p50Us: m(`${k}NbP50`), p99Us: m(`${k}NbP99`), maxUs: m(`${k}NbMax`), p99VsIdle: m(`${k}NbP99`) / Math.max(1, m('idleNbP99')) },
        ]),
      ),
      walkBudgetCount,
      ratioWalkBudget: m('ours') / Math.max(1, m('walkBudget')),
      serverFavoured,
      cores,
      loadBefore,
      loadAfter,
    };
    const row = (label: string, key: string, note = '') =>
      log(`  ${label.padEnd(56)} ${String(m(key)).padStart(7)}   runs ${results[key]!.join(', ').padEnd(22)} ${note}`);
    const x = (v: number) => `${v.toFixed(2)}x`;
    log('milliseconds (median, every run):');
    row('walk: SCAN MATCH COUNT 10000 + UNLINK (floor)', 'walk');
    row(`walk at the budget: COUNT ${walkBudgetCount} (where ours settles)`, 'walkBudget');
    row(
      'ours: runCleanup in process',
      'ours',
      `${x(figures.ratioWalk)} the walk at COUNT 10000, ${x(figures.ratioWalkBudget)} the walk at the budget (goal <= 1.1x)`,
    );
    row('ours in process, --command-budget-ms 1', 'oursBudget1');
    row('ours in process, --command-budget-ms 0.2', 'oursBudget02');
    row('time to data gone: walk', 'walkGone');
    row('time to data gone: ours (known tables first)', 'oursGone');
    const summary = (key: string) => (lastSummary[key] ?? '').replace(/^.*?: /, '');
    const vsRay = (ratio: number | undefined, goal = '') => (ratio === undefined ? '' : `Ray ${x(ratio)} this${goal}`);
    const notes = (...parts: string[]) => parts.filter(Boolean).join('; ');
    row(
      'ours as a process, --sweep never (the Job, Ray <= 2.60)',
      'oursProcess',
      notes(vsRay(figures.ratioRay, ' (goal >= 2x)'), summary('oursProcess')),
    );
    row('  the same from the TypeScript sources', 'oursProcessSources');
    row(
      'ours as a process, --sweep always (newer Ray)',
      'oursProcessAlways',
      notes(vsRay(figures.ratioRayAlways), summary('oursProcessAlways')),
    );
    if (python) row("Ray's cleanup_redis_storage as a process", 'rayProcess');
    else log(`  ${"Ray's cleanup_redis_storage as a process".padEnd(56)}     n/a  Ray not installed (bash tools/setup.sh)`);
    row('node -e 0 (Node start-up, context)', 'nodeStart');
    log('CPU milliseconds, client + redis-server (median, every run):');
    row('walk', 'walkCpu');
    row('ours in process', 'oursCpu', `${x(figures.oursCpuMs / Math.max(1, figures.walkCpuMs))} the walk`);
    row('ours as a process, --sweep never', 'oursProcessCpu', vsRay(figures.ratioRayCpu));
    row('  the same from the TypeScript sources', 'oursProcessSourcesCpu');
    row('ours as a process, --sweep always', 'oursProcessAlwaysCpu', vsRay(figures.ratioRayAlwaysCpu));
    if (python) row("Ray's cleanup as a process", 'rayProcessCpu');
    const labels: Record<string, string> = {
      idle: 'no cleanup (idle, 1 s)',
      walk: 'walk (COUNT 10000)',
      walkBudget: `walk at the budget (COUNT ${walkBudgetCount})`,
      ours: 'ours in process (budget 5 ms)',
      oursBudget1: 'ours in process, --command-budget-ms 1',
      oursBudget02: 'ours in process, --command-budget-ms 0.2',
      oursProcess: 'ours as a process, --sweep never',
      oursProcessSources: '  the same from the TypeScript sources',
      oursProcessAlways: 'ours as a process, --sweep always',
      rayProcess: "Ray's cleanup as a process",
    };
    log(
      `longest single command the server ran (SLOWLOG; bench and neighbour left out), us (median, every run)${serverFavoured ? '; redis-server and the neighbour at nice -10' : ''}:`,
    );
    for (const k of WINDOWED.slice(1))
      if (results[`${k}Max`]!.length > 0)
        row(labels[k]!, `${k}Max`, `${(longestNames[k] ?? []).join(', ')}${k === 'ours' ? '; goal <= 5000' : ''}`);
    log('a neighbour (HSET+HGET of its own namespace once a ms, another process): p50 / p99 / max us (medians; p99 of every run):');
    for (const k of WINDOWED) {
      const n = figures.neighbour[k];
      if (!n) continue;
      log(
        `  ${labels[k]!.padEnd(56)} ${`${n.p50Us} / ${n.p99Us} / ${n.maxUs}`.padStart(20)}   p99 runs ${results[`${k}NbP99`]!.join(', ').padEnd(22)} ${k === 'idle' ? '' : `p99 ${x(n.p99VsIdle)} idle${k === 'ours' ? ' (goal <= 2x)' : ''}`}`,
      );
    }
    log(
      `load average before ${loadBefore.join(' ')}, after ${loadAfter.join(' ')} (${cores === 'split' ? `cores split: redis-server and the neighbour on core ${split?.server}, the bench and the cleanups on another` : '2 cores, shared'})`,
    );
    return figures;
  } finally {
    neighbour?.stop();
    r.disconnect();
    w.disconnect();
    await server.stop();
    image?.remove();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runRedisCleanupBench(parseRedisCleanupArgs(process.argv.slice(2))).catch((err) => {
    process.stderr.write(`redis-cleanup bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  });
}
