// Stripped-TypeScript cache. Node strips types with a WebAssembly build of swc each time a .ts module
// loads: loading swc and stripping the ~15 modules of `raykeeper redis-cleanup` is about 40% of that
// process's start-up CPU (bench/redis-cleanup.ts). With RAYKEEPER_STRIP_CACHE naming a directory,
// bin/raykeeper.js loads a .ts module whose stripped source is there as that JavaScript, and swc is not
// loaded at all; any other .ts module loads as before. Entries are named by a hash of the Node and swc
// versions and the module's exact source, so an edited file can never load a stale entry. The image
// fills the directory at build (Dockerfile): `node bin/strip-cache.js DIR FOLDER...`. Plain JavaScript,
// so that this module needs no stripping itself.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { registerHooks, stripTypeScriptTypes } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The entry's file name for a module's TypeScript source (a Buffer or string). */
export function entryName(source) {
  return (
    createHash('sha256')
      .update(`${process.versions.node}\0${process.versions.amaro ?? ''}\0`)
      .update(source)
      .digest('hex') + '.js'
  );
}

/** Loads .ts modules from the cache in `dir` when it holds their stripped source. */
export function registerStripCache(dir) {
  registerHooks({
    load(url, context, nextLoad) {
      const loaded = nextLoad(url, context);
      if (loaded.format !== 'module-typescript' || loaded.source == null) return loaded;
      let stripped;
      try {
        stripped = readFileSync(join(dir, entryName(loaded.source)), 'utf8');
      } catch {
        return loaded;
      }
      return { ...loaded, format: 'module', source: stripped };
    },
  });
}

/** Strips every .ts file under `folders` into `dir`; returns how many. */
export function fillStripCache(dir, folders) {
  mkdirSync(dir, { recursive: true });
  let n = 0;
  const visit = (folder) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) visit(path);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
        const source = readFileSync(path);
        const target = join(dir, entryName(source));
        writeFileSync(`${target}.tmp`, stripTypeScriptTypes(source.toString('utf8'), { mode: 'strip' }));
        renameSync(`${target}.tmp`, target);
        n += 1;
      }
    }
  };
  for (const folder of folders) visit(folder);
  return n;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [dir, ...folders] = process.argv.slice(2);
  if (!dir || folders.length === 0) {
    process.stderr.write('Usage: node bin/strip-cache.js DIR FOLDER...\n');
    process.exit(2);
  }
  process.removeAllListeners('warning'); // stripTypeScriptTypes is "experimental": no warning in the build log
  const n = fillStripCache(dir, folders);
  process.stdout.write(`strip cache: ${n} modules in ${resolve(dir)}\n`);
}
