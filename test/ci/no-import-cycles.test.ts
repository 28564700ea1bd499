// No import circle under src/ (issue 46): a module that imports another which, directly or through others,
// imports it back is a design knot (src/raycluster/pods.ts <-> auth.ts <-> autoscaler.ts was one: their
// shared names now live in src/raycluster/names.ts). Every relative import counts, `import type` and
// `export ... from` included: a type-only circle is still two modules that cannot be read apart.
// TypeScript's own scanner (ts.preProcessFile) lists the imports, so strings and comments cannot fool it.
import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { REPO_ROOT } from '../../localcluster/binaries.ts';

/** Every .ts file under `dir`, absolute. */
function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return tsFiles(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** file -> the files of `files` it imports (relative specifiers only; `./x.js` resolves to `./x.ts`). */
export function importGraph(files: string[], read: (file: string) => string): Map<string, string[]> {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const info = ts.preProcessFile(read(file), true, true);
    const targets = new Set<string>();
    for (const { fileName } of info.importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const target = resolve(dirname(file), fileName).replace(/\.js$/, '.ts');
      if (known.has(target)) targets.add(target);
    }
    graph.set(file, [...targets].sort());
  }
  return graph;
}

/** The import circles: each strongly connected component of more than one file, or a file importing itself (Tarjan). */
export function importCycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(component.sort());
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return out;
}

t.test('the cycle finder finds a circle, a self-import and type-only and re-export edges, and nothing in a chain', async (tt) => {
  const files: Record<string, string> = {
    '/p/a.ts': "import { b } from './b.ts';\nexport const a = b;",
    '/p/b.ts': "import type { C } from './sub/c.ts';\nexport const b = 1;",
    '/p/sub/c.ts': "export { a } from '../a.js';\nexport type C = number;",
    '/p/d.ts': "import { d } from './d.ts';\n// import { a } from './a.ts'\nconst s = \"import './a.ts'\";",
    '/p/e.ts': "import { a } from './a.ts';\nimport ts from 'typescript';",
  };
  const cycles = importCycles(importGraph(Object.keys(files), (f) => files[f]!));
  tt.same(
    cycles,
    [['/p/a.ts', '/p/b.ts', '/p/sub/c.ts'], ['/p/d.ts']],
    'a -> b -> sub/c -> a (type and re-export edges), d -> d; e only imports',
  );
  tt.same(importCycles(importGraph(['/p/e.ts', '/p/b.ts'], (f) => files[f]!)), [], 'no circle among files that do not close one');
});

t.test('no import circle under src/', async (tt) => {
  const root = join(REPO_ROOT, 'src');
  const files = tsFiles(root);
  tt.ok(files.length > 50, `src/ holds its modules (${files.length} files)`);
  const graph = importGraph(files, (f) => readFileSync(f, 'utf8'));
  tt.ok(
    graph.get(join(root, 'raycluster', 'pods.ts'))?.includes(join(root, 'raycluster', 'names.ts')),
    'the scanner sees real imports (src/raycluster/pods.ts imports ./names.ts)',
  );
  const cycles = importCycles(graph).map((c) => c.map((f) => relative(REPO_ROOT, f)));
  tt.same(cycles, [], cycles.map((c) => `circle: ${c.join(' <-> ')}`).join('\n') || 'none');
});
