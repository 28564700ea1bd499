// RayJob benchmark: RayJobs through the state machine to Complete on one control plane (real
// kube-apiserver + etcd), with real Ray: our controller as a child process (`--reconcilers
// raycluster-pods,rayjob`, from the package as the image runs it) runs the RayJob reconciler and our
// RayCluster operator; the ray pod runner runs the Ray pods as local processes and the job runner the
// submitter Jobs (the plain `raykeeper dev` world: dev/ray-pods.ts).
// A Ray cluster per RayJob (a head and its `ray start` per Job) would measure Ray's start-up 100 times on 2
// cores, so every RayJob submits to ONE shared RayCluster (head only) through `clusterSelector` (KubeRay's
// way to use an existing cluster), which is ready before the clock starts. Two phases, one after the other:
//   HTTPMode    --jobs RayJobs (default 100) created at once: the controller submits each through the
//               head's dashboard (New -> Initializing -> Running -> Complete), Ray runs the entrypoint
//   K8sJobMode  --submitters RayJobs (default 10; each a `ray job submit` process, ~1-2 CPU s of Python
//               imports): the controller creates a submitter Job per RayJob, the job runner runs it
// Per phase: seconds from the first create until every RayJob is Complete (or Failed: counted), the
// controller's Kubernetes API requests per RayJob by HTTP verb (GET: gets and lists; its raykeeper_kube_requests metric before and
// after), its CPU seconds, and its RSS at the end and peak (VmHWM). No baseline: KubeRay's RayJob
// controller would need its own Ray clusters beside ours (not cheap on 2 cores), so none is run.
//
//   node bench/rayjob.ts [--jobs N] [--submitters N] [--entrypoint CMD]
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { parse } from 'yaml';
import { startDevRay, type DevRay } from '../dev/ray-pods.ts';
import { REPO_ROOT } from '../localcluster/binaries.ts';
import { startControlPlane, type ControlPlane } from '../localcluster/control-plane.ts';
import { startJobRunner, type JobRunner } from '../localcluster/job-runner.ts';
import { findRay } from '../localcluster/ray.ts';
import { InformerFactory } from '../kube/informer.ts';
import { sleep } from '../kube/backoff.ts';
import { KubeClient } from '../kube/client.ts';
import { CLUSTER_SELECTOR_KEY } from '../src/rayjob/constants.ts';
import { RAYCLUSTERS, RAYJOBS, type RayJob } from '../src/types.ts';
import { cpuSeconds, metricSum, pool, rss, startControllerChild, type Child } from './controller.ts';
import { unpackedPackage } from '../test/helpers/package.ts';

export interface RayJobBenchOptions {
  jobs?: number;
  submitters?: number;
  entrypoint?: string;
  /** Give up waiting for a phase after this long (its RayJobs still open are reported). */
  capSeconds?: number;
  print?: boolean;
}

export interface RayJobPhaseFigures {
  mode: 'HTTPMode' | 'K8sJobMode';
  rayJobs: number;
  complete: number;
  failed: number;
  seconds: number;
  /** The controller's API requests during the phase, by HTTP verb (all status codes). */
  requests: Record<string, number>;
  cpuSeconds: number;
  rssMiB: number;
  peakRssMiB: number;
  load1: number;
}

export interface RayJobBenchFigures {
  phases: RayJobPhaseFigures[];
  loadAverage: { start: number[]; end: number[] };
}

