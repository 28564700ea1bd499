// SidecarMode end to end on the real kube-apiserver and real Ray: the RayJob controller creates the
// RayCluster with the submitter container in its head template, our operator the head pod, the ray
// pod runner runs its Ray container AND its submitter container (`ray job submit` against the head's
// loopback dashboard) and reports both containers' states as a kubelet would. No submitter Job is ever
// created. manifests/samples/rayjob-sidecar.yaml ends Complete / SUCCEEDED; the same RayJob with a
// failing entrypoint and backoffLimit 1 fails on two clusters, one a try, and ends Failed (AppFailed,
// jobStatus FAILED) after its submitter container exited 1; a running one whose head pod is deleted
// ends Failed (AppFailed, "Ray head pod not found.") and its provisioned cluster gets no new head.
// Needs Ray (tools/setup.sh installs it); fails without it, naming the set-up command.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parse } from 'yaml';
import { startController } from '../../controller/main.ts';
import { gcsFtCleanupModule } from '../../controller/gcsft-cleanup/module.ts';
import { rayClusterOperatorModule } from '../../controller/raycluster/module.ts';
import { rayJobModule } from '../../controller/rayjob/module.ts';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { startDashboardProxy } from '../../localcluster/dashboard-proxy.ts';
import { RayPodRunner } from '../../localcluster/pod-runner.ts';
import { findRay } from '../../localcluster/ray.ts';
import { RAYCLUSTERS, RAYJOBS, type RayJob } from '../../src/types.ts';
import { env, quiet, until } from '../helpers/harness.ts';
import { EVENTS, JOBS, PODS } from '../../kube/resources.ts';
import { sleep } from '../../kube/backoff.ts';
import { missingPart } from '../helpers/parts.ts';

