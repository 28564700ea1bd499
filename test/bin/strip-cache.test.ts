// The stripped-TypeScript cache (bin/strip-cache.js): a filled entry loads without swc, a missing or
// outdated one falls back to Node's own stripping, and the entry's content is what runs. Real processes:
// the hook and Node's loader as the image runs them.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const STRIP_CACHE = join(ROOT, 'bin', 'strip-cache.js');
const BIN = join(ROOT, 'bin', 'raykeeper.js');

/** Node with only PATH and `env` in its environment, from the checkout's root. */
function node(args: string[], env: Record<string, string> = {}): { code: number | null; stdout: string; stderr: string } {
  const res = spawnSync(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (res.error) throw res.error;
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

function fill(cache: string, folder: string): void {
  const res = node([STRIP_CACHE, cache, folder]);
  if (res.code !== 0) throw new Error(`fill failed: ${res.stderr}`);
}

/** Imports `module` with the cache registered: its exported value and whether swc was loaded. */
function load(cache: string, module: string): { value: unknown; swc: boolean } {
  const script = [
    `import { registerStripCache } from ${JSON.stringify(pathToFileURL(STRIP_CACHE).href)};`,
    `registerStripCache(${JSON.stringify(cache)});`,
    `const { value } = await import(${JSON.stringify(pathToFileURL(module).href)});`,
    `console.log(JSON.stringify({ value, swc: process.moduleLoadList.some((m) => m.includes('amaro')) }));`,
  ].join('\n');
  const res = node(['--input-type=module', '-e', script]);
  if (res.code !== 0) throw new Error(`load failed: ${res.stderr}`);
  return JSON.parse(res.stdout) as { value: unknown; swc: boolean };
}

t.test('a filled entry loads without swc; a missing or outdated one is stripped by Node', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'strip-cache-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const src = join(dir, 'src');
  const cache = join(dir, 'cache');
  const module = join(src, 'm.ts');
  await mkdir(src);
  await writeFile(module, 'interface Box { n: number }\nconst box: Box = { n: 1 };\nexport const value: number = box.n;\n');

  t.same(load(cache, module), { value: 1, swc: true }, 'no cache directory: Node strips');
  fill(cache, src);
  t.same(await readdir(cache).then((f) => f.length), 1, 'one entry per module');
  t.same(load(cache, module), { value: 1, swc: false }, 'filled: loaded from the cache, swc not loaded');

  await writeFile(module, 'export const value: number = 2;\n');
  t.same(load(cache, module), { value: 2, swc: true }, 'edited after the fill: the old entry is not used');

  // The entry's content is what runs: plant different JavaScript under the current source's name.
  await rm(cache, { recursive: true, force: true });
  fill(cache, src);
  const [entry] = await readdir(cache);
  await writeFile(join(cache, entry!), 'export const value = "from the cache";\n');
  t.same(load(cache, module), { value: 'from the cache', swc: false });
});

t.test('raykeeper with RAYKEEPER_STRIP_CACHE runs the same as without', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'strip-cache-bin-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const res = node([STRIP_CACHE, dir, 'bin', 'src', 'controller']);
  t.equal(res.code, 0, res.stderr);
  t.match(res.stdout, /^strip cache: \d+ modules in /);
  t.equal(res.stderr, '', 'no experimental warning in the build log');
  // Reports at exit whether swc was loaded (before bin/raykeeper.js runs, through NODE_OPTIONS).
  const report = join(dir, 'report.mjs');
  await writeFile(
    report,
    "process.on('exit', () => process.stderr.write(`swc: ${process.moduleLoadList.some((m) => m.includes('amaro'))}\\n`));\n",
  );
  const withReport = { NODE_OPTIONS: `--import ${pathToFileURL(report).href}` };
  const plain = node([BIN, 'redis-cleanup', '--help'], withReport);
  const cached = node([BIN, 'redis-cleanup', '--help'], { ...withReport, RAYKEEPER_STRIP_CACHE: dir });
  t.equal(plain.stderr, 'swc: true\n');
  t.equal(cached.code, 0, cached.stderr);
  t.equal(cached.stderr, 'swc: false\n', 'every module of the command came from the cache');
  t.equal(cached.stdout, plain.stdout);
  t.match(cached.stdout, /^Usage: raykeeper redis-cleanup/);
  const missing = node([BIN, 'redis-cleanup', '--help'], { RAYKEEPER_STRIP_CACHE: join(dir, 'absent') });
  t.equal(missing.code, 0, 'a cache directory that does not exist only means no cache');
  t.equal(missing.stdout, plain.stdout);
});
