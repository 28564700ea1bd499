// A K8sJobMode RayJob without entrypoint, as KubeRay v1.6.2 runs it: no validation failure (KubeRay has no
// entrypoint rule), the submitter Job is created with the usual script and an empty entrypoint after `--`
// (KubeRay's BuildJobSubmitCommand: `ray job submit ... -- ;`), and Ray's own CLI refuses that
// ("Missing argument 'ENTRYPOINT...'", exit 2) before it contacts the cluster; the Job fails, and the RayJob
// ends Failed with reason SubmissionFailed and jobStatus still empty, as KubeRay's checkSubmitterAndUpdateStatusIfNeeded
// decides. The real `ray` CLI runs the submitter (tools/install-ray.sh; test/helpers/parts.ts names it
// when missing), the dashboard is the fake one (nothing is ever submitted to it).
import t from 'tap';
import { inState, manifest, rayJobHarness } from './helpers/harness.ts';
import { rayCommand } from './helpers/ray-head.ts';
import { missingPart } from '../helpers/parts.ts';

const ray = rayCommand();
if ('missing' in ray) {
  t.fail(missingPart(ray.missing));
} else {
  t.test('K8sJobMode without entrypoint: submitted as KubeRay does, refused by Ray, Failed(SubmissionFailed)', async (t) => {
    const h = await rayJobHarness(t, { rayCommand: ray.command });
    // One submitter attempt (submitterConfig.backoffLimit 0) keeps the test short; KubeRay's default 2 only repeats it.
    await h.create(manifest('no-entrypoint', { entrypoint: undefined, submitterConfig: { backoffLimit: 0 } }));
    const { job, states } = await h.drive('no-entrypoint', inState('Complete', 'Failed', 'ValidationFailed'), {
      autoReady: true,
      timeoutMs: 90_000,
      maxSleepMs: 500,
    });
    t.same(states, ['New', 'Initializing', 'Running', 'Failed'], 'no ValidationFailed: submitted, then Failed');
    t.equal(job?.status?.reason, 'SubmissionFailed');
    t.equal(job?.status?.jobStatus ?? '', '', 'Ray never knew the job');
    const submitter = (await h.submitterJob('no-entrypoint')) as {
      spec?: { template?: { spec?: { containers?: Array<{ args?: string[] }> } } };
    };
    const script = submitter?.spec?.template?.spec?.containers?.[0]?.args?.[0] ?? '';
    t.match(script, /job submit .* -- {2}; fi/, `the entrypoint after \`--\` is empty: ${script}`);
    t.match(h.runner.output(h.namespace, 'no-entrypoint'), /Missing argument 'ENTRYPOINT\.\.\.'/, "Ray's CLI refused it");
    t.equal(h.dashboard.jobs.size, 0, 'nothing was submitted to the dashboard');
  });
}
