// Names a RayJob derives: the Ray submission id, the RayCluster name, the head service, the submitter
// Job, the dashboard address. Pure; randomness is injected so tables can pin it.
import { CLUSTER_SELECTOR_KEY, DASHBOARD_PORT } from './constants.ts';
import type { RayJob } from '../types.ts';

/** The alphabet of k8s.io/apimachinery's rand.String (no vowels, no confusable digits), which KubeRay uses. */
export const SUFFIX_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

export type RandomSource = () => number; // [0, 1), like Math.random

export function randomSuffix(length = 5, random: RandomSource = Math.random): string {
  let out = '';
  for (let i = 0; i < length; i++) {
    out += SUFFIX_ALPHABET[Math.floor(random() * SUFFIX_ALPHABET.length) % SUFFIX_ALPHABET.length];
  }
  return out;
}

/** KubeRay's GenerateRayJobId: `<rayjob name>-<5 random lowercase alnum>`. */
export function generateJobId(rayJobName: string, random: RandomSource = Math.random): string {
  return `${rayJobName}-${randomSuffix(5, random)}`;
}

/** KubeRay's GenerateRayClusterName: `<rayjob name>-<5 random lowercase alnum>` (<= 53 characters). */
export function generateClusterName(rayJobName: string, random: RandomSource = Math.random): string {
  return `${rayJobName}-${randomSuffix(5, random)}`;
}

/** The cluster spec.clusterSelector names, or undefined when the RayJob brings its own cluster. */
export function selectedClusterName(job: RayJob): string | undefined {
  const selector = job.spec?.clusterSelector;
  if (selector === undefined || selector === null || Object.keys(selector).length === 0) return undefined;
  return selector[CLUSTER_SELECTOR_KEY];
}

export function usesClusterSelector(job: RayJob): boolean {
  const selector = job.spec?.clusterSelector;
  return selector !== undefined && selector !== null && Object.keys(selector).length > 0;
}

/** KubeRay's head service name for a RayCluster. */
export function defaultHeadServiceName(clusterName: string): string {
  return `${clusterName}-head-svc`;
}

/** The submitter Job is named after the RayJob (KubeRay's RayJobK8sJobNamespacedName). */
export function submitterJobName(job: RayJob): string {
  return job.metadata.name ?? '';
}

export interface DashboardTarget {
  namespace: string;
  cluster: string;
}

/**
 * Renders a dashboard URL template. Placeholders: {service} (the head service), {cluster}, {namespace},
 * {port} (8265). A template without placeholders (one dashboard for everything) is allowed.
 */
export function renderDashboardUrl(template: string, target: DashboardTarget): string {
  return template
    .replaceAll('{service}', defaultHeadServiceName(target.cluster))
    .replaceAll('{cluster}', target.cluster)
    .replaceAll('{namespace}', target.namespace)
    .replaceAll('{port}', String(DASHBOARD_PORT))
    .replace(/\/+$/, '');
}

/** The in-cluster address KubeRay writes to status.dashboardURL (`<svc>.<ns>.svc.cluster.local:8265`). */
export const DEFAULT_SUBMITTER_DASHBOARD_TEMPLATE = 'http://{service}.{namespace}.svc.cluster.local:{port}';
/** What the controller itself calls; override per cluster or by template for out-of-cluster runs. */
export const DEFAULT_CONTROLLER_DASHBOARD_TEMPLATE = 'http://{service}.{namespace}.svc:{port}';

/** status.dashboardURL keeps KubeRay's scheme-less form when the scheme is plain http. */
export function toStatusDashboardUrl(url: string): string {
  return url.startsWith('http://') ? url.slice('http://'.length) : url;
}

/** The inverse: a scheme-less status.dashboardURL means http. */
export function fromStatusDashboardUrl(value: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`;
}
