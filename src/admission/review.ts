// AdmissionReview (admission.k8s.io/v1 and v1beta1) requests: parsing and validation into a typed request,
// or a clear error that still carries the uid and apiVersion whenever the body revealed them.
import type { JsonObject } from '../../kube/model.ts';
import { isJsonObject } from './json.ts';

export const ADMISSION_API_VERSIONS = ['admission.k8s.io/v1', 'admission.k8s.io/v1beta1'] as const;
export type AdmissionApiVersion = (typeof ADMISSION_API_VERSIONS)[number];
export const DEFAULT_ADMISSION_API_VERSION: AdmissionApiVersion = 'admission.k8s.io/v1';

export const OPERATIONS = ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'] as const;
export type AdmissionOperation = (typeof OPERATIONS)[number];

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

/** The fields of an AdmissionReview request that raykeeper uses, checked. */
export interface AdmissionRequest {
  apiVersion: AdmissionApiVersion;
  uid: string;
  kind: GroupVersionKind;
  operation: AdmissionOperation;
  /** e.g. "status" or "scale"; absent for the main resource. */
  subResource?: string;
  name?: string;
  namespace?: string;
  /** The object as the API server will store it: always an object on CREATE and UPDATE. */
  object: JsonObject | null;
  /** The stored object before an UPDATE (or DELETE); always an object on UPDATE. */
  oldObject: JsonObject | null;
  dryRun: boolean;
}

/** Why a body is not a usable AdmissionReview; uid and apiVersion are set when they could be read. */
export interface AdmissionRequestError {
  code: number;
  message: string;
  uid?: string;
  apiVersion: AdmissionApiVersion;
}

export type ParsedReview = { ok: true; request: AdmissionRequest } | { ok: false; error: AdmissionRequestError };

function fail(message: string, apiVersion: AdmissionApiVersion, uid?: string): ParsedReview {
  return { ok: false, error: uid === undefined ? { code: 400, message, apiVersion } : { code: 400, message, uid, apiVersion } };
}

function isApiVersion(value: unknown): value is AdmissionApiVersion {
  return (ADMISSION_API_VERSIONS as readonly unknown[]).includes(value);
}

function isOperation(value: unknown): value is AdmissionOperation {
  return (OPERATIONS as readonly unknown[]).includes(value);
}

function optionalString(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

export function parseAdmissionReview(body: unknown): ParsedReview {
  if (!isJsonObject(body)) return fail('the body must be an AdmissionReview JSON object', DEFAULT_ADMISSION_API_VERSION);
  const apiVersion = isApiVersion(body.apiVersion) ? body.apiVersion : DEFAULT_ADMISSION_API_VERSION;
  const request = body.request;
  // The uid is read first, so that every later refusal (envelope errors included) carries it.
  const uid = isJsonObject(request) && typeof request.uid === 'string' && request.uid !== '' ? request.uid : undefined;
  if (!isApiVersion(body.apiVersion)) {
    return fail(
      `apiVersion must be one of ${ADMISSION_API_VERSIONS.join(', ')}, got ${JSON.stringify(body.apiVersion ?? null)}`,
      apiVersion,
      uid,
    );
  }
  if (body.kind !== 'AdmissionReview') {
    return fail(`kind must be AdmissionReview, got ${JSON.stringify(body.kind ?? null)}`, apiVersion, uid);
  }
  if (!isJsonObject(request)) return fail('the AdmissionReview has no request object', apiVersion);
  if (uid === undefined) return fail('request.uid is missing or not a non-empty string', apiVersion);

  const kind = request.kind;
  if (!isJsonObject(kind) || typeof kind.group !== 'string' || typeof kind.version !== 'string' || typeof kind.kind !== 'string') {
    return fail('request.kind must be an object with string group, version and kind', apiVersion, uid);
  }
  if (!isOperation(request.operation)) {
    return fail(
      `request.operation must be one of ${OPERATIONS.join(', ')}, got ${JSON.stringify(request.operation ?? null)}`,
      apiVersion,
      uid,
    );
  }
  const operation = request.operation;
  const object = isJsonObject(request.object) ? request.object : null;
  const oldObject = isJsonObject(request.oldObject) ? request.oldObject : null;
  if ((operation === 'CREATE' || operation === 'UPDATE') && object === null) {
    return fail(`request.object must be a JSON object on ${operation}, got ${describe(request.object)}`, apiVersion, uid);
  }
  if (operation === 'UPDATE' && oldObject === null) {
    return fail(`request.oldObject must be a JSON object on UPDATE, got ${describe(request.oldObject)}`, apiVersion, uid);
  }

  const parsed: AdmissionRequest = {
    apiVersion,
    uid,
    kind: { group: kind.group, version: kind.version, kind: kind.kind },
    operation,
    object,
    oldObject,
    dryRun: request.dryRun === true,
  };
  const subResource = optionalString(request.subResource);
  if (subResource !== undefined) parsed.subResource = subResource;
  const name = optionalString(request.name);
  if (name !== undefined) parsed.name = name;
  const namespace = optionalString(request.namespace);
  if (namespace !== undefined) parsed.namespace = namespace;
  return { ok: true, request: parsed };
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}
