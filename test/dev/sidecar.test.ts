// SidecarMode with real Ray in `raykeeper dev` (bin/raykeeper.js dev as a user runs it):
// `kubectl apply -f manifests/samples/rayjob-sidecar.yaml` ends Complete / SUCCEEDED with no submitter
// Job: dev's ray pod runner runs the head pod's `ray-job-submitter` container beside its Ray container
// (the submitter's 127.0.0.1:8265 pointed at that head's own dashboard port) and reports its exit 0 in
// the head pod's container statuses. Needs Ray (tools/setup.sh installs it): fails without.
import { join } from 'node:path';
import t from 'tap';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { findRay } from '../../localcluster/ray.ts';
import { missingPart } from '../helpers/parts.ts';
import { run, startDevProcess, stopDev, watchRayJob } from './dev-process.ts';

const found = findRay();

if ('missing' in found) {
  t.fail(missingPart(found.missing));
} else {
  t.test(
    'raykeeper dev: manifests/samples/rayjob-sidecar.yaml ends Complete (SUCCEEDED), no submitter Job',
    { timeout: 290_000 },
    async (tt) => {
      const d = await startDevProcess(tt);
      const { kubeconfig } = d;
      const get = (args: string[]) => run(['get', ...args], kubeconfig).trim();

      run(['apply', '-f', join(REPO_ROOT, 'manifests', 'samples', 'rayjob-sidecar.yaml')], kubeconfig);
      const seen = await watchRayJob(kubeconfig, 'rayjob-sidecar', 200_000);
      tt.equal(seen.at(-1), 'Complete/SUCCEEDED', `rayjob-sidecar: ${seen.join(' -> ')}`);
      tt.ok(
        seen.some((s) => s.startsWith('Running/')),
        'it was Running before Complete',
      );
      tt.equal(get(['jobs', '-o', 'name']), '', 'no submitter Job');

      const cluster = get(['rayjob', 'rayjob-sidecar', '-o', 'jsonpath={.status.rayClusterName}']);
      const head = `-l=ray.io/cluster=${cluster},ray.io/node-type=head`;
      tt.equal(get(['pods', head, '-o', 'jsonpath={.items[0].spec.containers[*].name}']), 'ray-head ray-job-submitter');
      tt.equal(
        get([
          'pods',
          head,
          '-o',
          'jsonpath={.items[0].status.containerStatuses[?(@.name=="ray-job-submitter")].state.terminated.exitCode}',
        ]),
        '0',
        "the submitter container's exit code, as a kubelet reports it",
      );
      await stopDev(tt, d);
    },
  );
}
