// What a RayJob creates, built as plain objects (pure): its RayCluster, the K8sJobMode submitter Job,
// and the HTTPMode submission request.
import { shellQuote } from '../shell.ts';
import { parse as parseYaml } from 'yaml';
import { DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION, RAY_API_VERSION } from '../names.ts';
import { controllerReference } from '../../kube/owner.ts';
import type { RayCluster, RayJob } from '../types.ts';
import type { BatchJob, Container, EnvVar, JobCondition, ObjectMeta, OwnerReference, PodTemplateSpec } from '../../kube/model.ts';
import {
  CREATED_BY_LABEL,
  CREATED_BY_VALUE,
  DASHBOARD_GCS_HEALTH_PATH,
  DASHBOARD_PORT,
  DEFAULT_SUBMITTER_BACKOFF_LIMIT,
  ENV_PYTHONUNBUFFERED,
  ENV_RAY_DASHBOARD_ADDRESS,
  ENV_RAY_JOB_SUBMISSION_ID,
  ORIGINATED_FROM_CRD_LABEL,
  ORIGINATED_FROM_CRD_RAYJOB,
  ORIGINATED_FROM_CR_NAME_LABEL,
  SUBMISSION_MODE_LABEL,
  SUBMITTER_CONTAINER_NAME,
} from './constants.ts';
import { fromStatusDashboardUrl, submitterJobName } from './ids.ts';
import { submissionMode } from './validation.ts';
import { isTokenAuth, withTokenAuthEnv } from '../raycluster/auth.ts';

/** Annotations never copied from the RayJob to its RayCluster (kubectl's copy of the RayJob itself). */
const NOT_COPIED_ANNOTATIONS = new Set(['kubectl.kubernetes.io/last-applied-configuration']);

export function ownerReferenceTo(job: RayJob): OwnerReference {
  return controllerReference(RAY_API_VERSION, 'RayJob', job.metadata);
}

function originLabels(job: RayJob): Record<string, string> {
  return {
    [ORIGINATED_FROM_CR_NAME_LABEL]: job.metadata.name ?? '',
    [ORIGINATED_FROM_CRD_LABEL]: ORIGINATED_FROM_CRD_RAYJOB,
  };
}

/**
 * The RayCluster for spec.rayClusterSpec (KubeRay's constructRayClusterForRayJob): the RayJob's labels
 * and annotations are carried over, so `ray.io/ft-enabled`, `ray.io/external-storage-namespace` and
 * `ray.io/gcs-ft-deletion-timeout` reach the cluster and our webhook and GCS-FT cleanup apply to it;
 * spec.gcsFaultToleranceOptions travels inside the spec. Owned (controller) by the RayJob, labelled
 * with its submissionMode. SidecarMode: the submitter container is appended to the head template, the
 * head's restartPolicy is Never, and `ray.io/disable-provisioned-head-restart` keeps the operator from
 * re-creating a lost head once the cluster was provisioned (a new head could not run the same
 * submission id again).
 */
export function buildRayCluster(job: RayJob, clusterName: string): RayCluster {
  const annotations: Record<string, string> = {};
  for (const [key, value] of Object.entries(job.metadata.annotations ?? {})) {
    if (!NOT_COPIED_ANNOTATIONS.has(key)) annotations[key] = value;
  }
  const mode = submissionMode(job);
  if (mode === 'SidecarMode') annotations[DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION] = 'true';
  const metadata: ObjectMeta = {
    name: clusterName,
    namespace: job.metadata.namespace ?? 'default',
    labels: { ...(job.metadata.labels ?? {}), ...originLabels(job), [SUBMISSION_MODE_LABEL]: mode },
    ownerReferences: [ownerReferenceTo(job)],
  };
  if (Object.keys(annotations).length > 0) metadata.annotations = annotations;
  const spec = structuredClone(job.spec?.rayClusterSpec ?? {});
  const cluster: RayCluster = { apiVersion: RAY_API_VERSION, kind: 'RayCluster', metadata, spec };
  const headPod = spec.headGroupSpec?.template?.spec;
  if (mode === 'SidecarMode' && headPod !== undefined) {
    const submitter = buildSidecarSubmitter(job);
    if (isTokenAuth(cluster)) submitter.env = withTokenAuthEnv(cluster, submitter.env);
    headPod.containers = [...(headPod.containers ?? []), submitter];
    headPod['restartPolicy'] = 'Never';
  }
  return cluster;
}

