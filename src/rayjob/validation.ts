// KubeRay's RayJob validation (utils/validation.go: ValidateRayJobMetadata, ValidateRayJobSpec,
// ValidateRayJobStatus, and the parts of ValidateRayClusterSpec that concern a RayJob's cluster).
// Pure: returns the first problem, as KubeRay does, with the event reason and the message KubeRay uses for
// it (word for word: the webhook's refusal and the controller's ValidationFailed status say the same).
// Rules of ours that KubeRay lacks are only for what KubeRay accepts but cannot run (an unknown
// submissionMode, a negative submitterConfig.backoffLimit); docs/reference/validation.md lists every rule.
// KubeRay has no entrypoint rule: a RayJob without one is accepted and submitted as it is (builders.ts).
import { parse as parseYaml } from 'yaml';
import type { RayClusterSpec, RayJob } from '../types.ts';
import { dns1035LabelErrors, goList, nameToCheck, validateRayClusterSpec } from '../raycluster/validation.ts';
import { CLUSTER_SELECTOR_KEY, MAX_RAYJOB_NAME_LENGTH } from './constants.ts';
import { usesClusterSelector } from './ids.ts';
import { validateDeletionConfiguration } from './deletion.ts';
import { EVENT_INVALID_RAYJOB_METADATA, EVENT_INVALID_RAYJOB_SPEC, EVENT_INVALID_RAYJOB_STATUS } from '../event-reasons.ts';
import { errorMessage } from '../errors.ts';

export interface ValidationProblem {
  /** The Warning event reason: InvalidRayJobMetadata | InvalidRayJobSpec | InvalidRayJobStatus. */
  eventReason: string;
  message: string;
}

export const SUBMISSION_MODES = ['K8sJobMode', 'HTTPMode', 'InteractiveMode', 'SidecarMode'] as const;
export type SubmissionMode = (typeof SUBMISSION_MODES)[number];

/** spec.submissionMode, defaulting like the CRD does (K8sJobMode). */
export function submissionMode(job: RayJob): string {
  const mode = job.spec?.submissionMode;
  return mode === undefined || mode === null || mode === '' ? 'K8sJobMode' : String(mode);
}

/** The name KubeRay checks; on a CREATE with only generateName, the longest name it can become. */
export function validateRayJobMetadata(job: RayJob): string | undefined {
  const name = nameToCheck(job.metadata as Record<string, unknown>);
  if (name.length > MAX_RAYJOB_NAME_LENGTH) {
    return `The RayJob metadata is invalid: RayJob name should be no more than ${MAX_RAYJOB_NAME_LENGTH} characters`;
  }
  const errs = dns1035LabelErrors(name);
  if (errs.length > 0) return `The RayJob metadata is invalid: RayJob name should be a valid DNS1035 label: ${goList(errs)}`;
  return undefined;
}

function isInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value);
}

/** KubeRay's ValidateRayClusterSpec on a RayJob's rayClusterSpec, with the RayJob's annotations (src/raycluster/validation.ts). */
export function validateRayClusterSpecForJob(spec: RayClusterSpec, annotations: Record<string, string>): string | undefined {
  return validateRayClusterSpec(spec, annotations);
}

/** KubeRay's SidecarMode rules (messages without the "spec is invalid" prefix, as KubeRay's). */
function validateSidecarMode(job: RayJob): string | undefined {
  const spec = job.spec ?? {};
  if (spec['submitterPodTemplate'] !== undefined && spec['submitterPodTemplate'] !== null) {
    return "Currently, SidecarMode doesn't support SubmitterPodTemplate";
  }
  if (spec.submitterConfig !== undefined && spec.submitterConfig !== null) return "Currently, SidecarMode doesn't support SubmitterConfig";
  const restartPolicy = spec.rayClusterSpec?.headGroupSpec?.template?.spec?.['restartPolicy'];
  if (restartPolicy !== undefined && restartPolicy !== null && restartPolicy !== '' && restartPolicy !== 'Never') {
    return 'restartPolicy for head Pod should be Never or unset when using SidecarMode';
  }
  return undefined;
}

/** The JSON type name Go's encoding/json puts in "cannot unmarshal <type> into Go value". */
function goJsonType(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'boolean') return 'bool';
  return typeof value === 'number' || typeof value === 'string' ? typeof value : 'value';
}

/**
 * KubeRay's UnmarshalRuntimeEnvYAML (sigs.k8s.io/yaml into a map[string]any): empty or null is fine, a
 * mapping is fine, anything else fails with its error. Word for word for YAML that parses but is not a
 * mapping; for YAML that does not parse, the parser's own reason follows KubeRay's prefix (Go's YAML
 * parser words it differently).
 */
export function runtimeEnvYAMLProblem(yaml: string): string | undefined {
  const failed = (why: string) => `failed to unmarshal RuntimeEnvYAML: ${yaml}: ${why}`;
  let parsed: unknown;
  try {
    parsed = parseYaml(yaml);
  } catch (err) {
    return failed(`error converting YAML to JSON: yaml: ${errorMessage(err).split('\n')[0]}`);
  }
  if (parsed === null || parsed === undefined || (typeof parsed === 'object' && !Array.isArray(parsed))) return undefined;
  return failed(
    `error unmarshaling JSON: while decoding JSON: json: cannot unmarshal ${goJsonType(parsed)} into Go value of type types.RuntimeEnvType`,
  );
}

