// tap `after` script: stops the control plane test/setup/start.ts started and removes the state file.
import { rmSync } from 'node:fs';
import { stopControlPlane } from '../../localcluster/control-plane.ts';
import { readState, STATE_FILE } from '../helpers/control-plane-state.ts';

const state = readState();
if (state && 'info' in state) {
  await stopControlPlane(state.info);
  process.stderr.write(`# control plane: stopped (kube-apiserver ${state.info.pids.kubeApiserver}, etcd ${state.info.pids.etcd})\n`);
}
rmSync(STATE_FILE, { force: true });
process.exit(0);
