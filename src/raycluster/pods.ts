// The head and worker Pods of a RayCluster, built as KubeRay v1.6's RayCluster controller builds them
// (ray-operator/controllers/ray/common/pod.go: DefaultHeadPodTemplate / DefaultWorkerPodTemplate /
// BuildPod, utils/util.go names). Pure functions: a RayCluster in, a Pod body out.
//
// What carries over from KubeRay, fact by fact: the `ray start` command line (rayStartParams sorted,
// `--block`, `--dashboard-host=0.0.0.0` on the head, `--metrics-export-port=8080`,
// `--dashboard-agent-listen-port=52365`, `--num-cpus` / `--memory` / `--num-gpus` / accelerator
// `--resources` from the container's resources when absent, `--address=<head svc FQDN>:<port>` on
// workers) wrapped in `ulimit -n 65536; ...` under `/bin/bash -c --`; the env KubeRay adds (in its
// order); the GCS fault-tolerance wiring (embedded GCS storage's from ./gcs-storage.ts); the metrics
// container port; the /dev/shm volume; probes; the workers' wait-gcs-ready init container; labels, and
// (from ./names.ts) names and the owner reference.
//
// The storage namespace the head gets (env RAY_external_storage_namespace) comes from
// storageNamespaceEnv() in ../gcsft/redis-env.ts, the function the Redis cleanup Job's env is built with, so the
// namespace the head writes is, by construction, the one the cleanup deletes.
import {
  APP_CREATED_BY_LABEL,
  APP_NAME_LABEL,
  ENV_REDIS_ADDRESS,
  ENV_REDIS_PASSWORD,
  ENV_REDIS_USERNAME,
  EXTERNAL_STORAGE_NAMESPACE_ANNOTATION,
  FT_ENABLED_ANNOTATION,
  HEAD_GROUP_NAME,
  OVERWRITE_CONTAINER_CMD_ANNOTATION,
  RAY_CLUSTER_LABEL,
  RAY_GROUP_LABEL,
  RAY_HOST_INDEX_LABEL,
  RAY_IDENTIFIER_LABEL,
  RAY_IS_RAY_NODE_LABEL,
  RAY_NODE_TYPE_LABEL,
  RAY_WORKER_REPLICA_INDEX_LABEL,
  RAY_WORKER_REPLICA_NAME_LABEL,
} from '../names.ts';
import { isGcsFtEnabled } from '../gcsft/rules.ts';
import { configureEmbeddedGcsStorage, usesEmbeddedGcsStorage } from './gcs-storage.ts';
import type { RayCluster } from '../types.ts';
import type { Container, EnvVar, ObjectMeta, Pod, PodSpec, ResourceRequirements } from '../../kube/model.ts';
import { effectiveStorageNamespace, storageNamespaceEnv } from '../gcsft/redis-env.ts';
import { isTokenAuth, withTokenAuthEnv } from './auth.ts';
import { isZeroQuantity, parseQuantity, quantityValue } from './quantity.ts';
import { parseRayVersion } from '../ray-version.ts';
import { addAutoscalerToHead, addAutoscalerToWorker, addRayLogVolume } from './autoscaler.ts';
import { headGroup, type HeadGroupSpec, type WorkerGroupSpec } from './groups.ts';
import {
  APP_NAME,
  checkLabel,
  CREATED_BY,
  creatorCrd,
  DEFAULT_DASHBOARD_AGENT_LISTEN_PORT,
  DEFAULT_DASHBOARD_PORT,
  DEFAULT_METRICS_PORT,
  headPodGenerateName,
  headPort,
  headServiceFqdn,
  ownerReference,
  workerPodGenerateName,
  type NodeType,
} from './names.ts';

export const WORKER_GCS_RECONNECT_TIMEOUT_S = '600';
/** The value of RAY_USAGE_STATS_EXTRA_TAGS' kuberay_version: says who built the pod. */
export const USAGE_STATS_VERSION = 'raykeeper';

/** Operator-level switches KubeRay reads from its own environment. */
export interface BuildOptions {
  /** CLUSTER_DOMAIN (default cluster.local): the head Service's FQDN suffix. */
  clusterDomain?: string;
  /** ENABLE_PROBES_INJECTION (default on). */
  probes?: boolean;
  /** ENABLE_INIT_CONTAINER_INJECTION (default on): workers wait for the GCS. */
  initContainer?: boolean;
}

// ---- labels ----

