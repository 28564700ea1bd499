// The RayJob's own head Service `<rayjob>-head-svc` (KubeRay v1.6.2 common/job.go BuildHeadServiceForRayJob,
// rayjob_controller.go reconcileServices): built as KubeRay builds it, decided in Running (absent: create;
// selecting another attempt's cluster: update; never with a clusterSelector), and made by the reconciler on
// the real kube-apiserver, once, with KubeRay's events.
import t from 'tap';
import { buildHeadService } from '../../src/raycluster/service.ts';
import { buildRayJobHeadService, headServiceCluster, rayJobHeadServiceName } from '../../src/rayjob/head-service.ts';
import { decideRayJob } from '../../src/rayjob/machine/decide.ts';
import { observesHeadService } from '../../src/rayjob/machine/observe.ts';
import { defaultMachineConfig, type Observed, type RayJobStep } from '../../src/rayjob/machine/vocabulary.ts';
import type { Service } from '../../kube/model.ts';
import { SERVICES } from '../../kube/resources.ts';
import { at, cluster, info, iso, rayJob, submitter } from './fixtures.ts';
import { inState, manifest, rayJobHarness } from './helpers/harness.ts';

t.test('built as KubeRay builds it: the cluster head Service spec, the RayJob name, labels and owner', async (t) => {
  const job = rayJob('Running');
  const c = cluster('ready');
  const svc = buildRayJobHeadService(job, c);
  const clusterSvc = buildHeadService(c);
  t.equal(rayJobHeadServiceName(job), 'demo-head-svc', 'utils.GenerateHeadServiceName(RayJobCRD, ...)');
  t.equal(svc.metadata.name, 'demo-head-svc');
  t.equal(svc.metadata.namespace, 'ns1');
  t.same(
    svc.metadata.labels,
    {
      'ray.io/originated-from-cr-name': 'demo',
      'ray.io/originated-from-crd': 'RayJob',
      'ray.io/node-type': 'head',
      'ray.io/identifier': 'demo-head',
    },
    "KubeRay's four labels, not the cluster's",
  );
  t.same(
    svc.metadata.ownerReferences,
    [{ apiVersion: 'ray.io/v1', kind: 'RayJob', name: 'demo', uid: 'uid-demo', controller: true, blockOwnerDeletion: true }],
    'owned (controller) by the RayJob: the garbage collector removes it with the RayJob',
  );
  t.same(svc.spec, clusterSvc.spec, "the cluster head Service's spec: selector, ports, headless");
  t.equal(headServiceCluster(svc), 'demo-fghjk', 'selects the head of this attempt');
  t.equal(svc.spec?.clusterIP, 'None');
  t.equal(svc.spec?.publishNotReadyAddresses, true);
  t.same(
    svc.spec?.ports?.map((p) => [p.name, p.port]),
    [
      ['client', 10001],
      ['dashboard', 8265],
      ['gcs-server', 6379],
      ['metrics', 8080],
      ['serve', 8000],
    ],
  );
  t.notOk(svc.metadata.annotations, 'no annotations');

  const annotated = cluster('ready');
  (annotated.spec as Record<string, unknown>).headServiceAnnotations = { 'cloud/lb': 'internal' };
  t.notOk(buildRayJobHeadService(job, annotated).metadata.annotations, 'headServiceAnnotations are not copied (KubeRay passes none)');

  const custom = cluster('ready');
  const head = (custom.spec as { headGroupSpec: Record<string, unknown> }).headGroupSpec;
  head.serviceType = 'NodePort';
  head.headService = { metadata: { name: 'mine', annotations: { a: 'b' }, labels: { x: 'y' } }, spec: { sessionAffinity: 'ClientIP' } };
  const fromCustom = buildRayJobHeadService(job, custom);
  t.equal(fromCustom.metadata.name, 'demo-head-svc', "a custom headService's name is the cluster's, not the RayJob's");
  t.same(fromCustom.metadata.annotations, { a: 'b' }, "a custom headService's annotations are kept");
  t.equal(fromCustom.metadata.labels?.x, undefined, 'its labels are not');
  t.equal(fromCustom.spec?.type, 'NodePort');
  t.equal(fromCustom.spec?.sessionAffinity, 'ClientIP');
});

