// The gate `raykeeper mutate` keeps in CI, judged from what the webhooks would answer (offline.ts): the
// findings of each object and the one exit code of the run, the same whatever the command prints.
//
// Findings, in the order they are listed for an object:
// - error:   input that could not be checked (a file that cannot be read, a document that is not YAML or
//            JSON or not a Kubernetes object, an AdmissionReview the webhook cannot parse);
// - denied:  the validating webhook would deny the object, or the mutating webhook refuse it: the API
//            server would not store it;
// - changed: asked for only (failOnChange): the object relies on the webhook's defaults, i.e. the webhook
//            would change it beyond what a manifest should never carry: its status (the API server drops
//            a manifest's status) and the storage namespace the webhook pins (unique per cluster: a
//            committed one is copied with the file, see offline.ts committedStorageNamespaceWarning);
// - warning: what kubectl would print, and a storage namespace pinned in a manifest; never fails.
// Exit code: 2 when anything could not be checked or there was no object at all, else 1 when an object
// would be refused, else 3 when one would be changed (failOnChange), else 0.
import { EXTERNAL_STORAGE_NAMESPACE_ANNOTATION } from '../src/names.ts';
import { escapePointerToken, type PatchOperation } from '../src/admission/patch.ts';
import type { DocumentRef, DocumentResult, ObjectResult } from './offline.ts';

export const EXIT_CODES = { ok: 0, denied: 1, error: 2, changed: 3 } as const;
export type ExitCode = (typeof EXIT_CODES)[keyof typeof EXIT_CODES];

export type FindingType = 'error' | 'denied' | 'changed' | 'warning';

export interface Finding {
  type: FindingType;
  /** What a person reads after the object's name: "denied by the validating webhook: ...". */
  text: string;
}

/** One checked thing: an object, or input that could not be read (no document for a whole file). */
export interface Check {
  ref: Omit<DocumentRef, 'document'> & { document?: number };
  object?: { label: string; apiVersion?: string; kind?: string; namespace?: string; name?: string };
  findings: Finding[];
}

export interface GateOptions {
  /** Also fail (exit 3) when the webhook would change an object (the opt-in "relies on defaults" check). */
  failOnChange: boolean;
}

export interface Summary {
  files: number;
  objects: number;
  /** Objects the webhooks would refuse. */
  denied: number;
  /** Objects that rely on the webhook's defaults (counted with failOnChange only). */
  changed: number;
  /** Inputs that could not be checked. */
  errors: number;
  warnings: number;
  exitCode: ExitCode;
}

/** Where the webhook writes the storage namespace it pins (src/admission/raycluster.ts). */
const PINNED_NAMESPACE_PATHS = new Set([
  `/metadata/annotations/${escapePointerToken(EXTERNAL_STORAGE_NAMESPACE_ANNOTATION)}`,
  '/spec/gcsFaultToleranceOptions/externalStorageNamespace',
]);

/** The patch operations an object relies on: all but its status and the storage namespace the webhook pinned. */
export function reliedDefaults(result: Pick<ObjectResult, 'patch' | 'pinnedStorageNamespace'>): PatchOperation[] {
  return result.patch.filter(
    (op) =>
      op.path !== '/status' &&
      !op.path.startsWith('/status/') &&
      !(
        result.pinnedStorageNamespace !== undefined &&
        PINNED_NAMESPACE_PATHS.has(op.path) &&
        'value' in op &&
        op.value === result.pinnedStorageNamespace
      ),
  );
}

function unescapeToken(token: string): string {
  return token.replace(/~1/g, '/').replace(/~0/g, '~');
}

