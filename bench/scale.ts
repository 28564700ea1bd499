// Scale benchmark: raykeeper's controller (all of it: the pod operator, the GCS-FT cleanup, the RayJob
// state machine; as the image runs it) and KubeRay's operator v1.6.2, alternately on ONE control plane
// with simulated nodes (localcluster/kwok.ts: etcd, kube-apiserver with KubeRay's CRDs,
// kube-controller-manager, kube-scheduler, kwok with --nodes fake nodes, no kubelet, no container runs).
// Ours runs as manifests/ installs it: the controller and, beside it, the admission webhook (bench/our-webhook.ts,
// registered for ours' namespaces only: a GCS-FT RayCluster gets its finalizer at admission; the webhook's
// CPU counts in ours'). KubeRay runs without its optional validating webhook.
// Per round and contender (fresh process, fresh namespaces):
//   RayClusters  --clusters GCS-FT RayClusters (head + 1 worker, external Redis by annotation) created at
//                --qps in --namespaces namespaces; each one's seconds from its create until its
//                status.state is `ready` (kube-scheduler binds the pods, kwok makes them Running/Ready);
//                then all deleted at --qps: seconds from each DELETE until it is gone. The GCS-FT cleanup
//                Jobs are run by kwok for both contenders: kube-controller-manager's Job controller makes
//                the pod, kwok Succeeds it at once, the Job completes, the operator releases its finalizer
//                (no container runs, so Redis itself is not touched: this measures the operators' API work)
//   aftermath    once every RayCluster is gone: the pods and cleanup Jobs still in its namespaces, finished
//                or not (Ray pods kwok has not removed yet, cleanup Jobs and their pods the garbage collector
//                has not deleted yet), and the seconds until none is left (at most 10 min), then until a probe
//                pod runs (kwok's own backlog outlasts the API's), then until the API server is quiet (under 5
//                writes/s, Leases apart: the garbage collector and EndpointSlice controller still write after
//                the last pod is gone); the RayJobs start then, so nothing of the deletion queues in front of them
//   between      a contender's namespaces are deleted, and gone, before the next contender starts
//   RayJobs      --rayjobs HTTPMode RayJobs (each with its own small RayCluster) created at --qps; seconds
//                from each create until `Complete`. Both operators submit to one stand-in of Ray's Jobs
//                REST API served here (test/rayjob/helpers/fake-dashboard.ts: each job runs `sleep
//                --job-seconds` and SUCCEEDS): ours through --rayjob-dashboard-url-template, KubeRay (which
//                calls http://<head-svc>.<ns>.svc.cluster.local:8265) through HTTP_PROXY pointing at it
//                (and, to split that time, until its own RayCluster is `ready` and until it is `Running`)
// and over the round: the contender's CPU seconds, peak RSS (VmHWM), the peak depth of its work queues
// (sampled every 10 s; ours raykeeper_controller_queue_depth, KubeRay's workqueue_depth), its reconcile errors, and its
// Kubernetes API requests by HTTP method from its own client metrics (ours raykeeper_kube_requests, WATCH
// counted as GET as client-go counts it; KubeRay controller-runtime's rest_client_requests_total).
// Per phase (creating, deleting, settling after the deletion, RayJobs), where the machine's time went
// (bench/plane-load.ts): the share of the 2 cores busy, the CPU seconds of kube-apiserver, etcd, the
// simulation (kube-controller-manager, kube-scheduler, kwok), the contender and the bench, and the object
// writes and reads the API server served from every client, per object: the issue's "where it breaks:
// etcd, apiserver, the bench, or an operator". Each contender starts on a quiet API server too.
// --shards N (> 1) adds a third contender: N of our controllers with --leader-elect --shards N, measured
// once every shard is held; CPU and requests summed over the replicas, RSS the largest replica's.
// The 2 cores are shared by everything (etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
// kwok, this process, the contender): the ratio in one run is the figure, the absolute seconds context.
//
//   npm run bench -- scale [--rounds K] [--clusters N] [--rayjobs N] [--namespaces M] [--qps Q] [--nodes N] [--shards N]
//                          [--only ours|kuberay]   (one contender alone, to diagnose it: no ratio)
//   (defaults: 3 rounds, 50 clusters, 20 RayJobs, 5 namespaces, 20/s, 10 nodes, jobs of 2 s, no sharded run)
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { median, percentile } from './stats.ts';
import { benchClusterSpec } from './sample-cluster.ts';
import {
  type Contender,
  cpuSeconds,
  KUBERAY,
  metricSum,
  metricTextSum,
  OURS,
  pool,
  rss,
  spread,
  startOurs,
  startTheirs,
} from './controller.ts';
import { startKwokCluster, type KwokCluster } from '../localcluster/kwok.ts';
import { FINALIZER_RELEASE_REASONS } from '../src/gcsft/decide.ts';
import { waitFor } from './wait.ts';
import { apiServerQuiet, COMPONENTS, phaseLoad, snapshot, type Component, type PhaseLoad, type PlanePids } from './plane-load.ts';
import { BENCH_WEBHOOK_LABEL, startOurWebhook, type BenchWebhook } from './our-webhook.ts';
import { KubeClient } from '../kube/client.ts';
import { InformerFactory } from '../kube/informer.ts';
import { RAYCLUSTERS, RAYJOBS } from '../src/types.ts';
import { JOBS, NAMESPACES, PODS } from '../kube/resources.ts';
import type { KubeObject, ObjectWithMeta } from '../kube/model.ts';
import { sleep } from '../kube/backoff.ts';
import { errorMessage } from '../src/errors.ts';
import { kubeRayCrds, missingKubeRay } from '../test/kuberay/helpers.ts';
import { unpackedPackage } from '../test/helpers/package.ts';
import { startFakeDashboard, type FakeDashboard } from '../test/rayjob/helpers/fake-dashboard.ts';

