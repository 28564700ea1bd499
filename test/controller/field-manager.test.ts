// Issue 12 item 6 on the REAL kube-apiserver: every write the controller makes carries
// fieldManager=raykeeper, so metadata.managedFields says who wrote what (the finalizers it added, the
// RayJob status, the RayCluster it created for a RayJob, its pods, the Events, the Lease).
import t from 'tap';
import { startController } from '../../controller/main.ts';
import { gcsFtCleanupModule } from '../../controller/gcsft-cleanup/module.ts';
import { rayClusterOperatorModule } from '../../controller/raycluster/module.ts';
import { rayJobModule } from '../../controller/rayjob/module.ts';
import { FIELD_MANAGER, KubeClient } from '../../kube/client.ts';
import { RAYJOB_FINALIZER } from '../../src/names.ts';
import { RAYCLUSTERS, RAYJOBS } from '../../src/types.ts';
import type { ApiObject } from '../../kube/model.ts';
import { testNamespace } from '../helpers/control-plane.ts';
import { FINALIZER, quiet, rayCluster, until } from '../helpers/harness.ts';
import { manifest } from '../rayjob/helpers/harness.ts';
import { CONFIGMAPS, EVENTS, LEASES, PODS } from '../../kube/resources.ts';

/** The parts of a managedFields entry's fieldsV1 this test reads. */
type FieldsV1 = { 'f:metadata'?: { 'f:finalizers'?: Record<string, unknown> }; 'f:status'?: Record<string, unknown> } | undefined;

const TEST_MANAGER = 'raykeeper-field-manager-test';

/** Managers whose entry owns `finalizer` in metadata.finalizers (a set: `v:"<name>"`). */
function finalizerOwners(obj: ApiObject, finalizer: string): string[] {
  return (obj.metadata.managedFields ?? [])
    .filter((f) => (f.fieldsV1 as FieldsV1)?.['f:metadata']?.['f:finalizers']?.[`v:${JSON.stringify(finalizer)}`] !== undefined)
    .map((f) => f.manager ?? '');
}

t.test('the controller writes as fieldManager raykeeper: finalizers, RayJob status, created objects, Events, Lease', async (tt) => {
  const ns = await testNamespace(tt);
  // The test's own writes under another name, so what raykeeper wrote stands out.
  const kube = new KubeClient(ns.kubeConfig, { fieldManager: TEST_MANAGER });
  tt.teardown(() => kube.close());
  // What a client that names no field manager is recorded as.
  const anonymous = new KubeClient(ns.kubeConfig, { fieldManager: '' });
  tt.teardown(() => anonymous.close());
  const probe = await anonymous.create({ ...CONFIGMAPS, namespace: ns.name }, { metadata: { name: 'probe' }, data: { k: 'v' } });
  const defaultManager = probe.metadata.managedFields?.[0]?.manager ?? '';
  tt.comment(`a write without fieldManager is recorded as ${JSON.stringify(defaultManager)}`);
  tt.ok(defaultManager !== '' && defaultManager !== FIELD_MANAGER, 'another name than raykeeper');

  const controller = await startController({
    kubeConfig: ns.kubeConfig,
    watchNamespace: ns.name,
    modules: [gcsFtCleanupModule, rayClusterOperatorModule, rayJobModule],
    env: {},
    logger: quiet,
    leaderElect: true,
    leaseNamespace: ns.name,
    moduleFlags: { 'cleanup-image': 'raykeeper:test', 'rayjob-dashboard-url-template': 'http://127.0.0.1:9/{namespace}/{cluster}' },
  });
  tt.teardown(() => controller.stop());

  await kube.create({ ...RAYCLUSTERS, namespace: ns.name }, rayCluster('gcs-ft', '127.0.0.1:6379'));
  await kube.create({ ...RAYJOBS, namespace: ns.name }, manifest('job', { entrypoint: 'sleep 60' }));

  const cluster = await until(async () => {
    const c = await kube.get({ ...RAYCLUSTERS, namespace: ns.name, name: 'gcs-ft' });
    return c.metadata.finalizers?.includes(FINALIZER) ? c : undefined;
  }, 'the GCS FT finalizer');
  tt.same(finalizerOwners(cluster, FINALIZER), [FIELD_MANAGER], "the RayCluster finalizer is raykeeper's");
  tt.ok(
    cluster.metadata.managedFields?.some((f) => f.manager === TEST_MANAGER && f.operation === 'Update'),
    "the test's create is the test's",
  );

  const job = await until(async () => {
    const j = await kube.get({ ...RAYJOBS, namespace: ns.name, name: 'job' });
    return j.status?.jobDeploymentStatus === 'Initializing' ? j : undefined;
  }, 'the RayJob Initializing');
  tt.same(finalizerOwners(job, RAYJOB_FINALIZER), [FIELD_MANAGER], "the RayJob finalizer is raykeeper's");
  const statusWriters = (job.metadata.managedFields ?? []).filter((f) => f.subresource === 'status');
  tt.same(
    statusWriters.map((f) => f.manager),
    [FIELD_MANAGER],
    'the status is written by raykeeper only',
  );
  tt.ok((statusWriters[0]?.fieldsV1 as FieldsV1)?.['f:status']?.['f:jobDeploymentStatus'] !== undefined, 'including jobDeploymentStatus');
  tt.notOk(
    (job.metadata.managedFields ?? []).some((f) => f.manager === defaultManager),
    'nothing under the default client name',
  );

  const made = await until(
    () => kube.get({ ...RAYCLUSTERS, namespace: ns.name, name: job.status?.rayClusterName ?? '' }).catch(() => undefined),
    "the RayJob's RayCluster",
  );
  tt.same(
    [...new Set((made.metadata.managedFields ?? []).filter((f) => !f.subresource).map((f) => f.manager))],
    [FIELD_MANAGER],
    "the RayCluster made for the RayJob is raykeeper's",
  );

  const head = await until(
    async () =>
      (await kube.list({ ...PODS, namespace: ns.name }, { labelSelector: `ray.io/cluster=${made.metadata.name},ray.io/node-type=head` }))
        .items[0],
    'the head pod the operator makes',
  );
  tt.equal(head.metadata.managedFields?.[0]?.manager, FIELD_MANAGER, "the head pod is raykeeper's");

  const event = await until(
    async () => (await kube.list({ ...EVENTS, namespace: ns.name })).items.find((e) => e.reason === 'CreatedRayCluster'),
    'an Event',
  );
  tt.equal(event.metadata.managedFields?.[0]?.manager, FIELD_MANAGER, "Events are raykeeper's");

  const lease = await kube.get({ ...LEASES, namespace: ns.name, name: 'raykeeper-controller' });
  tt.same([...new Set((lease.metadata.managedFields ?? []).map((f) => f.manager))], [FIELD_MANAGER], "the Lease is raykeeper's");
});

t.test('a fieldManager in the request wins over the client default', async (tt) => {
  const ns = await testNamespace(tt);
  const kube = new KubeClient(ns.kubeConfig);
  tt.teardown(() => kube.close());
  const cms = { ...CONFIGMAPS, namespace: ns.name };
  const mine = await kube.create(cms, { metadata: { name: 'default' }, data: { k: 'v' } });
  tt.equal(mine.metadata.managedFields?.[0]?.manager, FIELD_MANAGER, 'the default is raykeeper');
  const other = await kube.create(cms, { metadata: { name: 'explicit' }, data: { k: 'v' } }, { query: { fieldManager: 'someone-else' } });
  tt.equal(other.metadata.managedFields?.[0]?.manager, 'someone-else');
});
