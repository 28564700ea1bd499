// Embedded GCS storage (KubeRay v1.7, `gcsFaultToleranceOptions.backend: rocksdb`, Ray >= 2.57's
// RocksDbStoreClient): the GCS keeps its tables in RocksDB on a PersistentVolumeClaim mounted on the head,
// so a new head reads them back instead of from Redis. Pure: what the operator creates and what the head
// pod gets, as KubeRay's common/pod.go configureEmbeddedFT and common/pvc.go BuildGCSStoragePVC.
//
// - The claim: storage.claimName when set (the user's: never created, owned or deleted by us), else the
//   operator-managed `<cluster>-gcs-pvc`, labelled ray.io/cluster, with accessModes (default
//   [ReadWriteOnce]), size (default 1Gi) and storageClassName (absent: the cluster's default class).
// - deletionPolicy DeleteWithCluster (the default) gives it a controller owner reference to the RayCluster
//   (garbage-collected with it); Retain gives it none (it outlives the cluster; a cluster of the same name
//   adopts it and reads its state back; the orphan finder lists it meanwhile: retainedGcsStorageClaims).
// - A claim already there under the managed name is used as it is; one that differs from the spec gets
//   KubeRay's warning (gcsStorageClaimDrift), never an update.
// - The head's Ray container: RAY_gcs_storage=rocksdb and RAY_gcs_storage_path=<mount path> unless set
//   (validation refuses them set by the user, as KubeRay), and the volume mounted there (storage.subPath
//   honoured). Workers get nothing beyond GCS FT's reconnect timeout (./pods.ts configureGcsFt).
// Names KubeRay's source shows: the suffix `-gcs-pvc`, the env names, the defaults. The volume name and
// the mount path are KubeRay's constants GCSStorageVolumeName / GCSStorageMountPath, whose values we could
// not read: `gcs-storage` and `/data/gcs` (the path a KubeRay v1.7 guide names) are ours.
import type { Container, EnvVar, ObjectMeta, PodSpec } from '../../kube/model.ts';
import { isGcsFtEnabled } from '../gcsft/rules.ts';
import { RAY_CLUSTER_LABEL } from '../names.ts';
import type { RayCluster } from '../types.ts';
import { ownerReference } from './names.ts';
import { parseQuantity } from './quantity.ts';

export const GCS_STORAGE_PVC_SUFFIX = '-gcs-pvc';
export const GCS_STORAGE_VOLUME_NAME = 'gcs-storage';
export const GCS_STORAGE_MOUNT_PATH = '/data/gcs';
export const GCS_STORAGE_DEFAULT_SIZE = '1Gi';
export const ENV_GCS_STORAGE = 'RAY_gcs_storage';
export const ENV_GCS_STORAGE_PATH = 'RAY_gcs_storage_path';
export const GCS_STORAGE_ROCKSDB = 'rocksdb';
export const DELETE_WITH_CLUSTER = 'DeleteWithCluster';
export const RETAIN = 'Retain';

/** KubeRay's GcsEmbeddedStorage. */
export interface GcsEmbeddedStorage {
  claimName?: string;
  size?: string | number;
  storageClassName?: string;
  accessModes?: string[];
  subPath?: string;
  deletionPolicy?: typeof DELETE_WITH_CLUSTER | typeof RETAIN | string;
}

