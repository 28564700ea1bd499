// What a cluster admin applies: `kubectl kustomize manifests/default` renders, every object is accepted
// by the real API server (the webhook configuration by server-side dry run only: the control plane is
// shared), the Pods meet the restricted Pod Security Standard, and RBAC grants the controller exactly
// what it calls (SubjectAccessReviews, and real calls with the ServiceAccount's own token).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { applyObject, Discovery, type KubeObject, parseManifests } from '../../localcluster/apply.ts';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { kubeConfigFor } from '../../localcluster/control-plane.ts';
import { JSON_PATCH, type KubeApiError, KubeClient, MERGE_PATCH, resourcePath } from '../../kube/client.ts';
import type { ObjectWithMeta } from '../../kube/model.ts';
import { DEPLOYMENTS, EVENTS, JOBS, LEASES, NAMESPACES, PODS, Resource, SECRETS, SERVICES } from '../../kube/resources.ts';
import { RAYCLUSTERS } from '../../src/types.ts';
import { getControlPlane, serviceAccountToken, testNamespace } from '../helpers/control-plane.ts';
import { kustomize } from '../helpers/kustomize.ts';
import { until } from '../helpers/until.ts';

const SYSTEM_NS = 'raykeeper-system';
const CONTROLLER = `system:serviceaccount:${SYSTEM_NS}:raykeeper-controller`;
const WEBHOOK = `system:serviceaccount:${SYSTEM_NS}:raykeeper-webhook`;

const find = (objs: KubeObject[], kind: string, name: string): any => {
  const o = objs.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`no ${kind} ${name} in the rendered manifests`);
  return o;
};

const rendered = kustomize('manifests/default');

t.test('the kustomizations render: default = crds + base; base has no CRDs', async (t) => {
  const crds = kustomize('manifests/crds');
  const base = kustomize('manifests/base');
  t.same(
    crds.map((o) => `${o.kind}/${o.metadata.name}`),
    [
      'CustomResourceDefinition/rayclusters.ray.io',
      'CustomResourceDefinition/raycronjobs.ray.io',
      'CustomResourceDefinition/rayjobs.ray.io',
    ],
  );
  t.notOk(
    base.some((o) => o.kind === 'CustomResourceDefinition'),
    'base is usable alongside KubeRay CRDs',
  );
  const key = (o: KubeObject) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
  t.same(rendered.map(key).sort(), [...crds, ...base].map(key).sort());
  const kinds = new Set(rendered.map((o) => o.kind));
  for (const k of [
    'Namespace',
    'ServiceAccount',
    'ClusterRole',
    'ClusterRoleBinding',
    'Role',
    'RoleBinding',
    'Deployment',
    'Service',
    'PodDisruptionBudget',
    'MutatingWebhookConfiguration',
    'ValidatingWebhookConfiguration',
    'Secret',
  ]) {
    t.ok(kinds.has(k), `has a ${k}`);
  }
  for (const o of rendered.filter(
    (x) =>
      ![
        'Namespace',
        'CustomResourceDefinition',
        'ClusterRole',
        'ClusterRoleBinding',
        'MutatingWebhookConfiguration',
        'ValidatingWebhookConfiguration',
      ].includes(x.kind),
  )) {
    t.equal(o.metadata.namespace, SYSTEM_NS, `${o.kind}/${o.metadata.name} lives in ${SYSTEM_NS}`);
  }
});

