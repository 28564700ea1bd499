// `raykeeper mutate`: what the admission webhooks would do to manifests or AdmissionReviews, with no
// cluster and no server (the same defaulting, patch and validation code), and a gate for CI whose exit
// code says what it found (webhook/gate.ts) whatever it prints: the objects (-o) or a report (--report).
import { randomUuid } from '../src/uuid.ts';
import { stringify } from 'yaml';
import { redisCleanupEnabled } from '../src/gcsft/rules.ts';
import { errorMessage } from '../src/errors.ts';
import { ENABLE_GCS_FT_REDIS_CLEANUP_ENV } from '../src/names.ts';
import type { MutateOptions } from '../src/admission/mutate.ts';
import { companionWarningOptions } from '../src/admission/warnings.ts';
import { finish, parseCommandLine, usageError } from '../bin/args.ts';
import { mutateDocument, readDocuments, type DocumentResult, type ObjectResult } from './offline.ts';
import { checkResult, EXIT_CODES, sharedPinnedNamespace, sourceError, summarize, type Check } from './gate.ts';
import { findingLine, renderReport, REPORT_FORMATS, summaryLine, type ReportFormat } from './reports.ts';
import { manifestSources, splitFilenames, type ManifestSource } from './manifest-files.ts';

const COMMAND = 'raykeeper mutate';
const OUTPUTS = ['yaml', 'json', 'patch', 'review'] as const;
type Output = (typeof OUTPUTS)[number];

const USAGE = `Usage: raykeeper mutate [-o yaml|json|patch|review | --check | --report text|json|junit|github]
                        [--fail-on-change] [--storage-namespace NS] [--companion on|off]
                        [-f FILE|DIR|-]... [-R] [FILE|DIR|-]...

What the raykeeper admission webhooks would answer, with no cluster and no server: the same defaulting,
JSON patch and validation code as \`raykeeper webhook\`. Input: manifests (YAML or JSON, multi-document;
a v1 List or any <Kind>List stands for its items; each ray.io/v1 RayCluster, RayJob or RayCronJob is
admitted as a CREATE, the validating webhook seeing the mutated object) or AdmissionReview documents
(answered as they are). Other objects pass through untouched.

Input, as kubectl takes it:
  -f, --filename PATH     a file, a directory (its *.yaml, *.yml, *.json files) or - (stdin); repeatable,
                          and one value may list several paths separated by commas
  -R, --recursive         with -f, read directories' subdirectories too
  PATH ...                positional paths: a directory is always read recursively

What it prints (the exit status is the same whatever it prints):
  -o, --output F          the objects: yaml (default) or json as they would be stored (a refused object
                          is not printed); patch: one JSON line per object with its JSON patch; review: one
                          JSON line per object with both answers, {"mutating": ..., "validating": ...};
                          the findings go to stderr, one line each
  --report F              the findings instead of the objects: text (one line each), json, junit (JUnit
                          XML for GitLab and Jenkins) or github (GitHub Actions annotations on the file
                          and line); a summary line goes to stderr
  --check                 = --report text

The gate:
  --fail-on-change        also fail when an object relies on the webhook's defaults: the webhook would
                          change it (its status and the storage namespace it pins per cluster aside)
  --storage-namespace NS  pin NS instead of a fresh random UUID (reproducible output); refused when more
                          than one GCS-FT RayCluster in the input would get it
  --companion on|off      as the webhook's flag: on (beside KubeRay) leaves out the warnings about fields
                          raykeeper's own RayCluster operator does not act on (default off)
A manifest that pins its own storage namespace gets a warning: it is copied with the file.

Exit status:
  0  every object would be admitted (with --fail-on-change: and stored as written)
  1  the webhooks would refuse an object (denied by the validating webhook, refused by the mutating one)
  2  bad usage, or input that could not be checked (a missing file, a document that is not YAML or JSON
     or not a Kubernetes object), or no objects at all
  3  with --fail-on-change: an object relies on the webhook's defaults
  When several apply: 2, then 1, then 3.

Environment: ENABLE_GCS_FT_REDIS_CLEANUP=false adds no finalizer, as for the webhook.
`;

const OPTIONS = {
  output: { type: 'string', short: 'o' },
  check: { type: 'boolean' },
  report: { type: 'string' },
  'fail-on-change': { type: 'boolean' },
  filename: { type: 'string', short: 'f', multiple: true },
  recursive: { type: 'boolean', short: 'R' },
  'storage-namespace': { type: 'string' },
  companion: { type: 'string' },
} as const;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Where a result came from, for the patch and review lines. */
function origin(r: DocumentResult) {
  return { source: r.source, document: r.document, line: r.line, item: r.item };
}

