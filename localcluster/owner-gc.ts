// THE OWNER GARBAGE COLLECTOR of the local control plane, which has no kube-controller-manager: an object
// whose owners (ownerReferences) are all gone is deleted, as Kubernetes' garbage collector does with
// background propagation. Only the kinds `raykeeper dev` makes: RayJobs owned by RayCronJobs, RayClusters
// owned by RayJobs, submitter Jobs owned by RayJobs, cleanup Jobs, Pods, Services and (embedded GCS storage)
// PersistentVolumeClaims owned by RayClusters.
// It also stands in for the pvc-protection controller: a claim being deleted loses the
// `kubernetes.io/pvc-protection` finalizer (which the API server adds) once no running pod mounts it, so a
// deleted claim goes instead of staying Terminating for ever (a new head would wait on it).
// So a deleted RayCronJob takes its RayJobs along, and a deleted RayJob (or the
// RayCluster its ttlSecondsAfterFinished deletes) takes its pods along, and the ray pod runner stops their
// Ray processes. An owner of a kind not listed here keeps its dependents (nothing is known about it).
// Owners are confirmed gone with a GET (uid compared) before a delete, which carries a uid precondition.
// Not modelled: the `orphan` and `foregroundDeletion` finalizers (delete owners with propagationPolicy
// Background, as kubectl and raykeeper's controller do; a batch/v1 Job deleted with the API's default,
// Orphan, keeps its finalizer for ever here).
import type { KubeConfig } from '@kubernetes/client-node';
import { InformerFactory, type Informer } from '../kube/informer.ts';
import type { ApiObject, ObjectWithMeta, OwnerReference } from '../kube/model.ts';
import { isNotFound, JSON_PATCH, KubeClient } from '../kube/client.ts';
import { createLogger, type Logger } from '../kube/logger.ts';
import { RAYCLUSTERS, RAYCRONJOBS, RAYJOBS } from '../src/types.ts';
import type { Pod } from '../kube/model.ts';
import { JOBS, PERSISTENTVOLUMECLAIMS, PODS, SERVICES, type Resource } from '../kube/resources.ts';

type Kind = Resource<ApiObject>;

/** Owner kinds (apiVersion + kind) this collector can look up. */
export const OWNER_KINDS: Record<string, Kind> = {
  'ray.io/v1/RayCronJob': RAYCRONJOBS,
  'ray.io/v1/RayJob': RAYJOBS,
  'ray.io/v1/RayCluster': RAYCLUSTERS,
  'batch/v1/Job': JOBS,
};

/** The kinds whose objects may be collected. */
export const DEPENDENT_KINDS: Kind[] = [RAYJOBS, RAYCLUSTERS, JOBS, PODS, SERVICES, PERSISTENTVOLUMECLAIMS];

export const PVC_PROTECTION_FINALIZER = 'kubernetes.io/pvc-protection';

/**
 * Whether a claim's pvc-protection finalizer may go (what kube-controller-manager's pvc-protection
 * controller decides): it is being deleted, holds the finalizer, and no pod that has not ended mounts it.
 */
export function protectionReleasable(claim: ObjectWithMeta, pods: readonly Pod[]): boolean {
  const meta = claim.metadata;
  if (!meta?.deletionTimestamp || !(meta.finalizers ?? []).includes(PVC_PROTECTION_FINALIZER)) return false;
  return !pods.some(
    (p) =>
      p.metadata.namespace === meta.namespace &&
      p.status?.phase !== 'Succeeded' &&
      p.status?.phase !== 'Failed' &&
      (p.spec?.volumes ?? []).some((v) => (v.persistentVolumeClaim as { claimName?: unknown } | undefined)?.claimName === meta.name),
  );
}

const ownerKey = (o: OwnerReference): string => `${o.apiVersion}/${o.kind}`;

/**
 * Whether an object is a candidate for collection: it has owners, all of kinds we know, and none of
 * them exists (`exists(namespace, owner)`). Being deleted already: not a candidate.
 */
export function orphaned(obj: ObjectWithMeta, exists: (namespace: string, owner: OwnerReference) => boolean): boolean {
  const owners = obj.metadata?.ownerReferences ?? [];
  if (owners.length === 0 || obj.metadata?.deletionTimestamp) return false;
  if (!owners.every((o) => OWNER_KINDS[ownerKey(o)] !== undefined)) return false;
  return !owners.some((o) => exists(obj.metadata?.namespace ?? '', o));
}

export interface OwnerGcOptions {
  kubeConfig: KubeConfig;
  /** One namespace (tests sharing a control plane), or all (undefined). */
  namespace?: string;
  logger?: Logger;
}