export interface ScaleBenchOptions {
  rounds: number;
  clusters: number;
  rayjobs: number;
  namespaces: number;
  qps: number;
  nodes: number;
  jobSeconds: number;
  workers: number;
  /** > 1: a third contender, this many of our controllers with `--leader-elect --shards N` (0: not run). */
  shards: number;
  /** One contender alone (a diagnosis: no ratio), or both. */
  only?: 'ours' | 'kuberay';
}

export const DEFAULT_SCALE_OPTIONS: ScaleBenchOptions = {
  rounds: 3,
  clusters: 50,
  rayjobs: 20,
  namespaces: 5,
  qps: 20,
  nodes: 10,
  jobSeconds: 2,
  workers: 4,
  shards: 0,
};

export const VERBS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** One contender's figures in one round (seconds, MiB, request counts). */
export interface ScaleRound {
  ready: number[];
  gone: number[];
  jobs: number[];
  /** Each RayJob's seconds from its create until its own RayCluster was `ready`, and until it was `Running` (submitted). */
  jobsClusterReady: number[];
  jobsRunning: number[];
  /** Objects that did not get there before the phase's cap (ready, gone, Complete). */
  unfinished: { ready: number; gone: number; jobs: number };
  /** What the deletion left in the simulated cluster once every RayCluster was gone (pods and cleanup Jobs, finished or not), and the seconds until none was left (the RayJobs start then). */
  residue: { pods: number; jobs: number; settleSeconds: number; kwokSeconds: number; quietSeconds: number };
  /** The whole machine and control plane per phase (bench/plane-load.ts); rayjobs undefined without RayJobs. */
  load: { create: PhaseLoad; delete: PhaseLoad; settle: PhaseLoad; rayjobs: PhaseLoad | undefined };
  /** The controller's (every replica's) and its companions' (ours: the webhook), but not while the aftermath settles. */
  cpuSeconds: number;
  peakRssMiB: number;
  /** The largest peak RSS of the processes installed beside it (ours: the webhook; KubeRay: none, 0). */
  companionPeakRssMiB: number;
  /** The most keys waiting in its work queues at once (sampled every 10 s): more than a few means reconciles, not events, set the pace. */
  peakQueueDepth: number;
  requests: Record<string, number>;
  /** Ours only: its GCS-FT finalizer releases by reason (a Job that completed, or the deletion timeout). */
  releases?: Record<string, number>;
  /** Ours only: requests by `VERB resource` (raykeeper_kube_requests' labels; WATCH apart), to see where they go. */
  requestsByResource?: Record<string, number>;
  /** Reconciles that ended in an error (ours: raykeeper_controller_reconcile_total{result="error"}; KubeRay's: controller_runtime_reconcile_errors_total). */
  reconcileErrors: number;
  load1: number;
}

export interface ScaleFigures {
  options: ScaleBenchOptions;
  rounds: Record<string, ScaleRound[]>;
}

/** Seconds from `from` to `to` for each key of `from`; missing ends are left out (counted apart). */
export function durations(from: Map<string, number>, to: Map<string, number>): number[] {
  const out: number[] = [];
  for (const [key, t0] of from) {
    const t1 = to.get(key);
    if (t1 !== undefined) out.push((t1 - t0) / 1000);
  }
  return out.sort((a, b) => a - b);
}

/** The contender's processes: one, or each replica of a sharded one. */
function processes(c: Contender): Array<{ pid: number; metricsPort: number }> {
  return c.replicas ?? [{ pid: c.pid, metricsPort: c.metricsPort }];
}

/** A metric summed over the contender's processes. */
async function summed(c: Contender, name: string, labels: RegExp): Promise<number> {
  let sum = 0;
  for (const p of processes(c)) sum += await metricSum(p.metricsPort, name, labels);
  return sum;
}

const isOurs = (c: Contender) => c.name.startsWith(OURS);

/** Ours: GCS-FT finalizers released so far, by reason (raykeeper_raycluster_finalizer_releases_total). */
async function releasesByReason(c: Contender): Promise<Record<string, number>> {
  const out: Record<string, number> = Object.fromEntries(FINALIZER_RELEASE_REASONS.map((reason) => [reason, 0]));
  for (const p of processes(c)) {
    const text = await (await fetch(`http://127.0.0.1:${p.metricsPort}/metrics`)).text();
    for (const reason of FINALIZER_RELEASE_REASONS)
      out[reason]! += metricTextSum(text, 'raykeeper_raycluster_finalizer_releases_total', new RegExp(`reason="${reason}"`));
  }
  return out;
}

/** The API requests so far by HTTP method: ours (WATCH folded into GET, as client-go counts it) or KubeRay's. */
export async function requestsByMethod(c: Contender): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const verb of VERBS) {
    if (isOurs(c)) {
      const methods = verb === 'GET' ? '(GET|WATCH)' : verb;
      out[verb] = await summed(c, 'raykeeper_kube_requests', new RegExp(`verb="${methods}"`));
    } else out[verb] = await summed(c, 'rest_client_requests_total', new RegExp(`method="${verb}"`));
  }
  return out;
}