t.test('decided in Running: created when absent, moved to a new attempt, never with a clusterSelector', async (t) => {
  const config = defaultMachineConfig();
  const running = rayJob('Running', { status: { jobStatus: 'RUNNING' } });
  const base: Observed = { cluster: cluster('ready'), submitter: submitter('running'), dashboard: info('RUNNING') };
  const decide = (job = running, observed: Observed = base) => decideRayJob(job, observed, at(20), config) as RayJobStep;
  const types = (s: RayJobStep) => s.actions.map((a) => a.type);

  t.same(types(decide()), [], 'not observed: nothing decided');
  const created = decide(running, { ...base, headService: null });
  t.same(types(created), ['createHeadService'], 'absent: created');
  t.equal(created.next, 'Running', 'beside the decision the pass makes anyway');
  const action = created.actions[0];
  t.same(action?.type === 'createHeadService' ? action.service : undefined, buildRayJobHeadService(running, cluster('ready')));

  const current = buildRayJobHeadService(running, cluster('ready'));
  t.same(types(decide(running, { ...base, headService: current })), [], 'selecting this attempt: nothing');

  const stale: Service = buildRayJobHeadService(running, cluster('ready', { name: 'demo-older' }));
  stale.metadata.resourceVersion = '42';
  stale.metadata.labels = { ...stale.metadata.labels, kept: 'yes' };
  stale.spec = { ...stale.spec, clusterIP: '10.0.0.7' };
  const moved = decide(running, { ...base, headService: stale });
  t.same(types(moved), ['updateHeadService'], "another attempt's cluster: updated");
  const update = moved.actions[0];
  const body = update?.type === 'updateHeadService' ? update.service : undefined;
  t.equal(body?.metadata.resourceVersion, '42', 'at the version read');
  t.equal(body?.metadata.labels?.kept, 'yes', 'the stored metadata kept');
  t.equal(headServiceCluster(body!), 'demo-fghjk', 'selecting the new cluster');
  t.equal(body?.spec?.clusterIP, '10.0.0.7', 'clusterIP kept (immutable), as KubeRay does');

  const finished = decide(running, {
    ...base,
    headService: null,
    dashboard: info('SUCCEEDED', { end: 19 }),
    submitter: submitter('complete', 19),
  });
  t.equal(finished.next, 'Complete');
  t.same(types(finished), ['createHeadService'], 'made on the pass that completes too (KubeRay makes it before reading the job)');

  const suspended = decide(rayJob('Running', { spec: { suspend: true } }), { ...base, headService: null });
  t.same(types(suspended), [], 'leaving Running for Suspending: no Service');
  const gone = decide(running, { ...base, cluster: null, headService: null });
  t.same(types(gone), [], 'the cluster gone: no Service');

  const foreign: Service = buildRayJobHeadService(running, cluster('ready', { name: 'demo-older' }));
  foreign.metadata.ownerReferences = [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'someone', uid: 'uid-someone' }];
  const leftAlone = decide(running, { ...base, headService: foreign });
  t.same(types(leftAlone), [], "a Service of that name the RayJob does not own: not taken over (KubeRay's would be)");
  t.same(
    leftAlone.events.map((e) => [e.type, e.reason, e.message]),
    [['Warning', 'FailedToCreateService', 'Service ns1/demo-head-svc exists but is not owned by RayJob ns1/demo; rename or delete it']],
    'and said so',
  );
  t.equal(leftAlone.next, 'Running', 'the job is followed on');

  const selector = { spec: { clusterSelector: { 'ray.io/cluster': 'demo-fghjk' } } };
  t.notOk(observesHeadService(rayJob('Running', selector)), 'clusterSelector: not even looked at (KubeRay: none)');
  t.same(types(decide(rayJob('Running', selector), { ...base, headService: null })), [], 'clusterSelector: none');
  t.ok(observesHeadService(running), 'Running: looked at');
  for (const state of ['New', 'Initializing', 'Waiting', 'Suspending', 'Suspended', 'Retrying', 'Complete', 'Failed', 'ValidationFailed'])
    t.notOk(observesHeadService(rayJob(state)), `${state}: not looked at`);
  t.notOk(observesHeadService(rayJob('Running', { spec: { suspend: true } })), 'Running, suspend requested: not looked at');
  t.notOk(observesHeadService(rayJob('Running', { metadata: { deletionTimestamp: iso(1) } })), 'being deleted: not looked at');
});