function shown(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** `metadata.finalizers += x`, `spec.submissionMode = K8sJobMode`, `metadata.annotations["ray.io/x"] = y` */
export function describeOperation(op: PatchOperation): string {
  const tokens = op.path.split('/').slice(1).map(unescapeToken);
  const dotted = (ts: string[]) =>
    ts.map((t, i) => (/^[A-Za-z_][\w-]*$/.test(t) ? `${i === 0 ? '' : '.'}${t}` : `[${JSON.stringify(t)}]`)).join('');
  const last = tokens.at(-1) ?? '';
  if (op.op === 'add' && (last === '-' || /^\d+$/.test(last))) return `${dotted(tokens.slice(0, -1))} += ${shown(op.value)}`;
  if (op.op === 'remove') return `${dotted(tokens)} removed`;
  return `${dotted(tokens)} = ${shown(op.value)}`;
}

function identity(result: ObjectResult): NonNullable<Check['object']> {
  const meta = (result.input.metadata ?? {}) as { namespace?: unknown; name?: unknown };
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const fields = {
    apiVersion: result.from === 'manifest' ? str(result.input.apiVersion) : undefined,
    kind: result.from === 'manifest' ? str(result.input.kind) : undefined,
    namespace: str(meta.namespace),
    name: str(meta.name),
  };
  return { label: result.label, ...Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) };
}

function refOf(r: DocumentRef): Check['ref'] {
  return {
    source: r.source,
    document: r.document,
    ...(r.line === undefined ? {} : { line: r.line }),
    ...(r.item === undefined ? {} : { item: r.item }),
  };
}

/** The findings of one document's result. */
export function checkResult(result: DocumentResult, options: GateOptions): Check {
  if (result.kind === 'error') return { ref: refOf(result), findings: [{ type: 'error', text: `error: ${result.message}` }] };
  const findings: Finding[] = [];
  if (result.refused !== undefined) findings.push({ type: 'denied', text: `refused by the mutating webhook: ${result.refused}` });
  if (result.denied !== undefined) findings.push({ type: 'denied', text: `denied by the validating webhook: ${result.denied}` });
  if (options.failOnChange && findings.length === 0) {
    const relied = reliedDefaults(result);
    if (relied.length > 0)
      findings.push({ type: 'changed', text: `relies on the webhook's defaults: ${relied.map(describeOperation).join('; ')}` });
  }
  for (const warning of result.warnings) findings.push({ type: 'warning', text: `warning: ${warning}` });
  return { ref: refOf(result), object: identity(result), findings };
}

/** A whole source that could not be read. */
export function sourceError(source: string, message: string): Check {
  return { ref: { source }, findings: [{ type: 'error', text: `error: ${message}` }] };
}

/** The run's counts and its exit code. */
export function summarize(checks: readonly Check[]): Summary {
  const has = (c: Check, type: FindingType) => c.findings.some((f) => f.type === type);
  const objects = checks.filter((c) => c.object !== undefined);
  const summary = {
    files: new Set(checks.map((c) => c.ref.source)).size,
    objects: objects.length,
    denied: objects.filter((c) => has(c, 'denied')).length,
    changed: objects.filter((c) => has(c, 'changed')).length,
    errors: checks.filter((c) => has(c, 'error')).length,
    warnings: checks.reduce((n, c) => n + c.findings.filter((f) => f.type === 'warning').length, 0),
  };
  const exitCode: ExitCode =
    summary.errors > 0 || summary.objects === 0
      ? EXIT_CODES.error
      : summary.denied > 0
        ? EXIT_CODES.denied
        : summary.changed > 0
          ? EXIT_CODES.changed
          : EXIT_CODES.ok;
  return { ...summary, exitCode };
}

/**
 * `--storage-namespace NS` writes NS into every cluster the webhook would pin a namespace for: with more
 * than one, they would share it (and delete each other's GCS data). The results that would get it.
 */
export function sharedPinnedNamespace(results: readonly DocumentResult[]): ObjectResult[] {
  const pinned = results.filter((r): r is ObjectResult => r.kind === 'object' && r.pinnedStorageNamespace !== undefined);
  return pinned.length > 1 ? pinned : [];
}