/** The image of the cluster's head container (KubeRay's default submitter runs the head image). */
export function headImage(cluster: RayCluster | undefined | null): string | undefined {
  return cluster?.spec?.headGroupSpec?.template?.spec?.containers?.[0]?.image;
}

function runtimeEnv(job: RayJob): Record<string, unknown> | undefined {
  const yaml = job.spec?.['runtimeEnvYAML'];
  if (typeof yaml !== 'string' || yaml.trim() === '') return undefined;
  const parsed: unknown = parseYaml(yaml);
  return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
}

function numberField(job: RayJob, key: string): number | undefined {
  const value = job.spec?.[key];
  return typeof value === 'number' && value > 0 ? value : undefined;
}

function entrypointResources(job: RayJob): Record<string, number> | undefined {
  const value = job.spec?.['entrypointResources'];
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  try {
    const parsed: unknown = JSON.parse(value);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, number>) : undefined;
  } catch {
    return undefined;
  }
}

function jobMetadata(job: RayJob): Record<string, string> | undefined {
  const value = job.spec?.['metadata'];
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, string>) : undefined;
}

/**
 * The `ray job submit` options both submitters pass, in KubeRay's order (its BuildJobSubmitCommand, one
 * for both modes): runtime env, metadata, submission id, entrypoint CPUs and GPUs (Go's %f), resources.
 * JSON arguments are single-quoted (KubeRay double-quotes them, which lets bash expand a `$` inside).
 */
function submitOptions(job: RayJob, submissionId: string): string[] {
  const out: string[] = [];
  const env = runtimeEnv(job);
  if (env !== undefined) out.push(`--runtime-env-json ${shellQuote(JSON.stringify(env))}`);
  const metadata = jobMetadata(job);
  if (metadata !== undefined && Object.keys(metadata).length > 0) out.push(`--metadata-json ${shellQuote(JSON.stringify(metadata))}`);
  if (submissionId !== '') out.push(`--submission-id ${shellQuote(submissionId)}`);
  const cpus = numberField(job, 'entrypointNumCpus');
  if (cpus !== undefined) out.push(`--entrypoint-num-cpus ${cpus.toFixed(6)}`);
  const gpus = numberField(job, 'entrypointNumGpus');
  if (gpus !== undefined) out.push(`--entrypoint-num-gpus ${gpus.toFixed(6)}`);
  const resources = entrypointResources(job);
  if (resources !== undefined) out.push(`--entrypoint-resources ${shellQuote(JSON.stringify(resources))}`);
  return out;
}

export interface SubmitterOptions {
  /** The `ray` executable as a shell word (or words); tests point it at a stand-in. Default `ray`. */
  rayCommand?: string;
  /** Overrides the submitter image (default: the head container's image). */
  image?: string;
}

/**
 * The submitter's shell command (KubeRay's GetK8sJobCommand): submit only if the dashboard does not
 * know the submission id yet, then follow the logs until the Ray job ends. A restarted submitter pod
 * therefore re-attaches instead of failing on a duplicate submission (kuberay #2154).
 */
export function submitterScript(job: RayJob, address: string, jobId: string, options: SubmitterOptions = {}): string {
  const ray = options.rayCommand ?? 'ray';
  const addr = shellQuote(address);
  const id = shellQuote(jobId);
  const submit = [`${ray} job submit --address ${addr} --no-wait`, ...submitOptions(job, jobId)];
  // The entrypoint is a shell command line (as in KubeRay): bash splits it, so quotes in it work.
  submit.push(`-- ${job.spec?.entrypoint ?? ''}`);
  return [
    `if ! ${ray} job status --address ${addr} ${id} >/dev/null 2>&1 ; then ${submit.join(' ')} ; fi`,
    `${ray} job logs --address ${addr} --follow ${id}`,
  ].join(' ; ');
}

