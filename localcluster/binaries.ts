// Where the locally built etcd, kube-apiserver, kubectl and the node's commands live:
// ${RAYKEEPER_CACHE:-~/.cache/raykeeper}/bin/<name>-<version>, the versions being the ones
// tools/etcd/go.mod, tools/kube-apiserver/go.mod and tools/kube-node/go.mod require.
// tools/build-control-plane.sh builds them; ensureBinaries() runs it when asked to.
import { spawn } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const BUILD_SCRIPT = join(REPO_ROOT, 'tools', 'build-control-plane.sh');

export interface ControlPlaneBinaries {
  etcd: string;
  kubeApiserver: string;
  etcdVersion: string;
  kubeVersion: string;
}

/** The version a go.mod `require`s for a module (single-line or block form). */
export function requiredVersion(goMod: string, module: string): string | undefined {
  for (const raw of goMod.split('\n')) {
    const words = raw
      .replace(/\/\/.*$/, '')
      .trim()
      .split(/\s+/);
    if (words[0] === 'require') words.shift();
    if (words[0] === module && words[1]?.startsWith('v')) return words[1];
  }
  return undefined;
}

export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.RAYKEEPER_CACHE || join(homedir(), '.cache', 'raykeeper');
}

function versionFrom(tool: string, module: string): string {
  const path = join(REPO_ROOT, 'tools', tool, 'go.mod');
  const version = requiredVersion(readFileSync(path, 'utf8'), module);
  if (version === undefined) throw new Error(`${path} does not require ${module}`);
  return version;
}

/**
 * The expected binary paths. RAYKEEPER_ETCD / RAYKEEPER_KUBE_APISERVER override them (e.g. binaries
 * from elsewhere); otherwise they are the build script's cache paths.
 */
export function controlPlaneBinaries(env: NodeJS.ProcessEnv = process.env): ControlPlaneBinaries {
  const etcdVersion = versionFrom('etcd', 'go.etcd.io/etcd/server/v3');
  const kubeVersion = versionFrom('kube-apiserver', 'k8s.io/kubernetes');
  const bin = join(cacheDir(env), 'bin');
  return {
    etcd: env.RAYKEEPER_ETCD || join(bin, `etcd-${etcdVersion}`),
    kubeApiserver: env.RAYKEEPER_KUBE_APISERVER || join(bin, `kube-apiserver-${kubeVersion}`),
    etcdVersion,
    kubeVersion,
  };
}

export function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The binaries that are missing, empty when both are there. */
export function missingBinaries(b: ControlPlaneBinaries = controlPlaneBinaries()): string[] {
  return [b.etcd, b.kubeApiserver].filter((p) => !executable(p));
}

export class MissingBinariesError extends Error {
  readonly missing: string[];
  constructor(missing: string[], buildFlags = '') {
    super(
      `the local control plane binaries are not built: missing ${missing.join(', ')}. ` +
        `Build them with tools/build-control-plane.sh${buildFlags} (several minutes the first time; cached afterwards).`,
    );
    this.name = 'MissingBinariesError';
    this.missing = missing;
  }
}

/** The Kubernetes commands built from tools/kube-node at the kube-apiserver's version. */
export const NODE_COMMANDS = ['kubelet', 'kube-proxy', 'kube-scheduler', 'kube-controller-manager'] as const;
export type KubeCommand = 'kubectl' | (typeof NODE_COMMANDS)[number];

/**
 * The path of a locally built Kubernetes command (tools/build-control-plane.sh builds kubectl always,
 * the node's commands with --node). RAYKEEPER_KUBECTL, RAYKEEPER_KUBELET, ... override it.
 */
export function kubeCommandPath(name: KubeCommand, env: NodeJS.ProcessEnv = process.env): string {
  const override = env[`RAYKEEPER_${name.toUpperCase().replaceAll('-', '_')}`];
  return override || join(cacheDir(env), 'bin', `${name}-${versionFrom('kube-node', 'k8s.io/kubernetes')}`);
}

/** crictl (tools/crictl, its own cri-tools version), built with the node's commands. RAYKEEPER_CRICTL overrides it. */
export function crictlPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.RAYKEEPER_CRICTL || join(cacheDir(env), 'bin', `crictl-${versionFrom('crictl', 'sigs.k8s.io/cri-tools')}`);
}

/** The path of a built Kubernetes command, or a MissingBinariesError naming what to run. Builds nothing. */
export function requireKubeCommand(name: KubeCommand, env: NodeJS.ProcessEnv = process.env): string {
  const path = kubeCommandPath(name, env);
  if (!executable(path)) throw new MissingBinariesError([path], name === 'kubectl' ? '' : ' --node');
  return path;
}

/** The binaries, or a MissingBinariesError naming what to run. Builds nothing. */
export function requireBinaries(env: NodeJS.ProcessEnv = process.env): ControlPlaneBinaries {
  const b = controlPlaneBinaries(env);
  const missing = missingBinaries(b);
  if (missing.length > 0) throw new MissingBinariesError(missing);
  return b;
}

/**
 * The binaries, running tools/build-control-plane.sh first when one is missing (for `raykeeper dev`).
 * `onOutput` receives the script's progress lines as they come.
 */
export async function ensureBinaries(
  onOutput: (line: string) => void = () => {},
  env: NodeJS.ProcessEnv = process.env,
): Promise<ControlPlaneBinaries> {
  const b = controlPlaneBinaries(env);
  if (missingBinaries(b).length === 0) return b;
  const child = spawn('bash', [BUILD_SCRIPT], { env: { ...env, CGO_ENABLED: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
  for (const stream of [child.stdout, child.stderr]) {
    let rest = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) onOutput(line);
    });
    stream.on('end', () => rest && onOutput(rest));
  }
  const code = await new Promise<number | null>((res, rej) => {
    child.on('error', rej);
    child.on('close', res);
  });
  if (code !== 0) throw new Error(`${BUILD_SCRIPT} failed (exit ${code})`);
  return requireBinaries(env);
}

/** kwok (tools/kwok, tools/build-kwok.sh): simulated nodes for the scale bench. RAYKEEPER_KWOK overrides it. */
export function kwokPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.RAYKEEPER_KWOK || join(cacheDir(env), 'bin', `kwok-${versionFrom('kwok', 'sigs.k8s.io/kwok')}`);
}
