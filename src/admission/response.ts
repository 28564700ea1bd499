// AdmissionReview answers. Every answer names the request's apiVersion and carries its uid ('' only when
// the body never revealed one).
import { jsonText } from './json.ts';
import type { PatchOperation } from './patch.ts';
import { ADMISSION_API_VERSIONS, type AdmissionApiVersion } from './review.ts';

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  patchType?: 'JSONPatch';
  /** base64 of the JSON-encoded RFC 6902 patch. */
  patch?: string;
  status?: { code: number; message: string };
  warnings?: string[];
}

export interface AdmissionReviewAnswer {
  apiVersion: AdmissionApiVersion;
  kind: 'AdmissionReview';
  response: AdmissionResponse;
}

/** The Content-Type of an answer sent as answerJson's text. */
export const ANSWER_CONTENT_TYPE = 'application/json; charset=utf-8';

/** base64 of the patch's UTF-8 JSON. */
export function encodePatch(ops: readonly PatchOperation[]): string {
  const json = JSON.stringify(ops);
  // btoa is one native call (the Buffer round trip costs several times more per request), but it takes
  // each character as one byte: the UTF-8 bytes only when the text is ASCII (as good as always), which is
  // when its UTF-8 length equals its length.
  return Buffer.byteLength(json, 'utf8') === json.length ? btoa(json) : Buffer.from(json, 'utf8').toString('base64');
}

/** Allowed; with a JSONPatch only when there are operations, and warnings only when there are some. */
export function allowed(
  apiVersion: AdmissionApiVersion,
  uid: string,
  ops: readonly PatchOperation[] = [],
  warnings: readonly string[] = [],
): AdmissionReviewAnswer {
  const response: AdmissionResponse = { uid, allowed: true };
  if (ops.length > 0) {
    response.patchType = 'JSONPatch';
    response.patch = encodePatch(ops);
  }
  if (warnings.length > 0) response.warnings = [...warnings];
  return { apiVersion, kind: 'AdmissionReview', response };
}

/** Refused with a status code and message (what `kubectl` shows the user). */
export function denied(apiVersion: AdmissionApiVersion, uid: string | undefined, code: number, message: string): AdmissionReviewAnswer {
  return { apiVersion, kind: 'AdmissionReview', response: { uid: uid ?? '', allowed: false, status: { code, message } } };
}

/** The text before the uid, made once per apiVersion. */
const ANSWER_PREFIX = Object.fromEntries(
  ADMISSION_API_VERSIONS.map((v) => [v, `{"apiVersion":${JSON.stringify(v)},"kind":"AdmissionReview","response":{"uid":`]),
) as Readonly<Record<AdmissionApiVersion, string>>;

/**
 * The answer as JSON text, byte for byte what JSON.stringify(answer) gives, written directly: the webhook
 * sends it as is, without a generic serializer walking the object per request. That equality holds for
 * answers made by allowed() and denied() (their key order; `patch` always base64 from encodePatch), which
 * are the only way answers are made; test/admission/answer-json.test.ts compares the two.
 */
export function answerJson(answer: AdmissionReviewAnswer): string {
  const r = answer.response;
  let json = `${ANSWER_PREFIX[answer.apiVersion]}${jsonText(r.uid)},"allowed":${r.allowed}`;
  if (r.patchType !== undefined) json += ',"patchType":"JSONPatch"';
  // Base64 needs no escaping.
  if (r.patch !== undefined) json += `,"patch":"${r.patch}"`;
  if (r.status !== undefined) json += `,"status":{"code":${JSON.stringify(r.status.code)},"message":${JSON.stringify(r.status.message)}}`;
  if (r.warnings !== undefined) json += `,"warnings":${JSON.stringify(r.warnings)}`;
  return `${json}}}`;
}