/** labelPod: KubeRay's labels, then the template's and the group's own (except the three it owns). */
export function podLabels(
  cluster: RayCluster,
  nodeType: NodeType,
  group: string,
  own: Record<string, string> = {},
): Record<string, string> {
  const name = cluster.metadata.name ?? '';
  const labels: Record<string, string> = {
    [RAY_IS_RAY_NODE_LABEL]: 'yes',
    [RAY_CLUSTER_LABEL]: name,
    [RAY_NODE_TYPE_LABEL]: nodeType,
    [RAY_GROUP_LABEL]: group,
    [RAY_IDENTIFIER_LABEL]: checkLabel(`${name}-${nodeType}`),
    [APP_NAME_LABEL]: APP_NAME,
    [APP_CREATED_BY_LABEL]: CREATED_BY,
  };
  for (const [k, v] of Object.entries(own)) {
    if (k === RAY_NODE_TYPE_LABEL || k === RAY_GROUP_LABEL || k === RAY_CLUSTER_LABEL) continue;
    labels[k] = v;
  }
  return labels;
}

// ---- rayStartParams ----

/** updateRayStartParamsResources: the group's top-level `resources` override num-cpus / memory / num-gpus / resources. */
export function applyGroupResources(params: Record<string, string>, resources: Record<string, string> | undefined): void {
  if (!resources || Object.keys(resources).length === 0) return;
  const custom: Record<string, number> = {};
  for (const [name, quantity] of Object.entries(resources)) {
    const q = parseQuantity(quantity);
    if (q === undefined) continue;
    const lower = name.toLowerCase();
    if (lower === 'cpu') params['num-cpus'] = String(Math.ceil(q));
    else if (lower === 'memory') params.memory = String(Math.ceil(q));
    else if (isGpuResource(lower)) params['num-gpus'] = String(Math.ceil(q));
    else custom[name] = q;
  }
  if (Object.keys(custom).length > 0) params.resources = `'${sortedJson(custom)}'`;
}

