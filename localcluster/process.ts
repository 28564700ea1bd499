// Child processes that never outlive us. Node has no prctl(PR_SET_PDEATHSIG), so three layers:
//  1. stop(): SIGTERM, wait, SIGKILL (what callers and test teardowns use);
//  2. hooks on our own 'exit', SIGINT, SIGTERM and SIGHUP that signal every live child;
//  3. a tiny `sh` watchdog per child that polls the watched pid (us, or for a detached control plane the
//     process that owns it) once a second and kills the child when that pid is gone, which covers our
//     death by SIGKILL, where no hook runs.
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { sleep } from '../kube/backoff.ts';

export interface SuperviseOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  stdio?: StdioOptions;
  /**
   * Start the child in its own process group and signal the whole group: for commands that fork
   * (`sh -c ...`). Also what lets a child outlive a parent that exits on purpose (`detached` mode).
   */
  group?: boolean;
  /** Keep running after this process exits on purpose (no exit/signal hooks; only the watchdog). */
  detached?: boolean;
  /** The pid whose death kills the child (default: this process). */
  watchPid?: number;
  /** Seconds between SIGTERM and SIGKILL, for the watchdog and the exit hooks (default 5). */
  graceSeconds?: number;
  /**
   * Leave this child alone on our SIGINT/SIGTERM/SIGHUP (it still dies on our exit and by its watchdog):
   * for components whose owner stops them in order (the real node: kubelet before the CRI clean-up
   * before containerd). Use with `group`, so a terminal's Ctrl-C does not reach it either.
   */
  ownerStops?: boolean;
}

export interface Supervised {
  child: ChildProcess;
  pid: number;
  /** The watchdog's pid (killed when the child exits). */
  watchdogPid: number | undefined;
  /** Resolves with the exit code (or null) and signal once the child has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM (to the group when `group`), then SIGKILL after `graceMs`; resolves once the child is gone. */
  stop(graceMs?: number): Promise<void>;
}

// Polls the watched pid once a second; when it is gone, TERM then KILL the targets (negative pids are
// process groups) and, if given, remove a directory. Exits when every target is gone.
const WATCHDOG = `
w=$1; g=$2; d=$3; shift 3
# A zombie (exited, not yet reaped by its new parent) counts as gone.
up() {
  kill -0 "$1" 2>/dev/null || return 1
  case "$1" in -*) return 0 ;; esac
  s=$(sed 's/^.*) \\(.\\).*/\\1/' "/proc/$1/stat" 2>/dev/null)
  [ "$s" != Z ]
}
alive() { for c in "$@"; do up "$c" && return 0; done; return 1; }
while alive "$@"; do
  if ! up "$w"; then
    for c in "$@"; do kill -TERM "$c" 2>/dev/null; done
    i=0
    while [ "$i" -lt "$g" ] && alive "$@"; do sleep 1; i=$((i + 1)); done
    for c in "$@"; do kill -KILL "$c" 2>/dev/null; done
    break
  fi
  sleep 1
done
if [ -n "$d" ] && ! up "$w"; then sleep 1; rm -rf "$d"; fi
`;

const live = new Set<{ target: number; group: boolean; ownerStops: boolean }>();
const exitCleanups = new Set<() => void>();
let hooksInstalled = false;

/**
 * Registers a synchronous callback for our 'exit' (after the children got SIGKILL), e.g. removing a
 * temporary directory. Returns a function that unregisters it.
 */
export function onExitCleanup(fn: () => void): () => void {
  installHooks();
  exitCleanups.add(fn);
  return () => exitCleanups.delete(fn);
}

function signalTarget(target: number, signal: NodeJS.Signals): void {
  try {
    process.kill(target, signal);
  } catch {
    // already gone
  }
}

function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  const killAndClean = (): void => {
    for (const entry of live) signalTarget(entry.target, 'SIGKILL');
    for (const fn of exitCleanups) {
      try {
        fn();
      } catch {
        // best effort while exiting
      }
    }
    exitCleanups.clear();
  };
  process.on('exit', killAndClean);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const handler = (): void => {
      for (const entry of live) if (!entry.ownerStops) signalTarget(entry.target, 'SIGTERM');
      // When nobody else handles the signal, keep its default meaning: terminate. (The 'exit' hook
      // does not run on a signal death, so kill the children hard first.)
      if (process.listenerCount(signal) === 1) {
        killAndClean();
        process.removeListener(signal, handler);
        process.kill(process.pid, signal);
      }
    };
    process.on(signal, handler);
  }
}

