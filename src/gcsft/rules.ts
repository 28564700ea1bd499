// GCS fault-tolerance rules, as KubeRay applies them (utils/util.go, common/pod.go). Pure functions.
import { parseTime } from '../time.ts';
import {
  DEFAULT_GCS_FT_DELETION_TIMEOUT_SECONDS,
  EXTERNAL_STORAGE_NAMESPACE_ANNOTATION,
  FT_ENABLED_ANNOTATION,
  GCS_FT_DELETION_TIMEOUT_ANNOTATION,
  GCS_FT_REDIS_CLEANUP_FINALIZER,
  KUBERAY_MANAGER,
} from '../names.ts';
import type { RayClusterSpec } from '../types.ts';
import type { ObjectMeta } from '../../kube/model.ts';

/** The parts of a RayCluster these rules read; RayJob's rayClusterSpec fits too with its own metadata. */
export interface FtSubject {
  metadata?: ObjectMeta | null;
  spec?: RayClusterSpec | null;
}

function annotation(obj: FtSubject, key: string): string | undefined {
  const value = obj.metadata?.annotations?.[key];
  return typeof value === 'string' ? value : undefined;
}

function hasOptions(obj: FtSubject): boolean {
  const options = obj.spec?.gcsFaultToleranceOptions;
  return options !== undefined && options !== null && typeof options === 'object';
}

/** KubeRay's IsGCSFaultToleranceEnabled: annotation "true" (any case) or gcsFaultToleranceOptions set. */
export function isGcsFtEnabled(obj: FtSubject): boolean {
  return annotation(obj, FT_ENABLED_ANNOTATION)?.toLowerCase() === 'true' || hasOptions(obj);
}

/**
 * spec.managedBy names another controller (MultiKueue dispatches the cluster to a worker cluster, where
 * the Ray pods and their Redis data live): neither the webhook nor the controller adds our finalizer.
 */
export function isManagedExternally(obj: FtSubject): boolean {
  const manager = obj.spec?.managedBy;
  return typeof manager === 'string' && manager !== '' && manager !== KUBERAY_MANAGER;
}

/** Which of KubeRay's two ways of turning GCS FT on this object uses ('both' is invalid in KubeRay). */
export function gcsFtMode(obj: FtSubject): 'annotation' | 'options' | 'both' | 'off' {
  const byAnnotation = annotation(obj, FT_ENABLED_ANNOTATION)?.toLowerCase() === 'true';
  const byOptions = hasOptions(obj);
  if (byAnnotation && byOptions) return 'both';
  if (byOptions) return 'options';
  return byAnnotation ? 'annotation' : 'off';
}

/** FT is on and stored in Redis (backend `redis`, the default); rocksdb keeps GCS data on the head. */
export function usesRedisBackend(obj: FtSubject): boolean {
  if (!isGcsFtEnabled(obj)) return false;
  const backend = obj.spec?.gcsFaultToleranceOptions?.backend;
  return backend === undefined || backend === null || backend === '' || String(backend).toLowerCase() === 'redis';
}

/**
 * Whether a cluster is one whose GCS data raykeeper cleans from Redis, so it carries the finalizer: the
 * one rule the webhook (at admission) and the controller (adding it later) both follow. Not when FT is
 * off or not in Redis, when another controller manages the cluster, or when both of KubeRay's FT switches
 * are set (KubeRay rejects that cluster; the first time it is set right, the finalizer comes).
 */
export function gcsFtFinalizerRule(obj: FtSubject): { wanted: true } | { wanted: false; reason: string } {
  if (!usesRedisBackend(obj)) return { wanted: false, reason: 'no GCS FT with Redis' };
  if (isManagedExternally(obj)) return { wanted: false, reason: 'spec.managedBy names another controller' };
  if (gcsFtMode(obj) === 'both')
    return {
      wanted: false,
      reason: 'both the ray.io/ft-enabled annotation and spec.gcsFaultToleranceOptions are set (KubeRay rejects it)',
    };
  return { wanted: true };
}

/**
 * The storage namespace the user (or an earlier admission) set explicitly: options.externalStorageNamespace
 * > annotation. Safe on any JSON (the webhook reads unvalidated objects).
 */
