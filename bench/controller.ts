// Controller benchmark: raykeeper's controller beside KubeRay's operator (v1.6.2, built from the Go
// module proxy by tools/build-kuberay.sh), on ONE control plane (real kube-apiserver + etcd with KubeRay's
// CRDs, which ours work on too) and one real redis-server, measured the same way in the same run. Each
// contender is a child process of its own, started fresh for each measurement, so its RSS is its own;
// rounds alternate which one goes first. Per round and contender:
//   idle       started over an empty cluster; ready (ours: /readyz; KubeRay: its leader Lease), 5 s
//              later: VmRSS (nothing cached); ours also once more from the TypeScript sources (below)
//   500        500 GCS-FT RayClusters created (finalizer set, 5 GCS keys each in Redis); once every one
//              was reconciled and the queue is empty, 5 s later: VmRSS (500 cached)
//   deletion   all 500 deleted at once: seconds from the first DELETE until the last RayCluster is gone
//              (each finalizer released after its cleanup Job completed), the contender's CPU seconds
// Then 10,000 suspended RayClusters are created once, and each contender starts fresh over them:
//   10k        VmHWM (its peak: list and first reconcile of all) and VmRSS once every one was reconciled
//              and the queue is empty (5 s later), not after a forced GC.
//
// Ours runs as the image runs it: the package `npm pack` makes (compiled JavaScript) is unpacked once per
// bench run (test/helpers/package.ts); its idle RSS from the checkout's TypeScript sources (Node's type
// stripper loaded) is measured beside it.
// Pods: our run starts `raykeeper controller --reconcilers raycluster,rayjob` (the GCS-FT cleanup; the
// RayCluster operator is measured by bench/raycluster-pods.ts), so the bench creates each cluster's head
// and worker pod; KubeRay's operator creates its own. No kubelet: pods never run, and unscheduled pods
// vanish as soon as a controller deletes them.
// Cleanup Jobs: the project's job runner (localcluster/job-runner.ts, on the kube/ runtime's informer
// and work queue) in THIS process completes them, 16 at a time, for both contenders: it claims each Job,
// runs its container as a function here (`inProcess`: ours is `raykeeper redis-cleanup`'s runWith with
// the Job's env and args; KubeRay's `bash -lc -- "python -c ...cleanup_redis_storage"` becomes our
// cleanup of the same RAY_external_storage_namespace from the same env) against the real Redis, and
// writes the Job's status through /status as the 1.35 job controller does. A process per Job would
// measure 500 process start-ups on 2 cores, and KubeRay's would need Ray installed; this way both
// controllers see the same API traffic and the same Redis work, and the figures exclude pod start-up.
// The 2 cores are shared by everything (apiserver, etcd, Redis, the bench kubelet, the contender) and
// often by other work: spreads (min-max over the rounds) and the load average are printed; the absolute
// numbers are context, the side-by-side ratio is the figure.
//
//   node bench/controller.ts [--quick] [--rounds N] [--clusters N] [--cached N] [--no-kuberay]
//   (--clusters 0: only the cached part; --cached 0: no cached part)
//   (defaults: 3 rounds, 500, 10000; --quick: 1 round, 100, 1000; ~30-40 min in full on 2 cores)
import { median } from './stats.ts';
import { benchClusterSpec } from './sample-cluster.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { startControlPlane, type ControlPlane } from '../localcluster/control-plane.ts';
import { startJobRunner, type InProcessCommand, type JobRunner } from '../localcluster/job-runner.ts';
import { REPO_ROOT } from '../localcluster/binaries.ts';
import { KubeClient } from '../kube/client.ts';
import { RAYCLUSTERS } from '../src/types.ts';
import { JOBS, LEASES, NAMESPACES, PODS, SERVICES, type Resource } from '../kube/resources.ts';
import { InformerFactory } from '../kube/informer.ts';
import type { ApiObject } from '../kube/model.ts';
import { sleep } from '../kube/backoff.ts';
import { KUBERAY_LEASE_NAME, leaseIsHeld } from '../controller/companion.ts';
import { GCS_FT_REDIS_CLEANUP_FINALIZER, NODE_TYPE_REDIS_CLEANUP } from '../src/names.ts';
import { runWith } from '../controller/redis-cleanup/cli.ts';
import { pino } from 'pino';
import { startRedisServer, type RedisServer } from '../test/helpers/redis-server.ts';
import { unpackedPackage } from '../test/helpers/package.ts';
import { kubeRayControlPlane, missingKubeRay, startKubeRay, type KubeRayOperator } from '../test/kuberay/helpers.ts';

