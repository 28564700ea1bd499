// The whole admission decision for one request body, without I/O: parse, check the kind, default a copy
// (copy.ts) while recording each write as a patch operation (patch.ts), answer. Never throws: a failure
// anywhere becomes an AdmissionReview refusal (400 for bad input, 500 for our own failure).
import { RAY_GROUP, RAY_VERSION } from '../names.ts';
import type { JsonObject } from '../../kube/model.ts';
import { copyForDefaulting } from './copy.ts';
import type { PatchOperation } from './patch.ts';
import { defaultRayCluster, rayClusterShapeProblem, type DefaultingResult } from './raycluster.ts';
import { defaultRayJob, rayJobShapeProblem } from './rayjob.ts';
import { defaultRayCronJob, rayCronJobShapeProblem } from './raycronjob.ts';
import { allowed, denied, type AdmissionReviewAnswer } from './response.ts';
import { DEFAULT_ADMISSION_API_VERSION, parseAdmissionReview, type AdmissionRequest } from './review.ts';

export type TargetKind = 'RayCluster' | 'RayJob' | 'RayCronJob';

export interface MutateOptions {
  /** A fresh storage namespace for a new RayCluster. */
  newStorageNamespace: () => string;
  /** Add the GCS FT cleanup finalizer (false when ENABLE_GCS_FT_REDIS_CLEANUP=false). */
  finalizerEnabled: boolean;
}

export interface MutateOutcome {
  /** HTTP status: 200 answered, 400 bad review, 500 our failure. */
  httpStatus: 200 | 400 | 500;
  answer: AdmissionReviewAnswer;
  /** The request, when it parsed. */
  request?: AdmissionRequest;
  patch: PatchOperation[];
  changes: string[];
  warnings: string[];
  /** Set when the answer is a refusal. */
  error?: string;
  /**
   * The object as it would be stored (request.object with the patch applied) on an answered CREATE or
   * UPDATE; it shares unchanged subtrees with request.object. `raykeeper mutate` prints it.
   */
  defaulted?: JsonObject;
}

function refusal(httpStatus: 400 | 500, answer: AdmissionReviewAnswer, message: string, request?: AdmissionRequest): MutateOutcome {
  const outcome: MutateOutcome = { httpStatus, answer, patch: [], changes: [], warnings: [], error: message };
  if (request !== undefined) outcome.request = request;
  return outcome;
}

function defaultObject(target: TargetKind, copy: JsonObject, request: AdmissionRequest, options: MutateOptions): DefaultingResult {
  const operation = request.operation === 'CREATE' ? 'CREATE' : 'UPDATE';
  if (target === 'RayCluster') {
    return defaultRayCluster(copy, {
      operation,
      oldObject: request.oldObject,
      newStorageNamespace: options.newStorageNamespace,
      finalizerEnabled: options.finalizerEnabled,
    });
  }
  if (target === 'RayCronJob') return defaultRayCronJob(copy, { operation });
  return defaultRayJob(copy, { operation });
}

function shapeProblem(target: TargetKind, obj: JsonObject): string | undefined {
  switch (target) {
    case 'RayCluster':
      return rayClusterShapeProblem(obj);
    case 'RayJob':
      return rayJobShapeProblem(obj);
    case 'RayCronJob':
      return rayCronJobShapeProblem(obj);
  }
}

export function mutate(body: unknown, target: TargetKind, options: MutateOptions): MutateOutcome {
  let request: AdmissionRequest | undefined;
  try {
    const parsed = parseAdmissionReview(body);
    if (!parsed.ok) {
      const { apiVersion, uid, code, message } = parsed.error;
      return refusal(400, denied(apiVersion, uid, code, message), message);
    }
    request = parsed.request;
    const { apiVersion, uid, kind } = request;
    if (kind.group !== RAY_GROUP || kind.version !== RAY_VERSION || kind.kind !== target) {
      const message = `this endpoint mutates ${RAY_GROUP}/${RAY_VERSION} ${target}, got ${kind.group || 'core'}/${kind.version} ${kind.kind}`;
      return refusal(400, denied(apiVersion, uid, 400, message), message, request);
    }
    // DELETE and CONNECT are never patched; neither are subresources (status, scale).
    if ((request.operation !== 'CREATE' && request.operation !== 'UPDATE') || request.subResource !== undefined) {
      return { httpStatus: 200, answer: allowed(apiVersion, uid), request, patch: [], changes: [], warnings: [] };
    }
    const original = request.object as JsonObject;
    const problem = shapeProblem(target, original);
    if (problem !== undefined) return refusal(400, denied(apiVersion, uid, 400, problem), problem, request);

    const copy = copyForDefaulting(original);
    const { patch, changes, warnings } = defaultObject(target, copy, request, options);
    return { httpStatus: 200, answer: allowed(apiVersion, uid, patch, warnings), request, patch, changes, warnings, defaulted: copy };
  } catch (err) {
    const message = `internal error while defaulting: ${err instanceof Error ? err.message : String(err)}`;
    const apiVersion = request?.apiVersion ?? DEFAULT_ADMISSION_API_VERSION;
    return refusal(500, denied(apiVersion, request?.uid, 500, message), message, request);
  }
}
