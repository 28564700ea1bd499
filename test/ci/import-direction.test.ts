// Every arrow points down: which part of the tree may import which, in one table, checked over every
// source file. kube/ (the platform: the Kubernetes client, model and controller runtime) imports nothing
// of ours; src/ (the shared model and pure decisions) stands on kube/ only; the processes stand on both.
// A new arrow is a decision: add it to ARROWS with the reason, or move the code down.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';
import t from 'tap';
import { REPO_ROOT } from '../../localcluster/binaries.ts';

/**
 * The parts of the tree and what each may import besides itself. A part is a top-level folder, or one of
 * the files named here on its own: bin/args.ts and bin/package.ts are leaves every subcommand shares,
 * beside bin/cli.ts, the command table that imports every subcommand.
 */
export const ARROWS: Readonly<Record<string, readonly string[]>> = {
  /** The platform: nothing of ours. */
  kube: [],
  /** The shared model: KubeRay's kinds, names, pure decisions. */
  src: ['kube'],
  'bin/args.ts': [],
  'bin/package.ts': [],
  certs: ['bin/args.ts', 'bin/package.ts'],
  webhook: ['kube', 'src', 'bin/args.ts'],
  controller: ['kube', 'src', 'bin/args.ts'],
  /** Dev and test infrastructure (not in the image): a control plane, the job runner, Ray pods as processes. */
  localcluster: ['kube', 'src', 'certs'],
  dev: ['kube', 'src', 'certs', 'webhook', 'controller', 'localcluster', 'bin/args.ts'],
  /** bin/cli.ts; it loads dev/ through a variable, so the package's build does not follow it. */
  bin: ['certs', 'webhook', 'controller', 'bin/args.ts', 'bin/package.ts'],
};

/** Parts nothing in ARROWS may import, that may import any part. */
const ABOVE_ALL = ['test', 'bench'];

/**
 * The relative specifiers a TypeScript file imports or re-exports (static, dynamic with a literal, side
 * effect only). Comment lines and blocks are left out: a comment may show an import.
 */
export function importsOf(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const found: string[] = [];
  for (const m of code.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)(['"])(\.{1,2}\/[^'"]+)\1/gm)) found.push(m[2]!);
  return found;
}

export interface Violation {
  file: string;
  imports: string;
  from: string;
  to: string;
}

/** The imports of `files` (repository path -> text) that ARROWS does not allow. */
export function violations(files: ReadonlyMap<string, string>, arrows: Readonly<Record<string, readonly string[]>> = ARROWS): Violation[] {
  /** The part a repository path (`src/gcsft/decide.ts`) belongs to. */
  const partOf = (path: string): string => (path in arrows ? path : path.split('/')[0]!);
  const out: Violation[] = [];
  for (const [file, text] of files) {
    const from = partOf(file);
    if (!(from in arrows)) continue; // test/, bench/: above everything
    for (const spec of importsOf(text)) {
      const target = normalize(join(dirname(file), spec))
        .split(sep)
        .join('/');
      const to = partOf(target);
      if (to !== from && !arrows[from]!.includes(to)) out.push({ file, imports: target, from, to });
    }
  }
  return out;
}

function sources(): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) files.set(relative(REPO_ROOT, path).split(sep).join('/'), readFileSync(path, 'utf8'));
    }
  };
  const tops = new Set([...Object.keys(ARROWS).map((p) => p.split('/')[0]!), ...ABOVE_ALL]);
  for (const top of tops) walk(join(REPO_ROOT, top));
  return files;
}

t.test('the table: a part never imports test/ or bench/, and no arrow runs back (no circle between parts)', async (t) => {
  for (const [part, allowed] of Object.entries(ARROWS)) {
    for (const to of allowed) t.ok(to in ARROWS || !to.includes('/'), `${part} -> ${to}: a part`);
    for (const top of ABOVE_ALL) t.notOk(allowed.includes(top), `${part} does not import ${top}/`);
  }
  /** Every part `from` imports, directly or through others. */
  const below = (from: string): Set<string> => {
    const seen = new Set<string>();
    const todo = [...(ARROWS[from] ?? [])];
    for (let next = todo.pop(); next !== undefined; next = todo.pop()) {
      if (seen.has(next)) continue;
      seen.add(next);
      todo.push(...(ARROWS[next] ?? []));
    }
    return seen;
  };
  for (const part of Object.keys(ARROWS)) t.notOk(below(part).has(part), `${part} does not reach itself`);
  t.same(ARROWS.kube, [], 'kube/ imports nothing of ours');
  t.same(ARROWS.src, ['kube'], 'src/ stands on kube/ only');
});

