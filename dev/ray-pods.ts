// Ray pods in `raykeeper dev` (no real node): when Ray is installed (localcluster/ray.ts findRay), the ray
// pod runner runs the operator's head and worker pods as local processes, each head on its own free
// dashboard port, and one loopback proxy (localcluster/dashboard-proxy.ts) reaches each cluster's head by
// path, so the RayJob controller and the submitter Job need one static URL template and any number of
// RayJobs run at once. Without Ray, one line says why RayJobs will stay Initializing.
import { delimiter, dirname } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { startDashboardProxy } from '../localcluster/dashboard-proxy.ts';
import { defaultBaseEnv } from '../localcluster/job-runner.ts';
import { RayPodRunner } from '../localcluster/pod-runner.ts';
import { findRay } from '../localcluster/ray.ts';
import type { Logger } from '../kube/logger.ts';

export interface DevRay {
  /** The `ray` executable, or undefined when Ray is not installed. */
  ray?: string;
  /** The controller's module flags (the dashboard URL templates through the proxy). */
  controllerFlags: Record<string, string>;
  /** The job runner's base env: `ray` of the venv first on PATH (the submitter runs `ray job submit`). */
  jobEnv?: Record<string, string>;
  stop(): Promise<void>;
}

/** The job runner's base env with the Ray venv's bin first on PATH and loopback never proxied. */
export function rayJobEnv(rayBin: string, base: Record<string, string> = defaultBaseEnv()): Record<string, string> {
  const noProxy = [base.NO_PROXY ?? base.no_proxy ?? '', '127.0.0.1', 'localhost'].filter((s) => s !== '').join(',');
  return {
    ...base,
    PATH: [dirname(rayBin), base.PATH ?? '/usr/local/bin:/usr/bin:/bin'].join(delimiter),
    NO_PROXY: noProxy,
    no_proxy: noProxy,
  };
}

export async function startDevRay(options: { kubeConfig: KubeConfig; logger: Logger; progress: (line: string) => void }): Promise<DevRay> {
  const found = findRay();
  if ('missing' in found) {
    options.progress(
      `      Ray not found, so RayJobs will stay Initializing (their RayCluster's pods are created but nothing runs them): ${found.missing}`,
    );
    return { controllerFlags: {}, stop: async () => {} };
  }
  const pods = new RayPodRunner({ kubeConfig: options.kubeConfig, ray: found, logger: options.logger });
  await pods.start();
  let proxy;
  try {
    proxy = await startDashboardProxy((namespace, cluster) => pods.dashboardPort(namespace, cluster));
  } catch (err) {
    await pods.stop();
    throw err;
  }
  options.progress(`      Ray pods run as local processes (${found.ray}); dashboards at ${proxy.urlTemplate}`);
  const running = proxy;
  return {
    ray: found.ray,
    controllerFlags: {
      'rayjob-dashboard-url-template': running.urlTemplate,
      'rayjob-submitter-dashboard-url-template': running.urlTemplate,
    },
    jobEnv: rayJobEnv(found.ray),
    stop: async () => {
      await running.stop();
      await pods.stop();
    },
  };
}
