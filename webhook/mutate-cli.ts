// `raykeeper mutate [-o yaml|json|patch|review] [--check] [-f FILE|DIR|-]... [-R] [FILE|DIR|-]...`: what the admission webhook would
// do to manifests or AdmissionReviews, with no cluster and no server (the same defaulting and patch code).
import { randomUuid } from '../src/uuid.ts';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { redisCleanupEnabled } from '../src/gcsft/rules.ts';
import { errorMessage } from '../src/errors.ts';
import { ENABLE_GCS_FT_REDIS_CLEANUP_ENV } from '../src/names.ts';
import type { MutateOptions } from '../src/admission/mutate.ts';
import { companionWarningOptions } from '../src/admission/warnings.ts';
import { changeLine, mutateDocument, readDocuments, type DocumentResult } from './offline.ts';
import { manifestSources, splitFilenames, type ManifestSource } from './manifest-files.ts';

const OUTPUTS = ['yaml', 'json', 'patch', 'review'] as const;
type Output = (typeof OUTPUTS)[number];

const USAGE = `Usage: raykeeper mutate [-o yaml|json|patch|review] [--check] [--storage-namespace NS] [--companion on|off] [-f FILE|DIR|-]... [-R] [FILE|DIR|-]...

Prints what the raykeeper admission webhook would do, with no cluster and no server: the same defaulting,
JSON patch and validation code as \`raykeeper webhook\`. Input: manifests (YAML or JSON, multi-document; each
ray.io/v1 RayCluster, RayJob or RayCronJob is admitted as a CREATE) or AdmissionReview documents (answered as is).
Other objects pass through untouched.

Input, as kubectl takes it:
  -f, --filename PATH     a file, a directory (its *.yaml, *.yml, *.json files) or - (stdin); repeatable,
                          and one value may list several paths separated by commas
  -R, --recursive         with -f, read directories' subdirectories too
  PATH ...                positional paths as before: a directory is always read recursively

Options:
  -o, --output F          yaml (default) or json: the objects as they would be stored;
                          patch: one JSON line per object with its JSON patch;
                          review: one JSON line per object with the AdmissionReview answer
  --check                 print nothing else; one line per object the webhook would change or the
                          validating webhook would deny (KubeRay's reason), exit 1 if there is any
                          (CI: "this manifest relies on the webhook" / "the cluster would refuse it");
                          warnings (kubectl would print them) go to stderr
  --storage-namespace NS  the storage namespace to pin instead of a fresh random UUID (reproducible output)
  --companion on|off      as the webhook's flag: on (beside KubeRay) leaves out the warnings about fields
                          raykeeper's own RayCluster operator does not act on (default off)

Environment: ENABLE_GCS_FT_REDIS_CLEANUP=false adds no finalizer, as for the webhook.
Exit: 0 done (or nothing would change), 1 --check found changes, 2 bad usage or a document that could not be
read or was refused (reported on stderr with its file and document number; the others are still processed).
`;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function print(results: Array<Extract<DocumentResult, { kind: 'object' }>>, output: Output): string {
  switch (output) {
    case 'yaml':
      return results.map((r) => stringify(r.stored, { lineWidth: 0 })).join('---\n');
    case 'json':
      return (
        JSON.stringify(
          results.length === 1 ? results[0]!.stored : { apiVersion: 'v1', kind: 'List', items: results.map((r) => r.stored) },
          null,
          2,
        ) + '\n'
      );
    case 'patch':
      return results
        .map((r) => JSON.stringify({ source: r.source, document: r.document, object: r.label, patch: r.patch }) + '\n')
        .join('');
    case 'review':
      return results.map((r) => JSON.stringify(r.answer) + '\n').join('');
  }
}