/** How often the work queues' depth is sampled (a whole /metrics scrape each time). */
const QUEUE_SAMPLE_MS = 10_000;
/** The longest the RayJobs wait for the deletion's aftermath to be gone. */
const SETTLE_CAP_MS = 600_000;

/** Ours: the API requests so far by `VERB resource` (raykeeper_kube_requests, every replica). */
export async function requestsByResource(c: Contender): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const p of processes(c)) {
    const text = await (await fetch(`http://127.0.0.1:${p.metricsPort}/metrics`)).text();
    for (const m of text.matchAll(/^raykeeper_kube_requests\{([^}]*)\} (\S+)$/gm)) {
      const verb = /verb="([^"]*)"/.exec(m[1]!)?.[1] ?? '';
      const resource = /resource="([^"]*)"/.exec(m[1]!)?.[1] ?? '';
      const key = `${verb} ${resource}`;
      out[key] = (out[key] ?? 0) + Number(m[2]);
    }
  }
  return out;
}

/** Keys waiting in the contender's work queues now, every controller (ours: raykeeper_controller_queue_depth; controller-runtime: workqueue_depth). */
export async function queueDepth(c: Contender): Promise<number> {
  return isOurs(c) ? summed(c, 'raykeeper_controller_queue_depth', /.*/) : summed(c, 'workqueue_depth', /.*/);
}

/** Reconcile errors so far, every controller of the contender. */
export async function reconcileErrors(c: Contender): Promise<number> {
  return isOurs(c)
    ? summed(c, 'raykeeper_controller_reconcile_total', /result="error"/)
    : summed(c, 'controller_runtime_reconcile_errors_total', /.*/);
}

/** The contender's processes: every replica and what is installed beside it (ours: the webhook). */
const contenderPids = (c: Contender) => [...processes(c).map((p) => p.pid), ...(c.companions ?? [])];
const cpuOf = (c: Contender) => contenderPids(c).reduce((sum, pid) => sum + cpuSeconds(pid), 0);
/** The largest replica's peak: what each replica's memory limit must hold. */
const peakOf = (c: Contender) => Math.max(...processes(c).map((p) => rss(p.pid).hwm));

/**
 * `n` of our controllers with `--leader-elect --shards n` (their Leases in a namespace of their own), once
 * every shard is held; what each one holds is said on stderr.
 */
async function startOursSharded(
  kube: KubeClient,
  kubeconfig: string,
  n: number,
  workers: number,
  bin: string | undefined,
  args: string[],
  say: (s: string) => void,
): Promise<Contender> {
  const leaseNamespace = `raykeeper-lease-${++shardedStarts}`;
  await kube.create(NAMESPACES, { metadata: { name: leaseNamespace } });
  const replicas = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      startOurs(kubeconfig, workers, bin, [
        ...args,
        '--leader-elect',
        '--shards',
        String(n),
        '--lease-namespace',
        leaseNamespace,
        '--identity',
        `bench-replica-${i}`,
      ]),
    ),
  );
  const held = () => Promise.all(replicas.map((r) => metricSum(r.metricsPort, 'raykeeper_shards_held', /.*/)));
  const until = performance.now() + 120_000;
  let counts = await held();
  while ((counts.reduce((a, b) => a + b, 0) < n || counts.some((c) => c === 0)) && performance.now() < until) {
    await sleep(500);
    counts = await held();
  }
  say(`${n} replicas hold ${counts.join(' + ')} shards`);
  return {
    ...replicas[0]!,
    name: shardedName(n),
    replicas: replicas.map((r) => ({ pid: r.pid, metricsPort: r.metricsPort })),
    stop: async () => {
      await Promise.all(replicas.map((r) => r.stop()));
    },
  };
}
let shardedStarts = 0;
const shardedName = (n: number) => `${OURS} x${n} shards`;

/** Runs `fn` for each item, starting the i-th no earlier than i/qps seconds after the first. */
async function paced<T>(items: T[], qps: number, fn: (item: T, i: number) => Promise<void>): Promise<void> {
  const t0 = performance.now();
  await pool(items, 32, async (item, i) => {
    const wait = t0 + (i * 1000) / qps - performance.now();
    if (wait > 0) await sleep(wait);
    await fn(item, i);
  });
}

/** The longest the next contender waits for the last one's namespaces to be gone. */
const NAMESPACES_GONE_CAP_MS = 900_000;

/**
 * Deletes a round's namespaces (what is left in them, the RayJobs' clusters and their pods, goes with them) and
 * waits until they are gone: otherwise the next contender would share the control plane with that deletion.
 */
async function deleteNamespaces(kube: KubeClient, namespaces: string[], say: (s: string) => void): Promise<void> {
  await pool(namespaces, 8, async (ns) => {
    await kube.delete({ ...NAMESPACES, name: ns }).catch((err: unknown) => say(`  deleting namespace ${ns} failed: ${errorMessage(err)}`));
  });
  const mine = new Set(namespaces);
  const t0 = performance.now();
  let left = namespaces.length;
  let told = t0;
  while (left > 0 && performance.now() - t0 < NAMESPACES_GONE_CAP_MS) {
    await sleep(2_000);
    const all = await kube.list(NAMESPACES).catch((err: unknown) => say(`  listing namespaces failed: ${errorMessage(err)}`));
    if (all) left = all.items.filter((n) => mine.has(n.metadata?.name ?? '')).length;
    if (performance.now() - told > 10_000) {
      told = performance.now();
      say(`  ${left} namespaces still terminating (${Math.round((told - t0) / 1000)} s)`);
    }
  }
  const seconds = Math.round((performance.now() - t0) / 1000);
  say(left === 0 ? `namespaces gone after ${seconds} s` : `${left} namespaces still terminating after ${seconds} s; going on`);
}