function defaultSubmitterTemplate(image: string | undefined): PodTemplateSpec {
  const container: Container = {
    name: SUBMITTER_CONTAINER_NAME,
    image: image ?? '',
    resources: {
      requests: { cpu: '500m', memory: '200Mi' },
      limits: { cpu: '1', memory: '1Gi' },
    },
  };
  return { spec: { restartPolicy: 'Never', containers: [container] } };
}

/**
 * The K8sJobMode submitter Job (KubeRay's createNewK8sJob): named after the RayJob, backoffLimit from
 * submitterConfig or 2, owned by the RayJob, the head image, env RAY_DASHBOARD_ADDRESS and
 * RAY_JOB_SUBMISSION_ID. A user's spec.submitterPodTemplate is used when given; its first container
 * is the submitter and keeps its own command if it has one. A token-auth cluster's RAY_AUTH_MODE and
 * RAY_AUTH_TOKEN (secretKeyRef) reach the submitter, so `ray job` authenticates. Ours: the submitter
 * container's terminationMessagePolicy is FallbackToLogsOnError unless the template sets one.
 */
export function buildSubmitterJob(job: RayJob, cluster: RayCluster | null | undefined, options: SubmitterOptions = {}): BatchJob {
  const status = job.status ?? {};
  const jobId = status.jobId ?? '';
  const dashboard = status.dashboardURL ?? '';
  const userTemplate = job.spec?.['submitterPodTemplate'] as PodTemplateSpec | undefined;
  const template: PodTemplateSpec = userTemplate
    ? structuredClone(userTemplate)
    : defaultSubmitterTemplate(options.image ?? headImage(cluster));
  template.spec ??= {};
  template.spec.containers ??= [];
  if (template.spec.containers.length === 0) template.spec.containers.push({ name: SUBMITTER_CONTAINER_NAME });
  if (template.spec['restartPolicy'] === undefined) template.spec['restartPolicy'] = 'Never';
  const container = template.spec.containers[0] as Container;
  if (userTemplate && options.image !== undefined) container.image = options.image;
  if (container.image === undefined || container.image === '') container.image = options.image ?? headImage(cluster) ?? '';
  // A failed attempt's log tail lands in its pod's status, where a SubmissionFailed message reads it
  // (machine.ts attemptReport); a template that chose its own policy keeps it.
  container['terminationMessagePolicy'] ??= 'FallbackToLogsOnError';
  const command = container['command'];
  if (!Array.isArray(command) || command.length === 0) {
    // Without -e the script would go on after a failing command (KubeRay's GetContainerCommand(["e"])).
    container['command'] = ['/bin/bash', '-ce', '--'];
    container['args'] = [submitterScript(job, fromStatusDashboardUrl(dashboard), jobId, options)];
  }
  const env: EnvVar[] = [...(container.env ?? [])];
  env.push({ name: ENV_PYTHONUNBUFFERED, value: '1' });
  env.push({ name: ENV_RAY_DASHBOARD_ADDRESS, value: dashboard });
  env.push({ name: ENV_RAY_JOB_SUBMISSION_ID, value: jobId });
  container.env = cluster && isTokenAuth(cluster) ? withTokenAuthEnv(cluster, env) : env;
  const backoffLimit = job.spec?.submitterConfig?.backoffLimit ?? DEFAULT_SUBMITTER_BACKOFF_LIMIT;
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: submitterJobName(job),
      namespace: job.metadata.namespace ?? 'default',
      labels: { ...originLabels(job), [CREATED_BY_LABEL]: CREATED_BY_VALUE },
      ownerReferences: [ownerReferenceTo(job)],
    },
    spec: { backoffLimit, template },
  };
}

/** KubeRay's utils.FindContainerPort: the container's port of that name, else the default. */
function containerPort(container: Container | undefined, name: string, fallback: number): number {
  const ports = (container?.['ports'] ?? []) as Array<{ name?: string; containerPort?: number }>;
  return ports.find((p) => p.name === name)?.containerPort ?? fallback;
}

