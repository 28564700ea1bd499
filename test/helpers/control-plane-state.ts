// The state file through which tap's `before` script (test/setup/start.ts) hands the shared control
// plane to the test files. Kept apart from control-plane.ts because that one imports tap, which the
// before/after scripts must not (importing tap starts a TAP stream).
//
// One file per tap run, keyed by the tap runner's pid: the before script, every test file and the
// after script are all children of the runner (process.ppid), so concurrent tap runs in the same
// checkout each get their own control plane.
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import type { ControlPlaneInfo } from '../../localcluster/control-plane.ts';
import { isAlive } from '../../localcluster/process.ts';

const STATE_DIR = join(REPO_ROOT, '.raykeeper');
const PREFIX = 'test-control-plane-';

/** This run's state file (override: RAYKEEPER_TEST_CONTROL_PLANE). */
export function stateFile(runnerPid = process.ppid): string {
  return process.env.RAYKEEPER_TEST_CONTROL_PLANE || join(STATE_DIR, `${PREFIX}${runnerPid}.json`);
}

export const STATE_FILE = stateFile();

/** The state file's content: the control plane's info, or why it could not be started. */
export type ControlPlaneState = { info: ControlPlaneInfo } | { error: string };

export function readState(path = STATE_FILE): ControlPlaneState | undefined {
  if (!existsSync(path)) return undefined;
  return JSON.parse(readFileSync(path, 'utf8')) as ControlPlaneState;
}

/**
 * Removes state files of tap runs that are gone (killed before their after script ran). Their control
 * planes were stopped by the watchdogs when the runner died; only leftovers are removed, nothing is killed.
 */
export function removeStaleStates(): void {
  if (!existsSync(STATE_DIR)) return;
  for (const f of readdirSync(STATE_DIR)) {
    const m = new RegExp(`^${PREFIX}(\\d+)\\.json$`).exec(f);
    if (!m || isAlive(Number(m[1]))) continue;
    const path = join(STATE_DIR, f);
    try {
      const state = readState(path);
      if (state && 'info' in state && !isAlive(state.info.pids.kubeApiserver) && !isAlive(state.info.pids.etcd)) {
        rmSync(state.info.dir, { recursive: true, force: true });
      }
    } catch {
      // unreadable: just remove it
    }
    rmSync(path, { force: true });
  }
}