const key = (o: KubeObject): string => `${o.metadata?.namespace}/${o.metadata?.name}`;

async function residue(kube: KubeClient, namespaces: Set<string>): Promise<{ pods: number; jobs: number }> {
  const [pods, jobs] = await Promise.all([kube.list(PODS), kube.list(JOBS)]);
  return countResidue(pods.items, jobs.items, namespaces);
}

/**
 * Pods and Jobs still there in `namespaces`, finished or not: a finished cleanup Job and its Succeeded pod are
 * deleted by the garbage collector once their RayCluster is gone, and those deletes would otherwise fall
 * in the RayJob phase (3,429 pod deletes did, at 5,000 RayClusters).
 */
export function countResidue(pods: ObjectWithMeta[], jobs: ObjectWithMeta[], namespaces: Set<string>): { pods: number; jobs: number } {
  const mine = (o: ObjectWithMeta) => namespaces.has(o.metadata?.namespace ?? '');
  return { pods: pods.filter(mine).length, jobs: jobs.filter(mine).length };
}

/**
 * Seconds until a probe pod runs. Gone from the API server is not done for kwok: after the mass deletion at
 * 5,000 RayClusters it went on for 110 s more before it moved any new pod to Running (every RayJob pod
 * bound, none Running), so the first contender to delete fast paid kwok's backlog in its RayJob phase.
 */
async function kwokCaughtUp(kube: KubeClient, namespace: string, say: (s: string) => void): Promise<number> {
  const started = performance.now();
  const ref = { ...PODS, namespace, name: 'kwok-probe' };
  await kube.create(
    { ...PODS, namespace },
    { metadata: { name: 'kwok-probe' }, spec: { containers: [{ name: 'probe', image: 'probe' }] } },
  );
  await waitFor(
    async () => (await kube.getOrUndefined(ref))?.status?.phase === 'Running',
    SETTLE_CAP_MS,
    () => 'waiting for a probe pod to run: kwok catching up',
    say,
    500,
  );
  await kube.delete(ref, { gracePeriodSeconds: 0 });
  return (performance.now() - started) / 1000;
}

/** After a cap: the first few objects that did not get there, with their status, to say where it broke. */
function lateOnes(what: string, from: Map<string, number>, to: Map<string, number>, objects: KubeObject[], say: (s: string) => void): void {
  const late = [...from.keys()].filter((k) => !to.has(k));
  const byKey = new Map(objects.map((o) => [key(o), o]));
  for (const k of late.slice(0, 5)) {
    const status = (byKey.get(k) as { status?: unknown } | undefined)?.status ?? null;
    say(`  ${what}: ${k}: status ${JSON.stringify(status).slice(0, 600)}`);
  }
}

function scaleCluster(name: string): Record<string, unknown> {
  const spec = benchClusterSpec([{ name: 'RAY_REDIS_ADDRESS', value: 'redis.redis.svc:6379' }]) as {
    workerGroupSpecs: Array<{ replicas: number }>;
  };
  spec.workerGroupSpecs[0]!.replicas = 1;
  return {
    apiVersion: 'ray.io/v1',
    kind: 'RayCluster',
    metadata: { name, annotations: { 'ray.io/ft-enabled': 'true' } },
    spec,
  };
}

function scaleRayJob(name: string, jobSeconds: number): Record<string, unknown> {
  const rayClusterSpec = benchClusterSpec([]) as { workerGroupSpecs: Array<{ replicas: number }> };
  rayClusterSpec.workerGroupSpecs[0]!.replicas = 1;
  return {
    apiVersion: 'ray.io/v1',
    kind: 'RayJob',
    metadata: { name },
    spec: { entrypoint: `sleep ${jobSeconds}`, submissionMode: 'HTTPMode', rayClusterSpec },
  };
}