const THIS_FILE = fileURLToPath(import.meta.url);
const NAMESPACE = 'default';
const SHARED = 'shared';
const VERBS = ['GET', 'WATCH', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** The sample's cluster (manifests/samples/rayjob.yaml), head only: every RayJob shares it. */
function sharedCluster(): Record<string, unknown> {
  const sample = parse(readFileSync(join(REPO_ROOT, 'manifests', 'samples', 'rayjob.yaml'), 'utf8')) as {
    spec: { rayClusterSpec: { workerGroupSpecs: Array<Record<string, unknown>> } };
  };
  const spec = sample.spec.rayClusterSpec;
  spec.workerGroupSpecs = spec.workerGroupSpecs.map((g) => ({ ...g, replicas: 0, minReplicas: 0 }));
  return { apiVersion: 'ray.io/v1', kind: 'RayCluster', metadata: { name: SHARED, namespace: NAMESPACE }, spec };
}

function rayJob(name: string, mode: RayJobPhaseFigures['mode'], entrypoint: string): RayJob {
  return {
    apiVersion: 'ray.io/v1',
    kind: 'RayJob',
    metadata: { name, namespace: NAMESPACE },
    spec: { entrypoint, submissionMode: mode, clusterSelector: { [CLUSTER_SELECTOR_KEY]: SHARED } },
  } as RayJob;
}

/** The controller's API requests so far, by verb. */
async function requestsByVerb(port: number): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const verb of VERBS) out[verb] = await metricSum(port, 'raykeeper_kube_requests', new RegExp(`verb="${verb}"`));
  return out;
}

export async function runRayJobBench(options: RayJobBenchOptions = {}): Promise<RayJobBenchFigures> {
  const o = { jobs: 100, submitters: 10, entrypoint: 'echo done', capSeconds: 900, print: true, ...options };
  const say = (s: string) => o.print && process.stderr.write(`[rayjob bench] ${s}\n`);
  const found = findRay();
  if ('missing' in found) throw new Error(`Ray is needed (bash tools/setup.sh installs it): ${found.missing}`);
  const loadStart = loadavg();
  const logger = pino({ level: 'silent' });
  let cp: ControlPlane | undefined;
  let kube: KubeClient | undefined;
  let ray: DevRay | undefined;
  let runner: JobRunner | undefined;
  let controller: Child | undefined;
  let watcher: InformerFactory | undefined;
  const image = unpackedPackage(); // as the image runs it
  try {
    say('starting etcd + kube-apiserver');
    cp = await startControlPlane({ onProgress: (m) => say(m) });
    const kubeConfig = cp.kubeConfig();
    kube = new KubeClient(kubeConfig);
    const k = kube;
    ray = await startDevRay({ kubeConfig, logger, progress: (m) => say(m.trim()) });
    runner = await startJobRunner({ kubeConfig, logger, baseEnv: ray.jobEnv });
    const flags = Object.entries(ray.controllerFlags).flatMap(([name, value]) => [`--${name}`, value]);
    controller = startControllerChild(
      cp.info.kubeconfigPath,
      4,
      ['--reconcilers', 'raycluster-pods,rayjob', '--companion', 'off', ...flags],
      image.bin,
    );
    const port = await controller.port;
    const pid = controller.proc.pid!;

    say(`creating the shared RayCluster ${SHARED} (head only) and waiting until it is ready`);
    await k.create({ ...RAYCLUSTERS, namespace: NAMESPACE }, sharedCluster());
    for (const t0 = Date.now(); ; ) {
      const c = await k.get({ ...RAYCLUSTERS, namespace: NAMESPACE, name: SHARED });
      if (c.status?.state === 'ready') break;
      if (Date.now() - t0 > 300_000) throw new Error(`the shared RayCluster is not ready after 300 s (state ${c.status?.state})`);
      await sleep(500);
    }

    watcher = new InformerFactory(k);
    const jobs = watcher.get({ ...RAYJOBS, namespace: NAMESPACE });
    watcher.start();
    await watcher.waitForSync();
    const phases: RayJobPhaseFigures[] = [];
    for (const [mode, n] of [
      ['HTTPMode', o.jobs],
      ['K8sJobMode', o.submitters],
    ] as const) {
      if (n <= 0) continue;
      const names = Array.from({ length: n }, (_, i) => `${mode.toLowerCase()}-${i}`);
      const ended = () => {
        let complete = 0;
        let failed = 0;
        for (const name of names) {
          const s = (jobs.get(`${NAMESPACE}/${name}`) as RayJob | undefined)?.status?.jobDeploymentStatus;
          if (s === 'Complete') complete += 1;
          if (s === 'Failed') failed += 1;
        }
        return { complete, failed };
      };
      const before = await requestsByVerb(port);
      const cpu0 = cpuSeconds(pid);
      say(`${mode}: creating ${n} RayJobs at once (clusterSelector ${SHARED})`);
      const t0 = performance.now();
      await pool(names, 32, async (name) => {
        await k.create({ ...RAYJOBS, namespace: NAMESPACE }, rayJob(name, mode, o.entrypoint));
      });
      let e = ended();
      let lastReport = performance.now();
      while (e.complete + e.failed < n && performance.now() - t0 < o.capSeconds * 1000) {
        await sleep(200);
        e = ended();
        if (performance.now() - lastReport > 15_000) {
          lastReport = performance.now();
          say(`  ${e.complete} Complete, ${e.failed} Failed of ${n}`);
        }
      }
      const seconds = (performance.now() - t0) / 1000;
      const cpu = cpuSeconds(pid) - cpu0;
      const after = await requestsByVerb(port);
      const requests = Object.fromEntries(VERBS.map((v) => [v, after[v]! - before[v]!]));
      const m = rss(pid);
      phases.push({ mode, rayJobs: n, ...e, seconds, requests, cpuSeconds: cpu, rssMiB: m.rss, peakRssMiB: m.hwm, load1: loadavg()[0]! });
      say(`${mode}: ${e.complete} Complete, ${e.failed} Failed of ${n} in ${seconds.toFixed(1)} s (controller CPU ${cpu.toFixed(1)} s)`);
    }
    const figures: RayJobBenchFigures = { phases, loadAverage: { start: loadStart, end: loadavg() } };
    if (o.print) process.stdout.write(formatRayJobFigures(figures) + '\n');
    return figures;
  } finally {
    await watcher?.stop().catch(() => {});
    await controller?.stop().catch(() => {});
    await runner?.stop().catch(() => {});
    await ray?.stop().catch(() => {});
    kube?.close();
    await cp?.stop().catch(() => {});
    image.remove();
  }
}

