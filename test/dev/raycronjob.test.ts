// A RayCronJob with real Ray in `raykeeper dev` (bin/raykeeper.js dev as a user runs it):
// manifests/samples/raycronjob.yaml makes a RayJob at the next minute, named <cronjob>-<unix minutes>,
// owned by the RayCronJob, which runs to Complete/SUCCEEDED on a Ray cluster of its own; one RayJob a tick
// (never two of one minute); suspended, no RayJob across the next minute; deleted, its RayJobs go with it.
// Needs Ray (tools/setup.sh installs it): fails without.
import { join } from 'node:path';
import t from 'tap';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { findRay } from '../../localcluster/ray.ts';
import type { RayJob } from '../../src/types.ts';
import { missingPart } from '../helpers/parts.ts';
import { sleep } from '../../kube/backoff.ts';
import { until } from '../helpers/harness.ts';
import { run, startDevProcess, stopDev, watchRayJob } from './dev-process.ts';

const found = findRay();
const SAMPLE = join(REPO_ROOT, 'manifests', 'samples', 'raycronjob.yaml');
const NAME = 'raycronjob-sample';

if ('missing' in found) {
  t.fail(missingPart(found.missing));
} else {
  t.test(
    'raykeeper dev: a RayJob a minute, owned, Complete with Ray; none while suspended; gone with the RayCronJob',
    { timeout: 290_000 },
    async (tt) => {
      const d = await startDevProcess(tt);
      const { kubeconfig } = d;
      const children = (): RayJob[] =>
        (JSON.parse(run(['get', 'rayjobs', '-l', `ray.io/cronjob-name=${NAME}`, '-o', 'json'], kubeconfig)) as { items: RayJob[] }).items;

      run(['apply', '-f', SAMPLE], kubeconfig);
      const cron = JSON.parse(run(['get', 'raycronjob', NAME, '-o', 'json'], kubeconfig)) as {
        metadata: { uid: string };
        spec: Record<string, unknown>;
      };
      tt.match(cron.spec, { concurrencyPolicy: 'Forbid', successfulJobsHistoryLimit: 2, failedJobsHistoryLimit: 1 }, 'applied as written');

      await until(() => children().length > 0, 'the first RayJob, at the next minute', 75_000, 500);
      const [first] = children();
      const name = first?.metadata.name ?? '';
      const scheduled = Date.parse(first?.metadata.annotations?.['ray.io/cronjob-scheduled-timestamp'] ?? '');
      tt.equal(name, `${NAME}-${scheduled / 60_000}`, 'named <cronjob>-<scheduled unix minutes>');
      tt.match(
        first?.metadata.ownerReferences,
        [{ kind: 'RayCronJob', name: NAME, uid: cron.metadata.uid, controller: true }],
        'owned by it',
      );
      const seen = await watchRayJob(kubeconfig, name, 200_000);
      tt.equal(seen.at(-1), 'Complete/SUCCEEDED', `${name}: ${seen.join(' -> ')}`);
      tt.equal(
        run(['get', 'raycronjob', NAME, '-o', 'jsonpath={.status.lastScheduleTime}'], kubeconfig),
        new Date(Math.max(...children().map((c) => Date.parse(c.metadata.annotations?.['ray.io/cronjob-scheduled-timestamp'] ?? ''))))
          .toISOString()
          .replace('.000Z', 'Z'),
        'status.lastScheduleTime: the latest tick run',
      );

      run(['patch', 'raycronjob', NAME, '--type', 'merge', '-p', '{"spec":{"suspend":true}}'], kubeconfig);
      await sleep(2_000); // a reconcile already past its decision may still create the tick it decided on
      const before = children()
        .map((c) => c.metadata.name)
        .sort();
      const ticks = children().map((c) => c.metadata.annotations?.['ray.io/cronjob-scheduled-timestamp']);
      tt.equal(new Set(ticks).size, ticks.length, `one RayJob a tick (${before.join(', ')})`);
      const nextMinute = Math.ceil(Date.now() / 60_000) * 60_000;
      await sleep(nextMinute - Date.now() + 10_000);
      tt.same(
        children()
          .map((c) => c.metadata.name)
          .sort(),
        before,
        'suspended: no RayJob for the minute that passed',
      );

      run(['delete', 'raycronjob', NAME], kubeconfig);
      await until(() => children().length === 0, 'its RayJobs to be collected with it', 90_000, 1000);
      await until(() => run(['get', 'pods', '-o', 'name'], kubeconfig) === '', 'every Ray pod to be collected', 90_000, 1000);
      tt.equal(d.dev.exitCode, null, 'dev still runs');
      await stopDev(tt, d);
    },
  );
}
