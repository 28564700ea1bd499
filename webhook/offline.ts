// The webhooks without a server, for `raykeeper mutate`: manifests (YAML or JSON, multi-document, Lists
// expanded as kubectl expands them) or AdmissionReview documents in; what the mutating webhook would answer
// and store, and what the validating webhook would answer for the mutated object (the API server calls
// them in that order), out. Every Ray object goes through src/admission/mutate.ts and validate.ts, the
// functions the HTTPS handlers call: a manifest becomes the CREATE review the API server would send for it.
// Pure: text in, results out (the CLI does the files and the printing; gate.ts judges the results).
import { randomUuid } from '../src/uuid.ts';
import { LineCounter, parseAllDocuments, type Document } from 'yaml';
import { EXTERNAL_STORAGE_NAMESPACE_ANNOTATION, ENV_STORAGE_NAMESPACE, RAY_GROUP, RAY_VERSION } from '../src/names.ts';
import { isJsonObject } from '../src/admission/json.ts';
import { mutate, type MutateOptions, type TargetKind } from '../src/admission/mutate.ts';
import { validate } from '../src/admission/validate.ts';
import { storageNamespaceSource } from '../src/gcsft/redis-env.ts';
import type { RayCluster } from '../src/types.ts';
import { usesRedisBackend } from '../src/gcsft/rules.ts';
import type { WarningOptions } from '../src/admission/warnings.ts';
import { allowed, type AdmissionReviewAnswer } from '../src/admission/response.ts';
import { DEFAULT_ADMISSION_API_VERSION } from '../src/admission/review.ts';
import type { PatchOperation } from '../src/admission/patch.ts';
import type { JsonObject } from '../kube/model.ts';
import { errorMessage } from '../src/errors.ts';

const TARGETS: readonly string[] = ['RayCluster', 'RayJob', 'RayCronJob'] satisfies TargetKind[];

/**
 * Where an object came from: `document` counts from 1 in the order of the source (empty documents keep
 * their number); `line` is the object's first line in the source (from 1); `item` names it inside a List.
 */
export interface DocumentRef {
  source: string;
  document: number;
  line?: number;
  /** `items[2]` (a List's third item), `items[0].items[1]` (nested Lists). */
  item?: string;
}

export interface ObjectResult extends DocumentRef {
  kind: 'object';
  /** A manifest (admitted as a CREATE), or the object of an AdmissionReview document. */
  from: 'manifest' | 'review';
  /** "RayCluster ray/demo" */
  label: string;
  /** The object as read (a manifest, or the review's request.object). */
  input: JsonObject;
  /** What the API server would store (the input itself for objects the webhook does not mutate). */
  stored: JsonObject;
  patch: PatchOperation[];
  changes: string[];
  /** The mutating webhook's warnings, the validating webhook's, then ours about the manifest. */
  warnings: string[];
  /** The mutating webhook's answer. */
  mutating: AdmissionReviewAnswer;
  /** The validating webhook's answer; null when the mutating webhook refused (the API server stops there). */
  validating: AdmissionReviewAnswer | null;
  /** Refused by the mutating webhook (an object it cannot default): its message. */
  refused?: string;
  /** Denied by the validating webhook (on the mutated object): its message. */
  denied?: string;
  /** The fresh storage namespace the mutating webhook pinned (a new GCS-FT RayCluster without one). */
  pinnedStorageNamespace?: string;
}

export type DocumentResult =
  | (DocumentRef & {
      kind: 'error';
      message: string;
      /** What the webhook would answer (an AdmissionReview it cannot parse, or its own failure). */
      answer?: AdmissionReviewAnswer;
    })
  | ObjectResult;

/** A List's item, or the value itself: `path` holds the item indexes from the outermost List. */
export type Expanded = { path: number[]; value: unknown } | { path: number[]; error: string };

/**
 * kubectl's reading of Lists: a `v1 List`, or any `<Kind>List` with `items` (what `kubectl get -o yaml`
 * and the API's list calls write), stands for its items, nested Lists included. The API server's
 * `<Kind>List` leaves its items' apiVersion and kind out: they are the List's apiVersion and <Kind>.
 */
export function expandLists(value: unknown, path: number[] = []): Expanded[] {
  if (!isJsonObject(value) || typeof value.kind !== 'string' || !value.kind.endsWith('List') || !Object.hasOwn(value, 'items'))
    return [{ path, value }];
  if (!Array.isArray(value.items)) return [{ path, error: `${value.kind}: items must be a list` }];
  const itemKind = value.kind === 'List' ? undefined : value.kind.slice(0, -'List'.length);
  return value.items.flatMap((item, i) => {
    const filled = itemKind !== undefined && isJsonObject(item) ? { apiVersion: value.apiVersion ?? null, kind: itemKind, ...item } : item;
    return expandLists(filled, [...path, i]);
  });
}

