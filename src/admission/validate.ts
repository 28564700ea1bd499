// The whole validating admission decision for one request body, without I/O: parse, check the kind, run
// the same rules the controllers run (src/raycluster/validation.ts, src/rayjob/validation.ts), the UPDATE
// rules that protect data (./update-rules.ts) and the warnings (./warnings.ts), answer. Never throws: a
// failure anywhere becomes an AdmissionReview refusal with the request's uid (400 bad input, 500 ours).
//
// Order: DELETE, CONNECT and subresources (status, scale) are always allowed. An object being deleted is
// always allowed (finalizer removal must never be blocked). CREATE: shape, metadata and spec rules, then
// warnings. UPDATE: the data rules first (they hold whatever else changed); then the object's own rules
// only when the spec or the annotations and labels those rules read changed, so an edit of status,
// finalizers or unrelated metadata of an object admitted while the webhook was down still passes.
// Last, a RayCluster's storage-namespace claim against the other clusters (./storage-claims.ts), when the
// caller has a lookup over them (the webhook's cache; `raykeeper mutate` has none).
// The status rules (KubeRay's ValidateRayClusterStatus / ValidateRayJobStatus) are the controller's only:
// a user cannot fix a status through the main resource.
import { isDeepStrictEqual } from 'node:util';
import {
  EXTERNAL_STORAGE_NAMESPACE_ANNOTATION,
  FT_ENABLED_ANNOTATION,
  RAY_GROUP,
  RAY_ORIGINATED_FROM_CRD_LABEL,
  RAY_VERSION,
} from '../names.ts';
import type { JsonObject } from '../../kube/model.ts';
import type { RayCluster, RayCronJob, RayJob } from '../types.ts';
import { validateRayCronJob } from '../raycronjob/decide.ts';
import { parseGoDuration } from '../raycronjob/schedule.ts';
import { rayCronJobShapeProblem } from './raycronjob.ts';
import { isDeleting } from '../../kube/finalizer-patches.ts';
import { validateRayCluster } from '../raycluster/validation.ts';
import { validateRayJobMetadata, validateRayJobSpec } from '../rayjob/validation.ts';
import { rayClusterShapeProblem } from './raycluster.ts';
import { rayJobShapeProblem } from './rayjob.ts';
import { allowed, denied, type AdmissionReviewAnswer } from './response.ts';
import { DEFAULT_ADMISSION_API_VERSION, parseAdmissionReview, type AdmissionRequest } from './review.ts';
import { gcsFtStorageChange } from './update-rules.ts';
import { boundWarnings, rayClusterWarnings, rayJobWarnings, type WarningOptions } from './warnings.ts';
import { storageClaimCheck, type ClaimLookup, type StorageClaimOutcome } from './storage-claims.ts';

/** The kinds with a validating route: a kind, an entry in VALIDATORS, a path in src/names.ts and a route in webhook/app.ts. */
export type ValidateKind = 'RayCluster' | 'RayJob' | 'RayCronJob';

/** Bounded reason label of a refusal (metrics). */
export const DENIAL_REASONS = [
  'invalid_metadata',
  'invalid_spec',
  'gcs_ft_storage',
  'storage_namespace_in_use',
  'invalid_review',
  'internal',
] as const;
export type DenialReason = (typeof DENIAL_REASONS)[number];

export type ValidationResult = 'allowed' | 'warned' | 'denied';

export interface ValidateOutcome {
  /** HTTP status: 200 answered (allowed or denied by a rule), 400 bad review, 500 our failure. */
  httpStatus: 200 | 400 | 500;
  answer: AdmissionReviewAnswer;
  request?: AdmissionRequest;
  result: ValidationResult;
  /** Set when result is denied. */
  reason?: DenialReason;
  /** The refusal's message when denied. */
  message?: string;
  warnings: string[];
}

/** What a validation may use besides the object: warning switches, the other clusters' claims. */
export interface ValidateOptions extends WarningOptions {
  /** The other RayClusters' storage-namespace claims (the webhook's cache); absent: not checked. */
  claims?: ClaimLookup | undefined;
  /** The request's namespace (a CREATE's object may not carry it). */
  namespace?: string | undefined;
}

/** One kind's rules: the object's own problem (metadata / spec), the UPDATE data rules, the warnings. */
interface Validator {
  shapeProblem(obj: JsonObject): string | undefined;
  objectProblem(obj: JsonObject, options: ValidateOptions): { reason: DenialReason; message: string } | undefined;
  updateProblem(oldObj: JsonObject, obj: JsonObject): { reason: DenialReason; message: string } | undefined;
  warnings(obj: JsonObject, options: WarningOptions): string[];
  /** Checks against the other objects of the cluster (the RayCluster storage-namespace claim). */
  claimCheck?(obj: JsonObject, oldObj: JsonObject | null, options: ValidateOptions): StorageClaimOutcome;
  /** Annotations and labels the object rules read (besides spec). */
  ruleMetadata: { annotations: readonly string[]; labels: readonly string[] };
}

