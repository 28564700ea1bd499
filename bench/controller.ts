// Controller benchmark, against a real kube-apiserver + etcd (localcluster) and a real redis-server.
//
// Part 1 (deletion throughput): 500 GCS-FT RayClusters (finalizer set, head + worker pod each, 5 GCS
// keys each in Redis) in 5 namespaces; all deleted at once; measured: seconds from the first DELETE
// until the last RayCluster is gone (every finalizer released after a successful cleanup), and the
// controller process's peak RSS (VmHWM).
//   What runs the cleanup Jobs: no kubelet exists, and starting 500 Node processes on 2 cores would
//   measure process start-up, not the controller. A "bench kubelet" in THIS process watches the cleanup
//   Jobs and, 16 at a time, runs the very code the Job's container runs (`raykeeper redis-cleanup`'s
//   runWith, with the Job's env) against the real Redis, then writes the Job's status through /status
//   as the 1.35 job controller does (startTime, SuccessCriteriaMet, Complete). The controller sees the
//   same API traffic as in a cluster; the figure excludes pod scheduling and image start-up time.
// Part 2 (memory): 10,000 RayClusters (finalizer already set, realistic spec ~2.5 KB) in 10 namespaces;
// a fresh controller starts, caches and reconciles them all; measured: its RSS once idle (VmRSS) and
// peak (VmHWM), and the time to sync and reconcile everything once.
//
// The controller runs as a child process (`raykeeper controller` with its production defaults,
// --workers 4, but without the RayCluster operator: it would create pods for every cluster here, a
// different workload, measured by bench/raycluster-pods.ts), so its RSS is its own. The 2 cores are shared by everything
// (apiserver, etcd, Redis, the bench kubelet, the controller): figures move with machine load
// (500-cluster deletion measured 19-38 s here depending on what else ran).
//
//   npx node bench/controller.ts            (standalone, ~3-5 min on 2 cores)
//   import { runControllerBench } from './controller.ts'   (bench/run.ts)
import { benchClusterSpec } from './sample-cluster.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { writeFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { Redis } from 'ioredis';
import { startControlPlane, kubeconfigDocument, type ControlPlane } from '../localcluster/control-plane.ts';
import { finishStatuses, startStatus, type RunnerJob } from '../localcluster/job-logic.ts';
import { REPO_ROOT } from '../localcluster/binaries.ts';
import { KubeClient, MERGE_PATCH } from '../src/kube.ts';
import { InformerFactory, type KubeObject } from '../controller/runtime/informer.ts';
import { sleep } from '../controller/runtime/backoff.ts';
import { GCS_FT_REDIS_CLEANUP_FINALIZER } from '../src/names.ts';
import { startRedisServer, type RedisServer } from '../test/helpers/redis-server.ts';

export interface ControllerBenchOptions {
  clusters?: number;
  namespaces?: number;
  cachedClusters?: number;
  cachedNamespaces?: number;
  workers?: number;
  kubeletConcurrency?: number;
  print?: boolean;
}

export interface ControllerBenchFigures {
  clusters: number;
  /** Seconds from the first DELETE until the last RayCluster was gone. */
  deleteAllSeconds: number;
  /** CPU seconds the controller used meanwhile. */
  deleteCpuSeconds: number;
  /** CPU seconds of the rest of the machine's load meanwhile (2 cores are shared). */
  othersCpuSeconds: { apiserver: number; etcd: number; benchKubeletAndWatcher: number };
  /** Redis namespaces left behind (must be 0) and neighbour keys intact (must be true). */
  redisLeftovers: number;
  neighbourIntact: boolean;
  jobsCreated: number;
  controllerIdleRssMiB: number;
  controllerPeakRssMiB: number;
  cachedClusters: number;
  /** Seconds from controller start until all cached clusters were listed and reconciled once. */
  syncAndReconcileSeconds: number;
  cachedRssMiB: number;
  cachedPeakRssMiB: number;
  /** V8 heap in use at that point (the rest of RSS is code, heap slack and native memory). */
  cachedHeapUsedMiB: number;
}

