// KubeRay v1.6.2's RayCluster validation (utils/validation.go: ValidateRayClusterMetadata,
// ValidateRayClusterSpec, ValidateRayClusterUpgradeOptions, ValidateRayClusterStatus), with KubeRay's
// messages. Pure, and safe on any JSON: the admission webhook, `raykeeper mutate --check` and the
// controllers (the pod operator, the RayJob machine through validateRayClusterSpecForJob) call the same
// functions. Each rule returns the first problem, as KubeRay does.
//
// Where KubeRay's CRD defaults a field (+kubebuilder:default), an absent field reads as that default:
// worker groups' minReplicas 0 and maxReplicas 2147483647. The API server fills them before any webhook
// or controller sees the object, so KubeRay never reports "must set both minReplicas and maxReplicas" for
// an object that merely omits them, and neither do we (our trimmed CRD has no defaults, `mutate --check`
// reads raw manifests).
// KubeRay v1.7's embedded GCS storage rules (validateGcsFaultToleranceBackend) are here too, with its
// messages; its GCSFaultToleranceEmbeddedStorage gate is not (raykeeper builds the storage ungated).
// KubeRay's feature gate RayJobDeletionPolicy is on by default in v1.6 (Beta): its "worker group can be
// suspended only when ..." rule never fires there and is not here.
import { isGcsFtEnabled } from '../gcsft/rules.ts';
import {
  ENV_REDIS_ADDRESS,
  ENV_REDIS_PASSWORD,
  ENV_REDIS_USERNAME,
  EXTERNAL_STORAGE_NAMESPACE_ANNOTATION,
  FT_ENABLED_ANNOTATION,
  RAY_ORIGINATED_FROM_CRD_LABEL,
} from '../names.ts';
import { EVENT_INVALID_RAYCLUSTER_METADATA, EVENT_INVALID_RAYCLUSTER_SPEC, EVENT_INVALID_RAYCLUSTER_STATUS } from '../event-reasons.ts';
import type { RayCluster, RayClusterSpec } from '../types.ts';
import { parseRayVersion, type RayVersion } from '../ray-version.ts';
import {
  ENV_GCS_STORAGE,
  ENV_GCS_STORAGE_PATH,
  GCS_STORAGE_MOUNT_PATH,
  GCS_STORAGE_ROCKSDB,
  GCS_STORAGE_VOLUME_NAME,
} from './gcs-storage.ts';

/** KubeRay's MaxRayClusterNameLength. */
export const MAX_RAYCLUSTER_NAME_LENGTH = 53;
export const ENV_ENABLE_AUTOSCALER_V2 = 'RAY_enable_autoscaler_v2';
/** CRD default of a worker group's maxReplicas (maxInt32). */
const DEFAULT_MAX_REPLICAS = 2147483647;

export interface ClusterProblem {
  /** The Warning event reason: InvalidRayClusterMetadata | InvalidRayClusterSpec | InvalidRayClusterStatus. */
  eventReason: string;
  /** KubeRay's error text, naming the field. */
  message: string;
}

type Json = Record<string, unknown>;

function object(value: unknown): Json | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : undefined;
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function stringMap(value: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(object(value) ?? {})) out[k] = typeof v === 'string' ? v : String(v);
  return out;
}

function podSpec(group: unknown): Json | undefined {
  return object(object(object(group)?.template)?.spec);
}

function containers(group: unknown): unknown[] {
  return list(podSpec(group)?.containers);
}

function envVar(container: unknown, name: string): Json | undefined {
  for (const e of list(object(container)?.env)) if (object(e)?.name === name) return object(e);
  return undefined;
}

const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_ERROR =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/** k8s.io/apimachinery IsDNS1035Label's errors (empty when valid). */
export function dns1035LabelErrors(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 63) errs.push('must be no more than 63 characters');
  if (!DNS1035_LABEL.test(value)) errs.push(DNS1035_ERROR);
  return errs;
}

const QUALIFIED_NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const NAME_PART_ERROR =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

/** IsQualifiedName: [prefix/]name, name <= 63 of QUALIFIED_NAME_PART, prefix a DNS-1123 subdomain. */
export function qualifiedNameErrors(value: string): string[] {
  const parts = value.split('/');
  let name = value;
  const errs: string[] = [];
  if (parts.length === 2) {
    const [prefix = '', rest = ''] = parts;
    name = rest;
    if (prefix.length === 0) errs.push('prefix part must be non-empty');
    else if (prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix))
      errs.push(`prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'`);
  } else if (parts.length > 2) {
    return [
      "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    ];
  }
  if (name.length === 0) errs.push('name part must be non-empty');
  else if (name.length > 63) errs.push('name part must be no more than 63 characters');
  if (name.length > 0 && !QUALIFIED_NAME_PART.test(name)) errs.push(NAME_PART_ERROR);
  return errs;
}