// The shape checks (rayClusterShapeProblem / rayJobShapeProblem) ran first: metadata is an object, spec an
// object or absent; the rules read the rest defensively.
function cluster(obj: JsonObject): RayCluster {
  return obj as RayCluster;
}

function job(obj: JsonObject): RayJob {
  return obj as RayJob;
}

function cronJob(obj: JsonObject): RayCronJob {
  return obj as RayCronJob;
}

/**
 * KubeRay's own validating webhook (pkg/webhooks/v1/raycluster_webhook.go) also refuses two worker groups
 * of one name; its controller does not check it, so neither does ours (admission only).
 */
function duplicateWorkerGroupName(c: RayCluster): string | undefined {
  const groups = c.spec?.workerGroupSpecs;
  if (!Array.isArray(groups)) return undefined;
  const seen = new Set<unknown>();
  for (const [i, group] of groups.entries()) {
    const name = group !== null && typeof group === 'object' ? group.groupName : undefined;
    if (seen.has(name))
      return `spec.workerGroupSpecs[${i}]: Invalid value: ${JSON.stringify(name ?? null)}: worker group names must be unique`;
    seen.add(name);
  }
  return undefined;
}

const VALIDATORS: Readonly<Record<ValidateKind, Validator>> = {
  RayCluster: {
    shapeProblem: rayClusterShapeProblem,
    objectProblem(obj, options) {
      const problem = validateRayCluster(cluster(obj), { status: false });
      if (problem !== undefined) {
        return { reason: problem.eventReason.endsWith('Metadata') ? 'invalid_metadata' : 'invalid_spec', message: problem.message };
      }
      const duplicate = duplicateWorkerGroupName(cluster(obj));
      if (duplicate !== undefined) return { reason: 'invalid_spec', message: duplicate };
      return undefined;
    },
    updateProblem: (oldObj, obj) => gcsFtStorageChange(cluster(oldObj), cluster(obj)),
    warnings: (obj, options) => rayClusterWarnings(cluster(obj), options),
    claimCheck: (obj, oldObj, options) =>
      storageClaimCheck(cluster(obj), oldObj === null ? null : cluster(oldObj), options.namespace, options.claims),
    ruleMetadata: { annotations: [FT_ENABLED_ANNOTATION, EXTERNAL_STORAGE_NAMESPACE_ANNOTATION], labels: [RAY_ORIGINATED_FROM_CRD_LABEL] },
  },
  RayJob: {
    shapeProblem: rayJobShapeProblem,
    objectProblem(obj, options) {
      const metadata = validateRayJobMetadata(job(obj));
      if (metadata !== undefined) return { reason: 'invalid_metadata', message: metadata };
      const spec = validateRayJobSpec(job(obj));
      if (spec !== undefined) return { reason: 'invalid_spec', message: spec };
      return undefined;
    },
    updateProblem: () => undefined,
    warnings: (obj, options) => rayJobWarnings(job(obj), options),
    ruleMetadata: { annotations: [FT_ENABLED_ANNOTATION, EXTERNAL_STORAGE_NAMESPACE_ANNOTATION], labels: [] },
  },
  // The controller's own check (src/raycronjob/decide.ts): the schedule in KubeRay's cron syntax, the time
  // zone, our CronJob fields, and the template as the RayJob it becomes. Its warnings are the RayJob's.
  RayCronJob: {
    shapeProblem: rayCronJobShapeProblem,
    objectProblem(obj, options) {
      const checked = validateRayCronJob(cronJob(obj));
      if (!checked.ok) return { reason: 'invalid_spec', message: checked.message };
      return undefined;
    },
    updateProblem: () => undefined,
    warnings(obj, options) {
      const spec = cronJob(obj).spec;
      const out = spec?.jobTemplate ? rayJobWarnings({ metadata: { ...cronJob(obj).metadata }, spec: spec.jobTemplate }, options) : [];
      const every = typeof spec?.schedule === 'string' ? /(?:^|\s)@every\s+(\S+)\s*$/.exec(spec.schedule) : null;
      const ms = every ? parseGoDuration(every[1] ?? '') : undefined;
      if (ms !== undefined && ms < 60_000)
        out.push(
          `spec.schedule ${JSON.stringify(spec?.schedule)}: RayJobs are named by the minute of their tick (<cronjob>-<unix minutes>, KubeRay v1.7), so ticks in the same minute share a name and only the first runs`,
        );
      return out;
    },
    ruleMetadata: { annotations: [], labels: [] },
  },
};