export function formatRayJobFigures(f: RayJobBenchFigures): string {
  const whole = (x: number) => String(Math.round(x));
  const lines = [
    'RayJobs to Complete with real Ray, all on one shared RayCluster (clusterSelector, head only, ready before the clock starts);',
    'our controller (RayJob reconciler + RayCluster operator, as the image runs it) on one control plane; no baseline (KubeRay not run)',
    `${'mode'.padEnd(12)}${'RayJobs'.padStart(8)}${'Complete'.padStart(9)}${'Failed'.padStart(7)}${'s'.padStart(6)}${'CPU s'.padStart(7)}${'RSS MiB'.padStart(8)}${'peak'.padStart(6)}${'API/RayJob'.padStart(11)}  the phase's API requests by verb (GET: gets and lists)`,
  ];
  for (const p of f.phases) {
    const verbs = Object.entries(p.requests)
      .filter(([, v]) => v > 0)
      .map(([verb, v]) => `${verb} ${whole(v)}`)
      .join(', ');
    const total = Object.values(p.requests).reduce((a, b) => a + b, 0);
    lines.push(
      `${p.mode.padEnd(12)}${whole(p.rayJobs).padStart(8)}${whole(p.complete).padStart(9)}${whole(p.failed).padStart(7)}${whole(p.seconds).padStart(6)}${whole(p.cpuSeconds).padStart(7)}${whole(p.rssMiB).padStart(8)}${whole(p.peakRssMiB).padStart(6)}${whole(total / p.rayJobs).padStart(11)}  ${verbs}`,
    );
  }
  lines.push(
    `load average (1/5/15 min): start ${f.loadAverage.start.map((x) => x.toFixed(2)).join(' ')}, end ${f.loadAverage.end.map((x) => x.toFixed(2)).join(' ')}; per phase (1 min): ${f.phases.map((p) => p.load1.toFixed(1)).join('/')}`,
  );
  return lines.join('\n');
}

if (resolve(process.argv[1] ?? '') === THIS_FILE) {
  const { values } = parseArgs({ options: { jobs: { type: 'string' }, submitters: { type: 'string' }, entrypoint: { type: 'string' } } });
  await runRayJobBench({
    ...(values.jobs !== undefined ? { jobs: Number(values.jobs) } : {}),
    ...(values.submitters !== undefined ? { submitters: Number(values.submitters) } : {}),
    ...(values.entrypoint !== undefined ? { entrypoint: values.entrypoint } : {}),
  });
}
