// What importing a module costs at start: the RSS of a fresh Node process (the pinned Node 22, with the
// flags bin/raykeeper.js sets) after importing it, minus a bare process's, several runs each. Why
// kube/kubeconfig.ts uses client-node's parts and not its index, and what the controller's imports weigh.
//
//   node bench/import-cost.ts [--runs N]
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { REPO_ROOT } from '../localcluster/binaries.ts';

const THIS_FILE = fileURLToPath(import.meta.url);
const CN = '@kubernetes/client-node';

/** Label -> modules imported together (package names, or paths relative to the repository). */
export const IMPORT_SETS: Array<[string, string[]]> = [
  ['bare node', []],
  ['a .ts file (type stripping)', ['src/names.ts']],
  [`${CN} (index)`, [CN]],
  [`${CN}/dist/config.js + dist/watch.js`, [`${CN}/dist/config.js`, `${CN}/dist/watch.js`]],
  [`${CN}/dist/watch.js`, [`${CN}/dist/watch.js`]],
  ['undici', ['undici']],
  [`${CN} parts in kube/kubeconfig.ts`, [`${CN}/dist/config_types.js`, `${CN}/dist/exec_auth.js`, `${CN}/dist/file_auth.js`]],
  ['fastify', ['fastify']],
  ['pino', ['pino']],
  ['prom-client', ['prom-client']],
  ['yaml', ['yaml']],
  ['kube/client.ts + kube/kubeconfig.ts', ['kube/client.ts', 'kube/kubeconfig.ts']],
  ['controller/main.ts (all the controller loads at start)', ['controller/cli.ts', 'controller/main.ts']],
];

/** VmRSS in MiB of a fresh process after importing `modules`. */
export function importRss(modules: string[]): number {
  const specs = modules.map((m) => (m.includes('/') && !m.startsWith('@') ? pathToFileURL(resolve(REPO_ROOT, m)).href : m));
  const script = `import { setFlagsFromString } from 'node:v8'; setFlagsFromString('--liftoff-only');
for (const s of ${JSON.stringify(specs)}) await import(s);
await new Promise((r) => setTimeout(r, 200));
const s = (await import('node:fs')).readFileSync('/proc/self/status', 'utf8');
process.stdout.write(String(Number(/VmRSS:\\s+(\\d+)/.exec(s)[1]) / 1024));`;
  return Number(execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: REPO_ROOT, encoding: 'utf8' }));
}

export async function runImportCostBench(
  options: { runs?: number; print?: boolean } = {},
): Promise<Array<{ label: string; rssMiB: number[] }>> {
  const runs = options.runs ?? 3;
  const results = IMPORT_SETS.map(([label]) => ({ label, rssMiB: [] as number[] }));
  // Interleaved, so a change in machine load hits every set alike.
  for (let run = 0; run < runs; run++) IMPORT_SETS.forEach(([, modules], i) => results[i]!.rssMiB.push(importRss(modules)));
  if (options.print !== false) {
    const bare = Math.min(...results[0]!.rssMiB);
    process.stdout.write(`RSS of a fresh Node ${process.version} after importing (MiB, min-max of ${runs} runs; + over bare node's min)\n`);
    for (const r of results) {
      const lo = Math.round(Math.min(...r.rssMiB));
      const hi = Math.round(Math.max(...r.rssMiB));
      process.stdout.write(`  ${r.label.padEnd(58)} ${`${lo}-${hi}`.padStart(8)}  +${Math.round(Math.min(...r.rssMiB) - bare)}\n`);
    }
  }
  return results;
}

if (resolve(process.argv[1] ?? '') === THIS_FILE) {
  const { values } = parseArgs({ options: { runs: { type: 'string' } } });
  await runImportCostBench({ runs: values.runs ? Number(values.runs) : 3 });
}