async function measureRound(
  kube: KubeClient,
  contender: Contender,
  namespaces: string[],
  o: ScaleBenchOptions,
  plane: Omit<PlanePids, 'contender' | 'bench'>,
  say: (s: string) => void,
): Promise<ScaleRound> {
  const pids: PlanePids = {
    ...plane,
    contender: contenderPids(contender),
    bench: [process.pid],
  };
  // Not on the last contender's namespace deletion either (the namespaces are gone; their Events may not be).
  const before = await apiServerQuiet(kube, SETTLE_CAP_MS, say);
  if (!before.quiet) say(`${contender.name}: the API server was not quiet after ${before.seconds.toFixed(0)} s; going on`);
  const load0 = await snapshot(kube, pids);
  const cpu0 = cpuOf(contender);
  const requests0 = await requestsByMethod(contender);
  const byResource0 = isOurs(contender) ? await requestsByResource(contender) : undefined;
  const releases0 = isOurs(contender) ? await releasesByReason(contender) : undefined;
  const errors0 = await reconcileErrors(contender);
  const watcher = new InformerFactory(kube, { namespace: undefined });
  const clusters = watcher.get(RAYCLUSTERS);
  const jobs = watcher.get(RAYJOBS);
  const created = new Map<string, number>();
  const ready = new Map<string, number>();
  const deleted = new Map<string, number>();
  const gone = new Map<string, number>();
  const jobCreated = new Map<string, number>();
  const complete = new Map<string, number>();
  const jobClusterReady = new Map<string, number>();
  const running = new Map<string, number>();
  const ours = new Set(namespaces);
  const isReady = (obj: KubeObject) => (obj as { status?: { state?: string } }).status?.state === 'ready';
  clusters.on((type, obj) => {
    const k = key(obj);
    if (!created.has(k)) {
      // A RayJob's: stamped under its RayJob's key.
      const owner = obj.metadata?.ownerReferences?.find((r) => r.kind === 'RayJob');
      const j = owner && `${obj.metadata?.namespace}/${owner.name}`;
      if (j && type !== 'delete' && isReady(obj) && !jobClusterReady.has(j)) jobClusterReady.set(j, performance.now());
      return;
    }
    if (type === 'delete') gone.set(k, performance.now());
    else if (isReady(obj) && !ready.has(k)) ready.set(k, performance.now());
  });
  jobs.on((type, obj) => {
    const k = key(obj);
    if (type === 'delete') return;
    const state = (obj as { status?: { jobDeploymentStatus?: string } }).status?.jobDeploymentStatus;
    // Complete without Running seen (squashed events) stamps both.
    if ((state === 'Running' || state === 'Complete') && !running.has(k)) running.set(k, performance.now());
    if (state === 'Complete' && !complete.has(k)) complete.set(k, performance.now());
  });
  watcher.start();
  await watcher.waitForSync();
  const capMs = (n: number) => 120_000 + n * 600;
  let peakQueueDepth = 0;
  let scraping = false;
  // One scrape at a time: an overloaded contender answers late, and scrapes must not pile up on it. Every
  // 10 s, not every second: a whole /metrics at 5,000 RayClusters (per-cluster gauges) costs ours ~0.3 s of
  // CPU, and a scrape a second took half its CPU (a Prometheus scrapes every 15-30 s).
  const sampler = setInterval(() => {
    if (scraping) return;
    scraping = true;
    queueDepth(contender)
      .then(
        (d) => (peakQueueDepth = Math.max(peakQueueDepth, d)),
        () => undefined,
      )
      .finally(() => (scraping = false));
  }, QUEUE_SAMPLE_MS);
  try {
    type Named = { namespace: string; name: string };
    // Acts on each at --qps (stamping when), then waits until `reached` holds them all or the cap passed.
    const phase = async (
      items: Named[],
      stamp: Map<string, number>,
      act: (n: Named) => Promise<unknown>,
      reached: Map<string, number>,
      late: [string, () => KubeObject[]],
    ) => {
      await paced(items, o.qps, async (n) => {
        stamp.set(`${n.namespace}/${n.name}`, performance.now());
        await act(n);
      });
      await waitFor(
        () => reached.size >= items.length,
        capMs(items.length),
        () => `${reached.size}/${items.length} ${late[0]}`,
        say,
      );
      lateOnes(`not ${late[0]}`, stamp, reached, late[1](), say);
    };
    const names = Array.from({ length: o.clusters }, (_, i) => ({ namespace: namespaces[i % namespaces.length]!, name: `rc-${i}` }));
    say(`${contender.name}: creating ${o.clusters} GCS-FT RayClusters at ${o.qps}/s`);
    await phase(names, created, (n) => kube.create({ ...RAYCLUSTERS, namespace: n.namespace }, scaleCluster(n.name)), ready, [
      'ready',
      () => clusters.list(),
    ]);
    const load1 = await snapshot(kube, pids);
    say(`${contender.name}: deleting them at ${o.qps}/s`);
    await phase(names, deleted, (n) => kube.delete({ ...RAYCLUSTERS, ...n }), gone, ['gone', () => clusters.list()]);
    const load2 = await snapshot(kube, pids);
    // The deletion's aftermath (Ray pods terminating, cleanup Jobs still queued at kube-scheduler, kube-controller-
    // manager and kwok) would otherwise sit in front of the RayJobs' pods: the RayJobs start once it is gone.
    // The contender's CPU while it waits is left out of its figure (it would charge the slower aftermath twice).
    const settled = performance.now();
    const cpuBeforeSettle = cpuOf(contender);
    const left = await residue(kube, ours);
    let now = left;
    while (now.pods + now.jobs > 0 && performance.now() - settled < SETTLE_CAP_MS) {
      await sleep(5_000);
      now = await residue(kube, ours).catch((err: unknown) => {
        say(`  listing what is left failed (${err instanceof Error ? err.message : String(err)}); again in 5 s`);
        return now;
      });
    }
    const settleSeconds = (performance.now() - settled) / 1000;
    const kwokSeconds = await kwokCaughtUp(kube, namespaces[0]!, say);
    const quiet = await apiServerQuiet(kube, SETTLE_CAP_MS, say);
    const settle = { ...left, settleSeconds, kwokSeconds, quietSeconds: quiet.seconds };
    const load3 = await snapshot(kube, pids);
    const cpuSettling = cpuOf(contender) - cpuBeforeSettle;
    say(
      `${contender.name}: left by the deletion: ${left.pods} pods, ${left.jobs} Jobs; ${now.pods + now.jobs === 0 ? 'none' : `${now.pods} pods, ${now.jobs} Jobs`} left after ${settle.settleSeconds.toFixed(0)} s; a probe pod ran ${kwokSeconds.toFixed(0)} s after that; the API server was ${quiet.quiet ? 'quiet' : 'still not quiet'} ${quiet.seconds.toFixed(0)} s later`,
    );
    const jobNames = Array.from({ length: o.rayjobs }, (_, i) => ({ namespace: namespaces[i % namespaces.length]!, name: `job-${i}` }));
    let rayjobsLoad: PhaseLoad | undefined;
    if (o.rayjobs > 0) {
      say(`${contender.name}: creating ${o.rayjobs} HTTPMode RayJobs at ${o.qps}/s`);
      await phase(
        jobNames,
        jobCreated,
        (n) => kube.create({ ...RAYJOBS, namespace: n.namespace }, scaleRayJob(n.name, o.jobSeconds)),
        complete,
        ['Complete', () => jobs.list()],
      );
      rayjobsLoad = phaseLoad(load3, await snapshot(kube, pids));
    }
    const round: ScaleRound = {
      ready: durations(created, ready),
      gone: durations(deleted, gone),
      jobs: durations(jobCreated, complete),
      jobsClusterReady: durations(jobCreated, jobClusterReady),
      jobsRunning: durations(jobCreated, running),
      unfinished: { ready: o.clusters - ready.size, gone: o.clusters - gone.size, jobs: o.rayjobs - complete.size },
      residue: settle,
      load: { create: phaseLoad(load0, load1), delete: phaseLoad(load1, load2), settle: phaseLoad(load2, load3), rayjobs: rayjobsLoad },
      cpuSeconds: cpuOf(contender) - cpu0 - cpuSettling,
      peakRssMiB: peakOf(contender),
      companionPeakRssMiB: Math.max(0, ...(contender.companions ?? []).map((pid) => rss(pid).hwm)),
      peakQueueDepth,
      requests: {},
      reconcileErrors: (await reconcileErrors(contender)) - errors0,
      load1: loadavg()[0]!,
    };
    const requests1 = await requestsByMethod(contender);
    for (const verb of VERBS) round.requests[verb] = requests1[verb]! - requests0[verb]!;
    if (releases0) {
      const releases1 = await releasesByReason(contender);
      round.releases = Object.fromEntries(Object.entries(releases1).map(([k, v]) => [k, v - (releases0[k] ?? 0)]));
    }
    if (byResource0) {
      const byResource1 = await requestsByResource(contender);
      round.requestsByResource = Object.fromEntries(Object.entries(byResource1).map(([k, v]) => [k, v - (byResource0[k] ?? 0)]));
    }
    // Not measured: the RayJobs go while their operator still runs (KubeRay's have its finalizer).
    await pool(jobNames, 32, async ({ namespace, name }) => {
      await kube.delete({ ...RAYJOBS, namespace, name }, { propagationPolicy: 'Background' });
    });
    await waitFor(
      () => jobs.size === 0 || jobs.list().every((j) => !ours.has(j.metadata?.namespace ?? '')),
      120_000,
      () => 'RayJobs going',
      say,
    );
    return round;
  } finally {
    clearInterval(sampler);
    await watcher.stop();
  }
}

