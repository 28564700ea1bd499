// Where the `ray` CLI is, for the tests and benchmarks that start a real Ray head. One lookup order:
// $RAYKEEPER_RAY, then the venv tools/install-ray.sh makes (<cache>/ray-venv), then `ray` on PATH.
import { spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cacheDir } from './binaries.ts';
import { sleep } from '../kube/backoff.ts';

export interface RayInstall {
  /** The `ray` executable. */
  ray: string;
  /** The Python interpreter that `ray` runs under (its shebang), so drivers import the same Ray. */
  python: string;
}

export function findRay(env: NodeJS.ProcessEnv = process.env): RayInstall | { missing: string } {
  const venv = join(cacheDir(env), 'ray-venv', 'bin', 'ray');
  const explicit = env.RAYKEEPER_RAY;
  let ray: string | undefined;
  if (explicit) {
    if (!existsSync(explicit)) return { missing: `RAYKEEPER_RAY=${explicit} does not exist` };
    ray = explicit;
  } else if (existsSync(venv)) {
    ray = venv;
  } else {
    ray = spawnSync('/bin/sh', ['-c', 'command -v ray'], { encoding: 'utf8' }).stdout.trim() || undefined;
  }
  if (!ray)
    return { missing: `Ray is not installed (no RAYKEEPER_RAY, no ${venv}, no ray on PATH): run bash tools/setup.sh (it installs Ray)` };
  const version = spawnSync(ray, ['--version'], { encoding: 'utf8', timeout: 60_000 });
  if (version.status !== 0)
    return { missing: `\`${ray} --version\` failed: ${(version.stderr || version.stdout || '').trim().split('\n').at(-1)}` };
  const first = readFileSync(ray, 'utf8').split('\n', 1)[0] ?? '';
  const python = first.startsWith('#!') ? first.slice(2).trim().split(/\s+/)[0]! : 'python3';
  return { ray, python };
}

/** Every descendant of pid (ps snapshot), deepest last. */
export function descendants(pid: number): number[] {
  const ps = spawnSync('ps', ['-eo', 'pid=,ppid='], { encoding: 'utf8' }).stdout;
  const children = new Map<number, number[]>();
  for (const line of ps.trim().split('\n')) {
    const [p, pp] = line.trim().split(/\s+/).map(Number) as [number, number];
    children.set(pp, [...(children.get(pp) ?? []), p]);
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(pid);
  return out;
}

/**
 * What `ray start` prints when it gave up waiting for its raylet to register (a fixed 30 s in Ray 2.x,
 * `ray/_private/node.py`): a loaded machine, not a wrong command line.
 */
export const RAY_START_TIMED_OUT = 'The current node timed out during startup';

/**
 * For a `ray start` that has exited: whether it ended with Ray's start-up timeout (RAY_START_TIMED_OUT),
 * read from its whole output. Its processes are stopped first and its pipes waited for (bounded), since
 * the exit can be reported before the last chunk of its output has been read.
 */
export async function exitedOnStartTimeout(head: ChildProcess, log: () => string): Promise<boolean> {
  await stopRay(head);
  const open = [head.stdout, head.stderr].filter((s) => s !== null && !s.closed);
  const bound = new AbortController();
  await Promise.race([Promise.all(open.map((s) => new Promise((done) => s!.once('close', done)))), sleep(5_000, bound.signal)]);
  bound.abort();
  return log().includes(RAY_START_TIMED_OUT);
}

/**
 * Polls `ready` while a `ray start` runs: 'ready' once it holds; 'retry' when the process exited with Ray's
 * start-up timeout (exitedOnStartTimeout); any other exit, or no readiness within `limitMs`, throws with
 * the end of its log.
 */
export async function waitForRayStart(
  proc: ChildProcess,
  log: () => string,
  ready: () => Promise<boolean>,
  limitMs: number,
  what: string,
): Promise<'ready' | 'retry'> {
  const started = Date.now();
  while (!(await ready())) {
    if (proc.exitCode !== null) {
      if (await exitedOnStartTimeout(proc, log)) return 'retry';
      throw new Error(`${what} exited: ${log().slice(-2000)}`);
    }
    if (Date.now() - started > limitMs) throw new Error(`${what} was not ready after ${limitMs / 1000} s: ${log().slice(-2000)}`);
    await sleep(500);
  }
  return 'ready';
}

/** Kills the `ray start --block` process and everything it started (by pid and its process group, never by name). */
export async function stopRay(head: ChildProcess): Promise<void> {
  if (head.pid === undefined) return;
  const pids = [head.pid, ...descendants(head.pid)];
  // Its process group too (it is spawned detached): Ray's own processes outlive a `ray start` that failed
  // and are then nobody's descendants.
  try {
    process.kill(-head.pid, 'SIGKILL');
  } catch {
    // no such group (not detached, or already gone)
  }
  for (const p of pids) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  const until = Date.now() + 15_000;
  while (
    pids.some(
      (p) =>
        spawnSync('kill', ['-0', String(p)]).status === 0 &&
        !/Z/.test(spawnSync('ps', ['-o', 'stat=', '-p', String(p)], { encoding: 'utf8' }).stdout),
    ) &&
    Date.now() < until
  ) {
    await sleep(200);
  }
}
