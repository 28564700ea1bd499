#!/usr/bin/env node
// Launcher. raykeeper is TypeScript run by Node >= 22.18's type stripping; the project pins such a Node
// as the npm package `node`. When started by an older system Node, re-run under the pinned one.
import { spawnSync } from 'node:child_process';
import { setFlagsFromString } from 'node:v8';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const [major, minor] = process.versions.node.split('.').map(Number);
if (major > 22 || (major === 22 && minor >= 18)) {
  // Node strips TypeScript with a WebAssembly build of swc that runs only while modules load: the
  // baseline compiler alone is enough, and V8's optimising tier-up of it cost a quarter of the
  // start-up CPU (bench/redis-cleanup.ts). Set before the first .ts file is imported.
  setFlagsFromString('--liftoff-only');
  // The image's stripped-TypeScript cache (bin/strip-cache.js): swc then does not load at all.
  if (process.env.RAYKEEPER_STRIP_CACHE) (await import('./strip-cache.js')).registerStripCache(process.env.RAYKEEPER_STRIP_CACHE);
  const { main } = await import('./cli.ts');
  process.exitCode = await main(process.argv.slice(2)).catch((err) => {
    process.stderr.write(`raykeeper: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  });
} else {
  const pinned = join(dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', 'node', 'bin', 'node');
  if (!existsSync(pinned)) {
    process.stderr.write(`raykeeper needs Node >= 22.18 (this is ${process.version}); run \`npm ci\` first.\n`);
    process.exit(1);
  }
  const child = spawnSync(pinned, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
  if (child.signal) process.kill(process.pid, child.signal);
  process.exit(child.status ?? 1);
}