export async function runScaleBench(options: Partial<ScaleBenchOptions> = {}): Promise<ScaleFigures> {
  const o = { ...DEFAULT_SCALE_OPTIONS, ...options };
  const say = (s: string) => process.stderr.write(`[scale bench] ${s}\n`);
  const missing = missingKubeRay();
  if (missing) throw new Error(missing);
  let cluster: KwokCluster | undefined;
  let kube: KubeClient | undefined;
  let dashboard: FakeDashboard | undefined;
  let image: { bin: string; remove: () => void } | undefined;
  let running: Contender | undefined;
  let webhook: BenchWebhook | undefined;
  try {
    say(`starting etcd, kube-apiserver (KubeRay's CRDs), kube-controller-manager, kube-scheduler, kwok with ${o.nodes} nodes`);
    cluster = await startKwokCluster({ nodes: o.nodes, crdsDir: kubeRayCrds(), onProgress: say });
    kube = new KubeClient(cluster.controlPlane.kubeConfig());
    dashboard = await startFakeDashboard();
    const unpacked = unpackedPackage(); // ours as the image runs it: the package, compiled
    image = unpacked;
    const imageBin = unpacked.bin;
    // Ours first and KubeRay second: the table's ratio column divides those two.
    const sharded = o.shards > 1 ? shardedName(o.shards) : undefined;
    const names = [OURS, KUBERAY, ...(sharded ? [sharded] : [])].filter(
      (n) => o.only === undefined || n === (o.only === 'ours' ? OURS : KUBERAY),
    );
    const rounds: Record<string, ScaleRound[]> = Object.fromEntries(names.map((n) => [n, []]));
    const ourArgs = [
      '--reconcilers',
      'raycluster,raycluster-pods,rayjob',
      '--companion',
      'off',
      '--rayjob-dashboard-url-template',
      dashboard.url,
    ];
    const kubeconfig = cluster.controlPlane.info.kubeconfigPath;
    for (let round = 0; round < o.rounds; round++) {
      for (const name of round % 2 === 0 ? names : [...names].reverse()) {
        const tag = name === OURS ? 'ours' : name === KUBERAY ? 'kuberay' : 'sharded';
        const namespaces = Array.from({ length: o.namespaces }, (_, i) => `r${round}-${tag}-${i}`);
        // Ours as installed: the admission webhook beside the controller, called for ours' namespaces only.
        const labels = name === KUBERAY ? {} : { [BENCH_WEBHOOK_LABEL]: 'true' };
        for (const ns of namespaces) await kube.create(NAMESPACES, { metadata: { name: ns, labels } });
        say(`round ${round + 1}: ${name}: starting`);
        if (name !== KUBERAY) webhook = await startOurWebhook(kube, namespaces[0]!, scaleCluster('webhook-probe'));
        running =
          name === OURS
            ? await startOurs(kubeconfig, o.workers, imageBin, ourArgs)
            : name === KUBERAY
              ? await startTheirs(cluster.controlPlane, kube, { HTTP_PROXY: dashboard.url, http_proxy: dashboard.url })
              : await startOursSharded(kube, kubeconfig, o.shards, o.workers, imageBin, ourArgs, say);
        if (webhook) running.companions = [webhook.pid];
        const figures = await measureRound(kube, running, namespaces, o, planePids(cluster), say);
        if (webhook?.exited()) throw new Error('raykeeper webhook exited during the round (its figures would be missing)');
        rounds[name]!.push(figures);
        say(
          `round ${round + 1}: ${name}: ready p99 ${percentile(figures.ready, 99).toFixed(1)} s, gone p99 ${percentile(figures.gone, 99).toFixed(1)} s, RayJob p99 ${percentile(figures.jobs, 99).toFixed(1)} s, CPU ${figures.cpuSeconds.toFixed(1)} s, peak ${Math.round(figures.peakRssMiB)} MiB`,
        );
        // While the contender still runs (its figures are taken): what is left with its finalizers (a RayJob or
        // RayCluster that missed its cap) is released by its own operator, not by the next contender's.
        await deleteNamespaces(kube, namespaces, say);
        await running.stop();
        running = undefined;
        await webhook?.stop();
        webhook = undefined;
      }
    }
    const figures: ScaleFigures = { options: o, rounds };
    process.stdout.write(formatScaleFigures(figures) + '\n');
    return figures;
  } finally {
    await running?.stop().catch(() => {});
    await webhook?.stop().catch(() => {});
    await dashboard?.close().catch(() => {});
    kube?.close();
    await cluster?.stop().catch(() => {});
    image?.remove();
  }
}