/** updateRayStartParamsLabels: the group's top-level `labels` become `--labels=k=v,...` (sorted). */
export function applyGroupLabels(params: Record<string, string>, labels: Record<string, string> | undefined): void {
  if (!labels || Object.keys(labels).length === 0) return;
  params.labels = Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k]}`)
    .join(',');
}

/** setMissingRayStartParams. */
export function setMissingParams(params: Record<string, string>, nodeType: NodeType, port: string, fqdn: string): void {
  if (nodeType === 'worker' && !('address' in params)) params.address = `${fqdn}:${port}`;
  if (nodeType === 'head' && !('dashboard-host' in params)) params['dashboard-host'] = '0.0.0.0';
  if (!('metrics-export-port' in params)) params['metrics-export-port'] = String(DEFAULT_METRICS_PORT);
  params.block = 'true';
  if (!('dashboard-agent-listen-port' in params)) params['dashboard-agent-listen-port'] = String(DEFAULT_DASHBOARD_AGENT_LISTEN_PORT);
}

/** IsGPUResourceKey: ends with "gpu", or an NVIDIA MIG slice. */
export function isGpuResource(key: string): boolean {
  return key.endsWith('gpu') || /nvidia\.com\/mig-\d+g\.\d+gb$/.test(key);
}

const CUSTOM_ACCELERATORS: Record<string, string> = { 'aws.amazon.com/neuroncore': 'neuron_cores', 'google.com/tpu': 'TPU' };

/** Go's json.Marshal of a map[string]float64: keys sorted, integers without a fraction. */
function sortedJson(m: Record<string, number>): string {
  return `{${Object.keys(m)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${JSON.stringify(m[k])}`)
    .join(',')}}`;
}

/** addWellKnownAcceleratorResources: num-gpus from a GPU limit, the first custom accelerator into `resources`. */
function addAccelerators(params: Record<string, string>, limits: Record<string, string | number>): void {
  const keys = Object.keys(limits).sort();
  if (keys.length === 0) return;
  let resources: Record<string, number>;
  if ('resources' in params) {
    try {
      resources = JSON.parse(params.resources!.replace(/^['"` ]+|['"` ]+$/g, '')) as Record<string, number>;
      if (resources === null || typeof resources !== 'object') return;
    } catch {
      return; // KubeRay logs and leaves --resources as written
    }
  } else resources = {};
  let customAdded = Object.values(CUSTOM_ACCELERATORS).some((r) => r in resources);
  for (const key of keys) {
    const value = limits[key];
    if (!('num-gpus' in params) && isGpuResource(key) && !isZeroQuantity(value)) params['num-gpus'] = String(quantityValue(value));
    const rayName = CUSTOM_ACCELERATORS[key];
    if (!customAdded && rayName !== undefined && !isZeroQuantity(value)) {
      if (!(rayName in resources)) {
        resources[rayName] = parseQuantity(value) ?? 0;
        params.resources = `'${sortedJson(resources)}'`;
      }
      customAdded = true;
    }
  }
}

/** generateRayStartCommand: fills num-cpus / memory / GPUs from the container and renders the line. */
export function rayStartCommand(nodeType: NodeType, params: Record<string, string>, resources: ResourceRequirements = {}): string {
  const limits = resources.limits ?? {};
  const requests = resources.requests ?? {};
  if (!('num-cpus' in params)) {
    if (!isZeroQuantity(limits.cpu)) params['num-cpus'] = String(quantityValue(limits.cpu));
    else if (!isZeroQuantity(requests.cpu)) params['num-cpus'] = String(quantityValue(requests.cpu));
  }
  if (!('memory' in params) && !isZeroQuantity(limits.memory)) params.memory = String(quantityValue(limits.memory));
  addAccelerators(params, limits);
  return nodeType === 'head' ? `ray start --head ${renderParams(params)}` : `ray start ${renderParams(params)}`;
}

/** convertParamMap: sorted; "true" -> ` --flag `, "false" -> nothing, else ` --flag=value ` (log-color, include-dashboard keep their value). */
export function renderParams(params: Record<string, string>): string {
  let out = '';
  for (const key of Object.keys(params).sort()) {
    const value = params[key] ?? '';
    const lower = value.toLowerCase();
    if ((lower === 'true' || lower === 'false') && key !== 'log-color' && key !== 'include-dashboard') {
      if (lower === 'true') out += ` --${key} `;
    } else out += ` --${key}=${value} `;
  }
  return out;
}

// ---- env ----

function hasEnv(env: EnvVar[], name: string): boolean {
  return env.some((e) => e.name === name);
}

function fieldRef(name: string, fieldPath: string): EnvVar {
  return { name, valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath } } };
}

/** configureGCSFaultTolerance: env, params and annotations of the Ray container for GCS FT. */
function configureGcsFt(
  cluster: RayCluster,
  nodeType: NodeType,
  env: EnvVar[],
  params: Record<string, string>,
  annotations: Record<string, string>,
): void {
  const ft = isGcsFtEnabled(cluster);
  if (nodeType === 'head') annotations[FT_ENABLED_ANNOTATION] = String(ft);
  if (!ft) return;
  if (nodeType === 'worker') {
    if (!hasEnv(env, 'RAY_gcs_rpc_server_reconnect_timeout_s'))
      env.push({ name: 'RAY_gcs_rpc_server_reconnect_timeout_s', value: WORKER_GCS_RECONNECT_TIMEOUT_S });
    return;
  }
  // Embedded storage: no Redis env, no storage namespace (configureEmbeddedGcsStorage, in build()).
  if (usesEmbeddedGcsStorage(cluster)) return;
  const ns = effectiveStorageNamespace(cluster);
  if (ns !== undefined) annotations[EXTERNAL_STORAGE_NAMESPACE_ANNOTATION] = ns;
  // The same entry the cleanup Job gets: the head's own if it sets one, else options > annotation > UID.
  const nsEnv = storageNamespaceEnv(cluster);
  if (nsEnv && !hasEnv(env, nsEnv.name)) env.push(nsEnv);
  const options = cluster.spec?.gcsFaultToleranceOptions;
  if (options && typeof options === 'object') {
    env.push({ name: ENV_REDIS_ADDRESS, value: options.redisAddress ?? '' });
    if (options.redisUsername) {
      params['redis-username'] = '$REDIS_USERNAME';
      env.push(credential(ENV_REDIS_USERNAME, options.redisUsername));
    }
    if (options.redisPassword) {
      params['redis-password'] = '$REDIS_PASSWORD';
      env.push(credential(ENV_REDIS_PASSWORD, options.redisPassword));
    }
  } else if (!hasEnv(env, ENV_REDIS_PASSWORD) && typeof params['redis-password'] === 'string') {
    // KubeRay's annotation form: a password written in rayStartParams reaches the env too (not recommended).
    env.push({ name: ENV_REDIS_PASSWORD, value: params['redis-password'] });
  }
}

function credential(name: string, c: { value?: string; valueFrom?: EnvVar['valueFrom'] }): EnvVar {
  const e: EnvVar = { name };
  if (c.value !== undefined) e.value = c.value;
  if (c.valueFrom !== undefined) e.valueFrom = structuredClone(c.valueFrom);
  return e;
}

/** setContainerEnvVars: what KubeRay appends to the Ray container, in its order. */
function addRayEnv(cluster: RayCluster, nodeType: NodeType, env: EnvVar[], fqdn: string, port: string, startCmd: string): void {
  const ip = nodeType === 'head' ? '127.0.0.1' : fqdn;
  if (nodeType === 'worker') env.push({ name: 'FQ_RAY_IP', value: ip }, { name: 'RAY_IP', value: ip.split('.')[0] ?? ip });
  env.push(
    fieldRef('RAY_CLUSTER_NAME', `metadata.labels['${RAY_CLUSTER_LABEL}']`),
    fieldRef('RAY_CLUSTER_NAMESPACE', 'metadata.namespace'),
    fieldRef('RAY_CLOUD_INSTANCE_ID', 'metadata.name'),
    fieldRef('RAY_NODE_TYPE_NAME', `metadata.labels['${RAY_GROUP_LABEL}']`),
    { name: 'KUBERAY_GEN_RAY_START_CMD', value: startCmd },
  );
  if (!hasEnv(env, 'RAY_PORT')) env.push({ name: 'RAY_PORT', value: port });
  if (!hasEnv(env, 'RAY_ADDRESS')) env.push({ name: 'RAY_ADDRESS', value: `${ip}:${port}` });
  if (!hasEnv(env, 'RAY_USAGE_STATS_KUBERAY_IN_USE')) env.push({ name: 'RAY_USAGE_STATS_KUBERAY_IN_USE', value: '1' });
  if (nodeType === 'head')
    env.push({ name: 'RAY_USAGE_STATS_EXTRA_TAGS', value: `kuberay_version=${USAGE_STATS_VERSION};kuberay_crd=${creatorCrd(cluster)}` });
  if (!hasEnv(env, 'RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE')) env.push({ name: 'RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE', value: '1' });
}

// ---- probes ----

/** Ray >= 2.53 answers one HTTP health endpoint; older versions are probed with wget in bash. */
export function supportsUnifiedHealthCheck(rayVersion: unknown): boolean {
  const v = parseRayVersion(rayVersion);
  if (!v) return false;
  return v.major > 2 || (v.major === 2 && v.minor >= 53);
}

function wget(timeout: number, port: number, path: string): string {
  return `wget --tries 1 -T ${timeout} -q -O- http://localhost:${port}/${path} | grep success`;
}

function portParam(params: Record<string, string>, key: string, fallback: number): number {
  const n = Number.parseInt(params[key] ?? '', 10);
  return Number.isInteger(n) && /^\d+$/.test(params[key] ?? '') ? n : fallback;
}

/** initLivenessAndReadinessProbe (RayCluster creator: no serve check). */
export function addProbes(container: Container, nodeType: NodeType, params: Record<string, string>, rayVersion: unknown): void {
  const agentPort = portParam(params, 'dashboard-agent-listen-port', DEFAULT_DASHBOARD_AGENT_LISTEN_PORT);
  const commands = [wget(2, agentPort, 'api/local_raylet_healthz')];
  if (nodeType === 'head') commands.push(wget(10, portParam(params, 'dashboard-port', DEFAULT_DASHBOARD_PORT), 'api/gcs_healthz'));
  const action = supportsUnifiedHealthCheck(rayVersion)
    ? { httpGet: { path: '/api/healthz', port: agentPort } }
    : { exec: { command: ['bash', '-c', commands.join(' && ')] } };
  const timeout = nodeType === 'head' ? 5 : 2;
  container.livenessProbe ??= {
    initialDelaySeconds: 30,
    timeoutSeconds: timeout,
    periodSeconds: 5,
    successThreshold: 1,
    failureThreshold: 120,
    ...action,
  };
  container.readinessProbe ??= {
    initialDelaySeconds: 10,
    timeoutSeconds: timeout,
    periodSeconds: 5,
    successThreshold: 1,
    failureThreshold: 10,
    ...action,
  };
}

// ---- the pod ----

/** The script of the workers' wait-gcs-ready init container (KubeRay's, same text). */
export function waitGcsScript(fqdn: string, port: string): string {
  return `
					SECONDS=0
					while true; do
						if (( SECONDS <= 120 )); then
							if ray health-check --address ${fqdn}:${port} > /dev/null 2>&1; then
								echo "GCS is ready."
								break
							fi
							echo "$SECONDS seconds elapsed: Waiting for GCS to be ready."
						else
							if ray health-check --address ${fqdn}:${port}; then
								echo "GCS is ready. Any error messages above can be safely ignored."
								break
							fi
							echo "$SECONDS seconds elapsed: Still waiting for GCS to be ready. For troubleshooting, refer to the FAQ at https://docs.ray.io/en/master/cluster/kubernetes/troubleshooting.html."
						fi
						sleep 5
					done
				`;
}

export const CONTAINER_COMMAND = ['/bin/bash', '-c', '--'];

/** configureTokenAuth: the Ray container's env (`env`) and the wait-gcs-ready init container (KubeRay's two). */
function tokenAuth(cluster: RayCluster, spec: PodSpec, env: EnvVar[]): void {
  env.splice(0, env.length, ...withTokenAuthEnv(cluster, env));
  for (const init of spec.initContainers ?? []) if (init.name === 'wait-gcs-ready') init.env = withTokenAuthEnv(cluster, init.env);
}

function cmdToString(parts: string[]): string {
  return parts.map((p) => ` ${p} `).join('');
}

export interface WorkerIndex {
  /** ray.io/worker-group-replica-index. */
  replicaIndex: number;
  /** Multi-host groups (numOfHosts > 1): ray.io/worker-group-replica-name and ray.io/replica-host-index. */
  replicaName?: string;
  hostIndex?: number;
}

interface Built {
  pod: Pod;
  /** The `ray start` line (also in env KUBERAY_GEN_RAY_START_CMD). */
  rayStart: string;
}

function build(
  cluster: RayCluster,
  nodeType: NodeType,
  group: HeadGroupSpec | WorkerGroupSpec,
  groupName: string,
  options: BuildOptions,
  index?: WorkerIndex,
): Built {
  const template = structuredClone(group.template ?? {});
  const spec: PodSpec = (template.spec ?? { containers: [] }) as PodSpec;
  if (!Array.isArray(spec.containers) || spec.containers.length === 0) throw new Error(`the ${groupName} pod template has no container`);
  const ray = spec.containers[0]!;
  const port = headPort(cluster);
  const fqdn = headServiceFqdn(cluster, options);
  const params: Record<string, string> = { ...(group.rayStartParams ?? {}) };
  const meta: ObjectMeta = { ...(template.metadata ?? {}) };
  const annotations: Record<string, string> = { ...(meta.annotations ?? {}) };
  if (cluster.metadata.annotations?.[OVERWRITE_CONTAINER_CMD_ANNOTATION]?.toLowerCase() === 'true')
    annotations[OVERWRITE_CONTAINER_CMD_ANNOTATION] = 'true';

  // DefaultWorkerPodTemplate: the init container sees the Ray container as the template wrote it.
  if (nodeType === 'worker' && options.initContainer !== false) {
    const init: Container = {
      name: 'wait-gcs-ready',
      image: ray.image,
      command: [...CONTAINER_COMMAND],
      args: [waitGcsScript(fqdn, port)],
      env: structuredClone(ray.env ?? []),
      volumeMounts: structuredClone(ray.volumeMounts ?? []),
      resources: { limits: { cpu: '200m', memory: '256Mi' }, requests: { cpu: '200m', memory: '256Mi' } },
    };
    if (ray.imagePullPolicy !== undefined) init.imagePullPolicy = ray.imagePullPolicy;
    if (ray.securityContext !== undefined) init.securityContext = structuredClone(ray.securityContext);
    spec.initContainers = [...(spec.initContainers ?? []), init];
  }

  applyGroupResources(params, group.resources);
  applyGroupLabels(params, group.labels);
  let labels = podLabels(cluster, nodeType, groupName, { ...(meta.labels ?? {}), ...(group.labels ?? {}) });
  if (nodeType === 'worker' && index) {
    labels[RAY_WORKER_REPLICA_INDEX_LABEL] = String(index.replicaIndex);
    if ((group as WorkerGroupSpec).numOfHosts !== undefined && ((group as WorkerGroupSpec).numOfHosts ?? 1) > 1) {
      labels = {
        ...labels,
        [RAY_WORKER_REPLICA_NAME_LABEL]: index.replicaName ?? '',
        [RAY_HOST_INDEX_LABEL]: String(index.hostIndex ?? 0),
      };
    }
  }
  setMissingParams(params, nodeType, port, fqdn);
  const env: EnvVar[] = structuredClone(ray.env ?? []);
  if (nodeType === 'head') addAutoscalerToHead(cluster, spec, params, env);
  else addAutoscalerToWorker(cluster, spec);
  configureGcsFt(cluster, nodeType, env, params, annotations);
  if (nodeType === 'head' && usesEmbeddedGcsStorage(cluster)) configureEmbeddedGcsStorage(cluster, spec, ray, env);
  if (isTokenAuth(cluster)) tokenAuth(cluster, spec, env);
  if (!(ray.ports ?? []).some((p) => p.name === 'metrics'))
    ray.ports = [...(ray.ports ?? []), { name: 'metrics', containerPort: DEFAULT_METRICS_PORT }];

  // BuildPod: /dev/shm unless plasma-directory is set.
  if (!('plasma-directory' in params) && !(ray.volumeMounts ?? []).some((m) => m.mountPath === '/dev/shm')) {
    if (!(spec.volumes ?? []).some((v) => v.name === 'shared-mem')) {
      const size = ray.resources?.limits?.memory ?? ray.resources?.requests?.memory;
      spec.volumes = [
        ...(spec.volumes ?? []),
        { name: 'shared-mem', emptyDir: { medium: 'Memory', ...(size !== undefined ? { sizeLimit: size } : {}) } },
      ];
    }
    ray.volumeMounts = [...(ray.volumeMounts ?? []), { name: 'shared-mem', mountPath: '/dev/shm', readOnly: false }];
  }
  if (nodeType === 'head') addRayLogVolume(spec);

  let cmd = '';
  if (ray.command && ray.command.length > 0) cmd = cmdToString(ray.command);
  if (ray.args && ray.args.length > 0) cmd += cmdToString(ray.args);
  const rayStart = rayStartCommand(nodeType, params, ray.resources);
  if (annotations[OVERWRITE_CONTAINER_CMD_ANNOTATION]?.toLowerCase() !== 'true' && !cmd.includes('ray start')) {
    const generated = `ulimit -n 65536; ${rayStart}`;
    ray.command = [...CONTAINER_COMMAND];
    ray.args = [cmd !== '' ? `${cmd} && ${generated}` : generated];
  }
  for (const init of spec.initContainers ?? []) {
    init.env = [...(init.env ?? []), { name: 'FQ_RAY_IP', value: fqdn }, { name: 'RAY_IP', value: fqdn.split('.')[0] ?? fqdn }];
  }
  addRayEnv(cluster, nodeType, env, fqdn, port, rayStart);
  ray.env = env;
  if (options.probes !== false) addProbes(ray, nodeType, params, cluster.spec?.rayVersion);

  const metadata: ObjectMeta = {
    ...meta,
    namespace: cluster.metadata.namespace,
    labels,
    annotations,
    ownerReferences: [ownerReference(cluster)],
  };
  delete metadata.name;
  delete metadata.generateName;
  metadata.generateName = nodeType === 'head' ? headPodGenerateName(cluster) : workerPodGenerateName(cluster, groupName);
  return { pod: { apiVersion: 'v1', kind: 'Pod', metadata, spec }, rayStart };
}

/** The head Pod (generateName `<cluster>-head-`, as KubeRay by default). */
export function buildHeadPod(cluster: RayCluster, options: BuildOptions = {}): Pod {
  return build(cluster, 'head', headGroup(cluster), HEAD_GROUP_NAME, options).pod;
}

/** One worker Pod of `group` (generateName `<cluster>-<group>-worker-`). */
export function buildWorkerPod(
  cluster: RayCluster,
  group: WorkerGroupSpec,
  index: WorkerIndex = { replicaIndex: 0 },
  options: BuildOptions = {},
): Pod {
  return build(cluster, 'worker', group, group.groupName ?? '', options, index).pod;
}

/** The Ray container's env of a built pod as a name -> entry map (tests, the oracle comparison). */
export function rayEnv(pod: Pod): Map<string, EnvVar> {
  return new Map((pod.spec?.containers[0]?.env ?? []).map((e) => [e.name, e]));
}
