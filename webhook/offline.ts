// The webhook without a server, for `raykeeper mutate`: manifests (YAML or JSON, multi-document) or
// AdmissionReview documents in, what the webhook would answer and store out, and what the validating
// webhook would deny or warn about (src/admission/validate.ts, on the mutated object). Every Ray object goes through
// src/admission/mutate.ts, the function the HTTPS handler calls: a manifest becomes the CREATE review the
// API server would send for it. Pure: text in, results out (the CLI does the files and the printing).
import { randomUuid } from '../src/uuid.ts';
import { parseAllDocuments } from 'yaml';
import { RAY_GROUP, RAY_VERSION } from '../src/names.ts';
import { isJsonObject } from '../src/admission/json.ts';
import { mutate, type MutateOptions, type MutateOutcome, type TargetKind } from '../src/admission/mutate.ts';
import { validateObject } from '../src/admission/validate.ts';
import type { WarningOptions } from '../src/admission/warnings.ts';
import { allowed, type AdmissionReviewAnswer } from '../src/admission/response.ts';
import { DEFAULT_ADMISSION_API_VERSION } from '../src/admission/review.ts';
import type { PatchOperation } from '../src/admission/patch.ts';
import type { JsonObject } from '../kube/model.ts';
import { errorMessage } from '../src/errors.ts';

const TARGETS: readonly string[] = ['RayCluster', 'RayJob', 'RayCronJob'] satisfies TargetKind[];

/** One document of one source: `document` counts from 1, in the order of the source. */
export interface DocumentRef {
  source: string;
  document: number;
}

export type DocumentResult =
  | (DocumentRef & { kind: 'error'; message: string })
  | (DocumentRef & {
      kind: 'object';
      /** What the API server would store (the input itself for objects the webhook does not mutate). */
      stored: JsonObject;
      patch: PatchOperation[];
      changes: string[];
      warnings: string[];
      answer: AdmissionReviewAnswer;
      /** "RayCluster ray/demo" */
      label: string;
      /** Refused by the webhook (the answer carries the reason). */
      refused?: string;
      /** Denied by the validating webhook (after mutation, as the API server calls them): its message. */
      denied?: string;
    });

/** Splits a source into documents; empty documents (a trailing `---`) are skipped but keep their number. */
export function readDocuments(source: string, text: string): Array<(DocumentRef & { value: unknown }) | (DocumentRef & { error: string })> {
  const out: Array<(DocumentRef & { value: unknown }) | (DocumentRef & { error: string })> = [];
  let n = 0;
  for (const doc of parseAllDocuments(text)) {
    n++;
    if (doc.errors.length > 0) {
      out.push({ source, document: n, error: `not valid YAML or JSON: ${doc.errors[0]!.message.split('\n')[0]!.replace(/:\s*$/, '')}` });
      continue;
    }
    if (doc.contents === null) continue;
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: 100 });
    } catch (err) {
      out.push({ source, document: n, error: errorMessage(err) });
      continue;
    }
    out.push({ source, document: n, value });
  }
  return out;
}

function labelOf(kind: string, object: JsonObject | null | undefined): string {
  const meta = isJsonObject(object?.metadata) ? object.metadata : {};
  const name = typeof meta.name === 'string' ? meta.name : typeof meta.generateName === 'string' ? `${meta.generateName}*` : '(no name)';
  return `${kind} ${typeof meta.namespace === 'string' ? `${meta.namespace}/` : ''}${name}`;
}

function fromOutcome(
  ref: DocumentRef,
  label: string,
  input: JsonObject,
  outcome: MutateOutcome,
  warningOptions: WarningOptions,
  target?: TargetKind,
): DocumentResult {
  const result: DocumentResult = {
    ...ref,
    kind: 'object',
    stored: outcome.defaulted ?? input,
    patch: outcome.patch,
    changes: outcome.changes,
    warnings: outcome.warnings,
    answer: outcome.answer,
    label,
    ...(outcome.error === undefined ? {} : { refused: outcome.error }),
  };
  // The validating webhook sees the mutated object (the API server calls it after the mutating one).
  const request = outcome.request;
  if (target === undefined || outcome.defaulted === undefined || request === undefined || request.subResource !== undefined) return result;
  const decision = validateObject(
    target,
    named(outcome.defaulted),
    request.operation === 'UPDATE' ? request.oldObject : null,
    warningOptions,
  );
  if (decision.result === 'denied') return { ...result, denied: decision.message ?? 'denied' };
  return { ...result, warnings: [...result.warnings, ...decision.warnings] };
}