/** The simulated cluster's processes by component (the contender's and the bench's are added per round). */
function planePids(cluster: KwokCluster): Omit<PlanePids, 'contender' | 'bench'> {
  const { pids } = cluster.controlPlane.info;
  return {
    'kube-apiserver': [pids.kubeApiserver],
    etcd: [pids.etcd],
    simulation: [cluster.pids['kube-controller-manager'], cluster.pids['kube-scheduler'], cluster.pids.kwok],
  };
}

/** Per phase: the machine's busy share, each component's CPU, and the writes every client sent (per object of the phase). */
function loadRows(
  phase: 'create' | 'delete' | 'settle' | 'rayjobs',
  label: string,
  objects: number,
): Array<[string, (r: ScaleRound) => number, number]> {
  const of = (f: (l: PhaseLoad) => number) => (r: ScaleRound) => {
    const l = r.load[phase];
    return l === undefined ? Number.NaN : f(l);
  };
  const name = (c: Component) => (c === 'simulation' ? 'KCM+scheduler+kwok' : c);
  return [
    [`${label}: machine busy %`, of((l) => l.busyPercent), 1],
    ...COMPONENTS.map((c): [string, (r: ScaleRound) => number, number] => [`${label}: CPU s ${name(c)}`, of((l) => l.cpu[c]), 1]),
    [`${label}: API writes per object, every client`, of((l) => l.writes), Math.max(1, objects)],
    [`${label}: API reads per object, every client`, of((l) => l.reads), Math.max(1, objects)],
  ];
}

