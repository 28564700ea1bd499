// RayCluster operator benchmark: N RayClusters (head + 2 workers each, the bench spec) created at once,
// measured until every pod exists, for our operator (`raykeeper controller --reconcilers raycluster-pods`,
// a child process) and, as the baseline, KubeRay's own operator (v1.6.2, tools/build-kuberay.sh), each
// in its own namespace of ONE control plane started with KubeRay's CRDs (ours work on them too).
// Printed side by side: seconds until all pods exist, the operator's CPU seconds meanwhile, its RSS.
// Pods never run (no kubelet): this measures the operators' API work, not scheduling.
//
//   npx node bench/raycluster-pods.ts      (standalone; ~1-2 min on 2 cores)
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheDir } from '../localcluster/binaries.ts';
import { loopbackEnv, startControlPlane } from '../localcluster/control-plane.ts';
import { InformerFactory } from '../kube/informer.ts';
import { KubeClient } from '../kube/client.ts';
import { cpuSeconds, pool, rss, startControllerChild } from './controller.ts';
import { benchClusterSpec } from './sample-cluster.ts';
import { RAYCLUSTERS } from '../src/types.ts';
import { NAMESPACES, PODS } from '../kube/resources.ts';

const THIS_FILE = fileURLToPath(import.meta.url);
const KUBERAY_VERSION = 'v1.6.2';

export interface PodsBenchFigures {
  operator: string;
  clusters: number;
  pods: number;
  seconds: number;
  cpuSeconds: number;
  rssMiB: number;
  peakRssMiB: number;
}

function kuberay(): { bin: string; crds: string } | undefined {
  const bin = join(cacheDir(process.env), 'bin', `ray-operator-${KUBERAY_VERSION}`);
  const modcache = spawnSync('go', ['env', 'GOMODCACHE'], { encoding: 'utf8' }).stdout?.trim();
  const crds = modcache ? join(modcache, 'github.com/ray-project/kuberay', `ray-operator@${KUBERAY_VERSION}`, 'config/crd/bases') : '';
  return existsSync(bin) && crds && existsSync(crds) ? { bin, crds } : undefined;
}

async function measure(kube: KubeClient, namespace: string, clusters: number, pid: number, label: string): Promise<PodsBenchFigures> {
  await kube.create(NAMESPACES, { metadata: { name: namespace } });
  const factory = new InformerFactory(kube, { namespace });
  const pods = factory.get({ ...PODS, labelSelector: 'ray.io/cluster' });
  factory.start();
  await factory.waitForSync();
  const want = clusters * 3;
  const done = new Promise<void>((res) => pods.on(() => pods.size >= want && res()));
  const cpu0 = cpuSeconds(pid);
  const t0 = performance.now();
  await pool(
    Array.from({ length: clusters }, (_, i) => i),
    16,
    async (i) => {
      await kube.create(
        { ...RAYCLUSTERS, namespace },
        { apiVersion: 'ray.io/v1', kind: 'RayCluster', metadata: { name: `rc-${i}` }, spec: benchClusterSpec([]) },
      );
    },
  );
  await done;
  const seconds = (performance.now() - t0) / 1000;
  const cpu = cpuSeconds(pid) - cpu0;
  const mem = rss(pid);
  await factory.stop();
  return { operator: label, clusters, pods: pods.size, seconds, cpuSeconds: cpu, rssMiB: mem.rss, peakRssMiB: mem.hwm };
}

export async function runRayClusterPodsBench(options: { clusters?: number; print?: boolean } = {}): Promise<PodsBenchFigures[]> {
  const clusters = options.clusters ?? 100;
  const kr = kuberay();
  const cp = await startControlPlane(kr ? { crdsDir: kr.crds } : {});
  const kube = new KubeClient(cp.kubeConfig());
  const figures: PodsBenchFigures[] = [];
  try {
    const ours = startControllerChild(cp.info.kubeconfigPath, 4, ['--reconcilers', 'raycluster-pods', '--watch-namespace', 'bench-ours']);
    try {
      await ours.port;
      figures.push(await measure(kube, 'bench-ours', clusters, ours.proc.pid!, 'raykeeper'));
    } finally {
      await ours.stop();
    }
    if (kr) {
      const op = spawn(
        kr.bin,
        ['--metrics-addr=0', '--health-probe-bind-address=0', '--enable-leader-election=false', '--watch-namespace=bench-kuberay'],
        {
          env: { ...loopbackEnv(), KUBECONFIG: cp.info.kubeconfigPath, HOME: process.env.HOME ?? '/tmp' },
          stdio: 'ignore',
        },
      );
      try {
        figures.push(await measure(kube, 'bench-kuberay', clusters, op.pid!, `kuberay ${KUBERAY_VERSION}`));
      } finally {
        op.kill('SIGTERM');
      }
    }
  } finally {
    kube.close();
    await cp.stop();
  }
  if (options.print !== false) {
    process.stdout.write(`${clusters} RayClusters (head + 2 workers) created at once, until all ${clusters * 3} pods exist:\n`);
    process.stdout.write(
      `${'operator'.padEnd(16)} ${'seconds'.padStart(8)} ${'cpu s'.padStart(8)} ${'rss MiB'.padStart(8)} ${'peak MiB'.padStart(9)}\n`,
    );
    for (const f of figures)
      process.stdout.write(
        `${f.operator.padEnd(16)} ${Math.round(f.seconds).toString().padStart(8)} ${Math.round(f.cpuSeconds).toString().padStart(8)} ${Math.round(f.rssMiB).toString().padStart(8)} ${Math.round(f.peakRssMiB).toString().padStart(9)}\n`,
      );
    if (!kr) process.stdout.write(`(no baseline: KubeRay's operator or CRDs missing; run tools/build-kuberay.sh)\n`);
  }
  return figures;
}

if (resolve(process.argv[1] ?? '') === THIS_FILE) await runRayClusterPodsBench();
