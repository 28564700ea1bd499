// New is a stored, visible state, on the real kube-apiserver with the real controller runtime: a watch opened before
// the RayJob is created sees the state New stored (with jobId and rayClusterName) before Initializing.
import t from 'tap';
import { Watch } from '@kubernetes/client-node';
import { createLogger } from '../../kube/logger.ts';
import { createMetricsRegistry } from '../../kube/metrics.ts';
import { CUSTOM_RESOURCE_DEFINITIONS } from '../../kube/resources.ts';
import { startController } from '../../controller/main.ts';
import { rayJobModule } from '../../controller/rayjob/module.ts';
import type { RayJob } from '../../src/types.ts';
import { FAKE_RAY_COMMAND, manifest, rayJobHarness } from './helpers/harness.ts';
import { sleep } from '../../kube/backoff.ts';

t.test('a watch from creation sees New (with its names) before Initializing', async (t) => {
  const h = await rayJobHarness(t);
  const seen: RayJob[] = [];
  const watch = new Watch(h.ns.kubeConfig);
  const req = await watch.watch(
    `/apis/ray.io/v1/namespaces/${h.namespace}/rayjobs`,
    {},
    (_type, obj: RayJob) => seen.push(obj),
    () => undefined,
  );
  t.teardown(() => req.abort());
  const controller = await startController({
    kubeConfig: h.ns.kubeConfig,
    watchNamespace: h.namespace,
    modules: [rayJobModule],
    moduleFlags: { 'rayjob-dashboard-url-template': h.dashboard.url, 'rayjob-submitter-ray-command': FAKE_RAY_COMMAND },
    env: {},
    logger: createLogger('rayjob-new-test', { level: process.env.LOG_LEVEL ?? 'warn' }),
    metrics: createMetricsRegistry(),
  });
  t.teardown(() => controller.stop());

  await h.create(manifest('fresh', { entrypoint: 'sleep 60' }));
  const deadline = Date.now() + 30_000;
  while (!seen.some((j) => j.status?.jobDeploymentStatus === 'Initializing')) {
    if (Date.now() > deadline) throw new Error(`no Initializing: ${seen.map((j) => j.status?.jobDeploymentStatus ?? '-').join(',')}`);
    await sleep(50);
  }
  const states = seen.map((j) => j.status?.jobDeploymentStatus ?? '<none>');
  const firstNew = seen.findIndex((j) => j.status?.jobDeploymentStatus === 'New');
  const firstInit = seen.findIndex((j) => j.status?.jobDeploymentStatus === 'Initializing');
  t.ok(firstNew >= 0 && firstNew < firstInit, `New before Initializing (${states.join(' -> ')})`);
  const stored = seen[firstNew]!;
  t.match(stored.status?.jobId, /^fresh-[a-z0-9]{5}$/, 'New carries the jobId');
  t.match(stored.status?.rayClusterName, /^fresh-[a-z0-9]{5}$/, 'and the rayClusterName');
  t.notOk(stored.status?.startTime, 'startTime comes with Initializing');
  t.equal(seen[firstInit]?.status?.rayClusterName, stored.status?.rayClusterName, 'the names New recorded are the ones used');
  t.equal(
    seen.findIndex(
      (j) =>
        j.status?.jobDeploymentStatus === undefined &&
        j.metadata.resourceVersion !== seen[0]?.metadata.resourceVersion &&
        firstNew < seen.indexOf(j),
    ),
    -1,
    'no status-less version after New',
  );
  // `kubectl get rayjob -w` shows New: the CRD's printer column reads the stored field (KubeRay's has the same).
  const crd = await h.kube.get(CUSTOM_RESOURCE_DEFINITIONS.at(undefined, 'rayjobs.ray.io'));
  const columns = crd.spec?.versions?.find((v) => v.name === 'v1')?.additionalPrinterColumns ?? [];
  t.ok(
    columns.some((c) => c.jsonPath === '.status.jobDeploymentStatus'),
    'a printer column shows .status.jobDeploymentStatus',
  );
});
