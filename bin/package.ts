// Where raykeeper's own files are. A checkout runs the TypeScript sources, each folder at the package
// root (bin/, certs/, ...); the package `npm pack` makes runs them compiled to JavaScript one level down
// (dist/bin/, dist/certs/, ...), beside package.json and manifests/ at its root. This module is one of
// them, so its own file name says which layout it is in.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** True in a checkout (TypeScript run by Node's type stripping), false in the package (compiled). */
export const RUNS_FROM_SOURCES = import.meta.url.endsWith('.ts');

/** The folder that holds package.json. */
export const PACKAGE_ROOT = fileURLToPath(new URL(RUNS_FROM_SOURCES ? '..' : '../..', import.meta.url));

/** package.json's version. */
export function packageVersion(): string {
  const { version } = JSON.parse(readFileSync(`${PACKAGE_ROOT}/package.json`, 'utf8')) as { version: string };
  return version;
}
