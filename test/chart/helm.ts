// The chart tests' tools: the helm binaries tools/build-helm.sh builds, `helm template` into objects, and
// the comparison of rendered objects with the kustomize tree's (test/helpers/kustomize.ts renders those).
//
// A missing helm is a FAILURE (test/helpers/parts.ts), naming the command that builds it.
import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { type KubeObject, parseManifests } from '../../localcluster/apply.ts';
import { cacheDir, REPO_ROOT, requiredVersion } from '../../localcluster/binaries.ts';
import { missingPart } from '../helpers/parts.ts';

export const CHART_DIR = join(REPO_ROOT, 'charts', 'raykeeper');

/** The Helm major versions the chart supports; the tests run with each. */
export type HelmMajor = 3 | 4;
export const HELM_MAJORS: HelmMajor[] = [3, 4];

/** Where tools/build-helm.sh puts helm 3 or 4 (RAYKEEPER_HELM / RAYKEEPER_HELM4 override). */
export function helmPath(major: HelmMajor = 3, env: NodeJS.ProcessEnv = process.env): string {
  const override = major === 3 ? env.RAYKEEPER_HELM : env.RAYKEEPER_HELM4;
  if (override) return override;
  const goMod = join(REPO_ROOT, 'tools', major === 3 ? 'helm' : 'helm4', 'go.mod');
  const version = requiredVersion(readFileSync(goMod, 'utf8'), `helm.sh/helm/v${major}`);
  if (!version) throw new Error(`${goMod} does not require helm.sh/helm/v${major}`);
  return join(cacheDir(env), 'bin', `helm-${version}`);
}

/** Throws (naming the set-up command) unless helm 3 and 4 are built: called where a test needs them. */
export function requireHelm(env: NodeJS.ProcessEnv = process.env): void {
  const missing = HELM_MAJORS.map((m) => helmPath(m, env)).filter((path) => {
    try {
      accessSync(path, constants.X_OK);
      return false;
    } catch {
      return true;
    }
  });
  if (missing.length > 0) throw new Error(missingPart(`helm is not built (missing ${missing.join(', ')})`));
}

/** Isolated HELM_* homes, so tests never read or write the user's helm config, cache or plugins. */
let homes: string | undefined;
function helmEnv(): NodeJS.ProcessEnv {
  if (!homes) {
    homes = mkdtempSync(join(tmpdir(), 'raykeeper-helm-'));
    process.once('exit', () => rmSync(homes!, { recursive: true, force: true }));
  }
  return {
    PATH: process.env.PATH,
    HOME: homes,
    HELM_CACHE_HOME: join(homes, 'cache'),
    HELM_CONFIG_HOME: join(homes, 'config'),
    HELM_DATA_HOME: join(homes, 'data'),
  };
}

export interface HelmResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs helm (3 unless told); never throws on a non-zero exit (callers assert on it). */
export function helm(args: string[], major: HelmMajor = 3): HelmResult {
  const r = spawnSync(helmPath(major), args, { encoding: 'utf8', env: helmEnv(), maxBuffer: 64 * 1024 * 1024 });
  if (r.error) throw new Error(`cannot run helm ${major}: ${r.error.message}`);
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/**
 * Runs helm as a child process without blocking this process's event loop (a test that stands in for the
 * job controller, e.g. for a hook Job helm waits for, must keep running meanwhile); never rejects on a
 * non-zero exit.
 */
export function helmAsync(args: string[], major: HelmMajor = 3): Promise<HelmResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(helmPath(major), args, { env: helmEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('error', (e) => reject(new Error(`cannot run helm ${major}: ${e.message}`)));
    child.once('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** Runs helm and returns stdout, or throws with helm's stderr. */
export function helmOk(args: string[], major: HelmMajor = 3): string {
  const r = helm(args, major);
  if (r.status !== 0) throw new Error(`helm ${major} ${args.join(' ')} failed (exit ${r.status}): ${r.stderr.trim()}`);
  return r.stdout;
}

/** A values file for helm's -f, written to a temporary directory removed at exit. */
export function valuesFile(values: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'raykeeper-values-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'values.yaml');
  writeFileSync(path, stringify(values));
  return path;
}

export interface TemplateOptions {
  release?: string;
  namespace?: string;
  /** --include-crds */
  crds?: boolean;
  major?: HelmMajor;
}

/** `helm template` of the chart with these values, as objects (templates only unless crds). */
export function template(values: unknown = {}, options: TemplateOptions = {}): KubeObject[] {
  const args = [
    'template',
    options.release ?? 'raykeeper',
    CHART_DIR,
    '--namespace',
    options.namespace ?? 'raykeeper-system',
    '-f',
    valuesFile(values),
  ];
  if (options.crds) args.push('--include-crds');
  return parseManifests(helmOk(args, options.major));
}

export const key = (o: KubeObject) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;

/** A Helm hook (the uninstall hook's Job and its RBAC): Helm's alone; kustomize users run `raykeeper uninstall` themselves. */
export function isHook(o: KubeObject): boolean {
  return (o.metadata.annotations as Record<string, string> | undefined)?.['helm.sh/hook'] !== undefined;
}

const HELM_LABELS = ['app.kubernetes.io/instance', 'app.kubernetes.io/version', 'app.kubernetes.io/managed-by', 'helm.sh/chart'];

/**
 * A copy without the differences on purpose between the chart and the kustomize tree (listed in
 * equivalence.test.ts), sorted by kind, namespace and name. Pure.
 */
export function normalise(objects: KubeObject[]): KubeObject[] {
  return structuredClone(objects)
    .filter((o) => o.kind !== 'Namespace' && !isHook(o))
    .map((o) => {
      const labels = o.metadata.labels as Record<string, string> | undefined;
      for (const l of HELM_LABELS) delete labels?.[l];
      if (o.kind === 'Secret' && o.type === 'kubernetes.io/tls') {
        o.data = { 'tls.crt': '', 'tls.key': '' };
      }
      if (o.kind === 'MutatingWebhookConfiguration' || o.kind === 'ValidatingWebhookConfiguration') {
        for (const w of o.webhooks as Array<{ clientConfig: { caBundle?: string } }>) w.clientConfig.caBundle = '';
      }
      return o;
    })
    .sort((a, b) => key(a).localeCompare(key(b)));
}

/** The one object of this kind and name, or an Error naming what is there. */
export function find(objects: KubeObject[], kind: string, name?: string): any {
  const found = objects.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  if (found.length !== 1)
    throw new Error(`expected one ${kind}${name ? ` ${name}` : ''}, found ${found.length} among ${objects.map(key).join(', ')}`);
  return found[0];
}
