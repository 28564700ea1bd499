// The chart and the kustomize tree install the SAME objects for the same settings, so the two cannot
// drift: a change to manifests/ without the chart (or the reverse) fails here.
//
// Differences on purpose, normalised away before comparing (and each asserted, so none hides another):
//   - Helm's labels (app.kubernetes.io/instance, app.kubernetes.io/version, app.kubernetes.io/managed-by,
//     helm.sh/chart) on metadata only: selectors and Pod labels are the kustomize tree's;
//   - the Namespace: the chart does not own its namespace (Helm stores the release in it; README: label it
//     pod-security.kubernetes.io/enforce=restricted), the kustomize tree creates it;
//   - the TLS Secret's contents and the caBundle: the kustomize tree has empty placeholders (filled by
//     `raykeeper certs generate --kustomize`), the chart a generated certificate, plus ca.crt in the Secret;
//   - the CRDs: the chart's crds/ must be byte-identical copies of manifests/crds/;
//   - Helm's hooks: `helm uninstall`'s pre-delete hook (a Job running `raykeeper uninstall`, its ServiceAccount
//     and RBAC); kustomize users run that command before `kubectl delete -k`.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import type { KubeObject } from '../../localcluster/apply.ts';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { kustomize } from '../helpers/kustomize.ts';
import { CHART_DIR, find, isHook, key, requireHelm, normalise, template } from './helm.ts';

requireHelm();

t.test('default values = manifests/base', async (t) => {
  const chart = template();
  const base = kustomize('manifests/base');
  t.same(normalise(chart), normalise(base));
  // The differences normalised away are the ones listed, and real.
  t.same(base.filter((o) => o.kind === 'Namespace').map(key), ['Namespace//raykeeper-system'], 'kustomize creates the namespace');
  t.notOk(
    chart.some((o) => o.kind === 'Namespace'),
    'the chart does not',
  );
  for (const o of chart) {
    t.match(
      o.metadata.labels,
      { 'app.kubernetes.io/managed-by': 'Helm', 'app.kubernetes.io/instance': 'raykeeper' },
      `${key(o)}: Helm's labels`,
    );
  }
  t.same(
    chart.filter(isHook).map(key).sort(),
    [
      'ClusterRole//raykeeper-uninstall',
      'ClusterRole//raykeeper-uninstall-rayclusters',
      'ClusterRoleBinding//raykeeper-uninstall',
      'ClusterRoleBinding//raykeeper-uninstall-rayclusters',
      'Job/raykeeper-system/raykeeper-uninstall',
      'Role/raykeeper-system/raykeeper-uninstall-controller',
      'RoleBinding/raykeeper-system/raykeeper-uninstall-controller',
      'ServiceAccount/raykeeper-system/raykeeper-uninstall',
    ],
    "the chart's only hooks are the uninstall hook's",
  );
  const webhook = find(chart, 'Deployment', 'raykeeper-webhook');
  t.notOk(
    'app.kubernetes.io/instance' in webhook.spec.selector.matchLabels,
    "selectors are the kustomize tree's (an upgrade from it keeps the Pods)",
  );
  t.same(Object.keys(find(chart, 'Secret', 'raykeeper-webhook-tls').data).sort(), ['ca.crt', 'tls.crt', 'tls.key']);
  for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'])
    for (const w of find(chart, kind, 'raykeeper').webhooks) t.ok(w.clientConfig.caBundle.length > 100, `${w.name}: a caBundle`);
});

t.test('controller.secretReader.enabled = manifests/base + manifests/optional/controller-secret-reader', async (t) => {
  const chart = template({ controller: { secretReader: { enabled: true } } });
  const kz = [...kustomize('manifests/base'), ...kustomize('manifests/optional/controller-secret-reader')];
  t.same(normalise(chart), normalise(kz));
});