t.test('the checker: finds an arrow the table has not, and only those', async (t) => {
  const files = new Map([
    ['kube/informer.ts', "import { Backoff } from './backoff.ts';\nimport { sleep } from '../src/backoff.ts';"],
    ['kube/leader.ts', "// import { sleep } from '../src/backoff.ts';\nconst m = await import('../controller/main.ts');"],
    ['src/gcsft/decide.ts', "import type { BatchJob } from '../../kube/model.ts';\nexport { x } from '../../webhook/app.ts';"],
    ['src/types.ts', "/* import from '../dev/dev.ts' */ import '../localcluster/process.ts';"],
    ['webhook/cli.ts', "import { finish } from '../bin/args.ts';\nimport { main } from '../bin/cli.ts';"],
    ['test/x.test.ts', "import { anything } from '../controller/main.ts';"],
  ]);
  t.same(
    violations(files).map((v) => `${v.file} -> ${v.imports}`),
    [
      'kube/informer.ts -> src/backoff.ts',
      'kube/leader.ts -> controller/main.ts',
      'src/gcsft/decide.ts -> webhook/app.ts',
      'src/types.ts -> localcluster/process.ts',
      'webhook/cli.ts -> bin/cli.ts',
    ],
  );
});

t.test('every source file imports only down the table', async (t) => {
  const files = sources();
  t.ok(files.size > 300, `${files.size} files read`);
  t.ok(
    [...files.keys()].some((f) => f.startsWith('kube/')) && [...files.keys()].some((f) => f.startsWith('src/')),
    'kube/ and src/ among them',
  );
  const found = violations(files);
  t.same(
    found.map((v) => `${v.file} imports ${v.imports} (${v.from} -> ${v.to})`),
    [],
    'no arrow outside ARROWS',
  );
  t.same(
    found.filter((v) => v.from === 'kube').map((v) => v.file),
    [],
    'kube/ imports nothing from src/, controller/, webhook/ or any other part',
  );
  t.same(
    found.filter((v) => v.from === 'src').map((v) => v.file),
    [],
    'src/ imports nothing from controller/, webhook/, dev/, localcluster/',
  );
});

t.test('the Redis cleanup in one room: src/redis/ holds its pure logic, controller/redis-cleanup/ only the program', async (t) => {
  const files = sources();
  const program = [...files.keys()].filter((f) => f.startsWith('controller/redis-cleanup/'));
  t.ok(program.includes('controller/redis-cleanup/cleanup.ts'), `the program's modules read (${program.length})`);
  t.ok(files.has('src/redis/keys.ts'), 'the key layout is in src/redis/');
  // A module of the program does I/O itself (ioredis, the file system) or drives a module of the program
  // that does; one that does neither is pure Redis logic and belongs in src/redis/.
  const ownIo = (text: string): boolean => /from\s*['"](ioredis|node:fs(\/promises)?)['"]/.test(text);
  const usesProgram = (file: string, text: string): boolean =>
    importsOf(text).some((spec) =>
      program.includes(
        normalize(join(dirname(file), spec))
          .split(sep)
          .join('/'),
      ),
    );
  t.same(
    program.filter((f) => !ownIo(files.get(f)!) && !usesProgram(f, files.get(f)!)),
    [],
    'no pure module left in controller/redis-cleanup/',
  );
  t.same(
    [...files.keys()].filter((f) => f.startsWith('src/redis/') && /from\s*['"]ioredis['"]/.test(files.get(f)!)),
    [],
    'src/redis/ holds no ioredis',
  );
});