/**
 * The object as the validating webhook receives it: the API server turns `generateName` into a name
 * (apiserver's SimpleNameGenerator: the prefix cut to 58 characters, then 5 random characters) after
 * the mutating webhooks and before the validating ones. The suffix is fixed here so that `--check`
 * answers the same every run; only its length and alphabet matter to the rules.
 */
export function named(object: JsonObject): JsonObject {
  const meta = isJsonObject(object.metadata) ? object.metadata : undefined;
  if (meta === undefined || typeof meta.generateName !== 'string' || (typeof meta.name === 'string' && meta.name !== '')) return object;
  return { ...object, metadata: { ...meta, name: `${meta.generateName.slice(0, 58)}bcdfg` } };
}

/** The CREATE review the API server sends for a new object of a mutated kind. */
function createReview(object: JsonObject, kind: TargetKind): JsonObject {
  const meta = isJsonObject(object.metadata) ? object.metadata : {};
  const request: JsonObject = {
    uid: randomUuid(),
    kind: { group: RAY_GROUP, version: RAY_VERSION, kind },
    resource: { group: RAY_GROUP, version: RAY_VERSION, resource: `${kind.toLowerCase()}s` },
    operation: 'CREATE',
    object,
    oldObject: null,
    dryRun: true,
  };
  if (typeof meta.name === 'string') request.name = meta.name;
  if (typeof meta.namespace === 'string') request.namespace = meta.namespace;
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request };
}

function targetOf(apiVersion: unknown, kind: unknown): TargetKind | undefined {
  return apiVersion === `${RAY_GROUP}/${RAY_VERSION}` && typeof kind === 'string' && TARGETS.includes(kind)
    ? (kind as TargetKind)
    : undefined;
}

/** What the webhook does with one document: a manifest (as a CREATE) or an AdmissionReview. */
export function mutateDocument(
  ref: DocumentRef,
  value: unknown,
  options: MutateOptions,
  warningOptions: WarningOptions = {},
): DocumentResult {
  if (!isJsonObject(value) || typeof value.apiVersion !== 'string' || typeof value.kind !== 'string') {
    return { ...ref, kind: 'error', message: 'not a Kubernetes object or AdmissionReview (apiVersion and kind must be strings)' };
  }
  if (value.kind === 'AdmissionReview') {
    const request = isJsonObject(value.request) ? value.request : undefined;
    const gvk = isJsonObject(request?.kind) ? request.kind : {};
    const object = isJsonObject(request?.object) ? request.object : null;
    const target =
      gvk.group === RAY_GROUP && gvk.version === RAY_VERSION && typeof gvk.kind === 'string' && TARGETS.includes(gvk.kind)
        ? (gvk.kind as TargetKind)
        : undefined;
    const label = `AdmissionReview of ${labelOf(typeof gvk.kind === 'string' ? gvk.kind : '(unknown kind)', object)}`;
    // A review of another kind: answered as the API server would never send it to us, allowed untouched.
    const outcome = mutate(value, target ?? 'RayCluster', options);
    if (target === undefined && outcome.request !== undefined) {
      return {
        ...ref,
        kind: 'object',
        stored: object ?? {},
        patch: [],
        changes: [],
        warnings: [],
        answer: allowed(outcome.request.apiVersion, outcome.request.uid),
        label,
      };
    }
    return fromOutcome(ref, label, object ?? {}, outcome, warningOptions, target);
  }
  const label = labelOf(value.kind, value);
  const target = targetOf(value.apiVersion, value.kind);
  if (target === undefined) {
    // Not ours: passed through untouched, as the API server would never call the webhook for it.
    return {
      ...ref,
      kind: 'object',
      stored: value,
      patch: [],
      changes: [],
      warnings: [],
      answer: allowed(DEFAULT_ADMISSION_API_VERSION, ''),
      label,
    };
  }
  return fromOutcome(ref, label, value, mutate(createReview(value, target), target, options), warningOptions, target);
}

/** `file.yaml#2 RayCluster ray/demo: added finalizer ...; pinned storage namespace ...` */
export function changeLine(result: Extract<DocumentResult, { kind: 'object' }>): string {
  const where = `${result.source}#${result.document}`;
  return `${where} ${result.label}: would be changed by the webhook: ${result.changes.length > 0 ? result.changes.join('; ') : `${result.patch.length} patch operation(s)`}`;
}
