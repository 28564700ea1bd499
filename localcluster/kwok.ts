// Simulated nodes on the local control plane: etcd + kube-apiserver (control-plane.ts), the
// kube-controller-manager and kube-scheduler the real node runs (node/config.ts), and kwok
// (tools/build-kwok.sh) in place of kubelets: N fake Nodes that kwok keeps Ready, whose pods it moves to
// Running and Ready (a Job's pods to Succeeded) and removes once deleted, by kwok's default Stages
// (kwok-stages.yaml). No container runs, no root needed: for the scale bench and its test.
import { closeSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { kubeCommandPath, kwokPath, executable, REPO_ROOT } from './binaries.ts';
import {
  type ControlPlane,
  controlPlaneFiles,
  logFd,
  loopbackEnv,
  SERVICE_CLUSTER_IP_RANGE,
  startControlPlane,
  tail,
  waitUntil,
} from './control-plane.ts';
import { freePort } from './net.ts';
import { controllerComponentsArgs } from './node/config.ts';
import { nodeReady } from './node/node.ts';
import { spawnSupervised, type Supervised } from './process.ts';
import { KubeClient } from '../kube/client.ts';
import { NODES } from '../kube/resources.ts';

export const KWOK_STAGES = join(REPO_ROOT, 'localcluster', 'kwok-stages.yaml');
/** The annotation kwok's docs give fake nodes; kwok manages the nodes that have it (and no others). */
export const KWOK_NODE_ANNOTATION = 'kwok.x-k8s.io/node';

export interface KwokClusterOptions {
  /** Fake nodes (default 4; kwok gives each 1k CPUs, 1 TiB and 1M pods). */
  nodes?: number;
  /** CRDs to apply (default manifests/crds; false for none). */
  crdsDir?: string | false;
  /** Extra kube-apiserver flags (e.g. a higher --max-requests-inflight for the bench). */
  apiserverArgs?: string[];
  onProgress?: (message: string) => void;
  readyTimeoutMs?: number;
}

export interface KwokCluster {
  controlPlane: ControlPlane;
  nodeNames: string[];
  /** Pids of kube-controller-manager, kube-scheduler and kwok (for CPU and memory figures). */
  pids: Record<'kube-controller-manager' | 'kube-scheduler' | 'kwok', number>;
  stop(): Promise<void>;
}

/** What is missing to start one, as the set-up command names it; empty when nothing is. */
export function missingKwokParts(): string[] {
  return [kwokPath(), kubeCommandPath('kube-controller-manager'), kubeCommandPath('kube-scheduler')].filter((p) => !executable(p));
}

/** A fake node as kwok's docs write one (no taint: every pod may land on it). */
export function kwokNode(name: string): object {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      annotations: { [KWOK_NODE_ANNOTATION]: 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
      labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', type: 'kwok' },
    },
  };
}

export function kwokArgs(kubeconfig: string, serverPort: number): string[] {
  return [
    `--kubeconfig=${kubeconfig}`,
    `--config=${KWOK_STAGES}`,
    `--manage-nodes-with-annotation-selector=${KWOK_NODE_ANNOTATION}=fake`,
    // Pod IPs are only written into pod statuses, never reached.
    '--cidr=10.244.0.0/16',
    '--node-ip=10.244.255.254',
    `--server-address=127.0.0.1:${serverPort}`,
  ];
}

