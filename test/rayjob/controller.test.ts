// The RayJob reconciler inside the real controller runtime (informers, work queue, requeue-after,
// events, metrics), registered as controller/reconcilers.ts lists it, on the real kube-apiserver,
// with the test job runner running submitters and a stand-in for KubeRay's RayCluster controller.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { createLogger } from '../../kube/logger.ts';
import { createMetricsRegistry } from '../../kube/metrics.ts';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { startController } from '../../controller/main.ts';
import { RECONCILER_MODULES } from '../../controller/reconcilers.ts';
import { rayJobModule } from '../../controller/rayjob/module.ts';
import { FAKE_RAY_COMMAND, manifest, rayJobHarness } from './helpers/harness.ts';
import { sleep } from '../../kube/backoff.ts';
import type { RayJob } from '../../src/types.ts';

t.test('registered in controller/reconcilers.ts, its flags in `raykeeper controller --help`', async (t) => {
  t.ok(RECONCILER_MODULES.includes(rayJobModule), 'listed once');
  t.equal(RECONCILER_MODULES.filter((m) => m.name === 'rayjob').length, 1);
  const help = execFileSync(process.execPath, [join(REPO_ROOT, 'bin', 'raykeeper.js'), 'controller', '--help'], { encoding: 'utf8' });
  for (const flag of ['--rayjob-dashboard-url-template', '--rayjob-dashboard-urls', '--rayjob-submitter-ray-command']) t.match(help, flag);
});

t.test('the controller runs a RayJob from creation to Complete and deletes its cluster', async (t) => {
  const h = await rayJobHarness(t);
  const logger = createLogger('rayjob-controller-test', { level: process.env.LOG_LEVEL ?? 'warn' });
  const metrics = createMetricsRegistry();
  const controller = await startController({
    kubeConfig: h.ns.kubeConfig,
    watchNamespace: h.namespace,
    modules: [rayJobModule],
    moduleFlags: {
      'rayjob-dashboard-url-template': h.dashboard.url,
      'rayjob-submitter-dashboard-url-template': h.dashboard.url,
      'rayjob-submitter-ray-command': FAKE_RAY_COMMAND,
    },
    env: {},
    healthPort: 0,
    healthHost: '127.0.0.1',
    logger,
    metrics,
  });
  // KubeRay's RayCluster controller stand-in: a cluster becomes ready shortly after it appears.
  const stop = new AbortController();
  const kuberay = (async () => {
    while (!stop.signal.aborted) {
      for (const c of await h.clusters().catch(() => [])) {
        if (c.status?.state !== 'ready' && !c.metadata.deletionTimestamp) await h.markReady(c.metadata.name ?? '').catch(() => undefined);
      }
      await sleep(200);
    }
  })();
  // Normally stopped at the end of the body; this covers a failed assertion (one teardown, so a
  // failing step cannot leave the loop running).
  t.teardown(async () => {
    stop.abort();
    await kuberay;
    await controller.stop().catch(() => undefined);
  });

  await h.create(manifest('managed', { entrypoint: 'sleep 0.5' }));
  let job: RayJob | undefined;
  const deadline = Date.now() + 60_000;
  const seen: string[] = [];
  for (;;) {
    job = await h.get('managed');
    const s = job?.status?.jobDeploymentStatus ?? 'New';
    if (seen[seen.length - 1] !== s) seen.push(s);
    if (s === 'Complete' || s === 'Failed') break;
    if (Date.now() > deadline) throw new Error(`not finished: ${seen.join(' -> ')} ${JSON.stringify(job?.status)}`);
    await sleep(100);
  }
  t.equal(job?.status?.jobDeploymentStatus, 'Complete', `path seen by polling: ${seen.join(' -> ')}`);
  t.equal(job?.status?.jobStatus, 'SUCCEEDED');
  const cluster = job?.status?.rayClusterName ?? '';
  const gone = Date.now() + 20_000;
  while ((await h.cluster(cluster)) && Date.now() < gone) await sleep(200);
  t.equal(await h.cluster(cluster), undefined, 'RayCluster deleted after the job (ttl 0)');

  const res = await fetch(`http://127.0.0.1:${controller.port}/metrics`);
  const text = await res.text();
  t.match(text, /raykeeper_rayjob_transitions_total\{from="Running",to="Complete"\} 1/, 'transition metric');
  t.match(text, /raykeeper_rayjob_dashboard_requests_total\{operation="get",outcome="found"\}/, 'dashboard metric');
  t.ok(
    (await h.events('managed')).some((e) => e.reason === 'CreatedRayCluster'),
    'events written through the runtime recorder',
  );
  stop.abort();
  await kuberay;
  t.equal(await controller.stop(), 'stopped', 'graceful stop');
});