/** `items[2].items[0]` */
export function itemName(path: readonly number[]): string | undefined {
  return path.length === 0 ? undefined : path.map((i) => `items[${i}]`).join('.');
}

/** The line (from 1) where the document's object at `path` (List item indexes) starts. */
function lineOf(doc: Document.Parsed, path: readonly number[], lines: LineCounter): number | undefined {
  const node =
    path.length === 0
      ? doc.contents
      : doc.getIn(
          path.flatMap((i) => ['items', i]),
          true,
        );
  const start = (node as { range?: [number, number, number] } | null | undefined)?.range?.[0];
  return start === undefined ? undefined : lines.linePos(start).line;
}

/** Splits a source into the objects it holds: documents, Lists expanded; empty documents are skipped but keep their number. */
export function readDocuments(source: string, text: string): Array<(DocumentRef & { value: unknown }) | (DocumentRef & { error: string })> {
  const out: Array<(DocumentRef & { value: unknown }) | (DocumentRef & { error: string })> = [];
  const lines = new LineCounter();
  let n = 0;
  for (const doc of parseAllDocuments(text, { lineCounter: lines })) {
    n++;
    if (doc.errors.length > 0) {
      const first = doc.errors[0]!;
      const line = lineOf(doc, [], lines) ?? first.linePos?.[0].line;
      out.push({
        source,
        document: n,
        ...(line === undefined ? {} : { line }),
        error: `not valid YAML or JSON: ${first.message.split('\n')[0]!.replace(/:\s*$/, '')}`,
      });
      continue;
    }
    if (doc.contents === null) continue;
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: 100 });
    } catch (err) {
      const line = lineOf(doc, [], lines);
      out.push({ source, document: n, ...(line === undefined ? {} : { line }), error: errorMessage(err) });
      continue;
    }
    if (value === null) continue; // `---` right after `---`: empty too
    for (const entry of expandLists(value)) {
      const line = lineOf(doc, entry.path, lines);
      const item = itemName(entry.path);
      const ref: DocumentRef = { source, document: n, ...(line === undefined ? {} : { line }), ...(item === undefined ? {} : { item }) };
      out.push('error' in entry ? { ...ref, error: entry.error } : { ...ref, value: entry.value });
    }
  }
  return out;
}

function labelOf(kind: string, object: JsonObject | null | undefined): string {
  const meta = isJsonObject(object?.metadata) ? object.metadata : {};
  const name = typeof meta.name === 'string' ? meta.name : typeof meta.generateName === 'string' ? `${meta.generateName}*` : '(no name)';
  return `${kind} ${typeof meta.namespace === 'string' ? `${meta.namespace}/` : ''}${name}`;
}

/**
 * The object as the validating webhook receives it: the API server turns `generateName` into a name
 * (apiserver's SimpleNameGenerator: the prefix cut to 58 characters, then 5 random characters) after
 * the mutating webhooks and before the validating ones. The suffix is fixed here so that the check
 * answers the same every run; only its length and alphabet matter to the rules.
 */
export function named(object: JsonObject): JsonObject {
  const meta = isJsonObject(object.metadata) ? object.metadata : undefined;
  if (meta === undefined || typeof meta.generateName !== 'string' || (typeof meta.name === 'string' && meta.name !== '')) return object;
  return { ...object, metadata: { ...meta, name: `${meta.generateName.slice(0, 58)}bcdfg` } };
}

/**
 * A storage namespace a committed RayCluster manifest pins itself is copied with the file: two clusters
 * made from copies share it, and deleting either deletes the other's GCS data. Said as a warning.
 */
export function committedStorageNamespaceWarning(manifest: JsonObject): string | undefined {
  const cluster = manifest as unknown as RayCluster;
  if (!usesRedisBackend(cluster)) return undefined;
  const where = pinnedWhere(storageNamespaceSource(cluster));
  if (where === undefined) return undefined;
  return (
    `the manifest pins ${where}: it is copied with the file, and two clusters sharing a storage namespace ` +
    `lose each other's GCS data in Redis when one is deleted; leave it out and the webhook pins a fresh one per cluster`
  );
}

