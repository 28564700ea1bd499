// Step 1 of `raykeeper uninstall`: stop everything of raykeeper that adds the GCS-FT finalizer, before any
// finalizer is looked at, so a RayCluster created meanwhile gets none (or is seen by the passes that follow):
// - the MutatingWebhookConfiguration (it adds the finalizer at CREATE) and the ValidatingWebhookConfiguration
//   of that name are DELETED, not left for `helm uninstall` / `kubectl delete -k` to remove a few seconds
//   later (both treat the missing object as deleted; kubectl needs --ignore-not-found);
// - the controller Deployment is scaled to 0 and its pods are waited for (bounded): a running controller adds
//   the finalizer to every GCS-FT cluster it sees without it. Its settings are read first (./settings.ts).
// Gone already counts as done: the command can run again after a partial run.
import type { KubeClient } from '../../kube/client.ts';
import { MERGE_PATCH } from '../../kube/client.ts';
import type { Deployment } from '../../kube/model.ts';
import { DEPLOYMENTS, MUTATING_WEBHOOK_CONFIGURATIONS, PODS, VALIDATING_WEBHOOK_CONFIGURATIONS } from '../../kube/resources.ts';
import { sleep } from '../../kube/backoff.ts';

export interface StopTargets {
  /** Where raykeeper runs (the controller Deployment's namespace). */
  namespace: string;
  /** The controller Deployment; '' to leave it alone. */
  controllerDeployment: string;
  /** The Mutating- and ValidatingWebhookConfiguration; '' to leave them alone. */
  webhookConfiguration: string;
}

/** One line per step, for the progress output. */
export type Say = (line: string) => void;

const WEBHOOK_KINDS = [
  ['MutatingWebhookConfiguration', MUTATING_WEBHOOK_CONFIGURATIONS],
  ['ValidatingWebhookConfiguration', VALIDATING_WEBHOOK_CONFIGURATIONS],
] as const;

export async function stopWebhooks(kube: KubeClient, targets: StopTargets, dryRun: boolean, say: Say, signal?: AbortSignal): Promise<void> {
  const name = targets.webhookConfiguration;
  if (!name) return say('webhook configurations: left alone (--webhook-configuration "")');
  for (const [kind, ref] of WEBHOOK_KINDS) {
    if (dryRun) {
      const there = await kube.getOrUndefined({ ...ref, name }, { signal });
      say(there ? `would delete ${kind} ${name}` : `${kind} ${name}: not there`);
      continue;
    }
    const deleted = await kube.delete({ ...ref, name }, { signal });
    say(deleted ? `deleted ${kind} ${name}: the API server calls raykeeper's webhook no more` : `${kind} ${name}: already gone`);
  }
}

function selectorOf(deployment: Deployment): string {
  const labels = deployment.spec?.selector?.matchLabels ?? {};
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/**
 * Scales the controller to 0 and waits until its pods are gone or `waitUntil` (ms epoch) passes. Resolves to
 * the Deployment as it was before (its settings), or undefined when there is none; the pods still there at
 * the end are named in a line (their controller may still add finalizers: the passes find those).
 */
export async function stopController(
  kube: KubeClient,
  targets: StopTargets,
  options: { dryRun: boolean; waitUntil: number; now: () => number; pollMs?: number },
  say: Say,
  signal?: AbortSignal,
): Promise<Deployment | undefined> {
  const { namespace, controllerDeployment: name } = targets;
  if (!name) {
    say('controller Deployment: left alone (--controller-deployment "")');
    return undefined;
  }
  const ref = DEPLOYMENTS.at(namespace, name);
  const deployment = await kube.getOrUndefined(ref, { signal });
  if (!deployment) {
    say(`Deployment ${namespace}/${name}: not there`);
    return undefined;
  }
  const replicas = deployment.spec?.replicas ?? 1;
  if (options.dryRun) {
    say(`would scale Deployment ${namespace}/${name} from ${replicas} to 0 replicas`);
    return deployment;
  }
  if (replicas !== 0) {
    await kube.patch(ref, { spec: { replicas: 0 } }, MERGE_PATCH, { signal });
    say(`scaled Deployment ${namespace}/${name} from ${replicas} to 0 replicas: its controller adds no finalizer once its pods are gone`);
  } else say(`Deployment ${namespace}/${name}: already at 0 replicas`);
  const selector = selectorOf(deployment);
  if (!selector) return deployment;
  let pods: string[] = [];
  for (;;) {
    pods = (await kube.list({ ...PODS, namespace }, { labelSelector: selector, signal })).items.map((p) => p.metadata?.name ?? '');
    if (pods.length === 0 || options.now() >= options.waitUntil) break;
    await sleep(Math.min(options.pollMs ?? 1000, Math.max(0, options.waitUntil - options.now())), signal);
  }
  say(
    pods.length === 0
      ? `controller pods (${selector}) gone`
      : `controller pods still there after the wait: ${pods.join(', ')} (a finalizer they add again is reported below)`,
  );
  return deployment;
}
