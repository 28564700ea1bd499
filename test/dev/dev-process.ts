// `raykeeper dev` as a real process, for the dev tests: start it (ready when it says so), kubectl against
// it, watch a RayJob, find the processes it started, stop it with SIGTERM.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Test } from 'tap';
import { REPO_ROOT, requireKubeCommand } from '../../localcluster/binaries.ts';
import { descendants } from '../../localcluster/ray.ts';

// The kubectl built beside kube-apiserver (tools/build-control-plane.sh), as the other tests use.
export const kubectl = requireKubeCommand('kubectl');

/**
 * Pids whose command line mentions dir: dev's TMPDIR (dev itself, its control plane, its Ray processes),
 * or the ray pod runner's temp dir under it (`<TMPDIR>/rk-raypods-`: every Ray process has it in its args).
 */
export function processesUnder(dir: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(dir)) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out.filter((p) => p !== process.pid);
}

/**
 * A process's identity: pid and start time (clock ticks since boot), not its command line (Ray's processes
 * rename themselves); undefined when gone or a zombie.
 */
export function identity(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z') return undefined;
    return `${pid} ${fields[19]}`;
  } catch {
    return undefined;
  }
}

/** Lines of a child's stream until one matches (or the child exits / the time is up). */
export function waitForLine(
  child: ChildProcess,
  stream: 'stdout' | 'stderr',
  re: RegExp,
  ms: number,
  seen: { text: string },
): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`timed out after ${ms} ms waiting for ${re} in ${stream}`)), ms);
    const check = () => {
      const m = seen.text.split('\n').find((l) => re.test(l));
      if (m !== undefined) done(undefined, m);
    };
    const onExit = (code: number | null) => done(new Error(`exited (${code}) before ${re} appeared in ${stream}`));
    const done = (err?: Error, line?: string) => {
      clearTimeout(timer);
      child[stream]!.off('data', check);
      child.off('exit', onExit);
      if (err) reject(err);
      else resolve(line!);
    };
    child[stream]!.on('data', check);
    child.once('exit', onExit);
    check();
  });
}

export function run(args: string[], kubeconfig: string, input?: string): string {
  const r = spawnSync(kubectl, ['--kubeconfig', kubeconfig, ...args], { encoding: 'utf8', input, timeout: 120_000 });
  if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr || r.stdout}`);
  return r.stdout;
}

/** `kubectl get rayjob NAME -w`: every deployment status seen, until Complete or Failed. */
export function watchRayJob(kubeconfig: string, name: string, ms: number): Promise<string[]> {
  const w = spawn(
    kubectl,
    [
      '--kubeconfig',
      kubeconfig,
      'get',
      'rayjob',
      name,
      '--watch',
      '-o',
      'jsonpath={.status.jobDeploymentStatus}/{.status.jobStatus}{"\\n"}',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const seen: string[] = [];
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => finish(new Error(`timed out after ${ms} ms; RayJob ${name} went through ${seen.join(' ')}`)), ms);
    const finish = (err?: Error) => {
      clearTimeout(timer);
      w.kill('SIGKILL');
      if (err) reject(err);
      else resolve(seen);
    };
    w.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (line !== '' && seen.at(-1) !== line) seen.push(line);
        if (/^(Complete|Failed)\//.test(line)) finish();
      }
    });
    w.once('exit', (code) => finish(new Error(`kubectl get -w exited (${code}); seen ${seen.join(' ')}`)));
  });
}

export interface Dev {
  tmp: string;
  kubeconfig: string;
  dev: ChildProcess;
  out: { text: string };
  err: { text: string };
  exited: Promise<number | null>;
  /** Processes to kill in teardown (after a failure only is anything left), by identity(): pid and start time. */
  pids: string[];
}

/** `bin/raykeeper.js dev` as a user starts it, with its own TMPDIR and state dir; ready when it says so. */
export async function startDevProcess(tt: Test, env: Record<string, string> = {}, args: string[] = []): Promise<Dev> {
  // A short TMPDIR: Ray's socket paths under it must stay below 107 characters.
  const tmp = mkdtempSync('/tmp/rkd-');
  const kubeconfig = join(tmp, 'state', 'kubeconfig');
  const dev = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'raykeeper.js'), 'dev', '--state-dir', join(tmp, 'state'), ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, TMPDIR: tmp, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const d: Dev = {
    tmp,
    kubeconfig,
    dev,
    out: { text: '' },
    err: { text: '' },
    exited: new Promise((resolve) => dev.once('exit', (code) => resolve(code))),
    pids: [],
  };
  dev.stdout!.on('data', (b: Buffer) => (d.out.text += b.toString()));
  dev.stderr!.on('data', (b: Buffer) => (d.err.text += b.toString()));
  tt.teardown(() => {
    // Only while dev runs (after a failure): a pid of an exited dev may belong to another process by now.
    // Stopped first, so it starts nothing between the snapshot and the kills; the tree, not dev's TMPDIR,
    // finds redis-server (it rewrites its command line to "redis-server 127.0.0.1:PORT").
    const running = dev.exitCode === null && dev.signalCode === null;
    if (running) dev.kill('SIGSTOP');
    const tree = running ? [dev.pid!, ...descendants(dev.pid!)] : [];
    // A remembered pid only while it is still the same process (its pid may have been reused since).
    const remembered = d.pids.filter((i) => identity(Number(i.split(' ')[0])) === i).map((i) => Number(i.split(' ')[0]));
    for (const p of new Set([...tree, ...remembered, ...processesUnder(tmp)])) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        // gone
      }
    }
    rmSync(tmp, { recursive: true, force: true });
  });
  await waitForLine(dev, 'stdout', /^Ctrl-C stops everything\.$/, 180_000, d.out);
  tt.match(d.out.text, `kubeconfig: ${kubeconfig}`, 'dev prints its kubeconfig');
  return d;
}

/** SIGTERM: dev exits 0 within 60 s after printing that it stopped. */
export async function stopDev(tt: Test, d: Dev): Promise<void> {
  d.dev.kill('SIGTERM');
  const code = await Promise.race([
    d.exited,
    new Promise<string>((r) => setTimeout(() => r('still running 60 s after SIGTERM'), 60_000).unref()),
  ]);
  tt.equal(code, 0, 'dev exits 0 on SIGTERM');
  tt.match(d.err.text, /SIGTERM: stopping\.\.\.\nstopped\n/);
}