/** IsValidLabelValue: empty, or <= 63 characters of the qualified-name part's alphabet. */
export function labelValueErrors(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 63) errs.push('must be no more than 63 characters');
  if (value !== '' && !QUALIFIED_NAME_PART.test(value))
    errs.push(
      "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    );
  return errs;
}

/** Go's %v of a []string. */
export function goList(items: string[]): string {
  return `[${items.join(' ')}]`;
}

/** The name to check: metadata.name, or for a CREATE with only generateName the longest name it can become. */
export function nameToCheck(metadata: Json | undefined): string {
  const name = text(metadata?.name);
  const generate = text(metadata?.generateName);
  return name === '' && generate !== '' ? `${generate}x0000` : name;
}

export function validateRayClusterMetadata(metadata: unknown): string | undefined {
  const name = nameToCheck(object(metadata));
  if (name.length > MAX_RAYCLUSTER_NAME_LENGTH) return `RayCluster name should be no more than ${MAX_RAYCLUSTER_NAME_LENGTH} characters`;
  const errs = dns1035LabelErrors(name);
  if (errs.length > 0) return `RayCluster name should be a valid DNS1035 label: ${goList(errs)}`;
  return undefined;
}

/** KubeRay's IsAutoscalingEnabled. */
export function isAutoscalingEnabled(spec: unknown): boolean {
  return object(spec)?.enableInTreeAutoscaling === true;
}

/** KubeRay's IsAutoscalingV2Enabled: autoscalerOptions.version v2. */
export function isAutoscalingV2Enabled(spec: unknown): boolean {
  return object(object(spec)?.autoscalerOptions)?.version === 'v2';
}

function isK8sAuthEnabled(authOptions: unknown): boolean {
  return object(authOptions)?.enableK8sTokenAuth === true;
}

function validateGroupResources(groupName: string, group: Json | undefined): string | undefined {
  const params = stringMap(group?.rayStartParams);
  const hasRayStartResources = ['num-cpus', 'num-gpus', 'memory', 'resources'].some((k) => (params[k] ?? '') !== '');
  if (hasRayStartResources && Object.keys(object(group?.resources) ?? {}).length > 0) {
    return `resource fields should not be set in both rayStartParams and Resources for ${groupName} group; please use only one`;
  }
  return undefined;
}

function validateGroupLabels(groupName: string, group: Json | undefined): string | undefined {
  if (Object.hasOwn(object(group?.rayStartParams) ?? {}, 'labels')) {
    return `rayStartParams['labels'] is not supported for ${groupName} group; please use the top-level Labels field instead`;
  }
  const all: string[] = [];
  for (const [key, value] of Object.entries(stringMap(group?.labels))) {
    for (const err of qualifiedNameErrors(key)) all.push(`invalid label key for ${groupName} group: '${key}', error: ${err}`);
    for (const err of labelValueErrors(value))
      all.push(`invalid label value for key '${key}' in ${groupName} group: '${value}', error: ${err}`);
  }
  return all.length > 0 ? all.join('; ') : undefined;
}

function integer(value: unknown, fallback: number): number | undefined {
  if (value === undefined || value === null) return fallback;
  return typeof value === 'number' ? value : undefined;
}

function autoscalerV2ByEnv(head: unknown): boolean {
  const value = envVar(head, ENV_ENABLE_AUTOSCALER_V2)?.value;
  return value === '1' || value === 'true';
}