/**
 * The SidecarMode submitter's shell command (KubeRay's BuildJobSubmitCommand for SidecarMode): wait
 * until the head's dashboard reports GCS healthy over loopback (same network namespace), then
 * `ray job submit` WITHOUT --no-wait, so the container follows the job and exits 0 only if it
 * SUCCEEDED. No status-then-submit dance: the container never restarts (restartPolicy Never).
 */
export function sidecarSubmitterScript(job: RayJob): string {
  const head = job.spec?.rayClusterSpec?.headGroupSpec?.template?.spec?.containers?.[0];
  const port = containerPort(head, 'dashboard', DASHBOARD_PORT);
  const address = `http://127.0.0.1:${port}`;
  const health = `python -c "import urllib.request; r=urllib.request.urlopen('http://localhost:${port}/${DASHBOARD_GCS_HEALTH_PATH}', timeout=10); exit(0 if b'success' in r.read() else 1)"`;
  const cmd = [
    `until ${health} >/dev/null 2>&1 ; do echo ${JSON.stringify(`Waiting for Ray Dashboard GCS to become healthy at ${address} ...`)} ; sleep 2 ; done ;`,
    `ray job submit --address ${address}`,
    ...submitOptions(job, job.status?.jobId ?? ''),
    `-- ${(job.spec?.entrypoint ?? '').trim()} ;`,
  ];
  return cmd.join(' ');
}

/**
 * The SidecarMode submitter container appended to the head pod (KubeRay's getSubmitterContainer): the
 * head image, KubeRay's default submitter resources, `/bin/bash -ce --` with the script above, and the
 * env a K8sJobMode submitter gets (RAY_DASHBOARD_ADDRESS is status.dashboardURL when the cluster is
 * built, still empty then, as in KubeRay).
 */
export function buildSidecarSubmitter(job: RayJob): Container {
  const container = defaultSubmitterTemplate(job.spec?.rayClusterSpec?.headGroupSpec?.template?.spec?.containers?.[0]?.image).spec
    ?.containers?.[0] as Container;
  container['command'] = ['/bin/bash', '-ce', '--'];
  container['args'] = [sidecarSubmitterScript(job)];
  container.env = [
    { name: ENV_PYTHONUNBUFFERED, value: '1' },
    { name: ENV_RAY_DASHBOARD_ADDRESS, value: job.status?.dashboardURL ?? '' },
    { name: ENV_RAY_JOB_SUBMISSION_ID, value: job.status?.jobId ?? '' },
  ];
  return container;
}

/** Ray's JobSubmitRequest body for POST /api/jobs/ (HTTPMode). */
export interface JobSubmitRequest {
  entrypoint: string;
  submission_id: string;
  runtime_env?: Record<string, unknown>;
  metadata?: Record<string, string>;
  entrypoint_num_cpus?: number;
  entrypoint_num_gpus?: number;
  entrypoint_resources?: Record<string, number>;
}

export function buildSubmitRequest(job: RayJob): JobSubmitRequest {
  const request: JobSubmitRequest = { entrypoint: job.spec?.entrypoint ?? '', submission_id: job.status?.jobId ?? '' };
  const env = runtimeEnv(job);
  if (env !== undefined) request.runtime_env = env;
  const metadata = jobMetadata(job);
  if (metadata !== undefined) request.metadata = metadata;
  const cpus = numberField(job, 'entrypointNumCpus');
  if (cpus !== undefined) request.entrypoint_num_cpus = cpus;
  const gpus = numberField(job, 'entrypointNumGpus');
  if (gpus !== undefined) request.entrypoint_num_gpus = gpus;
  const resources = entrypointResources(job);
  if (resources !== undefined) request.entrypoint_resources = resources;
  return request;
}

/** A finished condition (Complete or Failed, status True) of a batch Job, if any. */
export function finishedCondition(job: BatchJob | null | undefined): JobCondition | undefined {
  return (job?.status?.conditions ?? []).find((c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True');
}