/** The objects (or answers) on stdout. Refused objects appear only in the review output (their answer is the refusal). */
function printObjects(results: readonly DocumentResult[], output: Output): string {
  const objects = results.filter((r): r is ObjectResult => r.kind === 'object');
  const admitted = objects.filter((r) => r.refused === undefined && r.denied === undefined);
  switch (output) {
    case 'yaml':
      return admitted.map((r) => stringify(r.stored, { lineWidth: 0 })).join('---\n');
    case 'json':
      if (admitted.length === 0) return '';
      return (
        JSON.stringify(
          admitted.length === 1 ? admitted[0]!.stored : { apiVersion: 'v1', kind: 'List', items: admitted.map((r) => r.stored) },
          null,
          2,
        ) + '\n'
      );
    case 'patch':
      return admitted.map((r) => JSON.stringify({ ...origin(r), object: r.label, patch: r.patch }) + '\n').join('');
    case 'review':
      return results
        .flatMap(
          (r): Array<ReturnType<typeof origin> & { object?: string; mutating: unknown; validating: unknown }> =>
            r.kind === 'object'
              ? [{ ...origin(r), object: r.label, mutating: r.mutating, validating: r.validating }]
              : r.answer === undefined
                ? []
                : [{ ...origin(r), mutating: r.answer, validating: null }],
        )
        .map((line) => JSON.stringify(line) + '\n')
        .join('');
  }
}

export async function run(argv: string[]): Promise<number> {
  const line = parseCommandLine(COMMAND, argv, OPTIONS, USAGE, { positionals: true });
  if (line.kind === 'exit') return finish(line);
  const { values, positionals } = line;
  const usage = (problem: string) => finish({ code: EXIT_CODES.error, stdout: '', stderr: usageError(COMMAND, problem) });

  const output = (values.output ?? 'yaml') as Output;
  if (!OUTPUTS.includes(output)) return usage(`-o must be one of ${OUTPUTS.join(', ')}, got ${JSON.stringify(values.output)}`);
  const report = (values.report ?? (values.check === true ? 'text' : undefined)) as ReportFormat | undefined;
  if (report !== undefined && !REPORT_FORMATS.includes(report))
    return usage(`--report must be one of ${REPORT_FORMATS.join(', ')}, got ${JSON.stringify(values.report)}`);
  if (report !== undefined && values.output !== undefined)
    return usage('-o prints the objects and --report (or --check) the findings instead: give one');
  // Positional directories keep their recursive reading; -f directories follow -R, as in kubectl.
  const inputs = [
    ...splitFilenames(values.filename ?? []).map((path) => ({ path, recursive: values.recursive === true })),
    ...positionals.map((path) => ({ path, recursive: true })),
  ];
  if (inputs.length === 0) return usage('give at least one -f FILE|DIR|- (or a positional path)');
  if (inputs.filter((i) => i.path === '-').length > 1) return usage('- (stdin) can be given only once');
  let warningOptions;
  try {
    warningOptions = companionWarningOptions(values.companion);
  } catch (err) {
    return usage(errorMessage(err));
  }
  const pinned = values['storage-namespace'];
  const options: MutateOptions = {
    newStorageNamespace: pinned === undefined ? randomUuid : () => pinned,
    finalizerEnabled: redisCleanupEnabled(process.env[ENABLE_GCS_FT_REDIS_CLEANUP_ENV]),
  };
  const gate = { failOnChange: values['fail-on-change'] === true };

  const results: DocumentResult[] = [];
  const checks: Check[] = [];
  for (const input of inputs) {
    let sources: ManifestSource[];
    try {
      sources = await manifestSources(input.path, input.recursive, readStdin);
    } catch (err) {
      checks.push(sourceError(input.path, errorMessage(err)));
      continue;
    }
    for (const source of sources) {
      let text: string;
      try {
        text = await source.text();
      } catch (err) {
        checks.push(sourceError(source.name, errorMessage(err)));
        continue;
      }
      for (const doc of readDocuments(source.name, text)) {
        const result: DocumentResult =
          'error' in doc ? { ...doc, kind: 'error', message: doc.error } : mutateDocument(doc, doc.value, options, warningOptions);
        results.push(result);
        checks.push(checkResult(result, gate));
      }
    }
  }

  const shared = sharedPinnedNamespace(results);
  if (pinned !== undefined && shared.length > 0) {
    const where = shared.map((r) => `${r.source}${r.line === undefined ? '' : `:${r.line}`} ${r.label}`).join(', ');
    return usage(
      `--storage-namespace ${pinned} would be pinned in ${shared.length} GCS-FT RayClusters (${where}); clusters sharing a ` +
        `storage namespace lose each other's GCS data when one is deleted: give one such cluster at a time`,
    );
  }
  const summary = summarize(checks);
  const nothing = summary.objects === 0 && summary.errors === 0 ? `${COMMAND}: no objects passed\n` : '';
  if (report !== undefined) {
    return finish({
      code: summary.exitCode,
      stdout: renderReport(report, checks, summary),
      stderr: `${nothing}${COMMAND}: ${summaryLine(summary)}\n`,
    });
  }
  const findings = checks.flatMap((c) => c.findings.map((f) => `${COMMAND}: ${findingLine(c, f)}\n`)).join('');
  return finish({ code: summary.exitCode, stdout: printObjects(results, output), stderr: `${findings}${nothing}` });
}
