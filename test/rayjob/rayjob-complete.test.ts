// A RayJob end to end with Ray pods that run: the RayJob controller creates the RayCluster, our
// operator its pods, the ray pod runner runs them as local Ray processes, the job runner runs the
// submitter Job (`ray job submit` against the head's dashboard), and the RayJob ends Complete with
// jobStatus SUCCEEDED. manifests/samples/rayjob.yaml as users apply it.
// Needs Ray (tools/setup.sh installs it); fails without it, naming the set-up command.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import t from 'tap';
import { parse } from 'yaml';
import { startController } from '../../controller/main.ts';
import { gcsFtCleanupModule } from '../../controller/gcsft-cleanup/module.ts';
import { rayClusterOperatorModule } from '../../controller/raycluster/module.ts';
import { rayJobModule } from '../../controller/rayjob/module.ts';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { JobRunner } from '../../localcluster/job-runner.ts';
import { freePort } from '../../localcluster/net.ts';
import { RayPodRunner } from '../../localcluster/pod-runner.ts';
import { findRay } from '../../localcluster/ray.ts';
import { RAYJOBS, type RayJob } from '../../src/types.ts';
import { env, quiet, until } from '../helpers/harness.ts';
import { missingPart } from '../helpers/parts.ts';

const found = findRay();
if ('missing' in found) {
  t.fail(missingPart(found.missing));
} else {
  t.test('manifests/samples/rayjob.yaml ends Complete (SUCCEEDED) on Ray pods that run', { timeout: 280_000 }, async (tt) => {
    const e = await env(tt);
    const dashboard = await freePort();
    const url = `http://127.0.0.1:${dashboard}`;
    const pods = new RayPodRunner({
      kubeConfig: e.ns.kubeConfig,
      namespace: e.ns.name,
      ray: found,
      logger: quiet,
      dashboardPort: dashboard,
    });
    await pods.start();
    tt.teardown(() => pods.stop());
    const jobs = new JobRunner({
      kubeConfig: e.ns.kubeConfig,
      namespaces: [e.ns.name],
      logger: quiet,
      killGraceMs: 1000,
      baseEnv: {
        PATH: `${dirname(found.ray)}:${process.env.PATH ?? ''}`,
        HOME: process.env.HOME ?? '/tmp',
        NO_PROXY: '127.0.0.1,localhost',
      },
    });
    await jobs.start();
    tt.teardown(() => jobs.stop());
    const c = await startController({
      kubeConfig: e.ns.kubeConfig,
      watchNamespace: e.ns.name,
      workers: 2,
      modules: [gcsFtCleanupModule, rayClusterOperatorModule, rayJobModule],
      env: {},
      logger: quiet,
      moduleFlags: {
        'cleanup-image': 'raykeeper:test',
        'rayjob-dashboard-url-template': url,
        'rayjob-submitter-dashboard-url-template': url,
      },
    });
    tt.teardown(() => c.stop());
    const sample = parse(readFileSync(join(REPO_ROOT, 'manifests/samples/rayjob.yaml'), 'utf8')) as RayJob;
    await e.kube.create({ ...RAYJOBS, namespace: e.ns.name }, sample);
    const done = await until(
      async () => {
        const j = await e.kube.get({ ...RAYJOBS, namespace: e.ns.name, name: 'rayjob-sample' });
        const s = j.status?.jobDeploymentStatus;
        return s === 'Complete' || s === 'Failed' ? j : undefined;
      },
      'the RayJob finished',
      200_000,
      1000,
    );
    tt.equal(done.status?.jobDeploymentStatus, 'Complete', `${done.status?.reason ?? ''} ${done.status?.message ?? ''}`);
    tt.equal(done.status?.jobStatus, 'SUCCEEDED');
  });
}