export async function run(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        output: { type: 'string', short: 'o', default: 'yaml' },
        check: { type: 'boolean', default: false },
        filename: { type: 'string', short: 'f', multiple: true, default: [] },
        recursive: { type: 'boolean', short: 'R', default: false },
        'storage-namespace': { type: 'string' },
        companion: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: true,
    });
  } catch (err) {
    process.stderr.write(`raykeeper mutate: ${errorMessage(err)}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const output = values.output as Output;
  if (!OUTPUTS.includes(output)) {
    process.stderr.write(`raykeeper mutate: -o must be one of ${OUTPUTS.join(', ')}, got ${JSON.stringify(values.output)}\n`);
    return 2;
  }
  // Positional directories keep their recursive reading; -f directories follow -R, as in kubectl.
  const inputs = [
    ...splitFilenames(values.filename).map((path) => ({ path, recursive: values.recursive })),
    ...positionals.map((path) => ({ path, recursive: true })),
  ];
  if (inputs.length === 0) {
    process.stderr.write(`raykeeper mutate: give at least one -f FILE|DIR|- (or a positional path)\n\n${USAGE}`);
    return 2;
  }
  if (inputs.filter((i) => i.path === '-').length > 1) {
    process.stderr.write('raykeeper mutate: - (stdin) can be given only once\n');
    return 2;
  }
  let warningOptions;
  try {
    warningOptions = companionWarningOptions(values.companion);
  } catch (err) {
    process.stderr.write(`raykeeper mutate: ${errorMessage(err)}\n`);
    return 2;
  }
  const pinned = values['storage-namespace'];
  const options: MutateOptions = {
    newStorageNamespace: pinned === undefined ? randomUuid : () => pinned,
    finalizerEnabled: redisCleanupEnabled(process.env[ENABLE_GCS_FT_REDIS_CLEANUP_ENV]),
  };

  let failed = false;
  const fail = (line: string) => {
    failed = true;
    process.stderr.write(`raykeeper mutate: ${line}\n`);
  };
  const results: Array<Extract<DocumentResult, { kind: 'object' }>> = [];
  for (const input of inputs) {
    let sources: ManifestSource[];
    try {
      sources = await manifestSources(input.path, input.recursive, readStdin);
    } catch (err) {
      fail(`${input.path}: ${errorMessage(err)}`);
      continue;
    }
    for (const source of sources) {
      let text: string;
      try {
        text = await source.text();
      } catch (err) {
        fail(`${source.name}: ${errorMessage(err)}`);
        continue;
      }
      for (const doc of readDocuments(source.name, text)) {
        const where = `${doc.source}: document ${doc.document}`;
        if ('error' in doc) {
          fail(`${where}: ${doc.error}`);
          continue;
        }
        const result = mutateDocument(doc, doc.value, options, warningOptions);
        if (result.kind === 'error') {
          fail(`${where}: ${result.message}`);
          continue;
        }
        if (result.refused !== undefined) fail(`${where}: ${result.label}: the webhook would refuse it: ${result.refused}`);
        if (result.denied !== undefined)
          process.stderr.write(`raykeeper mutate: ${where}: ${result.label}: the validating webhook would deny it: ${result.denied}\n`);
        for (const warning of result.warnings) process.stderr.write(`raykeeper mutate: ${where}: ${result.label}: warning: ${warning}\n`);
        results.push(result);
      }
    }
  }

  if (values.check) {
    let found = 0;
    for (const r of results) {
      if (r.refused !== undefined) continue;
      if (r.denied !== undefined)
        process.stdout.write(`${r.source}#${r.document} ${r.label}: would be denied by the webhook: ${r.denied}\n`);
      else if (r.patch.length > 0) process.stdout.write(changeLine(r) + '\n');
      else continue;
      found++;
    }
    if (failed) return 2;
    return found > 0 ? 1 : 0;
  }
  // Refused documents appear only in the review output (their answer is the refusal).
  const printable = output === 'review' ? results : results.filter((r) => r.refused === undefined);
  if (printable.length > 0) process.stdout.write(print(printable, output));
  return failed ? 2 : 0;
}
