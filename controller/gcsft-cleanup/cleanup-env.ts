// The environment the cleanup Job would have had, resolved in the controller with its own permissions:
// Secrets and ConfigMaps read through the API (a 403 says the controller may not), then kube/env.ts as
// the kubelet would. ONE resolver for the in-process cleanup (./reconciler.ts) and the orphan finder
// (../gcsft-orphans/), so a Redis password reaches the controller only this way and only in memory.
import { resolveEnv } from '../../kube/env.ts';
import { isForbidden, isNotFound, type KubeClient, type ResourceRef } from '../../kube/client.ts';
import type { ConfigMap, Secret } from '../../kube/model.ts';
import { CONFIGMAPS, SECRETS } from '../../kube/resources.ts';
import { planContainer, type InProcessPlan } from '../../src/gcsft/inprocess.ts';
import type { RayClusterFtView } from '../../src/types.ts';

type Data = Record<string, string> | undefined;

/** Secrets / ConfigMaps read so far, by "kind namespace/name" (share one across clusters of one pass). */
export type ObjectDataCache = Map<string, Promise<Data>>;

export async function resolveCleanupEnv(
  kube: KubeClient,
  cluster: RayClusterFtView,
  plan: InProcessPlan,
  signal: AbortSignal | undefined,
  cache: ObjectDataCache = new Map(),
): Promise<Record<string, string>> {
  const namespace = cluster.metadata.namespace ?? '';
  const read = async (kind: 'secret' | 'configMap', name: string): Promise<Data> => {
    try {
      const ref: ResourceRef<Secret | ConfigMap> = (kind === 'secret' ? SECRETS : CONFIGMAPS).at(namespace, name);
      const obj = await kube.get(ref, { signal });
      const data: Record<string, string> = {};
      for (const [k, v] of Object.entries(obj.data ?? {})) data[k] = kind === 'secret' ? Buffer.from(v, 'base64').toString('utf8') : v;
      const binary = 'binaryData' in obj ? obj.binaryData : undefined;
      for (const [k, v] of Object.entries(binary ?? {})) data[k] = Buffer.from(v, 'base64').toString('utf8');
      return data;
    } catch (err) {
      if (isForbidden(err)) throw new Error(`the controller may not read ${kind} ${namespace}/${name} (403)`);
      if (isNotFound(err)) return undefined;
      throw err;
    }
  };
  const load = (kind: 'secret' | 'configMap') => (_ns: string, name: string) => {
    const id = `${kind} ${namespace}/${name}`;
    let data = cache.get(id);
    if (!data) cache.set(id, (data = read(kind, name)));
    return data;
  };
  const pod = { name: cluster.metadata.name ?? '', namespace, uid: '', labels: {}, annotations: {}, serviceAccountName: '' };
  return resolveEnv(planContainer(plan), pod, { secret: load('secret'), configMap: load('configMap') });
}
