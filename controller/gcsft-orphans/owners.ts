// RayClusters as owners of storage namespaces (src/gcsft/orphans.ts ownerOf), with the references a head
// pod resolves (a namespace or address in a Secret, ConfigMap or envFrom) read through the API like the
// in-process cleanup: ONE way for the controller's orphan finder and `redis-cleanup --list --orphans`.
import { asJobInNamespace, planInProcessCleanup } from '../../src/gcsft/inprocess.ts';
import { ownerNeedsEnv, ownerOf, type NamespaceOwner } from '../../src/gcsft/orphans.ts';
import { RAYCLUSTERS, type RayCluster, type RayClusterFtView } from '../../src/types.ts';
import type { KubeClient } from '../../kube/client.ts';
import { resolveCleanupEnv, type ObjectDataCache } from '../gcsft-cleanup/cleanup-env.ts';

/**
 * The environment the cluster's cleanup would have, as its Job's pod in the cluster's namespace sees it
 * (a one-label Redis host qualified with that namespace); throws when part of it cannot be resolved.
 */
export async function resolvedHeadEnv(
  kube: KubeClient,
  cluster: RayClusterFtView,
  signal: AbortSignal | undefined,
  cache: ObjectDataCache,
): Promise<Record<string, string>> {
  const plan = planInProcessCleanup(cluster);
  if (plan.unresolvable.length > 0) throw new Error(`cannot resolve ${plan.unresolvable.join(', ')}`);
  return asJobInNamespace(await resolveCleanupEnv(kube, cluster, plan, signal, cache), cluster.metadata.namespace ?? '');
}

/** Each cluster as an owner; one whose references cannot be read has an unknown namespace (it holds GC back). */
export async function clusterOwners(
  kube: KubeClient,
  clusters: readonly RayClusterFtView[],
  signal: AbortSignal | undefined,
  cache: ObjectDataCache = new Map(),
): Promise<NamespaceOwner[]> {
  const out: NamespaceOwner[] = [];
  for (const c of clusters) {
    if (!ownerNeedsEnv(c)) out.push(ownerOf(c));
    else out.push(ownerOf(c, await resolvedHeadEnv(kube, c, signal, cache).catch(() => undefined)));
  }
  return out;
}

/** Every RayCluster in every namespace, read from the API (never a cache). */
export async function listAllClusters(kube: KubeClient, signal?: AbortSignal): Promise<RayCluster[]> {
  return (await kube.list(RAYCLUSTERS, signal ? { signal } : {})).items;
}
