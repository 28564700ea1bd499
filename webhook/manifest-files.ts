// Which files a command that reads manifests reads, picked the way kubectl picks them for `-f/--filename`
// and `-R/--recursive`: a file as given (any extension), `-` for stdin, a directory's *.yaml, *.yml and
// *.json files (its subdirectories too with -R), several paths in one value separated by commas.
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';

export interface ManifestSource {
  /** What a message names: the file's path, or `(stdin)`. */
  name: string;
  text: () => Promise<string>;
}

const MANIFEST_EXTENSIONS = /\.(ya?ml|json)$/i;
const URL_SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;

/** kubectl's --filename is a string slice: each value may hold several paths separated by commas. */
export function splitFilenames(values: readonly string[]): string[] {
  return values.flatMap((v) => v.split(',')).filter((p) => p !== '');
}

async function filesIn(dir: string, recursive: boolean): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const files: string[] = [];
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (recursive) files.push(...(await filesIn(full, true)));
    } else if (MANIFEST_EXTENSIONS.test(entry.name)) files.push(full);
  }
  return files;
}

/**
 * The sources one path stands for. Throws for a path that does not exist, and for a URL (kubectl fetches
 * one; these commands read no network).
 */
export async function manifestSources(path: string, recursive: boolean, stdin: () => Promise<string>): Promise<ManifestSource[]> {
  if (path === '-') return [{ name: '(stdin)', text: stdin }];
  if (URL_SCHEME.test(path)) throw new Error(`URLs are not read (no network access); download the file and pass its path`);
  const info = await stat(path);
  const files = info.isDirectory() ? await filesIn(path, recursive) : [path];
  return files.map((file) => ({ name: file, text: () => readFile(file, 'utf8') }));
}
