// Registers the RayJob reconciler with the controller runtime (one line in controller/reconcilers.ts).
// Triggers: RayJobs themselves, the RayClusters, submitter Jobs and head Services they own (mapped to the owner), and
// the head pods of SidecarMode clusters (mapped to the RayJob owning the cluster).
import { ORIGINATED_FROM_CRD_LABEL, ORIGINATED_FROM_CRD_RAYJOB, SUBMISSION_MODE_LABEL } from '../../src/rayjob/constants.ts';
import { RAYJOB_FLAGS, rayJobSettings, type RayJobFlagName } from '../../src/rayjob/config.ts';
import { ownerKeys, type ModuleFlag, type ObjectKey, type ReconcilerModule } from '../../kube/reconciler.ts';
import type { Informer, InformerFactory } from '../../kube/informer.ts';
import { headPodInformer, operatorRayClusterInformer } from '../raycluster/informers.ts';
import { RayJobReconciler, type RayJobCaches } from './reconciler.ts';
import { JOBS, SERVICES } from '../../kube/resources.ts';
import { RAYCLUSTERS, RAYJOBS, type RayCluster } from '../../src/types.ts';
import type { Pod } from '../../kube/model.ts';
import { NODE_TYPE_HEAD, RAY_CLUSTER_LABEL, RAY_NODE_TYPE_LABEL } from '../../src/names.ts';
import { MODULE } from '../module-names.ts';

const flags: Record<string, ModuleFlag> = {};
for (const [name, spec] of Object.entries(RAYJOB_FLAGS) as Array<[RayJobFlagName, (typeof RAYJOB_FLAGS)[RayJobFlagName]]>) {
  flags[name] = { type: 'string', help: `${spec.help}; env ${spec.env}` };
}

/**
 * The informers the RayJob reconciler is triggered by and reads from: RayJobs, and what they created.
 * `allClusters`: the operator's cache of every RayCluster, when it runs in this process. The RayJob reads
 * its clusters there, a clusterSelector's cluster included (no GET per dashboard poll), and no second
 * RayCluster watch is opened; without it, only the clusters RayJobs created are cached.
 */
export function rayJobCaches(informers: InformerFactory, allClusters?: Informer<RayCluster>): RayJobCaches {
  const owned = `${ORIGINATED_FROM_CRD_LABEL}=${ORIGINATED_FROM_CRD_RAYJOB}`;
  return {
    rayJobs: informers.get({ ...RAYJOBS }),
    clusters: allClusters ?? informers.get({ ...RAYCLUSTERS, labelSelector: owned }),
    submitters: informers.get({ ...JOBS, labelSelector: owned }),
    // The RayJobs' own head Services carry the same label (src/rayjob/head-service.ts); the clusters' do not.
    headServices: informers.get({ ...SERVICES, labelSelector: owned }),
  };
}

/** A SidecarMode cluster's head pod -> the RayJob owning the cluster (its submitter container's state changed). */
function sidecarHeadPodKeys(clusters: Informer<RayCluster>): (pod: Pod) => ObjectKey[] {
  const toOwner = ownerKeys('RayJob', 'ray.io');
  return (pod) => {
    if (pod.metadata.labels?.[RAY_NODE_TYPE_LABEL] !== NODE_TYPE_HEAD) return [];
    const cluster = clusters.getByName(pod.metadata.namespace, pod.metadata.labels?.[RAY_CLUSTER_LABEL] ?? '');
    if (cluster?.metadata.labels?.[SUBMISSION_MODE_LABEL] !== 'SidecarMode') return [];
    return toOwner(cluster);
  };
}

export const rayJobModule: ReconcilerModule = {
  name: MODULE.rayJob,
  summary: 'RayJob deployment state machine (New -> Initializing -> Running -> Complete/Failed, suspend, retry, ttl)',
  flags,
  create(ctx, parsed) {
    const settings = rayJobSettings(parsed, ctx.env);
    const headPods = headPodInformer(ctx);
    const caches: RayJobCaches = { ...rayJobCaches(ctx.informers, operatorRayClusterInformer(ctx)), headPods };
    const { rayJobs, clusters, submitters, headServices } = caches;
    const reconciler = new RayJobReconciler({
      kube: ctx.kube,
      events: ctx.events,
      logger: ctx.logger.child({ controller: 'rayjob' }),
      metrics: ctx.metrics,
      now: ctx.now,
      settings,
      // The reconciler reads from the informers it is triggered by (a miss is confirmed with a GET, but for the
      // RayJob itself and its own cluster while Initializing: see the header of reconciler.ts).
      caches,
    });
    return {
      name: MODULE.rayJob,
      reconciler,
      watches: [
        { informer: rayJobs },
        { informer: clusters, toKeys: ownerKeys('RayJob', 'ray.io'), resync: false },
        { informer: submitters, toKeys: ownerKeys('RayJob', 'ray.io'), resync: false },
        // A head Service deleted or edited by someone: its RayJob makes it again (KubeRay: Owns(&corev1.Service{})).
        ...(headServices ? [{ informer: headServices, toKeys: ownerKeys('RayJob', 'ray.io'), resync: false }] : []),
        { informer: headPods, toKeys: sidecarHeadPodKeys(clusters), resync: false },
      ],
    };
  },
};