export function formatScaleFigures(f: ScaleFigures): string {
  const o = f.options;
  const names = Object.keys(f.rounds);
  // A phase with nothing in it (--rayjobs 0) has no percentile: '-', not 0.
  const pct = (key: 'ready' | 'gone' | 'jobs' | 'jobsClusterReady' | 'jobsRunning', p: number) => (r: ScaleRound) =>
    r[key].length === 0 ? Number.NaN : percentile(r[key], p);
  const rows: Array<[string, (r: ScaleRound) => number, number]> = [
    ['create-to-ready s p50', pct('ready', 50), 1],
    ['create-to-ready s p99', pct('ready', 99), 1],
    ['create-to-ready s max', pct('ready', 100), 1],
    ['delete-to-gone s p50', pct('gone', 50), 1],
    ['delete-to-gone s p99', pct('gone', 99), 1],
    ['delete-to-gone s max', pct('gone', 100), 1],
    ['pods left when all were gone', (r) => r.residue.pods, 1],
    ['Jobs left when all were gone', (r) => r.residue.jobs, 1],
    ['seconds until none was left', (r) => r.residue.settleSeconds, 1],
    ['then seconds until a probe pod ran (kwok)', (r) => r.residue.kwokSeconds, 1],
    ['then seconds until the API server was quiet', (r) => r.residue.quietSeconds, 1],
    ['RayJob create-to-cluster-ready s p50', pct('jobsClusterReady', 50), 1],
    ['RayJob create-to-cluster-ready s p99', pct('jobsClusterReady', 99), 1],
    ['RayJob create-to-Running s p50', pct('jobsRunning', 50), 1],
    ['RayJob create-to-Running s p99', pct('jobsRunning', 99), 1],
    ['RayJob create-to-Complete s p50', pct('jobs', 50), 1],
    ['RayJob create-to-Complete s p99', pct('jobs', 99), 1],
    ['controller CPU s', (r) => r.cpuSeconds, 1],
    ['peak RSS MiB (VmHWM; largest replica)', (r) => r.peakRssMiB, 1],
    ['peak RSS MiB beside it (ours: webhook)', (r) => r.companionPeakRssMiB, 1],
    ['peak work queue depth (every controller)', (r) => r.peakQueueDepth, 1],
    ['reconcile errors per object', (r) => r.reconcileErrors, o.clusters + o.rayjobs],
    ...VERBS.map((v): [string, (r: ScaleRound) => number, number] => [
      `API ${v} per object`,
      (r) => r.requests[v] ?? 0,
      o.clusters + o.rayjobs,
    ]),
    ...loadRows('create', 'creating clusters', o.clusters),
    ...loadRows('delete', 'deleting clusters', o.clusters),
    ...loadRows('settle', 'after the deletion (settling)', o.clusters),
    ...loadRows('rayjobs', 'RayJobs', o.rayjobs),
  ];
  const width = Math.max(36, ...rows.map(([label]) => label.length + 2));
  const col = 20;
  const lines = [
    `scale: ${o.clusters} GCS-FT RayClusters (head + 1 worker) and ${o.rayjobs} HTTPMode RayJobs in ${o.namespaces} namespaces at ${o.qps}/s, ${o.nodes} kwok nodes; ${o.rounds} round(s), alternating order; median (min-max) over rounds`,
    `${''.padEnd(width)}${names.map((x) => x.padStart(col)).join('')}${'ours/KubeRay'.padStart(14)}`,
  ];
  for (const [label, of, per] of rows) {
    const values = names.map((x) => f.rounds[x]!.map((r) => of(r) / per));
    const [ours, theirs] = [median(values[0] ?? []), median(values[1] ?? [])];
    const ratio = theirs > 0 && ours >= 0 ? (ours / theirs).toFixed(2) : '-';
    const tenths = per > 1 || Math.max(...values.flat()) < 100;
    const show = (v: number[]) => (v.some(Number.isNaN) ? '-' : tenths ? spreadFixed(v) : spread(v));
    lines.push(`${label.padEnd(width)}${values.map((v) => show(v).padStart(col)).join('')}${ratio.padStart(14)}`);
  }
  lines.push(
    `not there before the cap (ready/gone/Complete): ${names.map((x) => `${x} ${f.rounds[x]!.map((r) => `${r.unfinished.ready}/${r.unfinished.gone}/${r.unfinished.jobs}`).join(', ')}`).join('; ')}`,
  );
  for (const x of names) {
    const releases = f.rounds[x]!.at(-1)?.releases;
    if (!releases) continue;
    const told = Object.entries(releases).filter(([, v]) => v > 0);
    lines.push(
      `${x} GCS-FT finalizer releases by reason (last round): ${told.length === 0 ? 'none' : told.map(([k, v]) => `${k} ${v}`).join(', ')}`,
    );
  }
  for (const x of names) {
    const last = f.rounds[x]!.at(-1)?.requestsByResource;
    if (!last) continue;
    const top = Object.entries(last)
      .filter(([, v]) => v > 0)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${(v / (o.clusters + o.rayjobs)).toFixed(2)}`);
    lines.push(`${x} API requests per object by verb and resource (last round): ${top.join(', ')}`);
  }
  lines.push(
    `load average (1 min) per round: ${names.map((x) => `${x} ${f.rounds[x]!.map((r) => r.load1.toFixed(1)).join('/')}`).join(', ')}`,
  );
  const p99 = [OURS, KUBERAY].map((x) => median((f.rounds[x] ?? []).map(pct('ready', 99))));
  const seconds = (v: number) => (Number.isNaN(v) ? '-' : `${v.toFixed(1)} s`);
  lines.push(
    `scale: ${o.clusters} RayClusters, ${o.rayjobs} RayJobs, ${o.rounds} rounds: create-to-ready p99 ours ${seconds(p99[0]!)}, KubeRay ${seconds(p99[1]!)}, ratio ${p99[1]! > 0 && p99[0]! >= 0 ? (p99[0]! / p99[1]!).toFixed(2) : '-'}`,
  );
  return lines.join('\n');
}

/** "median (min-max)" with one decimal, for rows whose figures are below 100 (and per-object rows). */
function spreadFixed(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const f = (n: number) => n.toFixed(1);
  const mid = sorted[Math.floor(sorted.length / 2)] ?? 0;
  return sorted.length > 1 ? `${f(mid)} (${f(sorted[0]!)}-${f(sorted[sorted.length - 1]!)})` : f(mid);
}

export function parseScaleArgs(argv: string[]): Partial<ScaleBenchOptions> {
  const { values } = parseArgs({
    args: argv,
    options: Object.fromEntries(
      ['rounds', 'clusters', 'rayjobs', 'namespaces', 'qps', 'nodes', 'job-seconds', 'workers', 'shards', 'only'].map((n) => [
        n,
        { type: 'string' },
      ]),
    ) as Record<string, { type: 'string' }>,
  });
  const out: Partial<ScaleBenchOptions> = {};
  const num = (flag: string, k: Exclude<keyof ScaleBenchOptions, 'only'>) => {
    const v = values[flag];
    if (v === undefined) return;
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) throw new Error(`--${flag}: a number >= 0, not ${v}`);
    out[k] = n;
  };
  num('rounds', 'rounds');
  num('clusters', 'clusters');
  num('rayjobs', 'rayjobs');
  num('namespaces', 'namespaces');
  num('qps', 'qps');
  num('nodes', 'nodes');
  num('job-seconds', 'jobSeconds');
  num('workers', 'workers');
  num('shards', 'shards');
  const only = values['only'];
  if (only !== undefined) {
    if (only !== 'ours' && only !== 'kuberay') throw new Error(`--only: ours or kuberay, not ${String(only)}`);
    out.only = only;
  }
  return out;
}