const THIS_FILE = fileURLToPath(import.meta.url);
const RAYCLUSTERS = { group: 'ray.io', version: 'v1', plural: 'rayclusters' } as const;

/** User + system CPU seconds of a process so far. */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

export function rss(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
}

/** A RayCluster as users write them (GCS FT by annotation, external Redis, head + one worker group). */
export function benchCluster(name: string, redisAddress: string): Record<string, unknown> {
  const spec = benchClusterSpec([{ name: 'RAY_REDIS_ADDRESS', value: redisAddress }]);
  const obj: Record<string, unknown> = {
    apiVersion: 'ray.io/v1',
    kind: 'RayCluster',
    metadata: { name, labels: { app: 'ray', team: 'ml' }, annotations: { 'ray.io/ft-enabled': 'true' }, finalizers: [GCS_FT_REDIS_CLEANUP_FINALIZER] },
    spec,
  };
  // As `kubectl apply` leaves it: a full copy of what was applied, in an annotation.
  (obj.metadata as { annotations: Record<string, string> }).annotations['kubectl.kubernetes.io/last-applied-configuration'] = JSON.stringify({ apiVersion: obj.apiVersion, kind: obj.kind, metadata: { name, namespace: '', annotations: { 'ray.io/ft-enabled': 'true' } }, spec });
  return obj;
}

export async function pool<T>(items: T[], concurrency: number, fn: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      for (;;) {
        const i = next++;
        if (i >= items.length) return;
        await fn(items[i]!, i);
      }
    }),
  );
}

export interface Child {
  proc: ChildProcess;
  port: Promise<number>;
  stop(): Promise<void>;
}

export function startControllerChild(kubeconfig: string, workers: number, extraArgs: string[] = ['--reconcilers', 'raycluster,rayjob']): Child {
  const proc = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'raykeeper.js'), 'controller', ...extraArgs, '--kubeconfig', kubeconfig, '--workers', String(workers), '--health-port', '0', '--health-host', '127.0.0.1', '--cleanup-image', 'raykeeper:bench'], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', NO_PROXY: '127.0.0.1,localhost', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const port = new Promise<number>((resolvePort, reject) => {
    proc.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /"port":(\d+)/.exec(out);
      if (m) resolvePort(Number(m[1]));
    });
    proc.once('exit', (code) => reject(new Error(`controller exited with ${code}: ${out.slice(-2000)}`)));
  });
  port.catch(() => {});
  return {
    proc,
    port,
    stop: () =>
      new Promise<void>((r) => {
        if (proc.exitCode !== null) return r();
        proc.once('exit', () => r());
        proc.kill('SIGTERM');
      }),
  };
}

async function metric(port: number, name: string, labels: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(labels ? `${name}{${labels}} ` : `${name} `));
  return line ? Number(line.split(' ').pop()) : 0;
}

