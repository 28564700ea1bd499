// UPDATE rules that protect data, decided from the old and the new object alone. Pure.
//
// - While a RayCluster runs GCS fault tolerance with Redis (the OLD object), its storage namespace
//   (options field, annotation, or the UID default), its Redis address (options.redisAddress, or the head's
//   RAY_REDIS_ADDRESS in annotation mode) and its backend (including turning GCS FT off) stay as they are:
//   the GCS data already in Redis is keyed by them, and a change would orphan it (the cleanup on deletion
//   would look elsewhere). The answer says what to do instead: delete the cluster and create it again.
// spec.managedBy is not here: its rules (allowed values, immutable) are KubeRay's CRD rules, in our CRDs too
// (manifests/crds), so the API server refuses with 422 Invalid before any validating webhook is called, and
// what the CRD lets through (setting it on, or removing it from, an existing object: a CEL transition rule
// is not evaluated then) KubeRay accepts, so we do too (docs/reference/validation.md).
// The validating webhook runs after the mutating one, which restores a pinned namespace an UPDATE drops
// (./raycluster.ts), so such an update arrives here unchanged and passes.
import { isGcsFtEnabled, usesRedisBackend } from '../gcsft/rules.ts';
import { cleanupEnv, storageNamespaceSource } from '../gcsft/redis-env.ts';
import { redactAddress } from '../redis/address.ts';
import { ENV_REDIS_ADDRESS, ENV_STORAGE_NAMESPACE, EXTERNAL_STORAGE_NAMESPACE_ANNOTATION } from '../names.ts';
import type { RayCluster } from '../types.ts';

export interface UpdateProblem {
  reason: 'gcs_ft_storage';
  message: string;
}

/**
 * One entry of the cluster's Redis env as the head pod and the cleanup see it (src/gcsft/redis-env.ts: the
 * head container's own entry wins where KubeRay keeps it), as a comparable string: a value, or the JSON of
 * its valueFrom (a secretKeyRef names a Secret, never its content).
 */
function redisEnv(cluster: RayCluster, name: string): string | undefined {
  const entry = cleanupEnv(cluster).find((e) => e.name === name);
  if (entry === undefined) return undefined;
  return entry.valueFrom !== undefined ? JSON.stringify(entry.valueFrom) : (entry.value ?? '');
}

function backend(cluster: RayCluster): string {
  if (!isGcsFtEnabled(cluster)) return 'none (GCS fault tolerance off)';
  return usesRedisBackend(cluster) ? 'redis' : String(cluster.spec?.gcsFaultToleranceOptions?.backend);
}

/** Where the storage namespace of this object comes from (the one rule, src/gcsft/redis-env.ts), for the message. */
export function namespaceField(cluster: RayCluster): string {
  switch (storageNamespaceSource(cluster).from) {
    case 'head':
    case 'head-ref':
    case 'head-field':
      return `spec.headGroupSpec.template.spec.containers[0].env[${ENV_STORAGE_NAMESPACE}]`;
    case 'options':
      return 'spec.gcsFaultToleranceOptions.externalStorageNamespace';
    case 'annotation':
      return `metadata.annotations[${EXTERNAL_STORAGE_NAMESPACE_ANNOTATION}]`;
    default:
      return 'the storage namespace (default: the RayCluster UID)';
  }
}

const INSTEAD =
  'GCS data already in Redis is keyed by it and would be orphaned. To change it, delete the RayCluster (raykeeper cleans its Redis data) and create it again with the new value';

export function gcsFtStorageChange(oldCluster: RayCluster, newCluster: RayCluster): UpdateProblem | undefined {
  if (!usesRedisBackend(oldCluster)) return undefined;
  const show = (v: string | undefined) => (v === undefined ? 'unset' : JSON.stringify(v));
  const beforeNs = redisEnv(oldCluster, ENV_STORAGE_NAMESPACE);
  const afterNs = redisEnv(newCluster, ENV_STORAGE_NAMESPACE);
  if (beforeNs !== afterNs) {
    return {
      reason: 'gcs_ft_storage',
      message: `${namespaceField(oldCluster)}: cannot change the storage namespace of a GCS fault-tolerant RayCluster from ${show(beforeNs)} to ${show(afterNs)}: ${INSTEAD}`,
    };
  }
  const beforeBackend = backend(oldCluster);
  const afterBackend = backend(newCluster);
  if (beforeBackend !== afterBackend) {
    return {
      reason: 'gcs_ft_storage',
      message: `spec.gcsFaultToleranceOptions.backend: cannot change the GCS storage backend of a GCS fault-tolerant RayCluster from ${beforeBackend} to ${afterBackend}: ${INSTEAD}`,
    };
  }
  const beforeAddress = redisEnv(oldCluster, ENV_REDIS_ADDRESS);
  const afterAddress = redisEnv(newCluster, ENV_REDIS_ADDRESS);
  if (beforeAddress !== afterAddress) {
    // An address may carry a user and password (redis://user:pass@host): the message reaches kubectl, the
    // audit log and our log, so it shows them redacted, as everywhere else.
    const shown = (v: string | undefined) => show(v === undefined ? v : redactAddress(v));
    return {
      reason: 'gcs_ft_storage',
      message: `spec.gcsFaultToleranceOptions.redisAddress: cannot change the Redis address of a GCS fault-tolerant RayCluster from ${shown(beforeAddress)} to ${shown(afterAddress)}: ${INSTEAD}`,
    };
  }
  return undefined;
}
