// Our webhook over HTTPS on loopback, registered through our MutatingWebhookConfiguration (url
// https://127.0.0.1:PORT, caBundle from our certs) for one test's namespace only (the API server is shared).
import type { Test } from 'tap';
import { caBundle, generateCertificates } from '../../certs/generate.ts';
import { writeBundle } from '../../certs/files.ts';
import { freePort } from '../../localcluster/net.ts';
import { localWebhookConfiguration, readWebhookConfigurationManifest } from '../../localcluster/webhook-config.ts';
import { applyObject } from '../../localcluster/apply.ts';
import { MUTATING_WEBHOOK_CONFIGURATIONS } from '../../kube/resources.ts';
import { runWebhook } from '../../webhook/main.ts';
import type { WebhookApp } from '../../webhook/app.ts';
import type { KubeCredentials } from '../../kube/kubeconfig.ts';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { quiet, type Env } from '../raycluster/harness.ts';

/** Our webhook serving on a free loopback port until the test ends, and what a configuration needs to call it. */
export async function startLoopbackWebhook(
  tt: Test,
  options: { kubeConfig?: KubeCredentials } = {},
): Promise<{ baseUrl: string; caBundle: string; metrics: () => Promise<string>; app: () => WebhookApp }> {
  const dir = await mkdtemp(join(tmpdir(), 'raykeeper-e2e-certs-'));
  const bundle = generateCertificates({ service: 'raykeeper-webhook', namespace: 'raykeeper-system', ips: ['127.0.0.1'] });
  const paths = await writeBundle(dir, bundle);
  const port = await freePort();
  let stop: () => void = () => {};
  const stopSignal = new Promise<void>((r) => (stop = r));
  let metrics: () => Promise<string> = async () => '';
  let started: WebhookApp | undefined;
  await new Promise<void>((resolve, reject) => {
    runWebhook({
      certFile: paths.cert,
      keyFile: paths.key,
      host: '127.0.0.1',
      port,
      logger: quiet,
      stopSignal,
      kubeConfig: options.kubeConfig,
      onListening: (_address, app) => {
        started = app;
        metrics = () => app.metricsRegistry.metrics();
        resolve();
      },
    }).catch(reject);
  });
  tt.teardown(() => stop());
  return {
    baseUrl: `https://127.0.0.1:${port}`,
    caBundle: caBundle(bundle.caCert),
    metrics: () => metrics(),
    app: () => started as WebhookApp,
  };
}

export async function registerWebhook(tt: Test, e: Env): Promise<void> {
  const webhook = await startLoopbackWebhook(tt);
  const name = `raykeeper-e2e-${e.ns.name}`;
  const config = localWebhookConfiguration(await readWebhookConfigurationManifest(), {
    ...webhook,
    name,
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': e.ns.name } },
  });
  await applyObject(e.ns.kube, config);
  tt.teardown(async () => {
    await e.kube.delete({ ...MUTATING_WEBHOOK_CONFIGURATIONS, name }).catch(() => {});
  });
}