function validateWorkerGroup(group: Json | undefined, spec: Json, autoscaling: boolean, head: unknown): string | undefined {
  const name = text(group?.groupName);
  if (containers(group).length === 0) return 'workerGroupSpec should have at least one container';
  const min = integer(group?.minReplicas, 0);
  const max = integer(group?.maxReplicas, DEFAULT_MAX_REPLICAS);
  if (!autoscaling && (min === undefined || max === undefined)) {
    return `worker group ${name} must set both minReplicas and maxReplicas when autoscaling is disabled`;
  }
  if (min !== undefined && min < 0) return `worker group ${name} has negative minReplicas ${min}`;
  if (max !== undefined && max < 0) return `worker group ${name} has negative maxReplicas ${max}`;
  if (min !== undefined && max !== undefined && min > max) {
    return `worker group ${name} has minReplicas ${min} greater than maxReplicas ${max}`;
  }
  const resources = validateGroupResources(name, group);
  if (resources !== undefined) return resources;
  const labels = validateGroupLabels(name, group);
  if (labels !== undefined) return labels;
  const idle = group?.idleTimeoutSeconds;
  if (typeof idle === 'number') {
    if (idle < 0) return `worker group ${name}: idleTimeoutSeconds must be non-negative, got ${idle}`;
    if (!isAutoscalingV2Enabled(spec) && !autoscalerV2ByEnv(head)) {
      return `worker group ${name}: idleTimeoutSeconds is set, but autoscaler v2 is not enabled. Please set .spec.autoscalerOptions.version to 'v2' (or set ${ENV_ENABLE_AUTOSCALER_V2} environment variable to 'true' in the head pod if using KubeRay < 1.4.0)`;
    }
  }
  return undefined;
}

function validateGcsFaultTolerance(spec: Json, annotations: Record<string, string>, head: unknown): string | undefined {
  const options = spec.gcsFaultToleranceOptions;
  const hasOptions = options !== undefined && options !== null;
  if ((annotations[FT_ENABLED_ANNOTATION] ?? '') !== '' && hasOptions) {
    return `${FT_ENABLED_ANNOTATION} annotation and GcsFaultToleranceOptions are both set. Please use only GcsFaultToleranceOptions to configure GCS fault tolerance`;
  }
  const ftSubject = { metadata: { annotations }, spec: object(spec) as RayClusterSpec };
  if (!isGcsFtEnabled(ftSubject) && envVar(head, ENV_REDIS_ADDRESS) !== undefined) {
    return `${ENV_REDIS_ADDRESS} is set which implicitly enables GCS fault tolerance, but GcsFaultToleranceOptions is not set. Please set GcsFaultToleranceOptions to enable GCS fault tolerance`;
  }
  const params = stringMap(object(spec.headGroupSpec)?.rayStartParams);
  if (hasOptions) {
    if ((params['redis-password'] ?? '') !== '') {
      return 'cannot set `redis-password` in rayStartParams when GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions.RedisPassword instead';
    }
    if (envVar(head, ENV_REDIS_PASSWORD) !== undefined) {
      return 'cannot set `REDIS_PASSWORD` env var in head Pod when GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions.RedisPassword instead';
    }
    if (envVar(head, ENV_REDIS_ADDRESS) !== undefined) {
      return 'cannot set `RAY_REDIS_ADDRESS` env var in head Pod when GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions.RedisAddress instead';
    }
    if ((annotations[EXTERNAL_STORAGE_NAMESPACE_ANNOTATION] ?? '') !== '') {
      return 'cannot set `ray.io/external-storage-namespace` annotation when GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions.ExternalStorageNamespace instead';
    }
    const backend = validateGcsFaultToleranceBackend(object(options) ?? {}, head, list(podSpec(spec.headGroupSpec)?.volumes));
    if (backend !== undefined) return backend;
  }
  if ((params['redis-username'] ?? '') !== '' || envVar(head, ENV_REDIS_USERNAME) !== undefined) {
    return 'cannot set redis username in rayStartParams or environment variables - use GcsFaultToleranceOptions.RedisUsername instead';
  }
  return undefined;
}

function validateAutoscaler(spec: Json, autoscaling: boolean, head: unknown, workers: unknown[]): string | undefined {
  const headEnvV2 = envVar(head, ENV_ENABLE_AUTOSCALER_V2);
  if (!autoscaling) {
    const value = headEnvV2?.value;
    if (value === '1' || value === 'true') {
      return `environment variable ${ENV_ENABLE_AUTOSCALER_V2} cannot be set to '${value}' when enableInTreeAutoscaling is false. Please set enableInTreeAutoscaling: true to use autoscaler v2`;
    }
    return undefined;
  }
  for (const w of workers) {
    if (object(w)?.suspend === true) return `worker group ${text(object(w)?.groupName)} cannot be suspended with Autoscaler enabled`;
  }
  const version = object(spec.autoscalerOptions)?.version;
  if (version !== undefined && version !== null && headEnvV2 !== undefined) {
    return `both .spec.autoscalerOptions.version and head Pod env var ${ENV_ENABLE_AUTOSCALER_V2} are set, please only use the former`;
  }
  if (isAutoscalingV2Enabled(spec)) {
    const restart = text(podSpec(spec.headGroupSpec)?.restartPolicy);
    if (restart !== '' && restart !== 'Never') return 'restartPolicy for head Pod should be Never or unset when using autoscaler V2';
    for (const w of workers) {
      const policy = text(podSpec(w)?.restartPolicy);
      if (policy !== '' && policy !== 'Never') {
        return `restartPolicy for worker group ${text(object(w)?.groupName)} should be Never or unset when using autoscaler V2`;
      }
    }
  }
  return undefined;
}