/** Stands in for kubelet + job controller: runs the cleanup code of each Job, writes its status. */
function benchKubelet(kube: KubeClient, concurrency: number): { stop(): Promise<void>; done: () => number } {
  const factory = new InformerFactory(kube, { namespace: undefined });
  const jobs = factory.get({ group: 'batch', version: 'v1', plural: 'jobs', labelSelector: 'ray.io/node-type=redis-cleanup' });
  const queue: KubeObject[] = [];
  const seen = new Set<string>();
  let active = 0;
  let finished = 0;
  let stopped = false;
  const pump = (): void => {
    while (!stopped && active < concurrency && queue.length > 0) {
      const job = queue.shift()!;
      active += 1;
      void run(job).finally(() => {
        active -= 1;
        pump();
      });
    }
  };
  const run = async (job: KubeObject): Promise<void> => {
    const { runWith } = await import('../controller/redis-cleanup/cli.ts');
    const ref = { group: 'batch', version: 'v1', plural: 'jobs', namespace: job.metadata?.namespace, name: job.metadata?.name ?? '', subresource: 'status' };
    const full = await kube.get<RunnerJob>({ ...ref, subresource: undefined });
    await kube.patch(ref, { status: startStatus(full, new Date()) }, MERGE_PATCH);
    const container = (full.spec?.template?.spec?.containers ?? [])[0] as { env?: Array<{ name: string; value?: string }>; args?: string[] } | undefined;
    const env: Record<string, string> = {};
    for (const e of container?.env ?? []) if (e.value !== undefined) env[e.name] = e.value;
    const sink = { write: () => true };
    const code = await runWith([...(container?.args ?? []), '--quiet'], { env, stdout: sink, stderr: sink });
    const outcome = code === 0 ? ({ kind: 'succeeded' } as const) : ({ kind: 'failed', reason: 'BackoffLimitExceeded', message: `exit ${code}` } as const);
    const [first, second] = finishStatuses(full, outcome, { succeeded: code === 0 ? 1 : 0, failed: code === 0 ? 0 : 1 }, new Date());
    await kube.patch(ref, { status: first }, MERGE_PATCH);
    await kube.patch(ref, { status: second }, MERGE_PATCH);
    finished += 1;
  };
  jobs.on((type, obj) => {
    const key = `${obj.metadata?.namespace}/${obj.metadata?.name}/${obj.metadata?.uid}`;
    if (type === 'delete' || seen.has(key)) return;
    seen.add(key);
    queue.push(obj);
    pump();
  });
  factory.start();
  return {
    done: () => finished,
    stop: async () => {
      stopped = true;
      await factory.stop();
    },
  };
}