export async function startKwokCluster(options: KwokClusterOptions = {}): Promise<KwokCluster> {
  const missing = missingKwokParts();
  if (missing.length > 0)
    throw new Error(`not built: ${missing.join(', ')}; run: bash tools/setup.sh --node (kwok and the node's commands)`);
  const progress = options.onProgress ?? (() => {});
  const timeoutMs = options.readyTimeoutMs ?? 180_000;
  const controlPlane = await startControlPlane({
    crdsDir: options.crdsDir,
    apiserverArgs: options.apiserverArgs,
    onProgress: progress,
    readyTimeoutMs: timeoutMs,
  });
  const info = controlPlane.info;
  const procs: Supervised[] = [];
  const stop = async (): Promise<void> => {
    for (const p of procs.reverse()) await p.stop(5_000);
    await controlPlane.stop();
  };
  const kube = new KubeClient(controlPlane.kubeConfig());
  try {
    const spawnComponent = async (name: string, command: string, args: string[]): Promise<{ proc: Supervised; log: string }> => {
      const log = join(info.dir, `${name}.log`);
      const fd = logFd(log);
      try {
        const proc = await spawnSupervised(command, args, {
          env: loopbackEnv(),
          cwd: info.dir,
          stdio: ['ignore', fd, fd],
          graceSeconds: 5,
          group: true,
          ownerStops: true,
        });
        procs.push(proc);
        return { proc, log };
      } finally {
        closeSync(fd);
      }
    };
    const certDirs = { controllerManager: join(info.dir, 'kcm'), scheduler: join(info.dir, 'scheduler') };
    for (const d of Object.values(certDirs)) await mkdir(d, { mode: 0o700 });
    const files = controlPlaneFiles(info);
    const args = controllerComponentsArgs({
      kubeconfig: info.kubeconfigPath,
      certDirs,
      ports: { controllerManager: await freePort(), scheduler: await freePort() },
      serviceAccountKey: files.serviceAccountKey,
      rootCa: files.servingCa,
      serviceCidr: SERVICE_CLUSTER_IP_RANGE,
    });
    progress('starting kube-controller-manager, kube-scheduler and kwok');
    // On a loaded machine kwok's node heartbeats lag past the default 50 s grace; the node lifecycle
    // controller then marks every pod of the node Ready=False, and kwok's Stages (unlike a kubelet) never
    // set them Ready again: 644 of 1,000 RayClusters stayed unready in the scale bench. (The controller
    // itself stays: it lifts the not-ready taint new nodes are born with.)
    const kcm = await spawnComponent('kube-controller-manager', kubeCommandPath('kube-controller-manager'), [
      ...args.controllerManager,
      '--node-monitor-grace-period=1h',
      // Its default 20 requests/s and 5 Job workers completed ~3 cleanup Jobs a second: at 1,000
      // RayClusters the Jobs, not the operators, set the delete-to-gone time.
      '--kube-api-qps=200',
      '--kube-api-burst=400',
      '--concurrent-job-syncs=20',
    ]);
    // Its default 50 requests/s (a bind and an Event per pod) queued the deletion's cleanup-Job pods
    // (1,426 Pending at 5,000 RayClusters) in front of the next phase's.
    const scheduler = await spawnComponent('kube-scheduler', kubeCommandPath('kube-scheduler'), [
      ...args.scheduler,
      '--kube-api-qps=500',
      '--kube-api-burst=1000',
    ]);
    const kwok = await spawnComponent('kwok', kwokPath(), kwokArgs(info.kubeconfigPath, await freePort()));
    const nodeNames = Array.from({ length: options.nodes ?? 4 }, (_, i) => `kwok-node-${i}`);
    for (const name of nodeNames) await kube.create(NODES, kwokNode(name));
    let ended: string | undefined;
    for (const c of [kcm, scheduler]) void c.proc.exited.then(() => (ended ??= c.log));
    const deadline = Date.now() + timeoutMs;
    await waitUntil(`kwok (${nodeNames.length} fake nodes Ready)`, kwok.proc, kwok.log, deadline, async () => {
      if (ended) return true;
      for (const name of nodeNames) if (!(await nodeReady(kube, name))) return false;
      return true;
    });
    if (ended) throw new Error(`a control-plane component exited before the nodes were ready; ${ended}:\n${tail(ended)}`);
    progress(`${nodeNames.length} kwok nodes Ready`);
    return {
      controlPlane,
      nodeNames,
      pids: { 'kube-controller-manager': kcm.proc.pid, 'kube-scheduler': scheduler.proc.pid, kwok: kwok.proc.pid },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  } finally {
    kube.close();
  }
}
