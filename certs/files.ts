// Writing and reading certificate files. Private keys are written 0600, whatever the umask.
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CertificateBundle } from './generate.ts';

export const FILE_NAMES = { caCert: 'ca.crt', caKey: 'ca.key', cert: 'tls.crt', key: 'tls.key' } as const;

async function writeAtomic(path: string, data: string, mode: number): Promise<void> {
  // Write-then-rename so a webhook watching the directory never reads a half-written file.
  const tmp = `${path}.tmp-${process.pid}`;
  await writeFile(tmp, data, { mode });
  await chmod(tmp, mode);
  await rename(tmp, path);
}

export async function writeBundle(dir: string, bundle: CertificateBundle): Promise<Record<keyof CertificateBundle, string>> {
  await mkdir(dir, { recursive: true });
  const paths = {
    caCert: join(dir, FILE_NAMES.caCert),
    caKey: join(dir, FILE_NAMES.caKey),
    cert: join(dir, FILE_NAMES.cert),
    key: join(dir, FILE_NAMES.key),
  };
  // Keys first: the certificate is what a reloading server watches.
  await writeAtomic(paths.caKey, bundle.caKey, 0o600);
  await writeAtomic(paths.key, bundle.key, 0o600);
  await writeAtomic(paths.caCert, bundle.caCert, 0o644);
  await writeAtomic(paths.cert, bundle.cert, 0o644);
  return paths;
}

export async function readCa(dir: string): Promise<{ cert: string; key: string } | undefined> {
  try {
    return {
      cert: await readFile(join(dir, FILE_NAMES.caCert), 'utf8'),
      key: await readFile(join(dir, FILE_NAMES.caKey), 'utf8'),
    };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
