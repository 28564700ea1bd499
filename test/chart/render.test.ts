// The chart renders: `helm lint`, `helm template` of the default values and of each mode (what each
// value does to the objects), values.schema.json refusing typos, and every rendered object of every mode
// accepted by the real kube-apiserver (server-side dry run: validation and admission, nothing stored).
import { createPrivateKey, X509Certificate } from 'node:crypto';
import t from 'tap';
import { applyObject, Discovery, type KubeObject, waitForCrdsEstablished } from '../../localcluster/apply.ts';
import { KubeClient } from '../../kube/client.ts';
import { PODS } from '../../kube/resources.ts';
import { getControlPlane, testNamespace } from '../helpers/control-plane.ts';
import { CHART_DIR, find, HELM_MAJORS, helm, isHook, key, requireHelm, normalise, template, valuesFile } from './helm.ts';

requireHelm();

const pem = (b64: string) => Buffer.from(b64, 'base64').toString('utf8');
const args = (objects: KubeObject[], name = 'raykeeper-controller'): string[] =>
  find(objects, 'Deployment', name).spec.template.spec.containers[0].args;
const env = (objects: KubeObject[], name: string): Record<string, string> =>
  Object.fromEntries(
    find(objects, 'Deployment', name)
      .spec.template.spec.containers[0].env.filter((e: any) => 'value' in e)
      .map((e: any) => [e.name, e.value]),
  );

/** Every mode the tests render, by name: the values and what they must produce. */
const MODES: Record<string, unknown> = {
  default: {},
  companion: { companion: { enabled: true } },
  watchNamespace: { controller: { watchNamespaces: ['watched-ns'], secretReader: { enabled: true } } },
  provided: {
    certs: {
      mode: 'provided',
      provided: { secretName: 'my-tls', caBundle: Buffer.from('-----BEGIN CERTIFICATE-----\n').toString('base64') },
    },
  },
  certManager: { certs: { mode: 'certManager' } },
  certManagerIssuer: {
    certs: {
      mode: 'certManager',
      certManager: { issuerRef: { name: 'corp-ca', kind: 'ClusterIssuer' }, duration: '2160h', renewBefore: '360h' },
    },
  },
  serviceMonitor: { metrics: { serviceMonitor: { enabled: true, labels: { release: 'prom' } } } },
  monitoring: { metrics: { prometheusRule: { enabled: true, labels: { release: 'prom' } }, grafanaDashboard: { enabled: true } } },
  singleController: { controller: { replicas: 1, leaderElection: { enabled: false } } },
  sharded: { controller: { replicas: 3, shards: 3 } },
  sweepAlways: { controller: { cleanupJob: { sweep: 'always' } } },
  everything: {
    image: { repository: 'registry.example/raykeeper', tag: '0.2.0', pullPolicy: 'Always' },
    imagePullSecrets: ['regcred'],
    logLevel: 'debug',
    gcsFtRedisCleanup: false,
    webhook: {
      replicas: 3,
      failurePolicy: 'Fail',
      timeoutSeconds: 10,
      namespaceSelector: { matchLabels: { 'ray.example/enabled': 'true' } },
      objectSelector: { matchExpressions: [{ key: 'skip-raykeeper', operator: 'DoesNotExist' }] },
      port: 10443,
      nodeSelector: { 'kubernetes.io/os': 'linux' },
      tolerations: [{ key: 'infra', operator: 'Exists', effect: 'NoSchedule' }],
      priorityClassName: 'system-cluster-critical',
      podAnnotations: { 'example/a': 'b' },
      podLabels: { team: 'ml' },
      podDisruptionBudget: { minAvailable: 2 },
      resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '300Mi' } },
    },
    controller: {
      replicas: 3,
      workers: 8,
      port: 8090,
      reconcilers: ['raycluster'],
      cleanupJob: {
        image: 'registry.example/raykeeper:cleanup',
        cpu: '500m',
        memory: '1Gi',
        imagePullPolicy: 'IfNotPresent',
        imagePullSecrets: ['a', 'b'],
      },
      extraArgs: ['--resync-period=300'],
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: 'pool', operator: 'In', values: ['infra'] }] }],
          },
        },
      },
      topologySpreadConstraints: [
        {
          maxSkew: 1,
          topologyKey: 'topology.kubernetes.io/zone',
          whenUnsatisfiable: 'ScheduleAnyway',
          labelSelector: { matchLabels: { 'app.kubernetes.io/component': 'controller' } },
        },
      ],
      podDisruptionBudget: { enabled: true, minAvailable: 1 },
    },
  },
};