export function explicitStorageNamespace(obj: FtSubject | null | undefined): string | undefined {
  if (!obj) return undefined;
  const fromOptions = obj.spec?.gcsFaultToleranceOptions?.externalStorageNamespace;
  if (typeof fromOptions === 'string' && fromOptions !== '') return fromOptions;
  const fromAnnotation = annotation(obj, EXTERNAL_STORAGE_NAMESPACE_ANNOTATION);
  return fromAnnotation !== undefined && fromAnnotation !== '' ? fromAnnotation : undefined;
}

/**
 * The Redis storage namespace the head pod gets: the explicit one, else the UID. Undefined when none is
 * known yet (no UID before the API server stores the object).
 */
export function storageNamespace(obj: FtSubject): string | undefined {
  const explicit = explicitStorageNamespace(obj);
  if (explicit !== undefined) return explicit;
  const uid = obj.metadata?.uid;
  return typeof uid === 'string' && uid !== '' ? uid : undefined;
}

/** Ray forbids `@` in a storage namespace (it separates the namespace from the table name). */
export function storageNamespaceProblem(ns: string): string | undefined {
  if (ns === '') return 'storage namespace is empty';
  if (ns.includes('@')) return `storage namespace ${JSON.stringify(ns)} contains '@', which Ray forbids`;
  return undefined;
}

/**
 * Longest deletion timeout honoured: 7 days. It becomes the cleanup Job's activeDeadlineSeconds, and a
 * value past int64 ("99999999999999999999") makes every Job creation fail, so the finalizer would stay.
 */
export const MAX_GCS_FT_DELETION_TIMEOUT_SECONDS = 7 * 24 * 3600;

/** Why the deletion-timeout annotation is not used (the default is), or undefined when it is fine or absent. */
export function deletionTimeoutProblem(obj: FtSubject): string | undefined {
  const raw = annotation(obj, GCS_FT_DELETION_TIMEOUT_ANNOTATION);
  if (raw === undefined) return undefined;
  const seconds = /^\s*\d+\s*$/.test(raw) ? Number(raw.trim()) : Number.NaN;
  if (seconds > 0 && seconds <= MAX_GCS_FT_DELETION_TIMEOUT_SECONDS) return undefined;
  const shown = JSON.stringify(raw.length > 40 ? `${raw.slice(0, 40)}...` : raw);
  return `annotation ${GCS_FT_DELETION_TIMEOUT_ANNOTATION}=${shown} is not a whole number of seconds in 1-${MAX_GCS_FT_DELETION_TIMEOUT_SECONDS}; using ${DEFAULT_GCS_FT_DELETION_TIMEOUT_SECONDS}`;
}

/** Seconds after deletionTimestamp before the finalizer is released regardless (annotation, 1 s to 7 days). */
export function deletionTimeoutSeconds(obj: FtSubject): number {
  if (deletionTimeoutProblem(obj) !== undefined) return DEFAULT_GCS_FT_DELETION_TIMEOUT_SECONDS;
  const raw = annotation(obj, GCS_FT_DELETION_TIMEOUT_ANNOTATION);
  return raw === undefined ? DEFAULT_GCS_FT_DELETION_TIMEOUT_SECONDS : Number(raw.trim());
}

/**
 * A deleting cluster our finalizer still holds: seconds since its deletionTimestamp and its deletion timeout.
 * What an admin alerts on (a deletion that takes more than half its timeout is stuck somewhere).
 */
export function heldFinalizer(obj: FtSubject, nowMs: number): { heldSeconds: number; timeoutSeconds: number } | undefined {
  const since = obj.metadata?.deletionTimestamp;
  if (!since || !(obj.metadata?.finalizers ?? []).includes(GCS_FT_REDIS_CLEANUP_FINALIZER)) return undefined;
  const at = parseTime(since);
  if (at === undefined) return undefined;
  return { heldSeconds: Math.max(0, (nowMs - at) / 1000), timeoutSeconds: deletionTimeoutSeconds(obj) };
}

/** Operator env ENABLE_GCS_FT_REDIS_CLEANUP: on unless it equals "false" (any case). */
export function redisCleanupEnabled(value: string | undefined): boolean {
  return value?.toLowerCase() !== 'false';
}