function versionLess(v: RayVersion, major: number, minor: number): boolean {
  return v.major !== major ? v.major < major : v.minor < minor;
}

function validateAuth(spec: Json): string | undefined {
  const auth = object(spec.authOptions);
  if (auth?.mode !== 'token') {
    return isK8sAuthEnabled(auth) ? "authOptions.enableK8sTokenAuth is enabled but authOptions.mode not set to 'token'" : undefined;
  }
  const rayVersion = text(spec.rayVersion);
  if (rayVersion === '') return "authOptions.mode is 'token' but RayVersion was not specified. Ray version 2.52.0 or later is required";
  const parsed = parseRayVersion(rayVersion);
  if (parsed === undefined) {
    return `authOptions.mode is 'token' but RayVersion format is invalid: ${rayVersion}, could not parse ${JSON.stringify(rayVersion)} as version`;
  }
  if (versionLess(parsed, 2, 52)) return `authOptions.mode is 'token' but minimum Ray version is 2.52.0, got ${rayVersion}`;
  if (isK8sAuthEnabled(auth)) {
    if (versionLess(parsed, 2, 55)) {
      return `authOptions.enableK8sTokenAuth is enabled but minimum Ray version is 2.55.0, got ${rayVersion}`;
    }
    if (text(auth?.secretName) !== '') return 'authOptions.enableK8sTokenAuth is enabled and authOptions.secretName is also set';
  }
  return undefined;
}

/**
 * KubeRay v1.7's validateGcsFaultToleranceBackend (its feature gate aside: raykeeper builds embedded
 * storage without one): rocksdb refuses the Redis fields and what the operator manages on the head (the
 * two env vars, the volume and its mount); redis refuses a storage block.
 */
function validateGcsFaultToleranceBackend(options: Json, head: unknown, headVolumes: unknown[]): string | undefined {
  if (options.backend !== GCS_STORAGE_ROCKSDB) {
    return options.storage !== undefined && options.storage !== null
      ? "cannot set GcsFaultToleranceOptions.Storage when backend is 'redis' - it only applies to the 'rocksdb' backend"
      : undefined;
  }
  if (text(options.redisAddress) !== '') return "cannot set GcsFaultToleranceOptions.RedisAddress when backend is 'rocksdb'";
  if (object(options.redisUsername) !== undefined) return "cannot set GcsFaultToleranceOptions.RedisUsername when backend is 'rocksdb'";
  if (object(options.redisPassword) !== undefined) return "cannot set GcsFaultToleranceOptions.RedisPassword when backend is 'rocksdb'";
  if (text(options.externalStorageNamespace) !== '')
    return "cannot set GcsFaultToleranceOptions.ExternalStorageNamespace when backend is 'rocksdb'";
  const storage = object(options.storage);
  if (
    text(storage?.claimName) !== '' &&
    (storage?.size != null || storage?.storageClassName != null || list(storage?.accessModes).length > 0)
  )
    return 'GcsFaultToleranceOptions.Storage.ClaimName is mutually exclusive with size, storageClassName, and accessModes';
  if (envVar(head, ENV_GCS_STORAGE) !== undefined || envVar(head, ENV_GCS_STORAGE_PATH) !== undefined)
    return `cannot set \`${ENV_GCS_STORAGE}\` or \`${ENV_GCS_STORAGE_PATH}\` env var in head Pod when the embedded GCS FT backend is used - these are managed by KubeRay`;
  for (const m of list(object(head)?.volumeMounts)) {
    if (object(m)?.mountPath === GCS_STORAGE_MOUNT_PATH || object(m)?.name === GCS_STORAGE_VOLUME_NAME)
      return `cannot set a volume mount named "${GCS_STORAGE_VOLUME_NAME}" or mounted at ${GCS_STORAGE_MOUNT_PATH} in the head container when the embedded GCS FT backend is used - it is managed by KubeRay`;
  }
  for (const v of headVolumes) {
    if (object(v)?.name === GCS_STORAGE_VOLUME_NAME)
      return `cannot set a volume named "${GCS_STORAGE_VOLUME_NAME}" in the head Pod when the embedded GCS FT backend is used - it is managed by KubeRay`;
  }
  return undefined;
}