function pinnedWhere(source: ReturnType<typeof storageNamespaceSource>): string | undefined {
  switch (source.from) {
    case 'head':
    case 'head-ref':
    case 'head-field':
      return `env ${ENV_STORAGE_NAMESPACE} of the head container`;
    case 'options':
      return `storage namespace ${JSON.stringify(source.value)} in spec.gcsFaultToleranceOptions.externalStorageNamespace`;
    case 'annotation':
      return `storage namespace ${JSON.stringify(source.value)} in annotation ${EXTERNAL_STORAGE_NAMESPACE_ANNOTATION}`;
    case 'uid':
    case 'none':
      return undefined;
  }
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

/** An object neither webhook is called for: stored as it is, both answers "allowed". */
function untouched(
  ref: DocumentRef,
  from: 'manifest' | 'review',
  label: string,
  object: JsonObject,
  answer: AdmissionReviewAnswer,
): ObjectResult {
  return {
    ...ref,
    kind: 'object',
    from,
    label,
    input: object,
    stored: object,
    patch: [],
    changes: [],
    warnings: [],
    mutating: answer,
    validating: answer,
  };
}

/**
 * Both webhooks on one review body of one of our kinds: the mutating answer, then (unless it refused)
 * the validating answer for the mutated object, as the API server sends it.
 */
function admit(
  ref: DocumentRef,
  from: 'manifest' | 'review',
  label: string,
  body: JsonObject,
  target: TargetKind,
  options: MutateOptions,
  warningOptions: WarningOptions,
): DocumentResult {
  let pinned: string | undefined;
  const outcome = mutate(body, target, { ...options, newStorageNamespace: () => (pinned = options.newStorageNamespace()) });
  const request = outcome.request;
  // A review the webhook cannot read, or its own failure: nothing was decided about an object.
  if (request === undefined || outcome.httpStatus === 500) {
    return { ...ref, kind: 'error', message: outcome.error ?? 'the webhook could not answer', answer: outcome.answer };
  }
  const input = isJsonObject(request.object) ? request.object : {};
  const result: ObjectResult = {
    ...ref,
    kind: 'object',
    from,
    label,
    input,
    stored: outcome.defaulted ?? input,
    patch: outcome.patch,
    changes: outcome.changes,
    warnings: outcome.warnings,
    mutating: outcome.answer,
    validating: null,
    ...(pinned === undefined ? {} : { pinnedStorageNamespace: pinned }),
  };
  if (outcome.error !== undefined) return { ...result, refused: outcome.error };
  const reviewed = isJsonObject(body.request) ? body.request : {};
  const mutated = outcome.defaulted === undefined ? body : { ...body, request: { ...reviewed, object: named(outcome.defaulted) } };
  const validated = validate(mutated, target, warningOptions);
  if (validated.httpStatus === 500) {
    return { ...ref, kind: 'error', message: validated.message ?? 'the validating webhook could not answer', answer: validated.answer };
  }
  const committed = from === 'manifest' && target === 'RayCluster' ? committedStorageNamespaceWarning(input) : undefined;
  return {
    ...result,
    validating: validated.answer,
    warnings: [...result.warnings, ...validated.warnings, ...(committed === undefined ? [] : [committed])],
    ...(validated.result === 'denied' ? { denied: validated.message ?? 'denied' } : {}),
  };
}

/** What the webhooks do with one object: a manifest (as a CREATE) or an AdmissionReview. */
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
    const label = `AdmissionReview of ${labelOf(typeof gvk.kind === 'string' ? gvk.kind : '(unknown kind)', object)}`;
    const target =
      gvk.group === RAY_GROUP && gvk.version === RAY_VERSION && typeof gvk.kind === 'string' && TARGETS.includes(gvk.kind)
        ? (gvk.kind as TargetKind)
        : undefined;
    if (target !== undefined) return admit(ref, 'review', label, value, target, options, warningOptions);
    // A review of another kind: answered as the API server would never send it to us, allowed untouched
    // (a review that does not parse is answered with the webhook's refusal).
    const outcome = mutate(value, 'RayCluster', options);
    if (outcome.request === undefined)
      return { ...ref, kind: 'error', message: outcome.error ?? 'not an AdmissionReview', answer: outcome.answer };
    return untouched(ref, 'review', label, object ?? {}, allowed(outcome.request.apiVersion, outcome.request.uid));
  }
  const label = labelOf(value.kind, value);
  const target = targetOf(value.apiVersion, value.kind);
  // Not ours: passed through untouched, as the API server would never call the webhooks for it.
  if (target === undefined) return untouched(ref, 'manifest', label, value, allowed(DEFAULT_ADMISSION_API_VERSION, ''));
  return admit(ref, 'manifest', label, createReview(value, target), target, options, warningOptions);
}
