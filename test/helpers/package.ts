// raykeeper as users get it: the tarball `npm pack` makes from this checkout (its prepack script compiles
// the TypeScript to dist/), for the tests that install it into a project of their own (test/ci/) and the
// benchmarks that run it as the image does (bench/).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../../localcluster/binaries.ts';

/** `npm pack` of this checkout into `dir`: the tarball's path and the files it holds. */
export function packCheckout(dir: string): { tarball: string; files: string[] } {
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', dir], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    // The prepack script's output goes to stderr with --json; kept for an error's message.
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 64 * 1024 * 1024,
  });
  const [packed] = JSON.parse(out.slice(out.indexOf('['))) as Array<{ filename: string; files: Array<{ path: string }> }>;
  if (packed === undefined) throw new Error(`npm pack printed no package: ${out}`);
  return { tarball: join(dir, packed.filename), files: packed.files.map((f) => f.path) };
}

/**
 * The package unpacked in a temporary directory whose node_modules is this checkout's: what the image
 * runs (Dockerfile), without an install. `bin` is its bin/raykeeper.js.
 */
export function unpackedPackage(): { bin: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'raykeeper-package-'));
  try {
    const { tarball } = packCheckout(dir);
    execFileSync('tar', ['-xzf', tarball, '-C', dir]);
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(dir, 'package', 'node_modules'));
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return { bin: join(dir, 'package', 'bin', 'raykeeper.js'), remove: () => rmSync(dir, { recursive: true, force: true }) };
}