t.test('webhook and controller workloads: replicas, probes, security, wiring', async (t) => {
  const webhook = find(rendered, 'Deployment', 'raykeeper-webhook');
  const controller = find(rendered, 'Deployment', 'raykeeper-controller');
  const pdb = find(rendered, 'PodDisruptionBudget', 'raykeeper-webhook');
  const svc = find(rendered, 'Service', 'raykeeper-webhook');
  t.equal(webhook.spec.replicas, 2);
  t.ok(controller.spec.replicas >= 1 && controller.spec.replicas <= 2);
  const wc = webhook.spec.template.spec.containers[0];
  const cc = controller.spec.template.spec.containers[0];
  t.same(wc.args, ['webhook', '--cert', '/etc/raykeeper/tls/tls.crt', '--key', '/etc/raykeeper/tls/tls.key', '--drain-seconds=5']);
  t.ok(5 < webhook.spec.template.spec.terminationGracePeriodSeconds, 'the drain fits in the grace period');
  t.equal(cc.args[0], 'controller');
  t.ok(cc.args.includes('--leader-elect'), 'leader election on');
  for (const [c, image] of [
    [wc, 'raykeeper:0.1.0'],
    [cc, 'raykeeper:0.1.0'],
  ]) {
    t.equal(c.image, image);
    t.match(c.securityContext, { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
  }
  for (const d of [webhook, controller])
    t.match(d.spec.template.spec.securityContext, { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
  t.match(wc.readinessProbe, { httpGet: { path: '/readyz', port: 'https', scheme: 'HTTPS' } });
  t.match(wc.livenessProbe, { httpGet: { path: '/healthz', port: 'https', scheme: 'HTTPS' } });
  t.same(wc.ports, [{ name: 'https', containerPort: 9443, protocol: 'TCP' }]);
  t.match(cc.readinessProbe, { httpGet: { path: '/readyz' } });
  t.match(cc.livenessProbe, { httpGet: { path: '/healthz' } });
  t.equal(
    webhook.spec.template.spec.automountServiceAccountToken,
    true,
    'the webhook gets an API token: it lists and watches RayClusters (its only grant)',
  );
  t.equal(webhook.spec.template.spec.volumes.find((v: any) => v.name === 'tls').secret.secretName, 'raykeeper-webhook-tls');
  find(rendered, 'Secret', 'raykeeper-webhook-tls');
  // The Service and the PDB select the webhook Pods, and only them.
  const podLabels = webhook.spec.template.metadata.labels;
  t.match(podLabels, svc.spec.selector);
  t.match(podLabels, pdb.spec.selector.matchLabels);
  t.notMatch(controller.spec.template.metadata.labels, svc.spec.selector, 'the Service does not select the controller');
  t.same(svc.spec.ports, [{ name: 'https', port: 443, targetPort: 'https', protocol: 'TCP' }]);
  t.equal(pdb.spec.minAvailable, 1);
});

t.test('MutatingWebhookConfiguration: v1 reviews, no side effects, system namespaces excluded, the right rules', async (t) => {
  const mwc = find(rendered, 'MutatingWebhookConfiguration', 'raykeeper');
  const svc = find(rendered, 'Service', 'raykeeper-webhook');
  const byPath = Object.fromEntries(mwc.webhooks.map((w: any) => [w.clientConfig.service.path, w]));
  t.same(Object.keys(byPath).sort(), ['/mutate-ray-io-v1-raycluster', '/mutate-ray-io-v1-raycronjob', '/mutate-ray-io-v1-rayjob']);
  for (const w of mwc.webhooks) {
    t.same(w.admissionReviewVersions, ['v1']);
    t.equal(w.sideEffects, 'None');
    t.ok(w.timeoutSeconds >= 1 && w.timeoutSeconds <= 10, 'a short timeout');
    t.equal(w.failurePolicy, 'Ignore');
    t.match(w.clientConfig.service, { name: svc.metadata.name, namespace: svc.metadata.namespace, port: 443 });
    t.same(w.namespaceSelector.matchExpressions, [
      { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', 'kube-public', 'kube-node-lease', SYSTEM_NS] },
    ]);
  }
  t.same(byPath['/mutate-ray-io-v1-raycluster'].rules, [
    { apiGroups: ['ray.io'], apiVersions: ['v1'], resources: ['rayclusters'], operations: ['CREATE', 'UPDATE'], scope: 'Namespaced' },
  ]);
  t.same(byPath['/mutate-ray-io-v1-rayjob'].rules, [
    { apiGroups: ['ray.io'], apiVersions: ['v1'], resources: ['rayjobs'], operations: ['CREATE'], scope: 'Namespaced' },
  ]);
  t.same(byPath['/mutate-ray-io-v1-raycronjob'].rules, [
    { apiGroups: ['ray.io'], apiVersions: ['v1'], resources: ['raycronjobs'], operations: ['CREATE'], scope: 'Namespaced' },
  ]);
  const doc = readFileSync(join(REPO_ROOT, 'manifests/base/mutatingwebhookconfiguration.yaml'), 'utf8');
  t.match(doc, /failurePolicy: Ignore, on purpose/, 'the failurePolicy choice is justified where it is set');
});

t.test(
  'ValidatingWebhookConfiguration: KubeRay paths, CREATE and UPDATE, same service, selector and Ignore as the mutating one',
  async (t) => {
    const vwc = find(rendered, 'ValidatingWebhookConfiguration', 'raykeeper');
    const mwc = find(rendered, 'MutatingWebhookConfiguration', 'raykeeper');
    const byPath = Object.fromEntries(vwc.webhooks.map((w: any) => [w.clientConfig.service.path, w]));
    t.same(Object.keys(byPath).sort(), ['/validate-ray-io-v1-raycluster', '/validate-ray-io-v1-raycronjob', '/validate-ray-io-v1-rayjob']);
    for (const w of vwc.webhooks) {
      t.same(w.admissionReviewVersions, ['v1']);
      t.equal(w.sideEffects, 'None');
      t.equal(w.failurePolicy, 'Ignore');
      t.equal(w.matchPolicy, 'Equivalent');
      t.equal(w.timeoutSeconds, mwc.webhooks[0].timeoutSeconds);
      t.same(w.clientConfig.service, { ...mwc.webhooks[0].clientConfig.service, path: w.clientConfig.service.path });
      t.same(w.namespaceSelector, mwc.webhooks[0].namespaceSelector);
    }
    for (const [path, resource] of [
      ['/validate-ray-io-v1-raycluster', 'rayclusters'],
      ['/validate-ray-io-v1-rayjob', 'rayjobs'],
      ['/validate-ray-io-v1-raycronjob', 'raycronjobs'],
    ]) {
      t.same(byPath[path!].rules, [
        { apiGroups: ['ray.io'], apiVersions: ['v1'], resources: [resource], operations: ['CREATE', 'UPDATE'], scope: 'Namespaced' },
      ]);
    }
    const doc = readFileSync(join(REPO_ROOT, 'manifests/base/validatingwebhookconfiguration.yaml'), 'utf8');
    t.match(doc, /failurePolicy: Ignore, on purpose/, 'the failurePolicy choice is justified where it is set');
  },
);

t.test('every object is accepted by the real API server; Pods meet the restricted profile', async (t) => {
  const cp = await getControlPlane();
  const kube = new KubeClient(cp.kubeConfig());
  t.teardown(() => kube.close());
  const discovery = new Discovery(kube);
  // Everything through server-side dry run first: validation and admission, nothing stored.
  for (const o of rendered) {
    const warnings: string[] = [];
    if (o.kind === 'Namespace' || o.kind === 'CustomResourceDefinition')
      await applyObject(kube, o, { discovery, fieldManager: 'raykeeper-test' });
    const r = await applyObject(kube, o, { discovery, dryRun: true, fieldManager: 'raykeeper-test', warnings });
    t.equal(r.metadata.name, o.metadata.name, `${o.kind}/${o.metadata.name} accepted (dry run)`);
    t.same(
      warnings.filter((w) => /PodSecurity|deprecated/i.test(w)),
      [],
      `${o.kind}/${o.metadata.name}: no PodSecurity or deprecation warning`,
    );
  }
  // Then for real, except the webhook configurations (they would intercept other tests' RayClusters).
  for (const o of rendered.filter((x) => x.kind !== 'MutatingWebhookConfiguration' && x.kind !== 'ValidatingWebhookConfiguration')) {
    await applyObject(kube, o, { discovery, fieldManager: 'raykeeper-test' });
  }
  const stored = await kube.get(DEPLOYMENTS.at(SYSTEM_NS, 'raykeeper-webhook'));
  t.equal(stored.spec?.replicas, 2, 'stored');
  const ns = await kube.get({ ...NAMESPACES, name: SYSTEM_NS });
  t.equal(ns.metadata.labels?.['pod-security.kubernetes.io/enforce'], 'restricted');
  // A Pod from the webhook's template is admitted in the restricted namespace (dry run).
  const webhook = find(rendered, 'Deployment', 'raykeeper-webhook');
  const pod = await kube.create(
    { ...PODS, namespace: SYSTEM_NS },
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'psa-check', labels: webhook.spec.template.metadata.labels },
      spec: webhook.spec.template.spec,
    },
    { query: { dryRun: 'All' } },
  );
  t.equal(pod.metadata.name, 'psa-check', 'the restricted profile admits the webhook Pod');
  const rootPod = await kube
    .create(
      { ...PODS, namespace: SYSTEM_NS },
      { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'root' }, spec: { containers: [{ name: 'c', image: 'x' }] } },
      { query: { dryRun: 'All' } },
    )
    .then(
      () => undefined,
      (e: KubeApiError) => e,
    );
  t.equal(rootPod?.statusCode, 403, 'and refuses a Pod that does not meet it (the check is real)');
});

interface Access {
  verb: string;
  group?: string;
  resource: string;
  subresource?: string;
  namespace?: string;
}

/** An authorization.k8s.io/v1 SubjectAccessReview, as far as this test reads its answer. */
interface SubjectAccessReview extends ObjectWithMeta {
  status?: { allowed?: boolean };
}
const SUBJECT_ACCESS_REVIEWS = new Resource<SubjectAccessReview>({
  group: 'authorization.k8s.io',
  version: 'v1',
  plural: 'subjectaccessreviews',
});

async function allowed(kube: KubeClient, user: string, a: Access): Promise<boolean> {
  const ns = user.split(':')[2]!;
  const review = await kube.create(SUBJECT_ACCESS_REVIEWS, {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    spec: {
      user,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${ns}`, 'system:authenticated'],
      resourceAttributes: { group: a.group ?? '', ...a },
    },
  });
  return review.status?.allowed === true;
}

const show = (a: Access) =>
  `${a.verb} ${a.group ? a.group + '/' : ''}${a.resource}${a.subresource ? '/' + a.subresource : ''}${a.namespace ? ' in ' + a.namespace : ' cluster-wide'}`;

t.test('RBAC: the controller may do what it calls and no more; the webhook may only list and watch RayClusters', async (t) => {
  const cp = await getControlPlane();
  const kube = new KubeClient(cp.kubeConfig());
  t.teardown(() => kube.close());
  const discovery = new Discovery(kube);
  for (const o of rendered.filter((x) => /Namespace|ServiceAccount|Role/.test(x.kind)))
    await applyObject(kube, o, { discovery, fieldManager: 'raykeeper-test' });

  const userNs = 'team-a';
  const ray = (resource: string, verbs: string[], subresource?: string): Access[] =>
    verbs.map((verb) => ({ verb, group: 'ray.io', resource, subresource, namespace: userNs }));
  const needed: Access[] = [
    ...ray('rayclusters', ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete']),
    ...ray('rayclusters', ['get', 'update', 'patch'], 'status'),
    ...ray('rayclusters', ['update'], 'finalizers'),
    ...ray('rayjobs', ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete']),
    ...ray('rayjobs', ['get', 'update', 'patch'], 'status'),
    ...ray('rayjobs', ['update'], 'finalizers'),
    ...ray('raycronjobs', ['get', 'list', 'watch']),
    ...ray('raycronjobs', ['update', 'patch'], 'status'),
    ...ray('raycronjobs', ['update'], 'finalizers'),
    { verb: 'list', group: 'ray.io', resource: 'rayclusters' }, // informers watch all namespaces
    { verb: 'watch', group: 'ray.io', resource: 'rayjobs' },
    { verb: 'watch', group: 'ray.io', resource: 'raycronjobs' },
    ...['list', 'watch', 'create', 'delete'].map((verb) => ({ verb, resource: 'pods', namespace: userNs })),
    // update: the RayJob's head Service moved to a retry's cluster (KubeRay's reconcileServices).
    ...['list', 'watch', 'create', 'update'].map((verb) => ({ verb, resource: 'services', namespace: userNs })),
    // The autoscaler's ServiceAccount / Role / RoleBinding, and the Role's own rules (escalation prevention).
    ...['get', 'create'].flatMap((verb) => [
      { verb, resource: 'serviceaccounts', namespace: userNs },
      { verb, group: 'rbac.authorization.k8s.io', resource: 'roles', namespace: userNs },
      { verb, group: 'rbac.authorization.k8s.io', resource: 'rolebindings', namespace: userNs },
    ]),
    ...['get', 'patch'].map((verb) => ({ verb, resource: 'pods', namespace: userNs })),
    { verb: 'patch', resource: 'pods', subresource: 'resize', namespace: userNs },
    // Token auth's Secret: the operator creates it; the RayJob controller GETs it (the dashboard token), by name.
    { verb: 'create', resource: 'secrets', namespace: userNs },
    { verb: 'get', resource: 'secrets', namespace: userNs },
    // Embedded GCS storage's PVC: the operator gets and creates it, the orphan finder lists them.
    ...['get', 'list', 'create'].map((verb) => ({ verb, resource: 'persistentvolumeclaims', namespace: userNs })),
    ...['create', 'get', 'list', 'watch', 'delete'].map((verb) => ({ verb, group: 'batch', resource: 'jobs', namespace: userNs })),
    ...['create', 'patch'].flatMap((verb) => [
      { verb, resource: 'events', namespace: userNs },
      { verb, group: 'events.k8s.io', resource: 'events', namespace: userNs },
    ]),
    // list: the single leader takes its Lease only while no sharded layout's member Leases are live.
    ...['get', 'create', 'update', 'list'].map((verb) => ({
      verb,
      group: 'coordination.k8s.io',
      resource: 'leases',
      namespace: SYSTEM_NS,
    })),
  ];
  // Secrets: get only (a ClusterRole's get reaches every namespace, raykeeper-system's too: RBAC has no deny).
  const forbidden: Access[] = [
    { verb: 'list', resource: 'secrets' },
    { verb: 'watch', resource: 'secrets' },
    ...['list', 'watch', 'update', 'patch', 'delete'].map((verb) => ({ verb, resource: 'secrets', namespace: userNs })),
    { verb: 'delete', resource: 'namespaces' },
    { verb: 'create', resource: 'namespaces' },
    ...['create', 'update', 'patch', 'delete'].map((verb) => ({
      verb,
      group: 'apiextensions.k8s.io',
      resource: 'customresourcedefinitions',
    })),
    ...['create', 'update', 'patch', 'delete'].map((verb) => ({ verb, group: 'ray.io', resource: 'raycronjobs', namespace: userNs })),
    { verb: 'deletecollection', group: 'ray.io', resource: 'rayjobs', namespace: userNs },
    { verb: 'deletecollection', group: 'ray.io', resource: 'rayclusters', namespace: userNs },
    { verb: 'deletecollection', resource: 'pods', namespace: userNs },
    { verb: 'update', resource: 'pods', namespace: userNs },
    ...['update', 'patch', 'delete', 'watch'].map((verb) => ({ verb, resource: 'persistentvolumeclaims', namespace: userNs })),
    { verb: 'escalate', group: 'rbac.authorization.k8s.io', resource: 'roles', namespace: userNs },
    { verb: 'bind', group: 'rbac.authorization.k8s.io', resource: 'roles', namespace: userNs },
    ...['update', 'delete'].flatMap((verb) => [
      { verb, resource: 'serviceaccounts', namespace: userNs },
      { verb, group: 'rbac.authorization.k8s.io', resource: 'roles', namespace: userNs },
      { verb, group: 'rbac.authorization.k8s.io', resource: 'rolebindings', namespace: userNs },
    ]),
    { verb: 'get', resource: 'services', namespace: userNs },
    { verb: 'patch', resource: 'services', namespace: userNs },
    { verb: 'delete', resource: 'services', namespace: userNs },
    { verb: 'get', resource: 'pods', subresource: 'log', namespace: userNs },
    { verb: 'create', resource: 'pods', subresource: 'exec', namespace: userNs },
    { verb: 'update', group: 'batch', resource: 'jobs', namespace: userNs },
    { verb: 'patch', group: 'batch', resource: 'jobs', namespace: userNs },
    { verb: 'get', resource: 'configmaps', namespace: userNs },
    { verb: 'create', group: 'apps', resource: 'deployments', namespace: userNs },
    { verb: 'get', group: 'coordination.k8s.io', resource: 'leases', namespace: userNs },
    { verb: 'delete', group: 'coordination.k8s.io', resource: 'leases', namespace: SYSTEM_NS },
    { verb: 'update', group: 'admissionregistration.k8s.io', resource: 'mutatingwebhookconfigurations' },
    { verb: 'escalate', group: 'rbac.authorization.k8s.io', resource: 'clusterroles' },
    { verb: 'create', group: 'rbac.authorization.k8s.io', resource: 'clusterrolebindings' },
    { verb: 'create', resource: 'serviceaccounts', subresource: 'token', namespace: SYSTEM_NS },
  ];
  for (const a of needed) t.ok(await allowed(kube, CONTROLLER, a), `controller may ${show(a)}`);
  for (const a of forbidden) t.notOk(await allowed(kube, CONTROLLER, a), `controller may NOT ${show(a)}`);
  // The storage-namespace check's cache (webhook/claims.ts): list and watch RayClusters, every namespace.
  const readsClusters = (a: Access) =>
    a.group === 'ray.io' && a.resource === 'rayclusters' && !a.subresource && /^(list|watch)$/.test(a.verb);
  const webhookNeeds: Access[] = ['list', 'watch'].flatMap((verb) => [
    { verb, group: 'ray.io', resource: 'rayclusters' },
    { verb, group: 'ray.io', resource: 'rayclusters', namespace: userNs },
  ]);
  for (const a of webhookNeeds) t.ok(await allowed(kube, WEBHOOK, a), `webhook may ${show(a)}`);
  for (const a of [
    ...needed,
    { verb: 'get', resource: 'secrets', namespace: SYSTEM_NS },
    { verb: 'get', group: 'ray.io', resource: 'rayclusters' },
  ])
    if (!readsClusters(a)) t.notOk(await allowed(kube, WEBHOOK, a), `webhook may NOT ${show(a)}`);

  // The optional Secret reader adds get on ConfigMaps (no list), only when applied. Undone at the end of the test.
  const optional = kustomize('manifests/optional/controller-secret-reader');
  for (const o of optional) await applyObject(kube, o, { discovery, fieldManager: 'raykeeper-test' });
  t.teardown(async () => {
    for (const o of optional) await kube.delete(await discovery.refOf(o)).catch(() => {});
  });
  // The API server authorizes from its RBAC informer cache: the new binding counts once it has seen it.
  const granted = await until(
    () => allowed(kube, CONTROLLER, { verb: 'get', resource: 'configmaps', namespace: userNs }),
    'the optional reader to take effect',
    10_000,
    50,
  ).catch(() => false);
  t.ok(granted, 'with the optional reader: get configmaps');
  t.notOk(await allowed(kube, CONTROLLER, { verb: 'list', resource: 'secrets', namespace: userNs }), 'but never list secrets');
  t.notOk(await allowed(kube, CONTROLLER, { verb: 'list', resource: 'configmaps', namespace: userNs }), 'nor configmaps');

  // The optional sharding Role: delete Leases (list is the base Role's), in raykeeper-system only.
  const sharding = kustomize('manifests/optional/controller-sharding');
  for (const o of sharding) await applyObject(kube, o, { discovery, fieldManager: 'raykeeper-test' });
  t.teardown(async () => {
    for (const o of sharding) await kube.delete(await discovery.refOf(o)).catch(() => {});
  });
  const leases = (verb: string, namespace: string): Access => ({ verb, group: 'coordination.k8s.io', resource: 'leases', namespace });
  t.ok(
    await until(() => allowed(kube, CONTROLLER, leases('delete', SYSTEM_NS)), 'the sharding Role to take effect', 10_000, 50).catch(
      () => false,
    ),
    'with the sharding Role: delete leases',
  );
  t.ok(await allowed(kube, CONTROLLER, leases('list', SYSTEM_NS)), 'and list them');
  t.notOk(await allowed(kube, CONTROLLER, leases('list', userNs)), 'only in raykeeper-system');
});

t.test("real calls with the controller ServiceAccount's own token", async (t) => {
  const ns = await testNamespace(t);
  const admin = ns.kube;
  const discovery = new Discovery(admin);
  for (const o of rendered.filter((x) => /Namespace|ServiceAccount|Role/.test(x.kind)))
    await applyObject(admin, o, { discovery, fieldManager: 'raykeeper-test' });
  const token = await serviceAccountToken(admin, SYSTEM_NS, 'raykeeper-controller');
  const sa = new KubeClient(kubeConfigFor({ ...ns.cp.info, token }));
  t.teardown(() => sa.close());
  const rc = {
    apiVersion: 'ray.io/v1',
    kind: 'RayCluster',
    metadata: { name: 'rc', finalizers: ['ray.io/gcs-ft-redis-cleanup-finalizer'] },
    spec: { headGroupSpec: { template: { spec: { containers: [{ name: 'h', image: 'x' }] } } } },
  };
  const rcRef = { ...RAYCLUSTERS, namespace: ns.name, name: 'rc' };
  const created = await sa.create(rcRef, rc);
  t.equal(created.metadata.name, 'rc', 'creates a RayCluster');
  await sa.patch({ ...rcRef, subresource: 'status' }, { status: { state: 'ready' } }, MERGE_PATCH);
  const job = await sa.create(JOBS.at(ns.name), {
    metadata: {
      name: 'rc-redis-cleanup',
      ownerReferences: [
        {
          apiVersion: 'ray.io/v1',
          kind: 'RayCluster',
          name: 'rc',
          uid: created.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: { backoffLimit: 0, template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'x' }] } } },
  });
  t.same(
    [job.metadata.name, job.metadata.ownerReferences?.[0]?.uid],
    ['rc-redis-cleanup', created.metadata.uid],
    'creates the cleanup Job owned by the RayCluster',
  );
  const podDelete = await sa.delete({ ...PODS, namespace: ns.name, name: 'rc-head-xyz' }).then(
    (found) => (found ? 200 : 404),
    (e: KubeApiError) => e.statusCode,
  );
  t.equal(podDelete, 404, 'may delete a Pod (404: none there, not 403)');
  t.equal(
    (await sa.request<{ kind: string }>('GET', resourcePath(PODS.at(ns.name)), { query: { labelSelector: 'ray.io/cluster=rc' } })).kind,
    'PodList',
    'lists Pods',
  );
  const owner = [
    { apiVersion: 'ray.io/v1', kind: 'RayCluster', name: 'rc', uid: created.metadata.uid, controller: true, blockOwnerDeletion: true },
  ];
  const pod = await sa.create(
    { ...PODS, namespace: ns.name },
    {
      metadata: { name: 'rc-head', labels: { 'ray.io/cluster': 'rc' }, ownerReferences: owner },
      spec: { containers: [{ name: 'ray-head', image: 'x' }] },
    },
    { query: { dryRun: 'All' } },
  );
  t.same(
    [pod.metadata.name, pod.metadata.ownerReferences?.[0]?.uid],
    ['rc-head', created.metadata.uid],
    'creates a head Pod owned by the RayCluster (dry run: the API server answers as it would store it)',
  );
  const svc = await sa.create(
    SERVICES.at(ns.name),
    {
      metadata: { name: 'rc-head-svc', ownerReferences: owner },
      spec: { clusterIP: 'None', selector: { 'ray.io/cluster': 'rc' }, ports: [{ name: 'gcs-server', port: 6379 }] },
    },
    { query: { dryRun: 'All' } },
  );
  t.same(
    [svc.metadata.name, svc.metadata.ownerReferences?.[0]?.uid, svc.spec?.clusterIP],
    ['rc-head-svc', created.metadata.uid, 'None'],
    'creates the head Service owned by the RayCluster (dry run)',
  );
  const event = await sa.create(EVENTS.at(ns.name), {
    metadata: { generateName: 'rc.' },
    involvedObject: { apiVersion: 'ray.io/v1', kind: 'RayCluster', name: 'rc', namespace: ns.name, uid: created.metadata.uid },
    reason: 'CreatedRedisCleanupJob',
    message: 'test',
    type: 'Normal',
  });
  t.same([event.reason, event.involvedObject.uid], ['CreatedRedisCleanupJob', created.metadata.uid], 'records an Event');
  const lease = await sa.create(LEASES.at(SYSTEM_NS), { metadata: { generateName: 'raykeeper-test-' }, spec: { holderIdentity: 'x' } });
  t.same([lease.metadata.namespace, lease.spec?.holderIdentity], [SYSTEM_NS, 'x'], 'creates a Lease in its own namespace');
  const released = await sa.patch(rcRef, [{ op: 'remove', path: '/metadata/finalizers/0' }], JSON_PATCH);
  t.same(released.metadata.finalizers ?? [], [], 'removes the finalizer');
  t.ok(await sa.delete(rcRef), 'deletes the RayCluster');
  t.equal(await sa.getOrUndefined(rcRef), undefined, 'the RayCluster is gone');
  const denied = await sa.list(SECRETS.at(ns.name)).then(
    () => 200,
    (e: KubeApiError) => e.statusCode,
  );
  t.equal(denied, 403, 'cannot list Secrets');
});

t.test('samples are valid objects for our CRDs', async (t) => {
  const ns = await testNamespace(t);
  const discovery = new Discovery(ns.kube);
  const dir = join(REPO_ROOT, 'manifests/samples');
  const files = readdirSync(dir).filter((f) => f.endsWith('.yaml'));
  t.ok(files.length >= 4, files.join(', '));
  const byName = new Map<string, KubeObject>();
  for (const f of files) {
    for (const o of parseManifests(readFileSync(join(dir, f), 'utf8'))) {
      const stored = await applyObject(
        ns.kube,
        { ...o, metadata: { ...o.metadata, namespace: ns.name } },
        { discovery, fieldManager: 'raykeeper-test' },
      );
      t.equal(stored.metadata.namespace, ns.name, `${f}: ${o.kind}/${o.metadata.name} stored`);
      byName.set(`${o.kind}/${o.metadata.name}`, o);
    }
  }
  const gcsFt = byName.get('RayCluster/raycluster-external-redis');
  t.ok(gcsFt, "a GCS FT RayCluster like KubeRay's external-redis sample");
  t.equal(gcsFt!.metadata.annotations, undefined, 'with metadata.annotations absent');
  t.match(gcsFt!.spec, {
    gcsFaultToleranceOptions: { redisAddress: String, redisPassword: { valueFrom: { secretKeyRef: { name: 'redis-password-secret' } } } },
  });
  t.match(byName.get('RayCluster/raycluster-external-redis-annotated')?.metadata.annotations, { 'ray.io/ft-enabled': 'true' });
  t.ok(byName.get('RayJob/rayjob-sample'), 'a RayJob sample');
  t.match(
    byName.get('RayCronJob/raycronjob-sample')?.spec,
    { schedule: '* * * * *', jobTemplate: { entrypoint: String } },
    'a RayCronJob sample',
  );
});
