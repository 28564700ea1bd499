// Names shared with KubeRay (ray-operator/controllers/ray/utils/constant.go). Changing one breaks compatibility.

export const RAY_GROUP = 'ray.io';
export const RAY_VERSION = 'v1';
export const RAY_API_VERSION = `${RAY_GROUP}/${RAY_VERSION}`;

export const GCS_FT_REDIS_CLEANUP_FINALIZER = 'ray.io/gcs-ft-redis-cleanup-finalizer';
export const RAYJOB_FINALIZER = 'ray.io/rayjob-finalizer';

export const FT_ENABLED_ANNOTATION = 'ray.io/ft-enabled';
export const EXTERNAL_STORAGE_NAMESPACE_ANNOTATION = 'ray.io/external-storage-namespace';
export const GCS_FT_DELETION_TIMEOUT_ANNOTATION = 'ray.io/gcs-ft-deletion-timeout';

export const RAY_CLUSTER_LABEL = 'ray.io/cluster';
export const RAY_NODE_TYPE_LABEL = 'ray.io/node-type';
export const NODE_TYPE_HEAD = 'head';
export const NODE_TYPE_WORKER = 'worker';
export const NODE_TYPE_REDIS_CLEANUP = 'redis-cleanup';

/** spec.managedBy value meaning "KubeRay's own operator"; any other value (e.g. MultiKueue) means hands off. */
export const KUBERAY_MANAGER = 'ray.io/kuberay-operator';

export const ENABLE_GCS_FT_REDIS_CLEANUP_ENV = 'ENABLE_GCS_FT_REDIS_CLEANUP';

export const DEFAULT_GCS_FT_DELETION_TIMEOUT_SECONDS = 300;

// Environment the head pod (and the cleanup Job) receives.
export const ENV_REDIS_ADDRESS = 'RAY_REDIS_ADDRESS';
export const ENV_REDIS_PASSWORD = 'REDIS_PASSWORD';
export const ENV_REDIS_USERNAME = 'REDIS_USERNAME';
export const ENV_STORAGE_NAMESPACE = 'RAY_external_storage_namespace';
export const REDIS_TLS_ENV = [
  'RAY_REDIS_CA_CERT',
  'RAY_REDIS_CA_PATH',
  'RAY_REDIS_CLIENT_CERT',
  'RAY_REDIS_CLIENT_KEY',
  'RAY_REDIS_SERVER_NAME',
] as const;

// Our own names (not KubeRay's).
export const MUTATE_RAYCLUSTER_PATH = '/mutate-ray-io-v1-raycluster';
export const MUTATE_RAYJOB_PATH = '/mutate-ray-io-v1-rayjob';
// KubeRay's validating webhook paths (its optional webhook serves the same names).
export const VALIDATE_RAYCLUSTER_PATH = '/validate-ray-io-v1-raycluster';
export const VALIDATE_RAYJOB_PATH = '/validate-ray-io-v1-rayjob';
export const VALIDATE_RAYCRONJOB_PATH = '/validate-ray-io-v1-raycronjob';
export const DEFAULT_WEBHOOK_PORT = 9443;
/** The controller's plain-HTTP /healthz, /readyz and /metrics. */
export const DEFAULT_CONTROLLER_HEALTH_PORT = 8080;

// Labels, ports and env of the Ray pods and Services KubeRay's RayCluster controller makes
// (utils/constant.go); raykeeper's RayCluster operator makes the same.
export const RAY_GROUP_LABEL = 'ray.io/group';
export const RAY_IS_RAY_NODE_LABEL = 'ray.io/is-ray-node';
export const RAY_IDENTIFIER_LABEL = 'ray.io/identifier';
export const RAY_HEADLESS_WORKER_SVC_LABEL = 'ray.io/headless-worker-svc';
export const RAY_WORKER_REPLICA_NAME_LABEL = 'ray.io/worker-group-replica-name';
export const RAY_WORKER_REPLICA_INDEX_LABEL = 'ray.io/worker-group-replica-index';
export const RAY_HOST_INDEX_LABEL = 'ray.io/replica-host-index';
export const RAY_ORIGINATED_FROM_CRD_LABEL = 'ray.io/originated-from-crd';
export const HEAD_GROUP_NAME = 'headgroup';
export const OVERWRITE_CONTAINER_CMD_ANNOTATION = 'ray.io/overwrite-container-cmd';
export const DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION = 'ray.io/disable-provisioned-head-restart';
export const APP_NAME_LABEL = 'app.kubernetes.io/name';
export const APP_CREATED_BY_LABEL = 'app.kubernetes.io/created-by';

// RayCronJob (KubeRay utils/constant.go): on every RayJob a RayCronJob creates.
export const RAYCRONJOB_NAME_LABEL = 'ray.io/cronjob-name';
export const RAYCRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION = 'ray.io/cronjob-scheduled-timestamp';
export const MUTATE_RAYCRONJOB_PATH = '/mutate-ray-io-v1-raycronjob';