/**
 * True while a process with this pid runs. A zombie (exited, not yet reaped: e.g. a detached child
 * whose parent exited, waiting for an init that reaps lazily) counts as gone.
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true; // no /proc (not Linux): trust kill(0)
  }
}

/** Waits until none of the pids exists, polling; false if `timeoutMs` passed first. */
export async function waitForExit(pids: number[], timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (pids.every((p) => !isAlive(p))) return true;
    if (Date.now() >= deadline) return false;
    await sleep(50);
  }
}

/**
 * Stops processes we do not hold a ChildProcess for (e.g. a detached control plane started by another
 * process): SIGTERM, wait up to `graceMs`, SIGKILL, wait. Negative pids are process groups.
 */
export async function terminate(targets: number[], graceMs = 5000): Promise<void> {
  const pidOf = (t: number): number => Math.abs(t);
  for (const t of targets) signalTarget(t, 'SIGTERM');
  if (await waitForExit(targets.map(pidOf), graceMs)) return;
  for (const t of targets) signalTarget(t, 'SIGKILL');
  await waitForExit(targets.map(pidOf), 5000);
}

/**
 * Starts a watchdog: when `watchPid` dies, the targets (pids; negative for process groups) get SIGTERM,
 * then SIGKILL after `graceSeconds`, and `removeDir` (if any) is deleted. Returns the watchdog's pid
 * (it leads its own process group).
 */
export function startWatchdog(watchPid: number, targets: number[], graceSeconds: number, removeDir = ''): number | undefined {
  const dog = spawn(
    'sh',
    ['-c', WATCHDOG, 'raykeeper-watchdog', String(watchPid), String(graceSeconds), removeDir, ...targets.map(String)],
    {
      detached: true, // own group: a Ctrl-C to ours must not kill the watchdog before it is needed
      stdio: 'ignore',
    },
  );
  dog.on('error', () => {});
  dog.unref();
  return dog.pid;
}

/** Spawns a child that is killed when we (or `watchPid`) die. Throws if it cannot be spawned. */
export async function spawnSupervised(command: string, args: string[], options: SuperviseOptions = {}): Promise<Supervised> {
  const group = options.group ?? options.detached ?? false;
  const graceSeconds = options.graceSeconds ?? 5;
  const child = spawn(command, args, {
    env: options.env ?? process.env,
    cwd: options.cwd,
    stdio: options.stdio ?? 'ignore',
    detached: group,
  });
  const exitedEarly = once(child, 'spawn').then(
    () => undefined,
    (err: Error) => err,
  );
  const spawnError = await exitedEarly;
  if (spawnError !== undefined) throw new Error(`cannot start ${command}: ${spawnError.message}`);
  const pid = child.pid!;
  const target = group ? -pid : pid;
  const entry = { target, group, ownerStops: options.ownerStops ?? false };
  if (!options.detached) {
    installHooks();
    live.add(entry);
  } else {
    child.unref();
  }
  const watchdogPid = startWatchdog(options.watchPid ?? process.pid, [target], graceSeconds);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    const done = (code: number | null, signal: NodeJS.Signals | null): void => {
      live.delete(entry);
      // The child is gone; its group may still hold grandchildren (a `sh -c` that forked): end them too.
      if (group) signalTarget(target, 'SIGKILL');
      if (watchdogPid !== undefined) signalTarget(-watchdogPid, 'SIGKILL');
      resolve({ code, signal });
    };
    if (child.exitCode !== null || child.signalCode !== null) done(child.exitCode, child.signalCode);
    else child.once('exit', done);
  });
  const stop = async (graceMs = graceSeconds * 1000): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) {
      await exited;
      return;
    }
    signalTarget(target, 'SIGTERM');
    const timer = setTimeout(() => signalTarget(target, 'SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  return { child, pid, watchdogPid, exited, stop };
}