/** KubeRay's ValidateRayClusterSpec (a RayJob's rayClusterSpec too, with the RayJob's annotations). */
export function validateRayClusterSpec(specValue: unknown, annotationsValue: unknown): string | undefined {
  const spec = object(specValue) ?? {};
  const annotations = stringMap(annotationsValue);
  const headGroup = object(spec.headGroupSpec);
  const head = containers(headGroup)[0];
  if (head === undefined) return 'headGroupSpec should have at least one container';
  const headResources = validateGroupResources('Head', headGroup);
  if (headResources !== undefined) return headResources;
  const headLabels = validateGroupLabels('Head', headGroup);
  if (headLabels !== undefined) return headLabels;
  const autoscaling = isAutoscalingEnabled(spec);
  const workers = list(spec.workerGroupSpecs);
  for (const w of workers) {
    const problem = validateWorkerGroup(object(w), spec, autoscaling, head);
    if (problem !== undefined) return problem;
  }
  const ft = validateGcsFaultTolerance(spec, annotations, head);
  if (ft !== undefined) return ft;
  const autoscaler = validateAutoscaler(spec, autoscaling, head, workers);
  if (autoscaler !== undefined) return autoscaler;
  const idle = object(spec.autoscalerOptions)?.idleTimeoutSeconds;
  if (typeof idle === 'number' && idle < 0) return `autoscalerOptions.idleTimeoutSeconds must be non-negative, got ${idle}`;
  return validateAuth(spec);
}

/** KubeRay's ValidateRayClusterUpgradeOptions. */
export function validateRayClusterUpgradeOptions(cluster: RayCluster): string | undefined {
  const type = object(object(cluster.spec)?.upgradeStrategy)?.type;
  if (type === undefined || type === null) return undefined;
  if (type !== 'Recreate' && type !== 'None') {
    return `The RayCluster spec is invalid: Spec.UpgradeStrategy.Type value ${String(type)} is invalid, valid options are Recreate or None`;
  }
  const creator = cluster.metadata?.labels?.[RAY_ORIGINATED_FROM_CRD_LABEL];
  if (creator === 'RayJob' || creator === 'RayService') return `upgradeStrategy cannot be set when RayCluster is created by ${creator}`;
  return undefined;
}

/** KubeRay's ValidateRayClusterStatus (the controller only: an admission answer never judges status). */
export function validateRayClusterStatus(cluster: RayCluster): string | undefined {
  const conditions = list(object(cluster.status)?.conditions);
  const isTrue = (type: string) => conditions.some((c) => object(c)?.type === type && object(c)?.status === 'True');
  if (isTrue('RayClusterSuspending') && isTrue('RayClusterSuspended')) {
    return 'invalid RayCluster State: rayv1.RayClusterSuspending and rayv1.RayClusterSuspended conditions should not be both true';
  }
  return undefined;
}

/**
 * What KubeRay's RayCluster controller refuses before reconciling, in its order: metadata, spec, upgrade
 * options, then (with `status`) the status. The message is the event's: KubeRay's reason prefix and error.
 */
export function validateRayCluster(cluster: RayCluster, options: { status: boolean }): ClusterProblem | undefined {
  const metadata = validateRayClusterMetadata(cluster.metadata);
  if (metadata !== undefined) {
    return { eventReason: EVENT_INVALID_RAYCLUSTER_METADATA, message: `The RayCluster metadata is invalid: ${metadata}` };
  }
  const spec = validateRayClusterSpec(cluster.spec, cluster.metadata?.annotations);
  if (spec !== undefined) return { eventReason: EVENT_INVALID_RAYCLUSTER_SPEC, message: `The RayCluster spec is invalid: ${spec}` };
  const upgrade = validateRayClusterUpgradeOptions(cluster);
  if (upgrade !== undefined) {
    const message = upgrade.startsWith('The RayCluster spec is invalid') ? upgrade : `The RayCluster spec is invalid: ${upgrade}`;
    return { eventReason: EVENT_INVALID_RAYCLUSTER_SPEC, message };
  }
  if (!options.status) return undefined;
  const status = validateRayClusterStatus(cluster);
  return status === undefined
    ? undefined
    : { eventReason: EVENT_INVALID_RAYCLUSTER_STATUS, message: `The RayCluster status is invalid: ${status}` };
}