// Three SidecarMode RayJobs, the last after the first two (below): more than tap's 300 s per file on a loaded machine.
t.setTimeout(600_000);
const found = findRay();
if ('missing' in found) {
  t.fail(missingPart(found.missing));
} else {
  t.test(
    'SidecarMode: the submitter runs in the head pod; Complete on success, Failed on a failing entrypoint',
    { timeout: 560_000 },
    async (tt) => {
      const e = await env(tt);
      const ns = e.ns.name;
      const pods = new RayPodRunner({ kubeConfig: e.ns.kubeConfig, namespace: ns, ray: found, logger: quiet });
      await pods.start();
      tt.teardown(() => pods.stop());
      const proxy = await startDashboardProxy((namespace, cluster) => pods.dashboardPort(namespace, cluster));
      tt.teardown(() => proxy.stop());
      const c = await startController({
        kubeConfig: e.ns.kubeConfig,
        watchNamespace: ns,
        workers: 2,
        modules: [gcsFtCleanupModule, rayClusterOperatorModule, rayJobModule],
        env: {},
        logger: quiet,
        moduleFlags: {
          'cleanup-image': 'raykeeper:test',
          'rayjob-dashboard-url-template': proxy.urlTemplate,
          'rayjob-submitter-dashboard-url-template': proxy.urlTemplate,
        },
      });
      tt.teardown(() => c.stop());

      const sample = parse(readFileSync(join(REPO_ROOT, 'manifests/samples/rayjob-sidecar.yaml'), 'utf8')) as RayJob;
      const failing: RayJob = structuredClone(sample);
      failing.metadata.name = 'rayjob-sidecar-fails';
      if (failing.spec) {
        failing.spec.entrypoint = 'python -c "import sys; print(\'failing on purpose\'); sys.exit(3)"';
        failing.spec.backoffLimit = 1;
        // A head alone is enough to fail; one Ray process fewer on the test machine.
        if (failing.spec.rayClusterSpec) failing.spec.rayClusterSpec.workerGroupSpecs = [];
      }
      const headless: RayJob = structuredClone(failing);
      headless.metadata.name = 'rayjob-sidecar-head-lost';
      if (headless.spec) {
        headless.spec.entrypoint = 'python -c "import time; time.sleep(600)"';
        headless.spec.backoffLimit = 0;
      }
      await e.kube.create({ ...RAYJOBS, namespace: ns }, sample);
      await e.kube.create({ ...RAYJOBS, namespace: ns }, failing);
      const headPods = async (cluster: string) =>
        (await e.kube.list({ ...PODS, namespace: ns }, { labelSelector: `ray.io/cluster=${cluster},ray.io/node-type=head` })).items;

      const finished = (name: string) =>
        until(
          async () => {
            const j = await e.kube.get({ ...RAYJOBS, namespace: ns, name });
            const s = j.status?.jobDeploymentStatus;
            return s === 'Complete' || s === 'Failed' ? j : undefined;
          },
          `RayJob ${name} finished`,
          220_000,
          1000,
        );
      const [ok, bad] = await Promise.all([finished('rayjob-sidecar'), finished('rayjob-sidecar-fails')]);
      // The head-lost job after those two: started beside two other clusters on a loaded 2-core machine, its
      // head's job agent can miss the 10 s Ray's dashboard waits for one, and `ray job submit` is refused
      // ("No available agent to submit job"; KubeRay's SidecarMode submitter has the same race).
      await e.kube.create({ ...RAYJOBS, namespace: ns }, headless);
      // The head pod of a running job deleted (KubeRay's e2e "RayJob fails when head Pod is deleted").
      const lostHead = (async () => {
        // What the job and its head were last seen doing, for the failure message.
        let seen = '';
        const runningJob = await until(
          async () => {
            const j = await e.kube.get({ ...RAYJOBS, namespace: ns, name: 'rayjob-sidecar-head-lost' });
            const s = j.status;
            const head = s?.rayClusterName ? (await headPods(s.rayClusterName))[0] : undefined;
            const containers = (head?.status?.containerStatuses ?? []).map((c) => `${c.name}=${JSON.stringify(c.state ?? {})}`);
            seen = `${s?.jobDeploymentStatus ?? '-'}/${s?.jobStatus ?? '-'} ${s?.reason ?? ''} ${s?.message ?? ''}; head ${head?.status?.phase ?? 'none'} ${containers.join(' ')}`;
            if (s?.jobDeploymentStatus === 'Complete' || s?.jobDeploymentStatus === 'Failed') {
              throw new Error(`the long job finished before it was seen RUNNING: ${seen}`);
            }
            return s?.jobStatus === 'RUNNING' ? j : undefined;
          },
          'the long job RUNNING',
          200_000,
          1000,
        ).catch((err: Error) => {
          throw new Error(`${err.message} (last seen ${seen})`);
        });
        const cluster = runningJob.status?.rayClusterName ?? '';
        const [head] = await headPods(cluster);
        await e.kube.delete({ ...PODS, namespace: ns, name: head?.metadata.name ?? '' });
        return cluster;
      })();

      const [lost, lostCluster] = await Promise.all([finished('rayjob-sidecar-head-lost'), lostHead]);

      tt.equal(ok.status?.jobDeploymentStatus, 'Complete', `${ok.status?.reason ?? ''} ${ok.status?.message ?? ''}`);
      tt.equal(ok.status?.jobStatus, 'SUCCEEDED');
      const badSeen = `${bad.status?.reason ?? ''}: ${bad.status?.message ?? ''}`;
      tt.equal(bad.status?.jobDeploymentStatus, 'Failed', badSeen);
      tt.equal(bad.status?.jobStatus, 'FAILED', badSeen);
      tt.equal(bad.status?.reason, 'AppFailed', `the Ray job failed (its submitter exited 1 after it): ${badSeen}`);
      tt.equal(bad.status?.failed, 2, 'backoffLimit 1: two tries');
      const created = (await e.kube.list({ ...EVENTS, namespace: ns })).items
        .filter((ev) => ev.involvedObject?.name === 'rayjob-sidecar-fails' && ev.reason === 'CreatedRayCluster')
        .map((ev) => ev.message);
      tt.equal(new Set(created).size, 2, `a new RayCluster each try: ${created.join('; ')}`);

      tt.equal(lost.status?.jobDeploymentStatus, 'Failed');
      tt.equal(lost.status?.reason, 'AppFailed');
      tt.equal(lost.status?.message, 'Ray head pod not found.');
      // ray.io/disable-provisioned-head-restart: the operator keeps the provisioned cluster headless.
      for (let i = 0; i < 6; i++) {
        tt.same(await headPods(lostCluster), [], `no head pod re-created (${i * 500} ms after Failed)`);
        await sleep(500);
      }

      const jobs = await e.kube.list({ ...JOBS, namespace: ns });
      tt.same(
        jobs.items.map((j) => j.metadata.name),
        [],
        'no submitter Job in SidecarMode',
      );

      // ttlSecondsAfterFinished 60: the clusters and their head pods are still there to look at.
      const cluster = await e.kube.get({ ...RAYCLUSTERS, namespace: ns, name: ok.status?.rayClusterName ?? '' });
      tt.equal(cluster.metadata.labels?.['ray.io/job-submission-mode'], 'SidecarMode');
      tt.equal(cluster.metadata.annotations?.['ray.io/disable-provisioned-head-restart'], 'true');
      const exitOf = async (job: RayJob) => {
        const listed = await e.kube.list(
          { ...PODS, namespace: ns },
          { labelSelector: `ray.io/cluster=${job.status?.rayClusterName},ray.io/node-type=head` },
        );
        const head = listed.items[0];
        tt.same(
          head?.spec?.containers.map((x) => x.name),
          ['ray-head', 'ray-job-submitter'],
          `${job.metadata.name}: the head pod runs the submitter container`,
        );
        tt.equal(head?.spec?.restartPolicy, 'Never');
        return head?.status?.containerStatuses?.find((s) => s.name === 'ray-job-submitter')?.state?.terminated?.exitCode;
      };
      tt.equal(await exitOf(ok), 0, 'the submitter container exited 0');
      tt.equal(await exitOf(bad), 1, 'the submitter container exited 1 (`ray job submit` on a FAILED job)');
    },
  );
}
