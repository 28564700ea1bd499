// Reading the OCI archives tools/build-images.sh writes, and running an image from one with runc, the
// way containerd does for a pod: layers unpacked in order (whiteouts applied), the process, user, env
// and working directory taken from the image's config, a read-only root by default. Nothing here uses
// buildah: the archive alone must be enough.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sleep } from '../../kube/backoff.ts';

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

export interface ImageConfig {
  User?: string;
  Env?: string[];
  Entrypoint?: string[] | null;
  Cmd?: string[] | null;
  WorkingDir?: string;
  ExposedPorts?: Record<string, object>;
  Labels?: Record<string, string>;
}

export interface OciImage {
  /** The archive's image name (index.json's org.opencontainers.image.ref.name). */
  name: string;
  manifest: { config: Descriptor; layers: Descriptor[] };
  config: { architecture: string; os: string; config: ImageConfig; rootfs: { diff_ids: string[] } };
  /** Directory the archive was unpacked into (blobs/sha256/...). */
  dir: string;
}

function sha256(buf: Buffer): string {
  return 'sha256:' + createHash('sha256').update(buf).digest('hex');
}

/** A blob of the unpacked archive, checked against its digest and size. */
function blob(dir: string, d: Descriptor): Buffer {
  const buf = readFileSync(join(dir, 'blobs', ...d.digest.split(':')));
  if (sha256(buf) !== d.digest) throw new Error(`blob ${d.digest} does not match its digest`);
  if (buf.length !== d.size) throw new Error(`blob ${d.digest} is ${buf.length} bytes, its descriptor says ${d.size}`);
  return buf;
}

/** Unpacks an OCI archive into a fresh directory under `into` and reads its one image. */
export function readArchive(archive: string, into: string): OciImage {
  const dir = mkdtempSync(join(into, 'oci-'));
  run('tar', ['-xf', archive, '-C', dir]);
  const layout = JSON.parse(readFileSync(join(dir, 'oci-layout'), 'utf8'));
  if (layout.imageLayoutVersion !== '1.0.0') throw new Error(`${archive}: oci-layout ${JSON.stringify(layout)}`);
  const index = JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8'));
  if (index.manifests?.length !== 1) throw new Error(`${archive}: ${index.manifests?.length} manifests, expected 1`);
  const m: Descriptor = index.manifests[0];
  const manifest = JSON.parse(blob(dir, m).toString('utf8'));
  const config = JSON.parse(blob(dir, manifest.config).toString('utf8'));
  for (const l of manifest.layers) blob(dir, l);
  return { name: m.annotations?.['org.opencontainers.image.ref.name'] ?? '', manifest, config, dir };
}

const WHITEOUT = '.wh.';
const OPAQUE = '.wh..wh..opq';

/**
 * What a layer's whiteout entries remove from the layers below it: `.wh.<name>` removes <name>;
 * `.wh..wh..opq` empties its directory (the layer's own entries there are extracted afterwards).
 */