t.test('the reconciler makes it on the real API server, once, with Normal CreatedService', async (t) => {
  const h = await rayJobHarness(t);
  await h.create(manifest('svc', { entrypoint: 'sleep 30' }));
  const running = await h.drive('svc', (j) => j?.status?.jobStatus === 'RUNNING', { autoReady: true });
  const clusterName = running.job?.status?.rayClusterName ?? '';
  const ref = { ...SERVICES, namespace: h.namespace, name: 'svc-head-svc' };
  const svc = await h.kube.getOrUndefined(ref);
  t.ok(svc, 'svc-head-svc exists');
  t.equal(svc?.spec?.selector?.['ray.io/cluster'], clusterName, 'selecting the head of the RayJob cluster');
  t.equal(svc?.spec?.clusterIP, 'None', 'headless, as the cluster head Service');
  t.same(
    svc?.metadata.ownerReferences?.map((o) => [o.kind, o.name, o.uid, o.controller]),
    [['RayJob', 'svc', running.job?.metadata.uid, true]],
  );
  const key = `${h.namespace}/svc`;
  for (let i = 0; i < 3; i++) await h.reconciler.reconcile(key);
  const created = (await h.events('svc')).filter((e) => e.reason === 'CreatedService');
  t.same(
    created.map((e) => [e.type, e.message, e.count]),
    [['Normal', `Created the service ${h.namespace}/svc-head-svc`, 1]],
    "KubeRay's event, once",
  );

  // After a retry KubeRay moves the selector to the new cluster: play a Service left by an older attempt.
  const stored = (await h.kube.getOrUndefined(ref))!;
  await h.kube.replace(ref, { ...stored, spec: { ...stored.spec, selector: { ...stored.spec?.selector, 'ray.io/cluster': 'older' } } });
  await h.reconciler.reconcile(key);
  t.equal((await h.kube.getOrUndefined(ref))?.spec?.selector?.['ray.io/cluster'], clusterName, 'moved back to this attempt');
  const updated = (await h.events('svc')).filter((e) => e.reason === 'UpdatedService');
  t.same(
    updated.map((e) => [e.type, e.message]),
    [['Normal', `Updated the service ${h.namespace}/svc-head-svc`]],
  );
});

t.test('a Service already there (AlreadyExists) is fine: the RayJob runs on', async (t) => {
  const h = await rayJobHarness(t);
  await h.create(manifest('pre'));
  // Made before the RayJob reaches Running (a second replica; a cache that had not shown it yet).
  let made = false;
  for (let pass = 0; pass < 50 && !made; pass++) {
    await h.reconciler.reconcile(`${h.namespace}/pre`);
    const job = await h.get('pre');
    const c = await h.cluster(job?.status?.rayClusterName ?? '');
    if (job && c) {
      await h.kube.create({ ...SERVICES, namespace: h.namespace }, buildRayJobHeadService(job, c));
      made = true;
    }
  }
  t.ok(made, 'made beside the RayCluster, before Running');
  const done = await h.drive('pre', inState('Complete', 'Failed'), { autoReady: true, timeoutMs: 60_000 });
  t.equal(done.job?.status?.jobDeploymentStatus, 'Complete', 'the job ran to the end');
  const events = await h.events('pre');
  t.same(
    events.filter((e) => e.type === 'Warning').map((e) => e.reason),
    [],
    'no Warning',
  );
  t.same(
    events.filter((e) => e.reason === 'CreatedService'),
    [],
    'nothing created: it was there',
  );
});