export interface ControllerBenchOptions {
  rounds?: number;
  clusters?: number;
  namespaces?: number;
  cachedClusters?: number;
  cachedNamespaces?: number;
  workers?: number;
  kubeletConcurrency?: number;
  kuberay?: boolean;
  print?: boolean;
}

/** One contender's figures in one round (MiB, seconds). */
export interface RoundFigures {
  idleRssMiB: number;
  /** Ours only (0 for KubeRay): idle RSS when run from the checkout's TypeScript sources (not the package). */
  idleSourcesRssMiB: number;
  cached500RssMiB: number;
  deleteSeconds: number;
  deleteCpuSeconds: number;
  deletePeakRssMiB: number;
  cached10kPeakMiB: number;
  cached10kRssMiB: number;
  /** Seconds from start until all cached clusters were reconciled once (or the wait gave up). */
  cached10kSettleSeconds: number;
  cached10kReconciled: number;
  /** Load average (1 min) when the round's measurements of this contender ended. */
  load1: number;
}

export interface ControllerBenchFigures {
  clusters: number;
  cachedClusters: number;
  /** Per contender name ('raykeeper', 'kuberay v1.6.2'), one entry per round. */
  rounds: Record<string, RoundFigures[]>;
  /** Per contender: Redis namespaces its deletions left behind (must be 0); and neighbour keys intact. */
  redisLeftovers: Record<string, number>;
  neighbourIntact: boolean;
  loadAverage: { start: number[]; end: number[] };
}