export interface PersistentVolumeClaim {
  apiVersion: 'v1';
  kind: 'PersistentVolumeClaim';
  metadata: ObjectMeta;
  spec: {
    accessModes: string[];
    resources: { requests: { storage: string } };
    storageClassName?: string;
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

function optionsOf(cluster: { spec?: unknown }): Record<string, unknown> | undefined {
  const options = (cluster.spec as { gcsFaultToleranceOptions?: unknown } | null | undefined)?.gcsFaultToleranceOptions;
  return options !== null && typeof options === 'object' && !Array.isArray(options) ? (options as Record<string, unknown>) : undefined;
}

/** gcsFaultToleranceOptions.storage, when an object. */
export function gcsStorage(cluster: { spec?: unknown }): GcsEmbeddedStorage | undefined {
  const storage = optionsOf(cluster)?.storage;
  return storage !== null && typeof storage === 'object' && !Array.isArray(storage) ? (storage as GcsEmbeddedStorage) : undefined;
}

/** KubeRay's IsGCSFaultToleranceEmbedded: GCS FT on with backend rocksdb. */
export function usesEmbeddedGcsStorage(cluster: RayCluster): boolean {
  return isGcsFtEnabled(cluster) && optionsOf(cluster)?.backend === GCS_STORAGE_ROCKSDB;
}

/** The claim the head mounts (KubeRay's GetGCSStoragePVCName): storage.claimName, else `<cluster>-gcs-pvc`. */
export function gcsStorageClaimName(cluster: RayCluster): string {
  const given = gcsStorage(cluster)?.claimName;
  return typeof given === 'string' && given !== '' ? given : `${cluster.metadata.name}${GCS_STORAGE_PVC_SUFFIX}`;
}

/** Whether the operator makes the claim (no storage.claimName). */
export function managesGcsStorageClaim(cluster: RayCluster): boolean {
  const given = gcsStorage(cluster)?.claimName;
  return usesEmbeddedGcsStorage(cluster) && !(typeof given === 'string' && given !== '');
}

export function gcsStorageDeletionPolicy(cluster: RayCluster): typeof DELETE_WITH_CLUSTER | typeof RETAIN {
  return gcsStorage(cluster)?.deletionPolicy === RETAIN ? RETAIN : DELETE_WITH_CLUSTER;
}

/**
 * The operator-managed claim (BuildGCSStoragePVC plus the owner reference the deletion policy asks for);
 * undefined when the cluster does not use embedded storage or names its own claim.
 */
export function desiredGcsStorageClaim(cluster: RayCluster): PersistentVolumeClaim | undefined {
  if (!managesGcsStorageClaim(cluster)) return undefined;
  const storage = gcsStorage(cluster) ?? {};
  const metadata: ObjectMeta = {
    name: gcsStorageClaimName(cluster),
    namespace: cluster.metadata.namespace,
    labels: { [RAY_CLUSTER_LABEL]: cluster.metadata.name ?? '' },
  };
  if (gcsStorageDeletionPolicy(cluster) === DELETE_WITH_CLUSTER) metadata.ownerReferences = [ownerReference(cluster)];
  const accessModes = Array.isArray(storage.accessModes) && storage.accessModes.length > 0 ? [...storage.accessModes] : ['ReadWriteOnce'];
  const size = storage.size === undefined || storage.size === null || storage.size === '' ? GCS_STORAGE_DEFAULT_SIZE : String(storage.size);
  const spec: PersistentVolumeClaim['spec'] = { accessModes, resources: { requests: { storage: size } } };
  if (typeof storage.storageClassName === 'string') spec.storageClassName = storage.storageClassName;
  return { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata, spec };
}

/**
 * How an existing claim of the operator-managed name differs from what the spec asks for (size, access
 * modes, storage class): KubeRay's drift warning (FailedToCreatePVC, "cannot be reconfigured in place").
 * The claim is used as it is either way. Undefined: no difference.
 */
export function gcsStorageClaimDrift(desired: PersistentVolumeClaim, existing: { spec?: unknown }): string | undefined {
  const spec = (existing.spec ?? {}) as {
    accessModes?: unknown;
    storageClassName?: unknown;
    resources?: { requests?: { storage?: unknown } };
  };
  const have = spec.resources?.requests?.storage;
  const out: string[] = [];
  if (parseQuantity(have) !== parseQuantity(desired.spec.resources.requests.storage))
    out.push(`size ${String(have)}, spec ${desired.spec.resources.requests.storage}`);
  const modes = Array.isArray(spec.accessModes) ? spec.accessModes.map(String) : [];
  if ([...modes].sort().join() !== [...desired.spec.accessModes].sort().join())
    out.push(`accessModes ${modes.join(',')}, spec ${desired.spec.accessModes.join(',')}`);
  if (desired.spec.storageClassName !== undefined && spec.storageClassName !== desired.spec.storageClassName)
    out.push(`storageClassName ${String(spec.storageClassName)}, spec ${desired.spec.storageClassName}`);
  if (out.length === 0) return undefined;
  return `PersistentVolumeClaim ${desired.metadata.namespace}/${desired.metadata.name} differs from spec.gcsFaultToleranceOptions.storage (${out.join('; ')}) and cannot be reconfigured in place: it is used as it is; delete it (or name a claim with claimName) to change it`;
}

/**
 * Why an existing claim of the managed name must not be used now (undefined: use it): one being deleted
 * (a DeleteWithCluster claim of a cluster of the same name deleted a moment ago, held by pvc-protection
 * until its old head is gone) or one a different RayCluster controls (another cluster's GCS store is never
 * shared). The head waits; the claim is looked at again on the next pass.
 */
export function gcsStorageClaimConflict(
  cluster: RayCluster,
  existing: { metadata: Pick<ObjectMeta, 'deletionTimestamp' | 'ownerReferences'> },
): string | undefined {
  const where = `PersistentVolumeClaim ${cluster.metadata.namespace}/${gcsStorageClaimName(cluster)}`;
  if (existing.metadata.deletionTimestamp) return `${where} is being deleted; the head waits for a new one`;
  const owner = (existing.metadata.ownerReferences ?? []).find((o) => o.controller === true);
  if (owner && owner.uid !== cluster.metadata.uid)
    return `${where} belongs to another RayCluster (${owner.name ?? '?'}, uid ${owner.uid ?? '?'}); the head waits until it is gone`;
  return undefined;
}

/** configureEmbeddedFT: the head's env, volume and mount (env the user set is kept, as KubeRay). */
export function configureEmbeddedGcsStorage(cluster: RayCluster, spec: PodSpec, ray: Container, env: EnvVar[]): void {
  if (!env.some((e) => e.name === ENV_GCS_STORAGE)) env.push({ name: ENV_GCS_STORAGE, value: GCS_STORAGE_ROCKSDB });
  if (!env.some((e) => e.name === ENV_GCS_STORAGE_PATH)) env.push({ name: ENV_GCS_STORAGE_PATH, value: GCS_STORAGE_MOUNT_PATH });
  const subPath = gcsStorage(cluster)?.subPath;
  ray.volumeMounts = [
    ...(ray.volumeMounts ?? []),
    {
      name: GCS_STORAGE_VOLUME_NAME,
      mountPath: GCS_STORAGE_MOUNT_PATH,
      ...(typeof subPath === 'string' && subPath !== '' ? { subPath } : {}),
    },
  ];
  spec.volumes = [
    ...(spec.volumes ?? []),
    { name: GCS_STORAGE_VOLUME_NAME, persistentVolumeClaim: { claimName: gcsStorageClaimName(cluster) } },
  ];
}

/** The part of a PVC the orphan finder reads. */
export interface ClaimView {
  metadata: { name?: string; namespace?: string; labels?: Record<string, string>; ownerReferences?: unknown[] };
}

/**
 * Operator-managed GCS storage claims (`<cluster>-gcs-pvc` labelled ray.io/cluster=<cluster>, no owner:
 * deletionPolicy Retain) whose RayCluster no longer exists. `clusterExists(namespace, name)` answers from
 * a fresh list. A claim with an owner is left to the garbage collector.
 */
export function retainedGcsStorageClaims(
  claims: ClaimView[],
  clusterExists: (namespace: string, name: string) => boolean,
): Array<{ namespace: string; name: string; cluster: string }> {
  const out: Array<{ namespace: string; name: string; cluster: string }> = [];
  for (const c of claims) {
    const cluster = c.metadata.labels?.[RAY_CLUSTER_LABEL];
    const { name, namespace } = c.metadata;
    if (!cluster || !name || !namespace || name !== `${cluster}${GCS_STORAGE_PVC_SUFFIX}`) continue;
    if ((c.metadata.ownerReferences ?? []).length > 0) continue;
    if (!clusterExists(namespace, cluster)) out.push({ namespace, name, cluster });
  }
  return out.sort((a, b) => a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name));
}
