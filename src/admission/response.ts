// AdmissionReview answers. Every answer names the request's apiVersion and carries its uid ('' only when
// the body never revealed one).
import type { PatchOperation } from './patch.ts';
import type { AdmissionApiVersion } from './review.ts';

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

export function encodePatch(ops: readonly PatchOperation[]): string {
  return Buffer.from(JSON.stringify(ops), 'utf8').toString('base64');
}

/** Allowed; with a JSONPatch only when there are operations, and warnings only when there are some. */
export function allowed(apiVersion: AdmissionApiVersion, uid: string, ops: readonly PatchOperation[] = [], warnings: readonly string[] = []): AdmissionReviewAnswer {
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
