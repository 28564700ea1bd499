// Deletion rules with real Ray in `raykeeper dev` (bin/raykeeper.js dev as a user runs it):
// manifests/samples/rayjob-deletion-rules.yaml ends Complete/SUCCEEDED, then DeleteWorkers suspends its
// worker group (the worker's Ray process stops, the head keeps running) and DeleteCluster takes the whole
// RayCluster 30 s after the job finished, while the RayJob stays with both rules in its deletion record (annotation raykeeper.io/deletion-rules).
// Beside it, a DeleteSelf RayJob is gone once it succeeded, its RayCluster and pods collected with it.
// Needs Ray (tools/setup.sh installs it): fails without.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parse, stringify } from 'yaml';
import { DELETION_RECORD_ANNOTATION } from '../../src/rayjob/constants.ts';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { findRay } from '../../localcluster/ray.ts';
import type { RayJob } from '../../src/types.ts';
import { missingPart } from '../helpers/parts.ts';
import { until } from '../helpers/harness.ts';
import { run, startDevProcess, stopDev, watchRayJob } from './dev-process.ts';

const RECORD_PATH = `jsonpath={.metadata.annotations.${DELETION_RECORD_ANNOTATION.replaceAll('.', '\\.')}}`;

const found = findRay();
const SAMPLE = join(REPO_ROOT, 'manifests', 'samples', 'rayjob-deletion-rules.yaml');

if ('missing' in found) {
  t.fail(missingPart(found.missing));
} else {
  t.test(
    'raykeeper dev: DeleteWorkers then DeleteCluster after 30 s (the sample), DeleteSelf beside it',
    { timeout: 290_000 },
    async (tt) => {
      const d = await startDevProcess(tt);
      const { tmp, kubeconfig } = d;
      const get = (args: string[]) => run(['get', ...args], kubeconfig).trim();

      run(['apply', '-f', SAMPLE], kubeconfig);
      // A head-only RayJob that deletes itself (and so, by owner references, its RayCluster) once it succeeded.
      const self = parse(readFileSync(SAMPLE, 'utf8')) as RayJob & {
        spec: { rayClusterSpec: { workerGroupSpecs: Array<Record<string, unknown>> }; deletionStrategy: unknown };
      };
      self.metadata.name = 'rayjob-delete-self';
      self.spec.rayClusterSpec.workerGroupSpecs = [];
      self.spec.deletionStrategy = { deletionRules: [{ policy: 'DeleteSelf', condition: { jobStatus: 'SUCCEEDED', ttlSeconds: 0 } }] };
      writeFileSync(join(tmp, 'self.yaml'), stringify(self));
      run(['apply', '-f', join(tmp, 'self.yaml')], kubeconfig);

      const clusterOf = async (name: string) => {
        await until(
          () => get(['rayjob', name, '-o', 'jsonpath={.status.rayClusterName}']) !== '',
          `${name}'s RayCluster name`,
          60_000,
          500,
        );
        return get(['rayjob', name, '-o', 'jsonpath={.status.rayClusterName}']);
      };
      const [cluster, selfCluster] = await Promise.all([clusterOf('rayjob-deletion-rules'), clusterOf('rayjob-delete-self')]);

      const seen = await watchRayJob(kubeconfig, 'rayjob-deletion-rules', 200_000);
      const finishedAt = Date.now();
      // On a failure, say why: the status's reason and message, and the Events.
      const why = () =>
        `${get(['rayjob', 'rayjob-deletion-rules', '-o', 'jsonpath=reason={.status.reason} message={.status.message}'])}\n${get(['events', '--field-selector', 'involvedObject.name=rayjob-deletion-rules'])}`;
      tt.equal(
        seen.at(-1),
        'Complete/SUCCEEDED',
        `rayjob-deletion-rules: ${seen.join(' -> ')}${seen.at(-1) === 'Complete/SUCCEEDED' ? '' : `; ${why()}`}`,
      );

      // DeleteWorkers (ttlSeconds 0): the group is suspended, its pod and Ray process go, the head stays.
      const pods = (type: string) =>
        get(['pods', '-l', `ray.io/cluster=${cluster},ray.io/node-type=${type}`, '-o', 'name'])
          .split('\n')
          .filter((l) => l !== '');
      await until(() => pods('worker').length === 0, "the sample's worker pod to be deleted", 60_000, 500);
      tt.equal(get(['raycluster', cluster, '-o', 'jsonpath={.spec.workerGroupSpecs[0].suspend}']), 'true', 'the worker group is suspended');
      tt.equal(pods('head').length, 1, 'the head pod is kept (its dashboard and logs stay readable)');
      tt.match(get(['rayjob', 'rayjob-deletion-rules', '-o', RECORD_PATH]), /DeleteWorkers:jobStatus=SUCCEEDED/);

      // DeleteSelf: the second RayJob goes, and with it its RayCluster.
      await until(
        () => get(['rayjobs', '-o', 'name']).split('\n').includes('rayjob.ray.io/rayjob-delete-self') === false,
        'the DeleteSelf RayJob to go',
        200_000,
        1000,
      ).catch((err: Error) => {
        // Say where it stopped (a Ray job that never SUCCEEDED under load, or a RayJob not deleted).
        const where = get([
          'rayjob',
          'rayjob-delete-self',
          '-o',
          'jsonpath={.status.jobDeploymentStatus}/{.status.jobStatus} deleting={.metadata.deletionTimestamp} {.status.message}',
        ]);
        throw new Error(`${err.message}; it is ${where}`);
      });
      await until(
        () => !get(['rayclusters', '-o', 'name']).includes(selfCluster),
        "the DeleteSelf RayJob's RayCluster to be collected",
        90_000,
        1000,
      );

      // DeleteCluster (ttlSeconds 30): the whole cluster goes about 30 s after the job finished; the RayJob stays.
      await until(() => !get(['rayclusters', '-o', 'name']).includes(cluster), "the sample's RayCluster to be deleted", 90_000, 1000);
      const waited = Date.now() - finishedAt;
      tt.ok(waited >= 25_000, `the RayCluster went after its TTL (${Math.round(waited / 1000)} s after Complete was seen)`);
      // The record is written after the deletion succeeded (src/rayjob/deletion.ts): the cluster can be seen
      // gone a moment before the rule is recorded.
      const recorded = () =>
        get([
          'rayjob',
          'rayjob-deletion-rules',
          '-o',
          `jsonpath={.status.jobDeploymentStatus}/{.status.jobStatus} ${RECORD_PATH.slice('jsonpath='.length)}`,
        ]);
      tt.match(
        await until(() => (recorded().includes('DeleteCluster:') ? recorded() : undefined), 'DeleteCluster recorded', 30_000, 500),
        new RegExp(
          '^Complete/SUCCEEDED \\{"uid":"[0-9a-f-]{36}","done":\\["DeleteWorkers:jobStatus=SUCCEEDED","DeleteCluster:jobStatus=SUCCEEDED"\\]\\}$',
        ),
        'the RayJob is kept, Complete, with both rules recorded',
      );
      await until(() => get(['pods', '-o', 'name']) === '', 'every Ray pod to be collected', 90_000, 1000);
      tt.equal(d.dev.exitCode, null, 'dev still runs');
      await stopDev(tt, d);
    },
  );
}