t.test('metrics.prometheusRule + metrics.grafanaDashboard = manifests/base + manifests/optional/monitoring', async (t) => {
  const chart = template({ metrics: { prometheusRule: { enabled: true }, grafanaDashboard: { enabled: true } } });
  const kz = [...kustomize('manifests/base'), ...kustomize('manifests/optional/monitoring')];
  t.same(normalise(chart), normalise(kz));
  t.same(
    kustomize('manifests/optional/monitoring').map(key).sort(),
    ['ConfigMap/raykeeper-system/raykeeper-dashboard', 'PrometheusRule/raykeeper-system/raykeeper'],
    'the overlay holds the rules and the dashboard',
  );
});

t.test("certs.mode provided with `raykeeper certs generate` output = its --kustomize overlay (but the Secret, the admin's)", async (t) => {
  const dir = t.testdir();
  const overlay = join(dir, 'overlay');
  const gen = spawnSync(
    process.execPath,
    [
      join(REPO_ROOT, 'bin', 'raykeeper.js'),
      'certs',
      'generate',
      '--out',
      join(dir, 'certs'),
      '--service',
      'raykeeper-webhook',
      '--namespace',
      'raykeeper-system',
      '--kustomize',
      overlay,
      '--base',
      join(REPO_ROOT, 'manifests', 'base'),
    ],
    { encoding: 'utf8' },
  );
  t.equal(gen.status, 0, gen.stderr);
  const caBundle = Buffer.from(readFileSync(join(dir, 'certs', 'ca.crt'))).toString('base64');
  const chart = template({ certs: { mode: 'provided', provided: { secretName: 'raykeeper-webhook-tls', caBundle } } });
  const kz = kustomize(overlay);
  const bundles = (objs: KubeObject[]) =>
    ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'].flatMap((kind) =>
      find(objs, kind, 'raykeeper').webhooks.map((w: { clientConfig: { caBundle: string } }) => w.clientConfig.caBundle),
    );
  t.same(bundles(chart), Array(6).fill(caBundle), 'the chart trusts the given CA (both configurations)');
  t.same(bundles(kz), bundles(chart), 'as the overlay does');
  t.same(normalise(chart), normalise(kz.filter((o) => o.kind !== 'Secret')), 'the rest is the same');
});

t.test('a setting changed on one side only is a difference (the comparison can fail)', async (t) => {
  const base = normalise(kustomize('manifests/base'));
  for (const values of [
    { logLevel: 'debug' },
    { webhook: { failurePolicy: 'Fail' } },
    { controller: { cleanupJob: { cpu: '500m' } } },
    { image: { tag: '0.2.0' } },
  ]) {
    t.notSame(normalise(template(values)), base, JSON.stringify(values));
  }
});

t.test("the chart's CRDs are manifests/crds, byte for byte", async (t) => {
  const ours = readdirSync(join(CHART_DIR, 'crds')).sort();
  const tree = readdirSync(join(REPO_ROOT, 'manifests', 'crds'))
    .filter((f) => f !== 'kustomization.yaml')
    .sort();
  t.same(ours, tree);
  for (const f of ours)
    t.equal(readFileSync(join(CHART_DIR, 'crds', f), 'utf8'), readFileSync(join(REPO_ROOT, 'manifests', 'crds', f), 'utf8'), f);
});

t.test('normalise: removes exactly the differences on purpose', async (t) => {
  const objects: KubeObject[] = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ns' } },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/tls',
      metadata: { name: 's', labels: { a: 'b', 'helm.sh/chart': 'x' } },
      data: { 'tls.crt': 'x', 'tls.key': 'y', 'ca.crt': 'z' },
    },
    { apiVersion: 'v1', kind: 'Secret', type: 'Opaque', metadata: { name: 'o' }, data: { k: 'v' } },
    { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'hook', annotations: { 'helm.sh/hook': 'pre-delete' } } },
  ];
  t.same(normalise(objects), [
    { apiVersion: 'v1', kind: 'Secret', type: 'Opaque', metadata: { name: 'o' }, data: { k: 'v' } },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/tls',
      metadata: { name: 's', labels: { a: 'b' } },
      data: { 'tls.crt': '', 'tls.key': '' },
    },
  ]);
  t.equal((objects[1]!.metadata.labels as Record<string, string>)['helm.sh/chart'], 'x', 'the input is not changed');
});
