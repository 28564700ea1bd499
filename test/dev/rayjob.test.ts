// `raykeeper dev` as a user runs it (bin/raykeeper.js dev, a real process with its own control plane):
// `kubectl apply -f manifests/samples/rayjob.yaml` ends Complete / SUCCEEDED, driven by our RayJob state
// machine, our RayCluster operator, the ray pod runner (the head and worker as local Ray processes) and
// the job runner (the submitter's `ray job submit`). A second RayJob runs at the same time (each head has
// its own dashboard port behind dev's loopback proxy). Deleting the RayJobs stops their Ray processes;
// SIGTERM stops dev with exit 0 and no process of it left. Needs Ray (tools/setup.sh installs it): fails without.
// Without Ray (RAYKEEPER_RAY pointing nowhere), dev says in one line that RayJobs will stay Initializing.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parse, stringify } from 'yaml';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { identity, processesUnder, run, startDevProcess, stopDev, watchRayJob } from './dev-process.ts';
import { descendants, findRay } from '../../localcluster/ray.ts';
import type { RayJob } from '../../src/types.ts';
import { until } from '../helpers/harness.ts';
import { missingPart } from '../helpers/parts.ts';

const found = findRay();

t.test('raykeeper dev without Ray: one line says RayJobs will stay Initializing, and why', { timeout: 240_000 }, async (tt) => {
  const d = await startDevProcess(tt, { RAYKEEPER_RAY: '/nonexistent/ray' });
  tt.match(
    d.err.text,
    /^      Ray not found, so RayJobs will stay Initializing \(their RayCluster's pods are created but nothing runs them\): RAYKEEPER_RAY=\/nonexistent\/ray does not exist$/m,
  );
  tt.notMatch(d.err.text, /Ray pods run as local processes/);
  tt.match(d.out.text, /rayjob\.yaml\s+# stays Initializing without Ray \(bash tools\/setup\.sh installs it\)/);
  await stopDev(tt, d);
});

if ('missing' in found) {
  t.fail(missingPart(found.missing));
} else {
  t.test(
    'raykeeper dev: manifests/samples/rayjob.yaml ends Complete (SUCCEEDED), a second RayJob beside it, clean stop',
    { timeout: 290_000 },
    async (tt) => {
      const d = await startDevProcess(tt);
      const { tmp, kubeconfig, dev, out, err } = d;
      tt.match(out.text, /rayjob\.yaml\s+# New -> Initializing -> Running -> Complete/, 'dev says RayJobs run to Complete');
      tt.match(err.text, /Ray pods run as local processes .*dashboards at http:\/\/127\.0\.0\.1:\d+\/\{namespace\}\/\{cluster\}/);

      // The sample as users apply it, and a second RayJob at the same time (head only, to spare the CPU).
      run(['apply', '-f', join(REPO_ROOT, 'manifests', 'samples', 'rayjob.yaml')], kubeconfig);
      const second = parse(readFileSync(join(REPO_ROOT, 'manifests', 'samples', 'rayjob.yaml'), 'utf8')) as RayJob & {
        spec: { rayClusterSpec: { workerGroupSpecs: Array<Record<string, unknown>> } };
      };
      second.metadata.name = 'rayjob-second';
      second.spec.rayClusterSpec.workerGroupSpecs[0] = { ...second.spec.rayClusterSpec.workerGroupSpecs[0], replicas: 0, minReplicas: 0 };
      writeFileSync(join(tmp, 'second.yaml'), stringify(second));
      run(['apply', '-f', join(tmp, 'second.yaml')], kubeconfig);

      const [first, other] = await Promise.all([
        watchRayJob(kubeconfig, 'rayjob-sample', 200_000),
        watchRayJob(kubeconfig, 'rayjob-second', 200_000),
      ]);
      tt.equal(first.at(-1), 'Complete/SUCCEEDED', `rayjob-sample: ${first.join(' -> ')}`);
      tt.ok(
        first.some((s) => s.startsWith('Running/')),
        'rayjob-sample was Running before Complete',
      );
      tt.equal(other.at(-1), 'Complete/SUCCEEDED', `rayjob-second: ${other.join(' -> ')}`);
      const clusters = run(['get', 'rayjobs', '-o', 'jsonpath={.items[*].status.rayClusterName}'], kubeconfig).trim().split(/\s+/);
      tt.equal(new Set(clusters).size, 2, 'two RayClusters, each with its own head');

      const rayDir = join(tmp, 'rk-raypods-');
      const running = processesUnder(rayDir);
      tt.ok(running.length >= 2, `Ray processes run under dev (${running.length})`);
      const before = [...new Set([...descendants(dev.pid!), ...running])].map(identity).filter((i) => i !== undefined);
      d.pids = before;

      run(['delete', 'rayjob', 'rayjob-sample', 'rayjob-second', '--wait=true', '--timeout=60s'], kubeconfig);
      tt.equal(run(['get', 'rayjobs', '-o', 'name'], kubeconfig).trim(), '', 'the RayJobs are gone (finalizer released)');
      // dev's owner garbage collector takes their RayClusters, pods and Services along; the ray pod
      // runner stops the deleted pods' Ray processes, while dev keeps running.
      await until(() => processesUnder(rayDir).length === 0, "the deleted RayJobs' Ray processes to stop", 90_000, 500);
      // The collector works in passes (owners first, then their children): wait until a pass left nothing.
      const leftover = () =>
        run(['get', 'rayclusters,pods,services,jobs', '-o', 'name'], kubeconfig)
          .trim()
          .split('\n')
          .filter((l) => l !== '' && l !== 'service/kubernetes');
      await until(
        () => leftover().length === 0,
        "the deleted RayJobs' RayClusters, pods, Services and Jobs to be collected",
        60_000,
        500,
      ).catch(() => undefined);
      tt.same(leftover(), [], 'no RayCluster, pod, Service or Job is left');
      tt.equal(dev.exitCode, null, 'dev still runs');

      await stopDev(tt, d);
      tt.same(
        before.filter((i) => identity(Number(i.split(' ')[0])) === i),
        [],
        'no process dev started (Ray included) is left',
      );
      tt.same(processesUnder(tmp), [], "no process with dev's temp dir in its command line is left");
    },
  );
}