const THIS_FILE = fileURLToPath(import.meta.url);
export const KUBERAY = 'kuberay v1.6.2';
export const OURS = 'raykeeper';
const SETTLE_MS = 5_000;

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
export function benchCluster(name: string, redisAddress: string, suspend = false): Record<string, unknown> {
  const spec = { ...benchClusterSpec([{ name: 'RAY_REDIS_ADDRESS', value: redisAddress }]), ...(suspend ? { suspend: true } : {}) };
  const obj: Record<string, unknown> = {
    apiVersion: 'ray.io/v1',
    kind: 'RayCluster',
    metadata: {
      name,
      labels: { app: 'ray', team: 'ml' },
      annotations: { 'ray.io/ft-enabled': 'true' },
      finalizers: [GCS_FT_REDIS_CLEANUP_FINALIZER],
    },
    spec,
  };
  // As `kubectl apply` leaves it: a full copy of what was applied, in an annotation.
  (obj.metadata as { annotations: Record<string, string> }).annotations['kubectl.kubernetes.io/last-applied-configuration'] =
    JSON.stringify({
      apiVersion: obj.apiVersion,
      kind: obj.kind,
      metadata: { name, namespace: '', annotations: { 'ray.io/ft-enabled': 'true' } },
      spec,
    });
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

/** The end of a child's log kept for its exit message (and long enough for the line that names its port). */
const LOG_TAIL_CHARS = 8192;

/**
 * Our controller as a child process. `bin`: the raykeeper.js to run, the package's as the image runs it
 * (test/helpers/package.ts unpackedPackage), else the checkout's (its TypeScript sources).
 */
export function startControllerChild(
  kubeconfig: string,
  workers: number,
  extraArgs: string[] = ['--reconcilers', 'raycluster,rayjob'],
  bin = join(REPO_ROOT, 'bin', 'raykeeper.js'),
): Child {
  const proc = spawn(
    process.execPath,
    [
      bin,
      'controller',
      ...extraArgs,
      '--kubeconfig',
      kubeconfig,
      '--workers',
      String(workers),
      '--health-port',
      '0',
      '--health-host',
      '127.0.0.1',
      '--cleanup-image',
      'raykeeper:bench',
    ],
    {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        NO_PROXY: '127.0.0.1,localhost',
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  // Only the log's tail is kept, and it is searched only until the port is found: the whole log searched
  // on every chunk cost the bench 116 CPU seconds in one 5,000-RayCluster deletion (its log is tens of MB),
  // on a machine whose 2 cores the contender needed.
  let tail = '';
  let found = false;
  proc.stdout!.setEncoding('utf8');
  const port = new Promise<number>((resolvePort, reject) => {
    proc.stdout!.on('data', (chunk: string) => {
      const text = tail + chunk;
      tail = text.slice(-LOG_TAIL_CHARS);
      if (found) return;
      // Searched before trimming (the line may open a long chunk), and whole: a chunk may end inside the number.
      const m = /"port":(\d+)[,}]/.exec(text);
      if (m) {
        found = true;
        resolvePort(Number(m[1]));
      }
    });
    proc.once('exit', (code) => reject(new Error(`controller exited with ${code}: ${tail.slice(-2000)}`)));
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

/** Sum of a Prometheus metric's samples whose label set matches `labels` (a regexp source). */
export async function metricSum(port: number, name: string, labels: RegExp): Promise<number> {
  return metricTextSum(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text(), name, labels);
}

/** The sum of a metric's samples in a Prometheus text exposition whose label set matches `labels`. */
export function metricTextSum(text: string, name: string, labels: RegExp): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)/.exec(line);
    if (m && m[1] === name && labels.test(m[2] ?? '')) sum += Number(m[3]);
  }
  return sum;
}

/** A running contender: its pid and how to tell it has reconciled `n` RayClusters with nothing queued. */
export interface Contender {
  name: string;
  pid: number;
  /** Where its Prometheus metrics are served (127.0.0.1). */
  metricsPort: number;
  /** performance.now() before the process was spawned. */
  startedAt: number;
  /** RayCluster reconciles so far and the RayCluster queue's depth. */
  progress(): Promise<{ reconciled: number; depth: number }>;
  stop(): Promise<void>;
  /** Several processes sharing the work (`--shards`): each one's pid and metrics port; pid and metricsPort above are the first's. */
  replicas?: Array<{ pid: number; metricsPort: number }>;
  /** Processes installed beside it whose CPU counts too (ours: the admission webhook). */
  companions?: number[];
}

export async function startOurs(
  kubeconfig: string,
  workers: number,
  bin: string | undefined,
  args = ['--reconcilers', 'raycluster,rayjob', '--companion', 'off'],
): Promise<Contender> {
  const startedAt = performance.now();
  const child = startControllerChild(kubeconfig, workers, args, bin);
  const port = await child.port;
  while ((await fetch(`http://127.0.0.1:${port}/readyz`)).status !== 200) await sleep(100);
  const rc = /controller="raycluster"/;
  return {
    name: OURS,
    pid: child.proc.pid!,
    metricsPort: port,
    startedAt,
    progress: async () => ({
      reconciled: await metricSum(port, 'raykeeper_controller_reconcile_total', rc),
      depth: await metricSum(port, 'raykeeper_controller_queue_depth', rc),
    }),
    stop: () => child.stop(),
  };
}

let leaseNamespaces = 0;
export async function startTheirs(cp: ControlPlane, kube: KubeClient, env: Record<string, string> = {}): Promise<Contender> {
  // A Lease namespace per start: the next start need not wait for the last one's Lease to expire.
  const leaseNamespace = `kuberay-lease-${++leaseNamespaces}`;
  await kube.create(NAMESPACES, { metadata: { name: leaseNamespace } });
  const startedAt = performance.now();
  // Its log's tail only, as ours' (startControllerChild): both cost the bench the same to drain.
  const op: KubeRayOperator = await startKubeRay(cp, { cleanup: true, leaseNamespace, env, logTailChars: LOG_TAIL_CHARS });
  for (;;) {
    const lease = await kube.getOrUndefined({
      ...LEASES,
      namespace: leaseNamespace,
      name: KUBERAY_LEASE_NAME,
    });
    if (lease && leaseIsHeld(lease, Date.now())) break;
    if (op.proc.exitCode !== null) throw new Error(`KubeRay's operator exited: ${op.log().slice(-2000)}`);
    await sleep(200);
  }
  const rc = /raycluster/i;
  return {
    name: KUBERAY,
    pid: op.proc.pid!,
    metricsPort: op.metricsPort,
    startedAt,
    progress: async () => ({
      reconciled: await metricSum(op.metricsPort, 'controller_runtime_reconcile_total', rc),
      depth: await metricSum(op.metricsPort, 'workqueue_depth', rc),
    }),
    stop: () => op.stop(),
  };
}

/** Waits until `n` reconciles happened and the queue is empty (or `capMs` passed); answers seconds since the start. */
async function settle(c: Contender, n: number, capMs: number): Promise<{ seconds: number; reconciled: number }> {
  const t0 = performance.now();
  for (;;) {
    const p = await c.progress();
    if ((p.reconciled >= n && p.depth === 0) || performance.now() - t0 > capMs)
      return { seconds: (performance.now() - c.startedAt) / 1000, reconciled: p.reconciled };
    await sleep(250);
  }
}

/** KubeRay v1.6.2's cleanup container: `/bin/bash -lc -- "echo ... && python -c '...cleanup_redis_storage(...)'"`. */
export function isKubeRayCleanup(args: string[]): boolean {
  return args.some((a) => a.includes('cleanup_redis_storage'));
}

/**
 * The project's job runner (kubelet + job controller stand-in) for the cleanup Jobs of both contenders,
 * each run as a function in this process: ours (`raykeeper redis-cleanup ARGS`) with its args, KubeRay's
 * (`bash -lc -- "python -c ..."`) as our cleanup from the same env (Ray's does the same from it).
 */
async function startCleanupRunner(cp: ControlPlane, concurrency: number): Promise<{ runner: JobRunner; done: () => number }> {
  const quiet = (args: string[], io: Parameters<InProcessCommand>[1]) => runWith([...args, '--quiet'], io);
  const kubeRay: InProcessCommand = (args, io) => (isKubeRayCleanup(args) ? quiet([], io) : Promise.resolve(127));
  const runner = await startJobRunner({
    kubeConfig: cp.kubeConfig(),
    labelSelector: `ray.io/node-type=${NODE_TYPE_REDIS_CLEANUP}`,
    maxRunning: concurrency,
    logger: pino({ level: 'silent' }),
    inProcess: {
      raykeeper: (args, io) => (args[0] === 'redis-cleanup' ? quiet(args.slice(1), io) : Promise.resolve(127)),
      bash: kubeRay,
    },
  });
  let finished = 0;
  runner.on('finished', () => (finished += 1));
  return { runner, done: () => finished };
}

/** Deletes the Jobs, pods and Services a deletion round leaves in `namespaces` (kube-controller-manager's GC would). */
async function removeLeftovers(kube: KubeClient, namespaces: string[]): Promise<void> {
  const kinds: Resource<ApiObject>[] = [JOBS, PODS, SERVICES];
  for (const namespace of namespaces) {
    for (const kind of kinds) {
      const { items } = await kube.list(kind.at(namespace));
      await pool(items, 16, async (item) => {
        await kube.delete({ ...kind, namespace, name: item.metadata?.name ?? '' }, { propagationPolicy: 'Background' });
      });
    }
  }
}

export async function runControllerBench(options: ControllerBenchOptions = {}): Promise<ControllerBenchFigures> {
  const o = {
    rounds: 3,
    clusters: 500,
    namespaces: 5,
    cachedClusters: 10_000,
    cachedNamespaces: 10,
    workers: 4,
    kubeletConcurrency: 16,
    kuberay: true,
    print: true,
    ...options,
  };
  const say = (s: string) => o.print && process.stderr.write(`[controller bench] ${s}\n`);
  const missing = o.kuberay ? missingKubeRay() : undefined;
  if (missing) throw new Error(`${missing} (or run with --no-kuberay)`);
  const loadStart = loadavg();
  let cp: ControlPlane | undefined;
  let kube: KubeClient | undefined;
  let redisServer: RedisServer | undefined;
  let redis: Redis | undefined;
  let image: { bin: string; remove: () => void } | undefined;
  const running: Contender[] = [];
  const stop = async (c: Contender): Promise<void> => {
    await c.stop();
    running.splice(running.indexOf(c), 1);
  };
  try {
    say(`starting etcd + kube-apiserver (${o.kuberay ? "KubeRay's" : 'our'} CRDs) and redis-server`);
    if (o.kuberay) ({ cp, kube } = await kubeRayControlPlane((m) => say(m)));
    else {
      cp = await startControlPlane({ onProgress: (m) => say(m) });
      kube = new KubeClient(cp.kubeConfig());
    }
    const k = kube;
    const plane = cp;
    redisServer = await startRedisServer();
    redis = new Redis({ host: redisServer.host, port: redisServer.port });
    const r = redis;
    const address = `127.0.0.1:${redisServer.port}`;
    await r.hset('RAYneighbour@NODE', 'k', 'v');
    const kubeconfig = cp.info.kubeconfigPath;
    // As the image runs it (Dockerfile): the package, compiled JavaScript.
    image = unpackedPackage();
    say(`the package as the image runs it: ${image.bin}`);
    const imageBin = image.bin;
    const start = async (name: string, fromPackage = true): Promise<Contender> => {
      const c = name === OURS ? await startOurs(kubeconfig, o.workers, fromPackage ? imageBin : undefined) : await startTheirs(plane, k);
      running.push(c);
      return c;
    };
    const names = o.kuberay ? [OURS, KUBERAY] : [OURS];
    const rounds: Record<string, RoundFigures[]> = Object.fromEntries(names.map((n) => [n, []]));
    const uids: Record<string, string[]> = Object.fromEntries(names.map((n) => [n, []]));
    let batch = 0;

    // ---- idle, 500 cached, 500 deletions ----
    const partial: Record<string, Array<Partial<RoundFigures>>> = Object.fromEntries(names.map((n) => [n, []]));
    for (let round = 0; round < (o.clusters > 0 ? o.rounds : 0); round++) {
      for (const name of round % 2 === 0 ? names : [...names].reverse()) {
        batch += 1;
        const nsNames = Array.from({ length: o.namespaces }, (_, i) => `bench-${batch}-${i}`);
        for (const ns of nsNames) await k.create(NAMESPACES, { metadata: { name: ns } });
        let idleSources = 0;
        if (name === OURS) {
          say(`round ${round + 1}: ${name}: idle, from the TypeScript sources`);
          const plain = await start(name, false);
          await sleep(SETTLE_MS);
          idleSources = rss(plain.pid).rss;
          await stop(plain);
        }
        say(`round ${round + 1}: ${name}: idle`);
        const c = await start(name);
        await sleep(SETTLE_MS);
        const idle = rss(c.pid).rss;
        const reconciledBefore = (await c.progress()).reconciled;
        say(
          `round ${round + 1}: ${name}: creating ${o.clusters} GCS-FT RayClusters${name === OURS ? ' with head/worker pods' : ''} and their Redis data`,
        );
        const clusters = Array.from({ length: o.clusters }, (_, i) => ({ ns: nsNames[i % o.namespaces]!, name: `rc-${i}` }));
        await pool(clusters, 32, async ({ ns, name: cluster }) => {
          const created = await k.create({ ...RAYCLUSTERS, namespace: ns }, benchCluster(cluster, address));
          uids[name]!.push(created.metadata.uid ?? '');
          const pipe = r.pipeline();
          for (const table of ['NODE', 'JOB', 'ACTOR', 'KV']) pipe.hset(`RAY${created.metadata.uid}@${table}`, 'k', 'v');
          pipe.set(`RAY${created.metadata.uid}@JobCounter`, '1');
          await pipe.exec();
          if (name !== OURS) return; // KubeRay's operator creates its own pods
          for (const [suffix, type] of [
            ['head', 'head'],
            ['worker-0', 'worker'],
          ]) {
            await k.create(
              { ...PODS, namespace: ns },
              {
                metadata: {
                  name: `${cluster}-${suffix}`,
                  labels: { 'ray.io/cluster': cluster, 'ray.io/node-type': type },
                  ownerReferences: [
                    { apiVersion: 'ray.io/v1', kind: 'RayCluster', name: cluster, uid: created.metadata.uid, controller: true },
                  ],
                },
                spec: { containers: [{ name: 'ray', image: 'rayproject/ray:2.41.0' }] },
              },
            );
          }
        });
        await settle(c, reconciledBefore + o.clusters, 300_000);
        await sleep(SETTLE_MS);
        const cached500 = rss(c.pid).rss;

        const kubelet = await startCleanupRunner(plane, o.kubeletConcurrency);
        const watcher = new InformerFactory(k, { namespace: undefined });
        const watched = nsNames.map((ns) => watcher.get({ ...RAYCLUSTERS, namespace: ns }));
        watcher.start();
        await watcher.waitForSync();
        const left = () => watched.reduce((n, i) => n + i.size, 0);
        say(`round ${round + 1}: ${name}: deleting all ${o.clusters} at once`);
        const t0 = performance.now();
        const cpu0 = cpuSeconds(c.pid);
        await pool(clusters, 64, async ({ ns, name: cluster }) => {
          await k.delete({ ...RAYCLUSTERS, namespace: ns, name: cluster });
        });
        let lastReport = performance.now();
        while (left() > 0) {
          await sleep(100);
          if (performance.now() - lastReport > 10_000) {
            lastReport = performance.now();
            say(`  ${left()} left, ${kubelet.done()} cleanups done, CPU ${(cpuSeconds(c.pid) - cpu0).toFixed(1)} s`);
          }
        }
        const deleteSeconds = (performance.now() - t0) / 1000;
        const deleteCpuSeconds = cpuSeconds(c.pid) - cpu0;
        const deletePeak = rss(c.pid).hwm;
        await watcher.stop();
        await kubelet.runner.stop();
        await stop(c);
        // No garbage collector runs here: what the deleted clusters owned stays unless removed, and the
        // next contender would cache it (its "nothing cached" would not be).
        await removeLeftovers(k, nsNames);
        partial[name]!.push({
          idleRssMiB: idle,
          idleSourcesRssMiB: idleSources,
          cached500RssMiB: cached500,
          deleteSeconds,
          deleteCpuSeconds,
          deletePeakRssMiB: deletePeak,
          load1: loadavg()[0]!,
        });
        say(
          `round ${round + 1}: ${name}: idle ${Math.round(idle)} MiB${name === OURS ? ` (from the sources ${Math.round(idleSources)})` : ''}, ${o.clusters} cached ${Math.round(cached500)} MiB, deletion ${deleteSeconds.toFixed(1)} s (CPU ${deleteCpuSeconds.toFixed(1)} s)`,
        );
      }
    }

    // ---- 10,000 suspended RayClusters cached ----
    if (o.cachedClusters > 0) {
      say(`creating ${o.cachedClusters} suspended RayClusters`);
      const cachedNs = Array.from({ length: o.cachedNamespaces }, (_, i) => `cache-${i}`);
      for (const ns of cachedNs) await k.create(NAMESPACES, { metadata: { name: ns } });
      const many = Array.from({ length: o.cachedClusters }, (_, i) => ({ ns: cachedNs[i % o.cachedNamespaces]!, name: `cached-${i}` }));
      await pool(many, 48, async ({ ns, name }) => {
        await k.create({ ...RAYCLUSTERS, namespace: ns }, benchCluster(name, address, true));
      });
    }
    for (let round = 0; round < o.rounds; round++) {
      for (const name of round % 2 === 0 ? names : [...names].reverse()) {
        const figures = {
          idleRssMiB: 0,
          idleSourcesRssMiB: 0,
          cached500RssMiB: 0,
          deleteSeconds: 0,
          deleteCpuSeconds: 0,
          deletePeakRssMiB: 0,
          load1: 0,
          ...partial[name]![round],
        } as RoundFigures;
        if (o.cachedClusters > 0) {
          say(`round ${round + 1}: ${name}: a fresh start over ${o.cachedClusters} cached`);
          const c = await start(name);
          const s = await settle(c, o.cachedClusters, 300_000);
          await sleep(SETTLE_MS);
          const m = rss(c.pid);
          await stop(c);
          Object.assign(figures, {
            cached10kPeakMiB: m.hwm,
            cached10kRssMiB: m.rss,
            cached10kSettleSeconds: s.seconds,
            cached10kReconciled: s.reconciled,
            load1: Math.max(figures.load1, loadavg()[0]!),
          });
          say(
            `round ${round + 1}: ${name}: ${o.cachedClusters} cached: peak ${Math.round(m.hwm)} MiB, ${Math.round(m.rss)} MiB settled (${s.reconciled} reconciles in ${s.seconds.toFixed(0)} s)`,
          );
        } else {
          Object.assign(figures, { cached10kPeakMiB: 0, cached10kRssMiB: 0, cached10kSettleSeconds: 0, cached10kReconciled: 0 });
        }
        rounds[name]!.push(figures);
      }
    }

    const redisLeftovers: Record<string, number> = Object.fromEntries(names.map((n) => [n, 0]));
    for (const name of names)
      for (const uid of uids[name]!) if ((await r.exists(`RAY${uid}@NODE`, `RAY${uid}@JobCounter`)) > 0) redisLeftovers[name]! += 1;
    const neighbourIntact = (await r.exists('RAYneighbour@NODE')) === 1;
    const figures: ControllerBenchFigures = {
      clusters: o.clusters,
      cachedClusters: o.cachedClusters,
      rounds,
      redisLeftovers,
      neighbourIntact,
      loadAverage: { start: loadStart, end: loadavg() },
    };
    if (o.print) process.stdout.write(formatControllerFigures(figures) + '\n');
    return figures;
  } finally {
    for (const c of [...running]) await c.stop().catch(() => {});
    redis?.disconnect();
    kube?.close();
    await redisServer?.stop().catch(() => {});
    await cp?.stop().catch(() => {});
    image?.remove();
  }
}

/** "median (min-max)" of whole numbers. */
export function spread(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted[Math.floor(sorted.length / 2)]!;
  const whole = (n: number) => String(Math.round(n));
  return sorted.length > 1 ? `${whole(mid)} (${whole(sorted[0]!)}-${whole(sorted[sorted.length - 1]!)})` : whole(mid);
}

export function formatControllerFigures(f: ControllerBenchFigures): string {
  const names = Object.keys(f.rounds);
  const n = f.rounds[names[0]!]?.length ?? 0;
  const rows: Array<[string, keyof RoundFigures]> = [
    ['RSS MiB, nothing cached', 'idleRssMiB'],
    ['  ours from the TypeScript sources', 'idleSourcesRssMiB'],
    [`RSS MiB, ${f.clusters} RayClusters cached`, 'cached500RssMiB'],
    [`delete ${f.clusters} GCS-FT RayClusters: s`, 'deleteSeconds'],
    ['  controller CPU s meanwhile', 'deleteCpuSeconds'],
    ['  peak RSS MiB (VmHWM)', 'deletePeakRssMiB'],
    [`${f.cachedClusters} suspended cached: peak MiB (VmHWM)`, 'cached10kPeakMiB'],
    ['  RSS MiB once reconciled', 'cached10kRssMiB'],
    ['  s from start until all reconciled', 'cached10kSettleSeconds'],
  ];
  const width = 44;
  const col = 22;
  const lines = [
    names.length === 2
      ? `controller (ours as the image runs it: the package, compiled) beside KubeRay's operator: one control plane (kube-apiserver + etcd, KubeRay's CRDs), redis-server; ${n} round(s), alternating order; median (min-max)`
      : `controller (as the image runs it: the package, compiled; KubeRay's operator not run): kube-apiserver + etcd, redis-server; ${n} round(s); median (min-max)`,
    `${''.padEnd(width)}${names.map((x) => x.padStart(col)).join('')}${names.length === 2 ? 'ours/theirs'.padStart(14) : ''}`,
  ];
  for (const [label, key] of rows) {
    // Ours only: set beside KubeRay's idle RSS.
    const oursOnly = key === 'idleSourcesRssMiB';
    const values = names.map((x) => f.rounds[x]!.map((r) => r[key]));
    const theirs = names.length === 2 ? median(f.rounds[names[1]!]!.map((r) => r[oursOnly ? 'idleRssMiB' : key])) : 0;
    const ratio = theirs > 0 ? (median(values[0]!) / theirs).toFixed(2).padStart(14) : '';
    lines.push(`${label.padEnd(width)}${values.map((v, i) => (oursOnly && i > 0 ? '-' : spread(v)).padStart(col)).join('')}${ratio}`);
  }
  const reconciled = names.map((x) => f.rounds[x]!.map((r) => r.cached10kReconciled).join('/'));
  lines.push(`  (reconciles counted in the ${f.cachedClusters}-cluster wait: ${names.map((x, i) => `${x} ${reconciled[i]}`).join(', ')})`);
  lines.push(
    `Redis namespaces left after all deletions: ${names.map((x) => `${x} ${f.redisLeftovers[x]}`).join(', ')}; neighbour data intact: ${f.neighbourIntact}`,
  );
  lines.push(
    `load average (1/5/15 min): start ${f.loadAverage.start.map((x) => x.toFixed(2)).join(' ')}, end ${f.loadAverage.end.map((x) => x.toFixed(2)).join(' ')}; per round (1 min): ${names.map((x) => `${x} ${f.rounds[x]!.map((r) => r.load1.toFixed(1)).join('/')}`).join(', ')}`,
  );
  return lines.join('\n');
}

if (resolve(process.argv[1] ?? '') === THIS_FILE) {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean' },
      rounds: { type: 'string' },
      clusters: { type: 'string' },
      cached: { type: 'string' },
      'no-kuberay': { type: 'boolean' },
    },
  });
  const quick = values.quick === true;
  await runControllerBench({
    rounds: Number(values.rounds ?? (quick ? 1 : 3)),
    clusters: Number(values.clusters ?? (quick ? 100 : 500)),
    cachedClusters: Number(values.cached ?? (quick ? 1000 : 10_000)),
    kuberay: values['no-kuberay'] !== true,
  });
}
