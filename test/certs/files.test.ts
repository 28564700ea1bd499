// certs/files.ts: keys 0600 whatever the umask, certificates 0644, atomic replace, reading the CA back.
import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { generateCertificates } from '../../certs/generate.ts';
import { FILE_NAMES, readCa, writeBundle } from '../../certs/files.ts';

const bundle = generateCertificates({ service: 's', namespace: 'n' });

t.test('writes the four files with the right modes even under a permissive umask', async (t) => {
  const dir = t.testdir();
  const old = process.umask(0o000);
  try {
    const paths = await writeBundle(join(dir, 'nested', 'out'), bundle);
    t.equal(statSync(paths.key).mode & 0o777, 0o600, 'tls.key 0600');
    t.equal(statSync(paths.caKey).mode & 0o777, 0o600, 'ca.key 0600');
    t.equal(statSync(paths.cert).mode & 0o777, 0o644, 'tls.crt 0644');
    t.equal(statSync(paths.caCert).mode & 0o777, 0o644, 'ca.crt 0644');
    t.equal(readFileSync(paths.cert, 'utf8'), bundle.cert);
    t.same(readdirSync(join(dir, 'nested', 'out')).sort(), Object.values(FILE_NAMES).sort(), 'no temporary files left');
  } finally {
    process.umask(old);
  }
});

t.test('rewriting keeps key modes and replaces contents', async (t) => {
  const dir = t.testdir();
  await writeBundle(dir, bundle);
  const second = generateCertificates({ service: 's', namespace: 'n' });
  const paths = await writeBundle(dir, second);
  t.equal(readFileSync(paths.key, 'utf8'), second.key);
  t.equal(statSync(paths.key).mode & 0o777, 0o600);
});

t.test('readCa returns the CA, or undefined when there is none', async (t) => {
  const dir = t.testdir();
  t.equal(await readCa(dir), undefined);
  await writeBundle(dir, bundle);
  t.same(await readCa(dir), { cert: bundle.caCert, key: bundle.caKey });
});