const withNamespace = (values: unknown, watched: string): unknown => JSON.parse(JSON.stringify(values).replaceAll('watched-ns', watched));

/** The release's own objects: the uninstall hook's (a ServiceAccount, RBAC by resourceNames, a Job) are uninstall.test.ts's. */
const notHook = (o: KubeObject) => !isHook(o);

t.test('helm lint --strict (Helm 3 and 4): the default values and every mode', async (t) => {
  for (const major of HELM_MAJORS) {
    for (const [name, values] of Object.entries(MODES)) {
      const r = helm(['lint', '--strict', CHART_DIR, '-f', valuesFile(values)], major);
      t.equal(
        r.status,
        0,
        `helm ${major}, ${name}: ${
          r.stdout
            .split('\n')
            .filter((l) => /\[(ERROR|WARNING)\]/.test(l))
            .join('; ') || 'lint clean'
        } ${r.stderr}`,
      );
    }
  }
});

t.test('Helm 4 renders the same objects as Helm 3, in every mode', async (t) => {
  for (const [name, values] of Object.entries(MODES)) {
    const objs = template(values, { major: 4, crds: true });
    t.ok(objs.length > 10, `${name}: ${objs.length} objects`);
    t.same(normalise(objs), normalise(template(values, { major: 3, crds: true })), `${name}: the same (but for the generated certificate)`);
  }
});

