// Our MutatingWebhookConfiguration and ValidatingWebhookConfiguration (manifests/base), re-pointed at a webhook on loopback: the API server
// calls `url: https://127.0.0.1:PORT/<path>` instead of the in-cluster Service. Pure.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseManifests, type KubeObject } from './apply.ts';
import { REPO_ROOT } from './binaries.ts';

export const WEBHOOK_CONFIGURATION_FILE = join(REPO_ROOT, 'manifests', 'base', 'mutatingwebhookconfiguration.yaml');
export const VALIDATING_WEBHOOK_CONFIGURATION_FILE = join(REPO_ROOT, 'manifests', 'base', 'validatingwebhookconfiguration.yaml');

interface Webhook {
  clientConfig?: { service?: { path?: string }; url?: string; caBundle?: string };
  namespaceSelector?: unknown;
  [key: string]: unknown;
}

export interface LocalWebhookOptions {
  /** https://127.0.0.1:PORT */
  baseUrl: string;
  /** base64 PEM of the CA that signed the webhook's serving certificate. */
  caBundle: string;
  /** Object name (default: the manifest's). Tests sharing an API server use a unique one. */
  name?: string;
  /** Replace each webhook's namespaceSelector (tests: only their own namespace). */
  namespaceSelector?: Record<string, unknown>;
  /**
   * Register the ValidatingWebhookConfiguration too (default true). Off (`raykeeper dev
   * --no-validating-webhook`): the controllers alone judge objects, as KubeRay without its optional webhook.
   */
  validating?: boolean;
}

export function localWebhookConfiguration(manifest: KubeObject, options: LocalWebhookOptions): KubeObject {
  const copy = structuredClone(manifest) as KubeObject & { webhooks?: Webhook[] };
  if (options.name) copy.metadata = { ...copy.metadata, name: options.name };
  for (const hook of copy.webhooks ?? []) {
    const path = hook.clientConfig?.service?.path;
    if (!path) throw new Error(`webhook ${String(hook.name)} has no clientConfig.service.path`);
    hook.clientConfig = { url: options.baseUrl.replace(/\/$/, '') + path, caBundle: options.caBundle };
    if (options.namespaceSelector) hook.namespaceSelector = options.namespaceSelector;
  }
  return copy;
}

export async function readWebhookConfigurationManifest(file = WEBHOOK_CONFIGURATION_FILE): Promise<KubeObject> {
  const [manifest] = parseManifests(await readFile(file, 'utf8'));
  if (!manifest) throw new Error(`${file} holds no object`);
  return manifest;
}

/** Both configurations (or the mutating one alone), mutating first, each re-pointed at the local webhook (dev and tests). */
export async function localWebhookConfigurations(options: LocalWebhookOptions): Promise<KubeObject[]> {
  const files =
    options.validating === false ? [WEBHOOK_CONFIGURATION_FILE] : [WEBHOOK_CONFIGURATION_FILE, VALIDATING_WEBHOOK_CONFIGURATION_FILE];
  return Promise.all(files.map(async (file) => localWebhookConfiguration(await readWebhookConfigurationManifest(file), options)));
}