export async function runControllerBench(options: ControllerBenchOptions = {}): Promise<ControllerBenchFigures> {
  const o = { clusters: 500, namespaces: 5, cachedClusters: 10_000, cachedNamespaces: 10, workers: 4, kubeletConcurrency: 16, print: true, ...options };
  const say = (s: string) => o.print && process.stderr.write(`[controller bench] ${s}\n`);
  let cp: ControlPlane | undefined;
  let redisServer: RedisServer | undefined;
  let dir: string | undefined;
  const children: Child[] = [];
  try {
    say('starting etcd + kube-apiserver and redis-server');
    cp = await startControlPlane({ onProgress: (m) => say(m) });
    redisServer = await startRedisServer();
    dir = await mkdtemp(join(tmpdir(), 'raykeeper-bench-controller-'));
    const kubeconfig = join(dir, 'kubeconfig');
    await writeFile(kubeconfig, stringify(kubeconfigDocument(cp.info)), { mode: 0o600 });
    const kube = new KubeClient(cp.kubeConfig());
    const redis = new Redis({ host: redisServer.host, port: redisServer.port });
    const address = `127.0.0.1:${redisServer.port}`;

    // ---- part 1 ----
    const nsNames = Array.from({ length: o.namespaces }, (_, i) => `bench-${i}`);
    for (const ns of nsNames) await kube.create({ version: 'v1', plural: 'namespaces' }, { metadata: { name: ns } });
    const controller = startControllerChild(kubeconfig, o.workers);
    children.push(controller);
    const port = await controller.port;
    const pid = controller.proc.pid!;
    say(`creating ${o.clusters} RayClusters with head/worker pods and Redis data`);
    const uids: string[] = [];
    const names = Array.from({ length: o.clusters }, (_, i) => ({ ns: nsNames[i % o.namespaces]!, name: `rc-${i}` }));
    await pool(names, 32, async ({ ns, name }) => {
      const c = await kube.create<{ metadata: { uid: string } }>({ ...RAYCLUSTERS, namespace: ns }, benchCluster(name, address));
      uids.push(c.metadata.uid);
      const pipe = redis.pipeline();
      for (const table of ['NODE', 'JOB', 'ACTOR', 'KV']) pipe.hset(`RAY${c.metadata.uid}@${table}`, 'k', 'v');
      pipe.set(`RAY${c.metadata.uid}@JobCounter`, '1');
      await pipe.exec();
      for (const [suffix, type] of [['head', 'head'], ['worker-0', 'worker']]) {
        await kube.create({ version: 'v1', plural: 'pods', namespace: ns }, {
          metadata: { name: `${name}-${suffix}`, labels: { 'ray.io/cluster': name, 'ray.io/node-type': type }, ownerReferences: [{ apiVersion: 'ray.io/v1', kind: 'RayCluster', name, uid: c.metadata.uid, controller: true }] },
          spec: { containers: [{ name: 'ray', image: 'rayproject/ray:2.41.0' }] },
        });
      }
    });
    await redis.hset('RAYneighbour@NODE', 'k', 'v');
    // Let the controller see them all (it has nothing to do: the finalizers are there).
    while ((await metric(port, 'raykeeper_informer_objects', 'informer="rayclusters.ray.io#raycluster-slim"')) < o.clusters) await sleep(200);
    await sleep(1000);
    const idle = rss(pid);
    const kubelet = benchKubelet(kube, o.kubeletConcurrency);
    const watcher = new InformerFactory(kube, { namespace: undefined });
    const clusters = watcher.get({ ...RAYCLUSTERS });
    watcher.start();
    await watcher.waitForSync();
    say(`deleting all ${o.clusters} at once`);
    const t0 = performance.now();
    const cpu0 = cpuSeconds(pid);
    const others0 = { apiserver: cpuSeconds(cp.info.pids.kubeApiserver), etcd: cpuSeconds(cp.info.pids.etcd), bench: process.cpuUsage() };
    await pool(names, 64, async ({ ns, name }) => {
      await kube.delete({ ...RAYCLUSTERS, namespace: ns, name });
    });
    let lastReport = 0;
    while (clusters.size > 0) {
      await sleep(100);
      if (performance.now() - lastReport > 5000) {
        lastReport = performance.now();
        const depth = await metric(port, 'raykeeper_controller_queue_depth', 'controller="raycluster"');
        say(`${clusters.size} left, ${kubelet.done()} cleanups done, queue depth ${depth}, controller CPU ${(cpuSeconds(pid) - cpu0).toFixed(1)} s`);
      }
    }
    const deleteAllSeconds = (performance.now() - t0) / 1000;
    const deleteCpuSeconds = cpuSeconds(pid) - cpu0;
    const benchCpu = process.cpuUsage(others0.bench);
    const othersCpu = {
      apiserver: cpuSeconds(cp.info.pids.kubeApiserver) - others0.apiserver,
      etcd: cpuSeconds(cp.info.pids.etcd) - others0.etcd,
      benchKubeletAndWatcher: (benchCpu.user + benchCpu.system) / 1e6,
    };
    const peak = rss(pid);
    await watcher.stop();
    await kubelet.stop();
    let leftovers = 0;
    for (const uid of uids) if ((await redis.exists(`RAY${uid}@NODE`, `RAY${uid}@JobCounter`)) > 0) leftovers += 1;
    const neighbourIntact = (await redis.exists('RAYneighbour@NODE')) === 1;
    let jobsCreated = 0;
    for (const ns of nsNames) jobsCreated += (await kube.list({ group: 'batch', version: 'v1', plural: 'jobs', namespace: ns })).items.length;
    if (process.env.BENCH_DEBUG) {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      say(text.split('\n').filter((l) => /^raykeeper_(kube_requests|raycluster_actions_total|controller_reconcile_total|controller_reconcile_duration_seconds_(sum|count))/.test(l)).join('\n'));
    }
    await controller.stop();

    let syncAndReconcileSeconds = 0;
    let cached = { rss: 0, hwm: 0 };
    let cachedHeapMiB = 0;
    if (o.cachedClusters > 0) {
    // ---- part 2 ----
    say(`creating ${o.cachedClusters} RayClusters for the memory figure`);
    const cachedNs = Array.from({ length: o.cachedNamespaces }, (_, i) => `cache-${i}`);
    for (const ns of cachedNs) await kube.create({ version: 'v1', plural: 'namespaces' }, { metadata: { name: ns } });
    const many = Array.from({ length: o.cachedClusters }, (_, i) => ({ ns: cachedNs[i % o.cachedNamespaces]!, name: `cached-${i}` }));
    await pool(many, 48, async ({ ns, name }) => {
      await kube.create({ ...RAYCLUSTERS, namespace: ns }, benchCluster(name, address));
    });
    say('starting a fresh controller over them');
    const t1 = performance.now();
    const second = startControllerChild(kubeconfig, o.workers);
    children.push(second);
    const port2 = await second.port;
    while ((await metric(port2, 'raykeeper_controller_reconcile_total', 'controller="raycluster",result="success"')) < o.cachedClusters) await sleep(200);
    syncAndReconcileSeconds = (performance.now() - t1) / 1000;
    await sleep(5000);
    cached = rss(second.proc.pid!);
    cachedHeapMiB = (await metric(port2, 'raykeeper_nodejs_heap_size_used_bytes', '')) / 1048576;
    await second.stop();
    }
    redis.disconnect();
    kube.close();

    const figures: ControllerBenchFigures = {
      clusters: o.clusters,
      deleteAllSeconds,
      deleteCpuSeconds,
      othersCpuSeconds: othersCpu,
      redisLeftovers: leftovers,
      neighbourIntact,
      jobsCreated,
      controllerIdleRssMiB: idle.rss,
      controllerPeakRssMiB: peak.hwm,
      cachedClusters: o.cachedClusters,
      syncAndReconcileSeconds,
      cachedRssMiB: cached.rss,
      cachedPeakRssMiB: cached.hwm,
      cachedHeapUsedMiB: cachedHeapMiB,
    };
    if (o.print) process.stdout.write(formatControllerFigures(figures) + '\n');
    return figures;
  } finally {
    for (const c of children) await c.stop().catch(() => {});
    await redisServer?.stop().catch(() => {});
    await cp?.stop().catch(() => {});
    if (dir) await rm(dir, { recursive: true, force: true });
  }
}