t.test('values.schema.json: a typo or a wrong value fails at install, naming it', async (t) => {
  const cases: Array<[unknown, RegExp]> = [
    [{ webhook: { replica: 3 } }, /additional properties 'replica' not allowed/],
    [{ imagee: { tag: 'x' } }, /additional properties 'imagee' not allowed/],
    [{ webhook: { failurePolicy: 'ignore' } }, /failurePolicy/],
    [{ logLevel: 'verbose' }, /logLevel/],
    [{ certs: { mode: 'selfsigned' } }, /mode/],
    [{ certs: { mode: 'provided' } }, /provided\/(secretName|caBundle)/],
    [{ controller: { watchNamespaces: ['a', 'b'] } }, /maxItems/],
    [{ controller: { watchNamespaces: ['Team_A'] } }, /watchNamespaces\/0/],
    [{ controller: { reconcilers: ['rayservice'] } }, /reconcilers\/0/],
    [{ controller: { cleanupJob: { cpu: 'lots' } } }, /cleanupJob\/cpu/],
    [{ controller: { cleanupJob: { sweep: 'never' } } }, /cleanupJob\/sweep/],
    [{ controller: { orphans: { scanInterval: '10 minutes' } } }, /orphans\/scanInterval/],
    [{ controller: { cleanupJob: { commandBudgetMs: 0 } } }, /commandBudgetMs/],
    [{ controller: { cleanupJob: { commandBudgetMs: '5' } } }, /commandBudgetMs/],
    [{ controller: { orphans: { gcAfter: '-1h' } } }, /orphans\/gcAfter/],
    [{ webhook: { timeoutSeconds: 31 } }, /timeoutSeconds/],
    [{ controller: { shards: 0 } }, /shards/],
  ];
  for (const major of HELM_MAJORS) {
    for (const [values, message] of cases) {
      const r = helm(['template', 'raykeeper', CHART_DIR, '-f', valuesFile(values)], major);
      t.not(r.status, 0, `helm ${major}: ${JSON.stringify(values)} refused`);
      t.match(r.stderr, /values don't meet the specifications of the schema/, 'by the schema');
      t.match(r.stderr, message, `naming ${message}`);
    }
  }
  const r = helm(['template', 'raykeeper', CHART_DIR, '-f', valuesFile(MODES.singleController), '--set', 'controller.replicas=2']);
  t.match(r.stderr, /controller.replicas > 1 needs controller.leaderElection.enabled/, 'two controllers without leader election refused');
  const unsharded = helm(['template', 'raykeeper', CHART_DIR, '-f', valuesFile(MODES.singleController), '--set', 'controller.shards=2']);
  t.match(unsharded.stderr, /controller.shards > 1 needs controller.leaderElection.enabled/, 'shards without leader election refused');
});

t.test('default: generated CA and serving certificate, consistent, for the Service names', async (t) => {
  const objs = template({}, { namespace: 'ops' });
  const secret = find(objs, 'Secret', 'raykeeper-webhook-tls');
  const ca = new X509Certificate(pem(secret.data['ca.crt']));
  const cert = new X509Certificate(pem(secret.data['tls.crt']));
  t.ok(ca.ca, 'a CA');
  t.ok(cert.verify(ca.publicKey), 'the serving certificate is signed by it');
  t.ok(cert.checkPrivateKey(createPrivateKey(pem(secret.data['tls.key']))), 'the key matches');
  for (const name of ['raykeeper-webhook', 'raykeeper-webhook.ops', 'raykeeper-webhook.ops.svc', 'raykeeper-webhook.ops.svc.cluster.local'])
    t.equal(cert.checkHost(name), name, `SAN ${name}`);
  const days = (Date.parse(cert.validTo) - Date.now()) / 86_400_000;
  t.ok(days > 3640 && days <= 3650, `valid ${Math.round(days)} days`);
  for (const w of find(objs, 'MutatingWebhookConfiguration').webhooks)
    t.equal(w.clientConfig.caBundle, secret.data['ca.crt'], `${w.name}: caBundle is the Secret's CA`);
  t.equal(find(objs, 'Deployment', 'raykeeper-webhook').spec.template.spec.volumes[0].secret.secretName, 'raykeeper-webhook-tls');
  t.notSame(
    find(template({}, { namespace: 'ops' }), 'Secret').data,
    secret.data,
    'without a Secret to look up (helm template), a new CA each render: the lookup is what keeps it',
  );
});

t.test('release name: objects are prefixed, cluster-scoped ones too', async (t) => {
  const objs = template({}, { release: 'ray-infra' });
  t.same(
    objs.map((o) => o.metadata.name).filter((n) => !n.startsWith('ray-infra-raykeeper')),
    [],
    'every name starts with <release>-raykeeper',
  );
  t.equal(find(objs, 'MutatingWebhookConfiguration').webhooks[0].clientConfig.service.name, 'ray-infra-raykeeper-webhook');
  t.equal(
    find(objs.filter(notHook), 'ClusterRoleBinding', 'ray-infra-raykeeper-controller').subjects[0].name,
    'ray-infra-raykeeper-controller',
  );
  t.equal(find(objs.filter(notHook), 'ClusterRoleBinding', 'ray-infra-raykeeper-webhook').subjects[0].name, 'ray-infra-raykeeper-webhook');
});

t.test('companion: the RayCluster reconciler and webhook only, its RBAC only', async (t) => {
  const objs = template(MODES.companion);
  t.ok(args(objs).includes('--companion=on'));
  t.ok(args(objs, 'raykeeper-webhook').includes('--companion=on'), 'the webhook leaves out our operator-only warnings');
  t.notOk(args(template({}), 'raykeeper-webhook').includes('--companion=on'), 'standalone: it does not');
  t.notOk(
    args(objs).some((a) => a.startsWith('--reconcilers')),
    'the controller leaves out what KubeRay runs by itself',
  );
  t.same(
    find(objs, 'MutatingWebhookConfiguration').webhooks.map((w: any) => w.name),
    ['raycluster.mutate.raykeeper.io'],
  );
  t.same(
    find(objs, 'ClusterRole', 'raykeeper-controller').rules,
    [
      { apiGroups: ['ray.io'], resources: ['rayclusters'], verbs: ['get', 'list', 'watch', 'update', 'patch'] },
      { apiGroups: ['ray.io'], resources: ['rayclusters/finalizers'], verbs: ['update'] },
      { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch', 'delete'] },
      { apiGroups: ['batch'], resources: ['jobs'], verbs: ['create', 'get', 'list', 'watch', 'delete'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
      { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
    ],
    "the RayCluster reconciler's calls only: no RayJobs, no RayCluster create, delete or status",
  );
});

t.test("Secrets: create with our operator (token auth's Secret), get (never list) with RayJobs or our operator", async (t) => {
  const secrets = (values: Record<string, unknown>) =>
    find(template(values), 'ClusterRole', 'raykeeper-controller').rules.filter((r: any) => r.resources.includes('secrets'));
  const create = { apiGroups: [''], resources: ['secrets'], verbs: ['create'] };
  const get = { apiGroups: [''], resources: ['secrets'], verbs: ['get'] };
  t.same(secrets({}), [create, get], 'standalone');
  t.same(secrets({ controller: { reconcilers: ['raycluster', 'rayjob'] } }), [get], 'RayJobs without our operator: the dashboard token');
  t.same(secrets({ controller: { reconcilers: ['raycluster'] } }), [], 'the GCS-FT cleanup alone: none');
  t.same(secrets({ companion: { enabled: true } }), [], 'beside KubeRay: none');
});

t.test('watchNamespaces: Roles in the watched namespace, no ClusterRole, webhook scoped to it', async (t) => {
  const objs = template(withNamespace(MODES.watchNamespace, 'team-a'));
  const defaults = template();
  t.notOk(
    objs.filter(notHook).some((o) => o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding'),
    'nothing cluster-wide',
  );
  const role = find(objs, 'Role', 'raykeeper-controller');
  t.equal(role.metadata.namespace, 'team-a');
  t.same(role.rules, find(defaults, 'ClusterRole', 'raykeeper-controller').rules, 'the same rules as the ClusterRole');
  const binding = find(objs, 'RoleBinding', 'raykeeper-controller');
  t.match(binding, {
    metadata: { namespace: 'team-a' },
    roleRef: { kind: 'Role', name: 'raykeeper-controller' },
    subjects: [{ name: 'raykeeper-controller', namespace: 'raykeeper-system' }],
  });
  t.match(find(objs, 'Role', 'raykeeper-controller-secret-reader'), {
    metadata: { namespace: 'team-a' },
    rules: [{ resources: ['secrets', 'configmaps'], verbs: ['get'] }],
  });
  t.equal(
    find(objs, 'Role', 'raykeeper-controller-leader-election').metadata.namespace,
    'raykeeper-system',
    'the Lease stays in the release namespace',
  );
  t.ok(args(objs).includes('--watch-namespace=team-a'));
  for (const w of find(objs, 'MutatingWebhookConfiguration').webhooks) {
    t.same(
      w.namespaceSelector.matchExpressions,
      [
        {
          key: 'kubernetes.io/metadata.name',
          operator: 'NotIn',
          values: ['kube-system', 'kube-public', 'kube-node-lease', 'raykeeper-system'],
        },
        { key: 'kubernetes.io/metadata.name', operator: 'In', values: ['team-a'] },
      ],
      `${w.name}: no finalizer where no controller would remove it`,
    );
  }
});

t.test("certs provided: the admin's Secret and caBundle, no Secret rendered", async (t) => {
  const objs = template(MODES.provided);
  t.notOk(objs.some((o) => o.kind === 'Secret'));
  t.equal(find(objs, 'Deployment', 'raykeeper-webhook').spec.template.spec.volumes[0].secret.secretName, 'my-tls');
  for (const w of find(objs, 'MutatingWebhookConfiguration').webhooks)
    t.equal(w.clientConfig.caBundle, (MODES.provided as any).certs.provided.caBundle);
});

t.test('certs certManager: a CA Issuer chain, the Certificate, the CA injected', async (t) => {
  const objs = template(MODES.certManager);
  t.notOk(
    objs.some((o) => o.kind === 'Secret'),
    'cert-manager writes the Secret',
  );
  const cert = find(objs, 'Certificate', 'raykeeper-webhook');
  t.match(cert.spec, { secretName: 'raykeeper-webhook-tls', issuerRef: { name: 'raykeeper-webhook-ca', kind: 'Issuer' } });
  t.same(cert.spec.dnsNames, [
    'raykeeper-webhook',
    'raykeeper-webhook.raykeeper-system',
    'raykeeper-webhook.raykeeper-system.svc',
    'raykeeper-webhook.raykeeper-system.svc.cluster.local',
  ]);
  t.match(find(objs, 'Certificate', 'raykeeper-webhook-ca').spec, {
    isCA: true,
    secretName: 'raykeeper-webhook-ca',
    issuerRef: { name: 'raykeeper-webhook-selfsigned' },
  });
  t.same(find(objs, 'Issuer', 'raykeeper-webhook-ca').spec, { ca: { secretName: 'raykeeper-webhook-ca' } });
  t.same(find(objs, 'Issuer', 'raykeeper-webhook-selfsigned').spec, { selfSigned: {} });
  const mwc = find(objs, 'MutatingWebhookConfiguration');
  t.equal(mwc.metadata.annotations['cert-manager.io/inject-ca-from'], 'raykeeper-system/raykeeper-webhook');
  for (const w of mwc.webhooks) t.notOk('caBundle' in w.clientConfig, `${w.name}: caBundle left to the injector`);

  const own = template(MODES.certManagerIssuer);
  t.notOk(
    own.some((o) => o.kind === 'Issuer'),
    "an issuer of the admin's: none of ours",
  );
  t.match(find(own, 'Certificate').spec, {
    issuerRef: { name: 'corp-ca', kind: 'ClusterIssuer', group: 'cert-manager.io' },
    duration: '2160h',
    renewBefore: '360h',
  });
});

t.test('serviceMonitor: both /metrics endpoints, selecting the right Pods', async (t) => {
  const objs = template(MODES.serviceMonitor);
  const webhookPods = find(objs, 'Deployment', 'raykeeper-webhook').spec.template.metadata.labels;
  const controllerPods = find(objs, 'Deployment', 'raykeeper-controller').spec.template.metadata.labels;
  const metricsSvc = find(objs, 'Service', 'raykeeper-controller-metrics');
  t.match(controllerPods, metricsSvc.spec.selector);
  t.same(metricsSvc.spec.ports, [{ name: 'http', port: 8080, targetPort: 'http', protocol: 'TCP' }]);
  const wsm = find(objs, 'ServiceMonitor', 'raykeeper-webhook');
  t.match(wsm, {
    metadata: { labels: { release: 'prom' } },
    spec: {
      endpoints: [
        {
          port: 'https',
          scheme: 'https',
          tlsConfig: {
            serverName: 'raykeeper-webhook.raykeeper-system.svc',
            ca: { secret: { name: 'raykeeper-webhook-tls', key: 'ca.crt' } },
          },
        },
      ],
    },
  });
  t.match(find(objs, 'Service', 'raykeeper-webhook').metadata.labels, wsm.spec.selector.matchLabels, 'selects the webhook Service');
  t.match(webhookPods, find(objs, 'Service', 'raykeeper-webhook').spec.selector);
  const csm = find(objs, 'ServiceMonitor', 'raykeeper-controller');
  t.match(metricsSvc.metadata.labels, csm.spec.selector.matchLabels, 'selects the controller metrics Service');
  t.notMatch(find(objs, 'Service', 'raykeeper-webhook').metadata.labels, csm.spec.selector.matchLabels, "and not the webhook's");
  t.notOk(
    template().some((o) => o.kind === 'ServiceMonitor'),
    'off by default',
  );
  t.notOk(
    objs.some((o) => o.kind === 'ConfigMap' && o.metadata.name === 'raykeeper-webhook-ca'),
    'generate mode: the CA is in the TLS Secret, no ConfigMap',
  );

  // certs.mode provided: a kubernetes.io/tls Secret need not hold ca.crt; the admin's caBundle is the CA.
  const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
  const provided = template({
    ...(MODES.serviceMonitor as object),
    certs: { mode: 'provided', provided: { secretName: 'my-tls', caBundle: Buffer.from(pem).toString('base64') } },
  });
  const ca = find(provided, 'ConfigMap', 'raykeeper-webhook-ca');
  t.equal(ca.data['ca.crt'], pem, "provided: the caBundle's PEM in a ConfigMap");
  t.same(find(provided, 'ServiceMonitor', 'raykeeper-webhook').spec.endpoints[0].tlsConfig.ca, {
    configMap: { name: 'raykeeper-webhook-ca', key: 'ca.crt' },
  });
  const garbage = helm([
    'template',
    'raykeeper',
    CHART_DIR,
    '-f',
    valuesFile({ ...(MODES.serviceMonitor as object), certs: { mode: 'provided', provided: { secretName: 'my-tls', caBundle: 'QUJD' } } }),
  ]);
  t.not(garbage.status, 0, 'a caBundle that is not a PEM certificate is refused');
  t.match(garbage.stderr, /certs.provided.caBundle must be the base64 of a PEM CA certificate/);
});

t.test('controller.shards: --shards and delete on Leases only when > 1', async (t) => {
  const leaseVerbs = (objs: any[]) => find(objs, 'Role', 'raykeeper-controller-leader-election').rules[0].verbs;
  const sharded = template(MODES.sharded);
  t.ok(args(sharded).includes('--shards=3'));
  t.equal(find(sharded, 'Deployment', 'raykeeper-controller').spec.replicas, 3);
  t.same(leaseVerbs(sharded), ['get', 'create', 'update', 'list', 'delete'], 'members are listed, a leaving member deletes its Lease');
  const single = template();
  t.notOk(
    args(single).some((a) => a.startsWith('--shards')),
    'default: no flag (one leader)',
  );
  t.same(leaseVerbs(single), ['get', 'create', 'update', 'list'], 'default: leader election, and list to see a sharded layout');
});

t.test('leader election off: one controller, no Lease RBAC', async (t) => {
  const objs = template(MODES.singleController);
  t.notOk(args(objs).some((a) => a.startsWith('--leader-elect')));
  t.notOk(
    objs.filter(notHook).some((o) => o.kind === 'Role'),
    'no leader-election Role',
  );
  t.equal(find(objs, 'Deployment', 'raykeeper-controller').spec.replicas, 1);
});

t.test('controller.cleanupJob.sweep: always passes --cleanup-sweep=always; auto (default) passes nothing', async (t) => {
  t.ok(args(template(MODES.sweepAlways)).includes('--cleanup-sweep=always'));
  t.notOk(
    args(template()).some((a) => a.startsWith('--cleanup-sweep')),
    'the controller decides per cluster by default',
  );
  t.notOk(args(template({ controller: { cleanupJob: { sweep: 'auto' } } })).some((a) => a.startsWith('--cleanup-sweep')));
});

t.test("controller.orphans: the orphan finder's flags only when set (the controller's defaults otherwise)", async (t) => {
  t.notOk(
    args(template()).some((a) => a.startsWith('--orphan-')),
    'default: 10m standalone, off beside KubeRay, no deletion',
  );
  const budget = args(template({ controller: { cleanupJob: { commandBudgetMs: 1.5 } } }));
  t.ok(budget.includes('--cleanup-command-budget-ms=1.5'), budget.join(' '));
  t.notOk(
    args(template()).some((a) => a.startsWith('--cleanup-command-budget-ms')),
    "unset: the controller's default",
  );
  const set = args(template({ controller: { orphans: { scanInterval: '30m', gcAfter: '24h' } } }));
  t.ok(set.includes('--orphan-scan-interval=30m') && set.includes('--orphan-gc-after=24h'), set.join(' '));
  t.ok(args(template({ controller: { orphans: { scanInterval: '0' } } })).includes('--orphan-scan-interval=0'), 'off');
  t.ok(
    args(template({ controller: { reconcilers: ['raycluster', 'gcs-orphans'] } })).includes('--reconcilers=raycluster,gcs-orphans'),
    'a module --reconcilers may name',
  );
});

t.test('controller.orphans under watchNamespaces: off unless set; set, one read-only ClusterRole lists RayClusters', async (t) => {
  const watched = (orphans: Record<string, string>, more: Record<string, unknown> = {}) =>
    template({ controller: { watchNamespaces: ['team-a'], orphans, ...more } });
  const unset = watched({});
  t.ok(args(unset).includes('--orphan-scan-interval=0'), 'off: a scan would need list in every namespace');
  t.notOk(
    unset.filter(notHook).some((o) => o.kind.startsWith('Cluster')),
    'nothing cluster-wide',
  );
  const on = watched({ scanInterval: '30m' });
  t.ok(args(on).includes('--orphan-scan-interval=30m'));
  t.same(
    on
      .filter(notHook)
      .filter((o) => o.kind.startsWith('Cluster'))
      .map((o) => `${o.kind}/${o.metadata.name}`),
    ['ClusterRole/raykeeper-controller-rayclusters-reader', 'ClusterRoleBinding/raykeeper-controller-rayclusters-reader'],
  );
  t.same(find(on, 'ClusterRole', 'raykeeper-controller-rayclusters-reader').rules, [
    { apiGroups: ['ray.io'], resources: ['rayclusters'], verbs: ['list'] },
  ]);
  t.match(find(on, 'ClusterRoleBinding', 'raykeeper-controller-rayclusters-reader'), {
    roleRef: { kind: 'ClusterRole', name: 'raykeeper-controller-rayclusters-reader' },
    subjects: [{ kind: 'ServiceAccount', name: 'raykeeper-controller', namespace: 'raykeeper-system' }],
  });
  t.notOk(
    watched({ scanInterval: '30m' }, { reconcilers: ['raycluster'] })
      .filter(notHook)
      .some((o) => o.kind.startsWith('Cluster')),
    'no orphan finder among the reconcilers: no ClusterRole',
  );
  t.notOk(
    watched({ scanInterval: '0' })
      .filter(notHook)
      .some((o) => o.kind.startsWith('Cluster')),
    'scans off: no ClusterRole',
  );
});

t.test('everything else: image, scheduling, resources, gate, cleanup Job, selectors', async (t) => {
  const objs = template(MODES.everything);
  const v = MODES.everything as any;
  t.same(args(objs), [
    'controller',
    '--leader-elect',
    '--lease-namespace=$(POD_NAMESPACE)',
    '--health-port=8090',
    '--reconcilers=raycluster',
    '--workers=8',
    '--cleanup-image=registry.example/raykeeper:cleanup',
    '--cleanup-cpu=500m',
    '--cleanup-memory=1Gi',
    '--cleanup-image-pull-policy=IfNotPresent',
    '--cleanup-image-pull-secrets=a,b',
    '--resync-period=300',
  ]);
  for (const name of ['raykeeper-webhook', 'raykeeper-controller']) {
    const pod = find(objs, 'Deployment', name).spec.template.spec;
    t.equal(pod.containers[0].image, 'registry.example/raykeeper:0.2.0', `${name}: image`);
    t.equal(pod.containers[0].imagePullPolicy, 'Always');
    t.same(pod.imagePullSecrets, [{ name: 'regcred' }]);
    t.match(env(objs, name), { LOG_LEVEL: 'debug', ENABLE_GCS_FT_REDIS_CLEANUP: 'false' }, `${name}: log level and the gate`);
  }
  t.equal(env(objs, 'raykeeper-controller').RAYKEEPER_IMAGE, 'registry.example/raykeeper:0.2.0');
  const webhook = find(objs, 'Deployment', 'raykeeper-webhook');
  const wpod = webhook.spec.template.spec;
  t.equal(webhook.spec.replicas, 3);
  t.same(wpod.nodeSelector, v.webhook.nodeSelector);
  t.same(wpod.tolerations, v.webhook.tolerations);
  t.equal(wpod.priorityClassName, 'system-cluster-critical');
  t.same(wpod.containers[0].resources, v.webhook.resources);
  t.match(webhook.spec.template.metadata, { annotations: { 'example/a': 'b', 'prometheus.io/port': '10443' }, labels: { team: 'ml' } });
  t.same(wpod.containers[0].args.slice(-2), ['--port', '10443']);
  t.equal(wpod.containers[0].ports[0].containerPort, 10443);
  t.ok(wpod.affinity.podAntiAffinity, 'default anti-affinity kept when none is given');
  const cpod = find(objs, 'Deployment', 'raykeeper-controller').spec.template.spec;
  t.same(cpod.affinity, v.controller.affinity);
  t.same(cpod.topologySpreadConstraints, v.controller.topologySpreadConstraints);
  t.equal(find(objs, 'PodDisruptionBudget', 'raykeeper-webhook').spec.minAvailable, 2);
  t.equal(find(objs, 'PodDisruptionBudget', 'raykeeper-controller').spec.minAvailable, 1);
  for (const w of find(objs, 'MutatingWebhookConfiguration').webhooks) {
    t.match(
      w,
      {
        failurePolicy: 'Fail',
        timeoutSeconds: 10,
        namespaceSelector: v.webhook.namespaceSelector,
        objectSelector: v.webhook.objectSelector,
      },
      w.name,
    );
  }
  t.same(
    find(objs, 'MutatingWebhookConfiguration').webhooks.map((w: any) => w.name),
    ['raycluster.mutate.raykeeper.io'],
    'reconcilers [raycluster]: no RayJob webhook',
  );
});

t.test('every object of every mode is accepted by the real API server (server-side dry run)', async (t) => {
  const cp = await getControlPlane();
  const release = await testNamespace(t, { 'pod-security.kubernetes.io/enforce': 'restricted' });
  const watched = await testNamespace(t);
  const kube = new KubeClient(cp.kubeConfig());
  t.teardown(() => kube.close());
  await installStandInCrds(kube);
  const discovery = new Discovery(kube);
  for (const [name, values] of Object.entries(MODES)) {
    const objs = template(withNamespace(values, watched.name), { release: 'rk', namespace: release.name, crds: true });
    for (const o of objs) {
      const warnings: string[] = [];
      const r = await applyObject(kube, o, { discovery, dryRun: true, fieldManager: 'raykeeper-test', warnings });
      t.equal(r.metadata.name, o.metadata.name, `${name}: ${key(o)} accepted`);
      t.same(warnings, [], `${name}: ${key(o)} no warnings`);
    }
    // The Pods of both Deployments meet the restricted profile enforced on the release namespace.
    for (const d of objs.filter((o) => o.kind === 'Deployment') as any[]) {
      const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: `psa-${d.metadata.name}` }, spec: d.spec.template.spec };
      const r = await kube.create(PODS.at(release.name), pod, { query: { dryRun: 'All' } });
      t.equal(r.metadata.name, pod.metadata.name, `${name}: ${d.metadata.name} Pods admitted under Pod Security restricted`);
    }
  }
});

/**
 * cert-manager's and the Prometheus operator's kinds, served by stand-in CRDs (group, version, kind and
 * scope as theirs; any fields): the dry run then checks the object's identity and metadata, the field
 * shapes being asserted above. Created once on the shared control plane, never deleted (harmless).
 */
async function installStandInCrds(kube: KubeClient): Promise<void> {
  const crds = [
    ['cert-manager.io', 'Certificate', 'certificates'],
    ['cert-manager.io', 'Issuer', 'issuers'],
    ['monitoring.coreos.com', 'ServiceMonitor', 'servicemonitors'],
    ['monitoring.coreos.com', 'PrometheusRule', 'prometheusrules'],
  ];
  for (const [group, kind, plural] of crds) {
    await applyObject(
      kube,
      {
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: `${plural}.${group}` },
        spec: {
          group,
          scope: 'Namespaced',
          names: { kind, plural, singular: kind!.toLowerCase(), listKind: `${kind}List` },
          versions: [
            {
              name: 'v1',
              served: true,
              storage: true,
              schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
            },
          ],
        },
      },
      { fieldManager: 'raykeeper-test' },
    );
  }
  await waitForCrdsEstablished(
    kube,
    crds.map(([g, , p]) => `${p}.${g}`),
  );
}

t.test('the ValidatingWebhookConfiguration follows the mutating one in all three certificate modes', async (t) => {
  const generated = template({}, { namespace: 'ops' });
  const secret = find(generated, 'Secret', 'raykeeper-webhook-tls');
  const vwc = find(generated, 'ValidatingWebhookConfiguration');
  t.same(
    vwc.webhooks.map((w: any) => [w.name, w.clientConfig.service.path, w.rules[0].operations]),
    [
      ['raycluster.validate.raykeeper.io', '/validate-ray-io-v1-raycluster', ['CREATE', 'UPDATE']],
      ['rayjob.validate.raykeeper.io', '/validate-ray-io-v1-rayjob', ['CREATE', 'UPDATE']],
      ['raycronjob.validate.raykeeper.io', '/validate-ray-io-v1-raycronjob', ['CREATE', 'UPDATE']],
    ],
  );
  for (const w of vwc.webhooks) {
    t.equal(w.clientConfig.caBundle, secret.data['ca.crt'], `generate: ${w.name} trusts the Secret's CA`);
    t.equal(w.failurePolicy, 'Ignore');
    t.equal(w.sideEffects, 'None');
    t.same(w.namespaceSelector, find(generated, 'MutatingWebhookConfiguration').webhooks[0].namespaceSelector);
  }
  for (const w of find(template(MODES.provided), 'ValidatingWebhookConfiguration').webhooks)
    t.equal(w.clientConfig.caBundle, (MODES.provided as any).certs.provided.caBundle, `provided: ${w.name}`);
  const injected = find(template(MODES.certManager), 'ValidatingWebhookConfiguration');
  t.equal(injected.metadata.annotations['cert-manager.io/inject-ca-from'], 'raykeeper-system/raykeeper-webhook');
  for (const w of injected.webhooks) t.notOk('caBundle' in w.clientConfig, `certManager: ${w.name} left to the injector`);
  t.same(
    find(template(MODES.companion), 'ValidatingWebhookConfiguration').webhooks.map((w: any) => w.name),
    ['raycluster.validate.raykeeper.io'],
    'companion: RayCluster only, as the mutating one',
  );
});
