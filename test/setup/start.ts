// tap `before` script: starts ONE control plane (etcd + kube-apiserver, our CRDs applied) for the whole
// test run and records it in the state file that test/helpers/control-plane.ts reads
// (.raykeeper/test-control-plane-<tap runner pid>.json). The processes are
// detached from this short-lived script and die with the tap process that runs it (a watchdog polls its
// pid) or when the `after` script (test/setup/stop.ts) stops them.
// When the binaries are missing, the state file records the error instead: every test that needs the
// control plane then FAILS with the build instruction, while the other tests still run.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { MissingBinariesError, requireBinaries } from '../../localcluster/binaries.ts';
import { startControlPlane } from '../../localcluster/control-plane.ts';
import { type ControlPlaneState, removeStaleStates, STATE_FILE } from '../helpers/control-plane-state.ts';

function write(state: ControlPlaneState): void {
  mkdirSync(dirname(STATE_FILE), { recursive: true });
  writeFileSync(STATE_FILE, JSON.stringify(state, null, 2) + '\n', { mode: 0o600 });
}

const started = Date.now();
removeStaleStates();
rmSync(STATE_FILE, { force: true });

try {
  const binaries = requireBinaries();
  const cp = await startControlPlane({
    binaries,
    detached: true,
    ownerPid: process.ppid, // the tap runner: when it dies, the watchdogs stop the control plane
    onProgress: (m) => process.stderr.write(`# control plane: ${m}\n`),
  });
  write({ info: cp.info });
  process.stderr.write(`# control plane: shared by this run (${((Date.now() - started) / 1000).toFixed(1)} s), state in ${STATE_FILE}\n`);
} catch (err) {
  const message = err instanceof Error ? err.message : String(err);
  write({ error: message });
  process.stderr.write(`# control plane: NOT STARTED: ${message}\n`);
  // Missing binaries: the tests that need Kubernetes fail with this message; others still run.
  if (!(err instanceof MissingBinariesError)) process.stderr.write('# control plane: tests that need it will fail\n');
}
process.exit(0);