export function validateRayJobSpec(job: RayJob): string | undefined {
  const spec = job.spec ?? {};
  const invalid = (why: string) => `The RayJob spec is invalid: ${why}`;
  const mode = submissionMode(job);
  if (!(SUBMISSION_MODES as readonly string[]).includes(mode)) {
    return invalid(`unknown submissionMode ${JSON.stringify(mode)}`);
  }
  if (spec.suspend === true && spec.shutdownAfterJobFinishes !== true) {
    return invalid('a RayJob with shutdownAfterJobFinishes set to false is not allowed to be suspended');
  }
  const ttl = spec.ttlSecondsAfterFinished;
  if (ttl !== undefined && ttl !== null && (!isInteger(ttl) || ttl < 0)) {
    return invalid('TTLSecondsAfterFinished must be a non-negative integer');
  }
  const deletion = validateDeletionConfiguration(job);
  if (deletion !== undefined) return deletion;
  const selectorMode = usesClusterSelector(job);
  if (spec.suspend === true && selectorMode) {
    return invalid("the ClusterSelector mode doesn't support the suspend operation");
  }
  if ((spec.rayClusterSpec === undefined || spec.rayClusterSpec === null) && !selectorMode) {
    return invalid('one of RayClusterSpec or ClusterSelector must be set');
  }
  if (selectorMode) {
    const name = spec.clusterSelector?.[CLUSTER_SELECTOR_KEY] ?? '';
    if (name === '') return 'cluster name in ClusterSelector should not be empty';
    if (mode === 'SidecarMode') return 'ClusterSelector is not supported in SidecarMode';
    const limit = spec.backoffLimit;
    if (isInteger(limit) && limit > 0) {
      return invalid('BackoffLimit is incompatible with ClusterSelector mode');
    }
  }
  if (mode === 'InteractiveMode' && isInteger(spec.backoffLimit) && spec.backoffLimit > 0) {
    return invalid('BackoffLimit is incompatible with InteractiveMode');
  }
  if (mode === 'SidecarMode') {
    const problem = validateSidecarMode(job);
    if (problem !== undefined) return problem;
  }
  if (spec.rayClusterSpec !== undefined && spec.rayClusterSpec !== null) {
    if ((spec.rayClusterSpec['authOptions'] as { enableK8sTokenAuth?: unknown } | undefined)?.enableK8sTokenAuth === true) {
      return invalid('K8s token auth mode is currently not supported for RayJob');
    }
    const problem = validateRayClusterSpecForJob(spec.rayClusterSpec, job.metadata.annotations ?? {});
    if (problem !== undefined) return invalid(problem);
  }
  const runtimeEnv = spec['runtimeEnvYAML'];
  if (typeof runtimeEnv === 'string') {
    const problem = runtimeEnvYAMLProblem(runtimeEnv);
    if (problem !== undefined) return problem;
  }
  const active = spec.activeDeadlineSeconds;
  if (active !== undefined && active !== null && (!isInteger(active) || active <= 0)) {
    return invalid('activeDeadlineSeconds must be a positive integer');
  }
  const preRunning = spec.preRunningDeadlineSeconds;
  if (preRunning !== undefined && preRunning !== null && (!isInteger(preRunning) || preRunning <= 0)) {
    return invalid('preRunningDeadlineSeconds must be a positive integer');
  }
  const backoff = spec.backoffLimit;
  if (backoff !== undefined && backoff !== null && (!isInteger(backoff) || backoff < 0)) {
    // KubeRay's words (it means non-negative: 0 is the default).
    return invalid('backoffLimit must be a positive integer');
  }
  const submitterBackoff = spec.submitterConfig?.backoffLimit;
  if (submitterBackoff !== undefined && submitterBackoff !== null && (!isInteger(submitterBackoff) || submitterBackoff < 0)) {
    return invalid('submitterConfig.backoffLimit must be a non-negative integer');
  }
  return undefined;
}

export function validateRayJobStatus(job: RayJob): string | undefined {
  if (job.status?.jobDeploymentStatus === 'Waiting' && submissionMode(job) !== 'InteractiveMode') {
    return 'The RayJob status is invalid: JobDeploymentStatus cannot be `Waiting` when SubmissionMode is not InteractiveMode';
  }
  return undefined;
}

/** KubeRay's validateRayJob: metadata, then spec, then status; the first problem wins. */
export function validateRayJob(job: RayJob): ValidationProblem | undefined {
  const rules: Array<[string, (job: RayJob) => string | undefined]> = [
    [EVENT_INVALID_RAYJOB_METADATA, validateRayJobMetadata],
    [EVENT_INVALID_RAYJOB_SPEC, validateRayJobSpec],
    [EVENT_INVALID_RAYJOB_STATUS, validateRayJobStatus],
  ];
  for (const [eventReason, rule] of rules) {
    const message = rule(job);
    if (message !== undefined) return { eventReason, message };
  }
  return undefined;
}
