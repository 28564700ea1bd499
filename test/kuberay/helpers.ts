// KubeRay's real operator (ray-operator, built by tools/build-kuberay.sh) beside ours, on a control
// plane of its own: KubeRay's CRDs (RayService and RayCronJob included, which its operator needs)
// would replace ours on the shared test control plane under the other test files' feet.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { startControlPlane, type ControlPlane } from '../../localcluster/control-plane.ts';
import { freePort } from '../../localcluster/net.ts';
import { KubeClient } from '../../kube/client.ts';

export const BUILD_KUBERAY = join(REPO_ROOT, 'tools', 'build-kuberay.sh');

/** Where tools/build-kuberay.sh puts (or put) the operator; it builds nothing with --print-path. */
export function kubeRayBinary(): string {
  return execFileSync('bash', [BUILD_KUBERAY, '--print-path'], { encoding: 'utf8' }).trim();
}

/** Why the suite cannot run here, or undefined; a missing binary fails the suite (test/helpers/parts.ts). */
export function missingKubeRay(): string | undefined {
  const bin = kubeRayBinary();
  return existsSync(bin) ? undefined : `KubeRay's operator is not built (${bin}); run: bash tools/build-kuberay.sh (~5 min on 2 cores)`;
}

export function kubeRayCrds(): string {
  return execFileSync('bash', [BUILD_KUBERAY, '--print-crds'], { encoding: 'utf8' }).trim();
}

export async function kubeRayControlPlane(progress: (m: string) => void): Promise<{ cp: ControlPlane; kube: KubeClient }> {
  const cp = await startControlPlane({ crdsDir: kubeRayCrds(), onProgress: progress });
  const kube = new KubeClient(cp.kubeConfig());
  return { cp, kube };
}

export interface KubeRayOperator {
  proc: ChildProcess;
  /** Its controller-runtime Prometheus endpoint (127.0.0.1). */
  metricsPort: number;
  /** Everything it logged (JSON lines). */
  log(): string;
  /** Its "Reconciler error" lines logged after `from` characters of the log. */
  reconcilerErrors(from?: number): string[];
  stop(): Promise<void>;
}

/**
 * ray-operator out of cluster (platform.md), with leader election on so its Lease exists. `cp`: what it
 * connects to (a control plane of its own, or the real node's).
 */
export async function startKubeRay(
  cp: { info: { kubeconfigPath: string } },
  options: {
    cleanup: boolean;
    leaseNamespace: string;
    /** More flags, e.g. --feature-gates=RayCronJob=true. */
    args?: string[];
    /** More environment, e.g. HTTP_PROXY (the scale bench's stand-in of the Ray dashboards). */
    env?: Record<string, string>;
    /** Keep only this many characters of its log (the scale bench: hours of it); default all. */
    logTailChars?: number;
    /**
     * A name server for it alone (the real node's cluster DNS), so it reaches the Ray dashboards by their
     * Service names as in cluster: /etc/resolv.conf is replaced in a mount namespace of its own (root).
     */
    nameserver?: string;
  },
): Promise<KubeRayOperator> {
  const env: Record<string, string> = {
    KUBECONFIG: cp.info.kubeconfigPath,
    HOME: process.env.HOME ?? '/tmp',
    PATH: process.env.PATH ?? '',
    NO_PROXY: '127.0.0.1,localhost',
  };
  if (!options.cleanup) env.ENABLE_GCS_FT_REDIS_CLEANUP = 'false';
  Object.assign(env, options.env);
  const metricsPort = await freePort();
  let command = kubeRayBinary();
  let prefix: string[] = [];
  let resolvDir: string | undefined;
  if (options.nameserver !== undefined) {
    resolvDir = await mkdtemp(join(tmpdir(), 'raykeeper-kuberay-'));
    const resolvConf = join(resolvDir, 'resolv.conf');
    await writeFile(resolvConf, `nameserver ${options.nameserver}\n`);
    prefix = ['-m', 'sh', '-c', 'mount --bind "$1" /etc/resolv.conf && shift 2 && exec "$@"', 'sh', resolvConf, '--', command];
    command = 'unshare';
  }
  const proc = spawn(
    command,
    [
      ...prefix,
      `--metrics-addr=127.0.0.1:${metricsPort}`,
      `--health-probe-bind-address=127.0.0.1:${await freePort()}`,
      '--enable-leader-election=true',
      `--leader-election-namespace=${options.leaseNamespace}`,
      ...(options.args ?? []),
    ],
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  const keep = options.logTailChars;
  const add = (c: Buffer) => {
    out += c.toString();
    if (keep !== undefined && out.length > 2 * keep) out = out.slice(-keep);
  };
  proc.stdout!.on('data', add);
  proc.stderr!.on('data', add);
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  return {
    proc,
    metricsPort,
    log: () => out,
    reconcilerErrors: (from = 0) =>
      out
        .slice(from)
        .split('\n')
        .filter((l) => l.includes('Reconciler error')),
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
      if (resolvDir) await rm(resolvDir, { recursive: true, force: true });
    },
  };
}

/** A pino logger whose lines are kept (to read our controller's start-up line). */
export function capturingLogger(level = 'info'): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  return { logger: pino({ level }, { write: (l: string) => void lines.push(l) }), lines };
}