export function whiteouts(entries: string[]): { remove: string[]; empty: string[] } {
  const remove: string[] = [];
  const empty: string[] = [];
  for (const raw of entries) {
    const e = raw.replace(/^\.\//, '').replace(/\/$/, '');
    const base = e.slice(e.lastIndexOf('/') + 1);
    const parent = e.includes('/') ? e.slice(0, e.lastIndexOf('/')) : '';
    if (base === OPAQUE) empty.push(parent);
    else if (base.startsWith(WHITEOUT)) remove.push(parent ? `${parent}/${base.slice(WHITEOUT.length)}` : base.slice(WHITEOUT.length));
  }
  return { remove, empty };
}

/** The image's root filesystem in `rootfs` (must be empty), layer by layer. Needs root (file owners). */
export function unpackRootfs(image: OciImage, rootfs: string): void {
  mkdirSync(rootfs, { recursive: true });
  for (const layer of image.manifest.layers) {
    const file = join(image.dir, 'blobs', ...layer.digest.split(':'));
    const z = layer.mediaType.endsWith('+gzip') ? ['-z'] : [];
    const { remove, empty } = whiteouts(
      run('tar', [...z, '-tf', file])
        .split('\n')
        .filter(Boolean),
    );
    for (const p of remove) rmSync(join(rootfs, p), { recursive: true, force: true });
    for (const d of empty) for (const e of safeList(join(rootfs, d))) rmSync(join(rootfs, d, e), { recursive: true, force: true });
    run('tar', [
      ...z,
      '-xf',
      file,
      '-C',
      rootfs,
      '--numeric-owner',
      '--same-permissions',
      `--exclude=${WHITEOUT}*`,
      '--exclude=*/' + WHITEOUT + '*',
    ]);
  }
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function run(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
  return r.stdout;
}

/** `uid:gid` of the image's User (numeric, or a name looked up in the rootfs's passwd/group). */
export function resolveUser(user: string | undefined, rootfs: string): { uid: number; gid: number } {
  if (!user) return { uid: 0, gid: 0 };
  const [u = '', g] = user.split(':');
  const lookup = (file: string, name: string, field: number): number => {
    if (/^\d+$/.test(name)) return Number(name);
    const line = readFileSync(join(rootfs, 'etc', file), 'utf8')
      .split('\n')
      .find((l) => l.split(':')[0] === name);
    if (!line) throw new Error(`no ${name} in /etc/${file}`);
    return Number(line.split(':')[field]);
  };
  const uid = lookup('passwd', u, 2);
  const gid = g !== undefined ? lookup('group', g, 2) : u && !/^\d+$/.test(u) ? lookup('passwd', u, 3) : 0;
  return { uid, gid };
}

export interface RunOptions {
  /** Replaces the image's Entrypoint + Cmd (a pod's `command`). */
  command?: string[];
  /** Replaces the image's Cmd (a pod's `args`). */
  args?: string[];
  env?: Record<string, string>;
  /** Default: the image's User. */
  user?: string;
  /** Default true, like readOnlyRootFilesystem. */
  readonlyRoot?: boolean;
  /** Share the host's network namespace (to reach a server on 127.0.0.1), like hostNetwork. */
  hostNetwork?: boolean;
}

export interface Container {
  id: string;
  /** Resolves with the exit code and output once the process ends. */
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
  /** `runc state` status (running, stopped, ...), or undefined once gone. */
  state(): string | undefined;
  /** `runc kill <id> <signal>`. */
  kill(signal: string): void;
  /** Whether the runc process has ended. */
  ended(): boolean;
}

let seq = 0;

/** Starts the image with runc from an unpacked rootfs. `work` holds the bundle and runc's state. */
export function runImage(image: OciImage, rootfs: string, work: string, o: RunOptions = {}): Container {
  const c = image.config.config;
  const id = `raykeeper-images-test-${process.pid}-${++seq}`;
  const bundle = join(work, id);
  const state = join(work, 'runc-state');
  mkdirSync(bundle, { recursive: true });
  mkdirSync(state, { recursive: true });
  run('runc', ['spec', '--bundle', bundle]);
  const spec = JSON.parse(readFileSync(join(bundle, 'config.json'), 'utf8'));
  const argv = o.command ?? [...(c.Entrypoint ?? []), ...(o.args ?? c.Cmd ?? [])];
  const env = [
    ...(c.Env ?? []).filter((e) => !((e.split('=')[0] ?? '') in (o.env ?? {}))),
    ...Object.entries(o.env ?? {}).map(([k, v]) => `${k}=${v}`),
  ];
  if (!env.some((e) => e.startsWith('PATH='))) env.push('PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin');
  spec.process.terminal = false;
  spec.process.args = argv;
  spec.process.env = env;
  spec.process.cwd = c.WorkingDir || '/';
  spec.process.user = resolveUser(o.user ?? c.User, rootfs);
  spec.root = { path: rootfs, readonly: o.readonlyRoot ?? true };
  spec.hostname = id.slice(0, 63);
  if (o.hostNetwork) spec.linux.namespaces = spec.linux.namespaces.filter((n: { type: string }) => n.type !== 'network');
  writeFileSync(join(bundle, 'config.json'), JSON.stringify(spec));
  const child = spawn('runc', ['--root', state, 'run', '--bundle', bundle, id], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let ended = false;
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  child.once('exit', () => (ended = true));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      spawnSync('runc', ['--root', state, 'delete', '--force', id]);
      rmSync(bundle, { recursive: true, force: true });
      resolve({ code, stdout, stderr });
    });
  });
  return {
    id,
    done,
    state: () => {
      const r = spawnSync('runc', ['--root', state, 'state', id], { encoding: 'utf8' });
      return r.status === 0 ? JSON.parse(r.stdout).status : undefined;
    },
    kill: (signal) => void spawnSync('runc', ['--root', state, 'kill', id, signal]),
    ended: () => ended,
  };
}

/** Resolves once runc reports the container running; rejects if it ends first. */
export async function waitRunning(c: Container): Promise<void> {
  while (c.state() !== 'running') {
    if (c.ended()) {
      const r = await c.done;
      throw new Error(`${c.id} ended (exit ${r.code}) before running: ${r.stderr}`);
    }
    await sleep(20);
  }
}

/** docker.io's normalisation of an image reference, as the kubelet and containerd apply it. */
export function normalizeRef(ref: string): string {
  const first = ref.split('/')[0]!;
  const hasRegistry = ref.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  const named = hasRegistry ? ref : `docker.io/${ref.includes('/') ? '' : 'library/'}${ref}`;
  return /:[^/]+$/.test(named) || named.includes('@') ? named : `${named}:latest`;
}

/** A scratch directory for unpacked archives and root filesystems, removed by the returned function. */
export function scratch(prefix: string): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
