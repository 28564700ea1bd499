// `helm install`, `helm upgrade` and `helm uninstall` of the chart against the real kube-apiserver of the
// tests. There is no kubelet: Deployments are stored, not run (Pods Ready and the API server calling the
// webhook through the chart's Service come with a real node).
//
// The release's webhooks match only namespaces labelled for this release (none), so the shared control
// plane's other tests never see them.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { Discovery, parseManifests } from '../../localcluster/apply.ts';
import type { KubeApiError, KubeClient } from '../../kube/client.ts';
import {
  CUSTOM_RESOURCE_DEFINITIONS,
  DEPLOYMENTS,
  MUTATING_WEBHOOK_CONFIGURATIONS,
  SECRETS,
  VALIDATING_WEBHOOK_CONFIGURATIONS,
} from '../../kube/resources.ts';
import { kubeconfigFile, testNamespace } from '../helpers/control-plane.ts';
import { CHART_DIR, HELM_MAJORS, helmOk, key, requireHelm, valuesFile } from './helm.ts';

requireHelm();

const statusOf = (p: Promise<unknown>) =>
  p.then(
    () => 200,
    (e: KubeApiError) => e.statusCode,
  );

interface Certs {
  ca: string;
  crt: string;
  key: string;
  caBundles: string[];
}

const tlsSecret = (namespace: string, fullname: string) => SECRETS.at(namespace, `${fullname}-webhook-tls`);

async function certsOf(kube: KubeClient, namespace: string, fullname: string): Promise<Certs> {
  const data = (await kube.get(tlsSecret(namespace, fullname))).data ?? {};
  const caBundles: string[] = [];
  for (const configs of [MUTATING_WEBHOOK_CONFIGURATIONS, VALIDATING_WEBHOOK_CONFIGURATIONS]) {
    const config = await kube.get(configs.at(undefined, fullname));
    caBundles.push(...(config.webhooks ?? []).map((w) => w.clientConfig.caBundle ?? ''));
  }
  return { ca: data['ca.crt'] ?? '', crt: data['tls.crt'] ?? '', key: data['tls.key'] ?? '', caBundles };
}

const envOf = async (kube: KubeClient, namespace: string, name: string, variable: string): Promise<string | undefined> =>
  (await kube.get(DEPLOYMENTS.at(namespace, name))).spec?.template?.spec?.containers?.[0]?.env?.find((e) => e.name === variable)?.value;

for (const major of HELM_MAJORS) {
  t.test(`helm ${major}: install, upgrade (the CA is kept), rotation on request, uninstall`, async (t) => {
    const ns = await testNamespace(t, { 'pod-security.kubernetes.io/enforce': 'restricted' });
    const kube = ns.kube;
    const kubeconfig = await kubeconfigFile(t, ns.cp, ns.name);
    const release = `rk-${randomBytes(3).toString('hex')}`;
    const fullname = `${release}-raykeeper`;
    const values = valuesFile({ webhook: { namespaceSelector: { matchLabels: { 'raykeeper.test/helm-release': release } } } });
    const helm = (...args: string[]) => helmOk([...args, '--namespace', ns.name, '--kubeconfig', kubeconfig], major);
    t.teardown(() => {
      try {
        helm('uninstall', release, '--ignore-not-found', '--no-hooks');
      } catch {
        // already gone
      }
    });

    const notes = helm('install', release, CHART_DIR, '-f', values);
    t.match(notes, /Certificates: generate \(kept on `helm upgrade`/, 'NOTES say how the certificate is handled');
    t.notMatch(notes, /does not enforce the restricted Pod Security Standard/, 'no Pod Security hint where restricted is enforced');
    const manifest = parseManifests(helm('get', 'manifest', release));
    t.ok(manifest.length >= 12, `${manifest.length} objects in the release`);
    const discovery = new Discovery(kube);
    for (const o of manifest) {
      const stored = await kube.get(await discovery.refOf(o, ns.name));
      t.equal(stored.metadata.name, o.metadata.name, `${key(o)} stored`);
      t.equal(
        (stored.metadata.annotations as Record<string, string> | undefined)?.['meta.helm.sh/release-name'],
        release,
        `${key(o)} owned by the release`,
      );
    }
    const installed = await certsOf(kube, ns.name, fullname);
    t.ok(installed.ca.length > 100, 'a generated CA in the Secret');
    t.same(installed.caBundles, Array(6).fill(installed.ca), 'every webhook (mutating and validating) trusts it');

    helm('upgrade', release, CHART_DIR, '-f', values, '--set', 'logLevel=debug');
    t.equal(await envOf(kube, ns.name, `${fullname}-controller`, 'LOG_LEVEL'), 'debug', 'the upgrade applied');
    t.match(helm('history', release, '-o', 'json'), /"revision":2/);
    t.same(await certsOf(kube, ns.name, fullname), installed, 'helm upgrade kept the CA, the certificate, the key and the caBundle');

    // Rotation is explicit: delete the Secret, upgrade: a new CA, the caBundle follows.
    t.ok(await kube.delete(tlsSecret(ns.name, fullname)));
    helm('upgrade', release, CHART_DIR, '-f', values, '--set', 'logLevel=debug');
    const rotated = await certsOf(kube, ns.name, fullname);
    t.not(rotated.ca, installed.ca, 'a new CA after deleting the Secret');
    t.same(rotated.caBundles, Array(6).fill(rotated.ca), 'and the webhooks trust the new one');

    // --no-hooks: this release is cluster-wide, and its pre-delete hook would act on the RayClusters of the
    // other tests sharing the control plane (nothing runs the hook Job here anyway); uninstall.test.ts runs it.
    helm('uninstall', release, '--no-hooks');
    for (const o of manifest) t.equal(await statusOf(kube.get(await discovery.refOf(o, ns.name))), 404, `${key(o)} removed`);
    t.equal(
      await statusOf(kube.get(CUSTOM_RESOURCE_DEFINITIONS.at(undefined, 'rayclusters.ray.io'))),
      200,
      'CRDs stay (Helm never deletes crds/)',
    );
  });
}

t.test('NOTES: a hint to label a namespace that does not enforce Pod Security restricted', async (t) => {
  const ns = await testNamespace(t);
  const kubeconfig = await kubeconfigFile(t, ns.cp, ns.name);
  const out = helmOk(['install', 'rk', CHART_DIR, '--namespace', ns.name, '--kubeconfig', kubeconfig, '--dry-run=server']);
  t.match(out, new RegExp(`kubectl label namespace ${ns.name} pod-security.kubernetes.io/enforce=restricted`));
});
