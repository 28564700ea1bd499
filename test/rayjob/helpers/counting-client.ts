// A KubeClient that records every request it makes, for tests that prove a path reads from a cache.
import { KubeClient } from '../../../kube/client.ts';

/** A KubeClient that records every request as "METHOD path". */
export function countingClient(kubeConfig: KubeClient['kubeConfig']): { kube: KubeClient; calls: string[] } {
  const kube = new KubeClient(kubeConfig);
  const calls: string[] = [];
  const request = kube.request.bind(kube);
  kube.request = ((method: string, path: string, options?: Parameters<KubeClient['request']>[2]) => {
    calls.push(`${method} ${path}`);
    return request(method, path, options);
  }) as KubeClient['request'];
  return { kube, calls };
}