export class OwnerGarbageCollector {
  private readonly kube: KubeClient;
  private readonly factory: InformerFactory;
  private readonly dependents: Array<{ kind: Kind; informer: Informer<ApiObject> }>;
  private readonly owners = new Map<string, Informer<ApiObject>>();
  private readonly log: Logger;
  private readonly deleting = new Set<string>();
  private scheduled = false;
  private stopped = false;

  constructor(options: OwnerGcOptions) {
    this.kube = new KubeClient(options.kubeConfig);
    this.factory = new InformerFactory(this.kube, { namespace: options.namespace });
    this.log = options.logger ?? createLogger('owner-gc');
    this.dependents = DEPENDENT_KINDS.map((kind) => ({ kind, informer: this.factory.get(kind) }));
    for (const [key, kind] of Object.entries(OWNER_KINDS)) this.owners.set(key, this.factory.get(kind));
  }

  async start(): Promise<void> {
    for (const informer of this.factory.all()) informer.on(() => this.schedule());
    this.factory.start();
    await this.factory.waitForSync();
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.factory.stop();
    this.kube.close();
  }

  private schedule(): void {
    if (this.scheduled || this.stopped) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.sweep().catch((err: unknown) => this.log.warn({ err: String(err) }, 'owner gc: sweep failed'));
    });
  }

  private cached(namespace: string, o: OwnerReference): boolean {
    const found = this.owners.get(ownerKey(o))?.getByName(namespace, o.name);
    return found !== undefined && found.metadata?.uid === o.uid;
  }

  /** The cache can lag behind (an owner created just before its dependent): ask the API. */
  private async ownerGone(namespace: string, o: OwnerReference): Promise<boolean> {
    try {
      const found = await this.kube.get(OWNER_KINDS[ownerKey(o)]!.at(namespace, o.name));
      return found.metadata?.uid !== o.uid;
    } catch (err) {
      if (isNotFound(err)) return true;
      throw err;
    }
  }

  private async sweep(): Promise<void> {
    for (const { kind, informer } of this.dependents) {
      for (const obj of informer.list()) {
        if (this.stopped || !orphaned(obj, (ns, o) => this.cached(ns, o))) continue;
        const namespace = obj.metadata?.namespace ?? '';
        const name = obj.metadata?.name ?? '';
        const key = `${kind.plural}/${namespace}/${name}/${obj.metadata?.uid ?? ''}`;
        if (this.deleting.has(key)) continue;
        this.deleting.add(key);
        try {
          const owners = obj.metadata?.ownerReferences ?? [];
          const gone = await Promise.all(owners.map((o) => this.ownerGone(namespace, o)));
          if (!gone.every(Boolean)) continue;
          await this.kube.delete(
            { ...kind, namespace, name },
            { propagationPolicy: 'Background', preconditions: { uid: obj.metadata?.uid } },
          );
          this.log.info({ kind: kind.plural, namespace, name }, 'owner gc: deleted an object whose owners are gone');
        } catch (err) {
          if (!isNotFound(err)) this.log.warn({ err: String(err), kind: kind.plural, namespace, name }, 'owner gc: delete failed');
        } finally {
          this.deleting.delete(key);
        }
      }
    }
    await this.releaseClaims();
  }

  private async releaseClaims(): Promise<void> {
    const claims = this.dependents.find((d) => d.kind === PERSISTENTVOLUMECLAIMS)!.informer.list();
    const pods = this.dependents.find((d) => d.kind === PODS)!.informer.list() as Pod[];
    for (const claim of claims) {
      if (this.stopped || !protectionReleasable(claim, pods)) continue;
      const namespace = claim.metadata?.namespace ?? '';
      const name = claim.metadata?.name ?? '';
      const finalizers = claim.metadata?.finalizers ?? [];
      const at = finalizers.indexOf(PVC_PROTECTION_FINALIZER);
      try {
        // The test op makes a patch computed from a stale copy fail rather than remove another finalizer.
        await this.kube.patch(
          PERSISTENTVOLUMECLAIMS.at(namespace, name),
          [
            { op: 'test', path: `/metadata/finalizers/${at}`, value: PVC_PROTECTION_FINALIZER },
            { op: 'remove', path: `/metadata/finalizers/${at}` },
          ],
          JSON_PATCH,
        );
        this.log.info({ namespace, name }, 'owner gc: released a deleted claim no pod uses (pvc-protection)');
      } catch (err) {
        if (!isNotFound(err)) this.log.debug({ err: String(err), namespace, name }, 'owner gc: claim not released (tried again)');
      }
    }
  }
}

export async function startOwnerGarbageCollector(options: OwnerGcOptions): Promise<OwnerGarbageCollector> {
  const gc = new OwnerGarbageCollector(options);
  await gc.start();
  return gc;
}