export function formatControllerFigures(f: ControllerBenchFigures): string {
  const mib = (n: number) => `${n.toFixed(0)} MiB`;
  return [
    'controller (real kube-apiserver + etcd + redis-server, controller as a child process, --workers 4)',
    `  delete ${f.clusters} GCS-FT RayClusters at once -> all finalizers released: ${f.deleteAllSeconds.toFixed(1)} s (controller CPU ${f.deleteCpuSeconds.toFixed(1)} s)`,
    `    meanwhile CPU: kube-apiserver ${f.othersCpuSeconds.apiserver.toFixed(1)} s, etcd ${f.othersCpuSeconds.etcd.toFixed(1)} s, bench kubelet (runs the 500 cleanups) ${f.othersCpuSeconds.benchKubeletAndWatcher.toFixed(1)} s`,
    `    cleanup Jobs created: ${f.jobsCreated}; Redis namespaces left: ${f.redisLeftovers}; neighbour data intact: ${f.neighbourIntact}`,
    `    controller RSS: idle with ${f.clusters} cached ${mib(f.controllerIdleRssMiB)}, peak ${mib(f.controllerPeakRssMiB)}`,
    `  ${f.cachedClusters} RayClusters cached: RSS ${mib(f.cachedRssMiB)} (peak ${mib(f.cachedPeakRssMiB)}, V8 heap used ${mib(f.cachedHeapUsedMiB)}); list + first reconcile of all: ${f.syncAndReconcileSeconds.toFixed(1)} s`,
  ].join('\n');
}

if (resolve(process.argv[1] ?? '') === THIS_FILE) {
  await runControllerBench();
}
