// `raykeeper certs generate`: the command-line contract other checks rely on.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { run } from '../../certs/cli.ts';
import { runCapturing } from '../helpers/capture.ts';

const BIN = fileURLToPath(new URL('../../bin/raykeeper.js', import.meta.url));

const cli = (args: string[]) => runCapturing(run, args);

t.test('through the real binary: writes ca.crt, tls.crt, tls.key and prints the caBundle', async (t) => {
  const dir = t.testdir();
  const res = spawnSync(
    process.execPath,
    [
      BIN,
      'certs',
      'generate',
      '--out',
      dir,
      '--service',
      'raykeeper-webhook',
      '--namespace',
      'ray-system',
      '--ip',
      '127.0.0.1',
      '--days',
      '7',
    ],
    { encoding: 'utf8' },
  );
  t.equal(res.status, 0, res.stderr);
  for (const f of ['ca.crt', 'tls.crt', 'tls.key', 'ca.key']) t.ok(existsSync(join(dir, f)), f);
  t.equal(statSync(join(dir, 'tls.key')).mode & 0o777, 0o600);
  const m = /^caBundle: (\S+)$/m.exec(res.stdout);
  t.ok(m, 'caBundle line');
  t.equal(Buffer.from(m?.[1] ?? '', 'base64').toString('utf8'), readFileSync(join(dir, 'ca.crt'), 'utf8'));
  const leaf = new X509Certificate(readFileSync(join(dir, 'tls.crt')));
  t.ok(leaf.checkIP('127.0.0.1'));
  t.ok(leaf.checkHost('raykeeper-webhook.ray-system.svc.cluster.local'));
  t.ok(leaf.verify(new X509Certificate(readFileSync(join(dir, 'ca.crt'))).publicKey));
  t.equal(Math.round((new Date(leaf.validTo).getTime() - Date.now()) / 86_400_000), 7);
});

t.test('--reuse-ca keeps the CA (so the caBundle) and issues a new serving certificate', async (t) => {
  const dir = t.testdir();
  t.equal((await cli(['generate', '--out', dir, '--service', 's', '--namespace', 'n'])).code, 0);
  const caBefore = readFileSync(join(dir, 'ca.crt'), 'utf8');
  const certBefore = readFileSync(join(dir, 'tls.crt'), 'utf8');
  const bundleFile = join(dir, 'bundle.b64');
  const res = await cli(['generate', '--out', dir, '--service', 's', '--namespace', 'n', '--reuse-ca', '--ca-bundle-file', bundleFile]);
  t.equal(res.code, 0);
  t.equal(readFileSync(join(dir, 'ca.crt'), 'utf8'), caBefore, 'CA unchanged');
  t.not(readFileSync(join(dir, 'tls.crt'), 'utf8'), certBefore, 'new serving certificate');
  t.ok(new X509Certificate(readFileSync(join(dir, 'tls.crt'))).verify(new X509Certificate(caBefore).publicKey), 'signed by the kept CA');
  t.equal(readFileSync(bundleFile, 'utf8').trim(), Buffer.from(caBefore).toString('base64'), '--ca-bundle-file written');
  const fresh = await cli(['generate', '--out', dir, '--service', 's', '--namespace', 'n']);
  t.equal(fresh.code, 0);
  t.not(readFileSync(join(dir, 'ca.crt'), 'utf8'), caBefore, 'without --reuse-ca a new CA is made');
});

t.test('errors exit 2 with a message and write nothing', async (t) => {
  const dir = t.testdir();
  const rows: Array<[string[], RegExp]> = [
    [['generate'], /missing --out, --service, --namespace/],
    [['generate', '--out', dir], /missing --service, --namespace/],
    [['generate', '--out', dir, '--service', 's'], /missing --namespace/],
    [['generate', '--out', dir, '--service', 's', '--namespace', 'n', '--bits', '1024'], /--bits must be 2048, 3072 or 4096/],
    [['generate', '--out', dir, '--service', 's', '--namespace', 'n', '--days', 'soon'], /--days must be a positive whole number/],
    [['generate', '--out', dir, '--service', 's', '--namespace', 'n', '--days', '0'], /--days must be a positive whole number/],
    [
      ['generate', '--out', dir, '--service', 's', '--namespace', 'n', '--ip', 'localhost'],
      /--ip "localhost" is not an IPv4 or IPv6 address/,
    ],
    [['generate', '--out', dir, '--service', 's', '--namespace', 'n', '--reuse-ca'], /--reuse-ca but .* has no ca\.crt and ca\.key/],
    [
      ['generate', '--out', dir, '--frobnicate'],
      /^raykeeper certs generate: unknown option --frobnicate \(see raykeeper certs generate --help\)\n$/,
    ],
    [['--frobnicate'], /^raykeeper certs: unknown option --frobnicate \(see raykeeper certs --help\)\n$/],
    [['rotate'], /unknown command "rotate"/],
  ];
  for (const [args, message] of rows) {
    const res = await cli(args);
    t.equal(res.code, 2, args.join(' '));
    t.match(res.stderr, message, args.join(' '));
  }
  t.notOk(existsSync(join(dir, 'tls.crt')), 'nothing written');
  const help = await cli(['generate', '--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, /--reuse-ca/);
});
