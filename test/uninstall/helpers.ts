// What the uninstall tests share: the CLI as a child process (the test's event loop stays free for the job
// runner), and stand-ins for what an install leaves in the cluster (webhook configurations that match no
// namespace, a controller Deployment that is stored, never run: no kubelet here).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import type { KubeClient } from '../../kube/client.ts';
import { DEPLOYMENTS, EVENTS, MUTATING_WEBHOOK_CONFIGURATIONS, VALIDATING_WEBHOOK_CONFIGURATIONS } from '../../kube/resources.ts';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `raykeeper <args>` with KUBECONFIG=kubeconfig, resolving when it exits. */
export function cli(args: string[], kubeconfig: string, env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'raykeeper.js'), ...args], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        NO_PROXY: '127.0.0.1,localhost',
        KUBECONFIG: kubeconfig,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A Mutating- and a ValidatingWebhookConfiguration named `name` that match no namespace (harmless to other tests). */
export async function webhookConfigurations(kube: KubeClient, name: string): Promise<void> {
  const webhook = (kind: string) => ({
    name: `raycluster.${kind}.raykeeper.io`,
    admissionReviewVersions: ['v1'],
    sideEffects: 'None',
    failurePolicy: 'Ignore',
    clientConfig: { url: 'https://127.0.0.1:9/never' },
    rules: [{ apiGroups: ['ray.io'], apiVersions: ['v1'], resources: ['rayclusters'], operations: ['CREATE'] }],
    namespaceSelector: { matchLabels: { 'raykeeper.test/matches': 'nothing' } },
  });
  await kube.create(MUTATING_WEBHOOK_CONFIGURATIONS, { metadata: { name }, webhooks: [webhook('mutate')] });
  await kube.create(VALIDATING_WEBHOOK_CONFIGURATIONS, { metadata: { name }, webhooks: [webhook('validate')] });
}

/** The controller Deployment as the chart renders it (its args and env are what the uninstall reads). */
export async function controllerDeployment(
  kube: KubeClient,
  namespace: string,
  args: string[],
  env: Array<{ name: string; value: string }> = [],
): Promise<{ selector: Record<string, string> }> {
  const selector = { 'app.kubernetes.io/name': 'raykeeper', 'app.kubernetes.io/component': 'controller' };
  await kube.create(
    { ...DEPLOYMENTS, namespace },
    {
      metadata: { name: 'raykeeper-controller' },
      spec: {
        replicas: 2,
        selector: { matchLabels: selector },
        template: {
          metadata: { labels: selector },
          spec: { containers: [{ name: 'controller', image: 'raykeeper:test', args: ['controller', ...args], env }] },
        },
      },
    },
  );
  return { selector };
}

export interface EventSeen {
  type: string;
  reason: string;
  message: string;
  involvedObject: { name: string; kind: string };
  source?: { component?: string };
}

/** The Events about one object of a namespace. */
export async function eventsOf(kube: KubeClient, namespace: string, name: string): Promise<EventSeen[]> {
  return ((await kube.list({ ...EVENTS, namespace })).items as EventSeen[]).filter((e) => e.involvedObject.name === name);
}
