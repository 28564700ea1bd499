// Our webhook over HTTPS on loopback, registered through our MutatingWebhookConfiguration (url
// https://127.0.0.1:PORT, caBundle from our certs) for one test's namespace only (the API server is shared).
import type { Test } from 'tap';
import { caBundle, generateCertificates } from '../../certs/generate.ts';
import { writeBundle } from '../../certs/files.ts';
import { freePort } from '../../localcluster/net.ts';
import {
  localWebhookConfiguration,
  localWebhookConfigurations,
  readWebhookConfigurationManifest,
} from '../../localcluster/webhook-config.ts';
import { applyObject } from '../../localcluster/apply.ts';
import { KubeApiError, type KubeClient } from '../../kube/client.ts';
import { RAYJOBS } from '../../src/types.ts';
import { MUTATING_WEBHOOK_CONFIGURATIONS, VALIDATING_WEBHOOK_CONFIGURATIONS } from '../../kube/resources.ts';
import { until } from './until.ts';
import { runWebhook } from '../../webhook/main.ts';
import type { WebhookApp } from '../../webhook/app.ts';
import type { KubeCredentials } from '../../kube/kubeconfig.ts';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { quiet, type Env } from './harness.ts';

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

/**
 * Both of our configurations (mutating, and validating unless `validating: false`, as `raykeeper dev
 * --no-validating-webhook`) for one test namespace, and a wait until the API server really calls the
 * validating webhook (a dry-run create it refuses with 403), so no later assertion races its registration.
 */
export async function registerWebhooks(
  tt: Test,
  e: Env,
  options: { validating?: boolean } = {},
): Promise<Awaited<ReturnType<typeof startLoopbackWebhook>>> {
  const webhook = await startLoopbackWebhook(tt);
  const name = `raykeeper-webhooks-${e.ns.name}`;
  const validating = options.validating ?? true;
  const configs = await localWebhookConfigurations({
    ...webhook,
    name,
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': e.ns.name } },
    validating,
  });
  for (const config of configs) await applyObject(e.ns.kube, config);
  tt.teardown(async () => {
    await e.kube.delete({ ...MUTATING_WEBHOOK_CONFIGURATIONS, name }).catch(() => {});
    await e.kube.delete({ ...VALIDATING_WEBHOOK_CONFIGURATIONS, name }).catch(() => {});
  });
  if (validating) await untilValidatingCalled(e.kube, e.ns.name);
  return webhook;
}

/** Waits until a dry-run create of a RayJob only our validating webhook refuses (backoffLimit -1) is refused with 403. */
export async function untilValidatingCalled(kube: KubeClient, namespace: string): Promise<void> {
  const probe = {
    apiVersion: 'ray.io/v1',
    kind: 'RayJob',
    metadata: { name: 'validating-probe' },
    spec: { backoffLimit: -1, clusterSelector: { 'ray.io/cluster': 'none' } },
  };
  await until(
    () =>
      kube.create({ ...RAYJOBS, namespace }, probe, { query: { dryRun: 'All' } }).then(
        () => false,
        (err: unknown) => err instanceof KubeApiError && err.statusCode === 403,
      ),
    'the validating webhook to be called',
    30_000,
    200,
  );
}

/** The API error a write ends with (fails the test if the write succeeds). */
export async function refusal(p: Promise<unknown>): Promise<KubeApiError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof KubeApiError) return err;
    throw err;
  }
  throw new Error('the API server admitted it');
}
