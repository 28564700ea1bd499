#!/usr/bin/env node
// The `raykeeper` command. In a checkout it runs the TypeScript sources beside it (Node >= 22.18 strips
// their types); the package `npm pack` makes holds no sources, only their JavaScript under dist/ (`npm run
// build`), since Node strips no types under node_modules. Plain JavaScript, so that any Node can read it
// and say which Node it needs (package.json "engines": @kubernetes/client-node's undici needs 22.19).
// In a checkout, `npx raykeeper` and `npm start` run the Node 22 that `npm ci` installs (node_modules/.bin).
import { existsSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';

const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 19)) {
  process.stderr.write(
    `raykeeper needs Node.js 22.19 or later; this is ${process.version} (${process.execPath}).\n` +
      'Install Node 22 (GitHub Actions: actions/setup-node with node-version: 22); in a checkout of raykeeper, ' +
      '`npx raykeeper` runs the Node that `npm ci` installed.\n',
  );
  process.exit(1);
}

const sources = existsSync(new URL('./cli.ts', import.meta.url));
// Node strips types with a WebAssembly build of swc that runs only while modules load: its baseline
// compiler is enough, and V8's optimising tier-up of it cost a quarter of the start-up CPU. Set before
// the first .ts module loads; the compiled package has no use for it.
if (sources) setFlagsFromString('--liftoff-only');
const { main } = await import(sources ? './cli.ts' : '../dist/bin/cli.js');
process.exitCode = await main(process.argv.slice(2)).catch((err) => {
  process.stderr.write(`raykeeper: ${err instanceof Error ? err.message : String(err)}\n`);
  return 1;
});