function metadataValue(obj: JsonObject, field: 'annotations' | 'labels', key: string): unknown {
  const meta = obj.metadata;
  const map = meta !== null && typeof meta === 'object' && !Array.isArray(meta) ? meta[field] : undefined;
  return map !== null && typeof map === 'object' && !Array.isArray(map) ? map[key] : undefined;
}

/** Whether an UPDATE touches what the object rules read (spec, or the annotations and labels they read). */
function rulesInputChanged(validator: Validator, oldObj: JsonObject, obj: JsonObject): boolean {
  if (!isDeepStrictEqual(oldObj.spec, obj.spec)) return true;
  const { annotations, labels } = validator.ruleMetadata;
  return (
    annotations.some((k) => metadataValue(oldObj, 'annotations', k) !== metadataValue(obj, 'annotations', k)) ||
    labels.some((k) => metadataValue(oldObj, 'labels', k) !== metadataValue(obj, 'labels', k))
  );
}

function refusal(
  httpStatus: 200 | 400 | 500,
  reason: DenialReason,
  message: string,
  answer: AdmissionReviewAnswer,
  request?: AdmissionRequest,
): ValidateOutcome {
  const outcome: ValidateOutcome = { httpStatus, answer, result: 'denied', reason, message, warnings: [] };
  if (request !== undefined) outcome.request = request;
  return outcome;
}

/** The decision on an object (CREATE, or UPDATE with the old one), without the AdmissionReview around it. */
export function validateObject(
  kind: ValidateKind,
  obj: JsonObject,
  oldObj: JsonObject | null,
  options: ValidateOptions = {},
): { result: ValidationResult; reason?: DenialReason; message?: string; warnings: string[] } {
  const validator = VALIDATORS[kind];
  const shape = validator.shapeProblem(obj);
  if (shape !== undefined) return { result: 'denied', reason: 'invalid_review', message: shape, warnings: [] };
  if (isDeleting(obj)) return { result: 'allowed', warnings: [] };
  if (oldObj !== null) {
    const update = validator.updateProblem(oldObj, obj);
    if (update !== undefined) return { result: 'denied', reason: update.reason, message: update.message, warnings: [] };
    if (!rulesInputChanged(validator, oldObj, obj)) return { result: 'allowed', warnings: [] };
  }
  const problem = validator.objectProblem(obj, options);
  if (problem !== undefined) return { result: 'denied', reason: problem.reason, message: problem.message, warnings: [] };
  const claim = validator.claimCheck?.(obj, oldObj, options) ?? { warnings: [] };
  if ('refused' in claim) return { result: 'denied', reason: 'storage_namespace_in_use', message: claim.refused, warnings: [] };
  const warnings = boundWarnings([...validator.warnings(obj, options), ...claim.warnings]);
  return warnings.length > 0 ? { result: 'warned', warnings } : { result: 'allowed', warnings };
}

export function validate(body: unknown, kind: ValidateKind, options: ValidateOptions = {}): ValidateOutcome {
  let request: AdmissionRequest | undefined;
  try {
    const parsed = parseAdmissionReview(body);
    if (!parsed.ok) {
      const { apiVersion, uid, code, message } = parsed.error;
      return refusal(400, 'invalid_review', message, denied(apiVersion, uid, code, message));
    }
    request = parsed.request;
    const { apiVersion, uid } = request;
    const gvk = request.kind;
    if (gvk.group !== RAY_GROUP || gvk.version !== RAY_VERSION || gvk.kind !== kind) {
      const message = `this endpoint validates ${RAY_GROUP}/${RAY_VERSION} ${kind}, got ${gvk.group || 'core'}/${gvk.version} ${gvk.kind}`;
      return refusal(400, 'invalid_review', message, denied(apiVersion, uid, 400, message), request);
    }
    if ((request.operation !== 'CREATE' && request.operation !== 'UPDATE') || request.subResource !== undefined) {
      return { httpStatus: 200, answer: allowed(apiVersion, uid), request, result: 'allowed', warnings: [] };
    }
    const decision = validateObject(kind, request.object as JsonObject, request.operation === 'UPDATE' ? request.oldObject : null, {
      ...options,
      namespace: request.namespace,
    });
    if (decision.result === 'denied') {
      const message = decision.message ?? 'denied';
      if (decision.reason === 'invalid_review') {
        return refusal(400, 'invalid_review', message, denied(apiVersion, uid, 400, message), request);
      }
      return refusal(200, decision.reason ?? 'invalid_spec', message, denied(apiVersion, uid, 403, message), request);
    }
    return { httpStatus: 200, answer: allowed(apiVersion, uid, [], decision.warnings), request, ...decision };
  } catch (err) {
    const message = `internal error while validating: ${err instanceof Error ? err.message : String(err)}`;
    const apiVersion = request?.apiVersion ?? DEFAULT_ADMISSION_API_VERSION;
    return refusal(500, 'internal', message, denied(apiVersion, request?.uid, 500, message), request);
  }
}
