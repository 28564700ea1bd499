// TLS Redis (rediss://) with certificates from certs/generate.ts: CA verification, server name,
// mutual TLS with a client certificate, and the failures that must not be retried.
import t from 'tap';
import forge from 'node-forge';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateCertificates } from '../../certs/generate.ts';
import { runCleanup } from '../../controller/redis-cleanup/cleanup.ts';
import { runWith } from '../../controller/redis-cleanup/cli.ts';
import type { RedisCleanupError } from '../../controller/redis-cleanup/connect.ts';
import { redisServerMissing, startRedisServer } from '../helpers/redis-server.ts';
import { client, seedCurrent, seedLegacy, snapshot } from './fixtures.ts';

/** A client certificate (clientAuth) issued by the bundle's CA. */
function clientCertificate(ca: { cert: string; key: string }): { cert: string; key: string } {
  const keys = forge.pki.rsa.generateKeyPair({ bits: 2048, e: 0x10001 });
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = '0a' + forge.util.bytesToHex(forge.random.getBytesSync(8));
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 86_400_000);
  cert.setSubject([{ name: 'commonName', value: 'raykeeper-redis-cleanup' }]);
  const caCert = forge.pki.certificateFromPem(ca.cert);
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', clientAuth: true },
  ]);
  cert.sign(forge.pki.privateKeyFromPem(ca.key) as forge.pki.rsa.PrivateKey, forge.md.sha256.create());
  return { cert: forge.pki.certificateToPem(cert), key: forge.pki.privateKeyToPem(keys.privateKey) };
}

const missing = redisServerMissing();
if (missing) {
  t.fail(missing); // a missing redis-server fails, like a missing control plane
} else {
  const bundle = generateCertificates({ service: 'redis', namespace: 'test', dnsNames: ['localhost'], ips: ['127.0.0.1'] });
  const other = generateCertificates({ service: 'other', namespace: 'test', ips: ['127.0.0.1'] });
  const clientPair = clientCertificate({ cert: bundle.caCert, key: bundle.caKey });
  const dir = await mkdtemp(join(tmpdir(), 'raykeeper-tls-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const files = {
    ca: join(dir, 'ca.crt'),
    otherCa: join(dir, 'other-ca.crt'),
    cert: join(dir, 'client.crt'),
    key: join(dir, 'client.key'),
    caDir: join(dir, 'cas'),
  };
  await writeFile(files.ca, bundle.caCert);
  await writeFile(files.otherCa, other.caCert);
  await writeFile(files.cert, clientPair.cert);
  await writeFile(files.key, clientPair.key, { mode: 0o600 });
  await (await import('node:fs/promises')).mkdir(files.caDir);
  // (generate.ts names every CA "raykeeper-ca": two of them in one store would shadow each other.)
  await writeFile(join(files.caDir, 'a.pem'), clientPair.cert);
  await writeFile(join(files.caDir, 'b.pem'), bundle.caCert);
  await writeFile(join(files.caDir, 'README'), 'not a certificate');

  const tlsServer = await startRedisServer({ tls: { cert: bundle.cert, key: bundle.key, ca: bundle.caCert, authClients: 'no' } });
  t.teardown(() => tlsServer.stop());
  const mtlsServer = await startRedisServer({ tls: { cert: bundle.cert, key: bundle.key, ca: bundle.caCert, authClients: 'yes' } });
  t.teardown(() => mtlsServer.stop());
  const tlsClient = (port: number) => client(port, { tls: { ca: [bundle.caCert], cert: clientPair.cert, key: clientPair.key } });
  const plain = tlsClient(tlsServer.port);
  const mutual = tlsClient(mtlsServer.port);
  t.teardown(() => {
    plain.disconnect();
    mutual.disconnect();
  });

  t.beforeEach(async () => {
    for (const r of [plain, mutual]) {
      await r.flushall();
      await seedCurrent(r, 'tls1');
      await seedLegacy(r, 'tls1');
      await seedCurrent(r, 'tls2');
    }
  });

  const io = () => {
    const out = { stdout: '', stderr: '' };
    return {
      out,
      io: {
        env: {} as Record<string, string>,
        stdout: { write: (s: string) => (out.stdout += s) },
        stderr: { write: (s: string) => (out.stderr += s) },
      },
    };
  };

  t.test('rediss:// with RAY_REDIS_CA_CERT (a file path, as in Ray) cleans over TLS', async (t) => {
    const { out, io: cli } = io();
    cli.env = {
      RAY_REDIS_ADDRESS: `rediss://127.0.0.1:${tlsServer.port}`,
      RAY_external_storage_namespace: 'tls1',
      RAY_REDIS_CA_CERT: files.ca,
    };
    const code = await runWith(['--timeout', '20'], cli);
    t.equal(code, 0, out.stderr);
    t.match(out.stdout, /deleted 4 key\(s\); old-layout hash deleted/);
    t.match(out.stdout, /TLS/);
    t.same([...(await snapshot(plain)).keys()].sort(), ['RAYtls2@ACTOR_TASK_SPEC', 'RAYtls2@JOB', 'RAYtls2@JobCounter', 'RAYtls2@NODE']);
  });

  t.test('RAY_REDIS_CA_PATH (a directory of PEM files) and RAY_REDIS_SERVER_NAME=localhost', async (t) => {
    const { out, io: cli } = io();
    cli.env = {
      RAY_REDIS_ADDRESS: `rediss://127.0.0.1:${tlsServer.port}`,
      RAY_external_storage_namespace: 'tls1',
      RAY_REDIS_CA_PATH: files.caDir,
      RAY_REDIS_SERVER_NAME: 'localhost',
    };
    t.equal(await runWith(['--timeout', '20'], cli), 0, out.stderr);
    t.equal(await plain.exists('RAYtls1@JOB'), 0);
  });

  t.test('mutual TLS: client certificate and key from RAY_REDIS_CLIENT_CERT / RAY_REDIS_CLIENT_KEY', async (t) => {
    const { out, io: cli } = io();
    cli.env = {
      RAY_REDIS_ADDRESS: `rediss://127.0.0.1:${mtlsServer.port}`,
      RAY_external_storage_namespace: 'tls1',
      RAY_REDIS_CA_CERT: files.ca,
      RAY_REDIS_CLIENT_CERT: files.cert,
      RAY_REDIS_CLIENT_KEY: files.key,
    };
    t.equal(await runWith(['--timeout', '20'], cli), 0, out.stderr);
    t.equal(await mutual.exists('RAYtls1@JOB'), 0);
    t.equal(await mutual.exists('RAYtls2@JOB'), 1);
  });

  const failures: Array<[string, () => Parameters<typeof runCleanup>[0]['connection'], RegExp]> = [
    ['an unknown CA (system CAs only)', () => ({ host: '127.0.0.1', port: tlsServer.port, tls: true }), /certificate/i],
    ['the wrong CA', () => ({ host: '127.0.0.1', port: tlsServer.port, tls: true, tlsMaterial: { ca: [other.caCert] } }), /certificate/i],
    [
      'a server name the certificate does not carry',
      () => ({
        host: '127.0.0.1',
        port: tlsServer.port,
        tls: true,
        tlsMaterial: { ca: [bundle.caCert], servername: 'redis.elsewhere.example' },
      }),
      /redis\.elsewhere\.example|altnames/i,
    ],
  ];
  for (const [what, connection, re] of failures) {
    t.test(`TLS verification failure, ${what}: fails at once as a TLS error`, async (t) => {
      const started = Date.now();
      const err = (await runCleanup({ connection: connection(), namespace: 'tls1', deadlineMs: 60_000 }).catch(
        (e: unknown) => e,
      )) as RedisCleanupError;
      t.ok(err instanceof Error);
      t.equal(err.kind, 'tls', err.message);
      t.match(err.message, re);
      t.ok(Date.now() - started < 30_000, 'did not retry until the 60 s deadline');
      t.equal(await plain.exists('RAYtls1@JOB'), 1, 'nothing deleted');
    });
  }

  t.test('mutual TLS without a client certificate: refused, nothing deleted, within the deadline', async (t) => {
    const started = Date.now();
    const err = await runCleanup({
      connection: { host: '127.0.0.1', port: mtlsServer.port, tls: true, tlsMaterial: { ca: [bundle.caCert] } },
      namespace: 'tls1',
      deadlineMs: 3000,
    }).catch((e: unknown) => e);
    t.ok(err instanceof Error, String(err));
    t.ok(Date.now() - started < 15_000, 'ended by its 3 s deadline at the latest');
    t.equal(await mutual.exists('RAYtls1@JOB'), 1);
  });

  t.test('TLS settings without rediss:// do not silently switch TLS on: a warning says so', async (t) => {
    const { out, io: cli } = io();
    cli.env = { RAY_REDIS_ADDRESS: `127.0.0.1:${tlsServer.port}`, RAY_external_storage_namespace: 'tls1', RAY_REDIS_CA_CERT: files.ca };
    const code = await runWith(['--timeout', '2', '--quiet'], cli);
    t.equal(code, 1, 'plain text to a TLS port fails');
    t.match(out.stderr, /warning: TLS settings are present but the address is not rediss:\/\//);
    // --tls forces it.
    const second = io();
    second.io.env = cli.env;
    t.equal(await runWith(['--timeout', '20', '--tls'], second.io), 0, second.out.stderr);
  });

  t.test('an unreadable CA file is a configuration error (exit 2, one line)', async (t) => {
    const { out, io: cli } = io();
    cli.env = {
      RAY_REDIS_ADDRESS: `rediss://127.0.0.1:${tlsServer.port}`,
      RAY_external_storage_namespace: 'tls1',
      RAY_REDIS_CA_CERT: join(dir, 'nope.crt'),
    };
    t.equal(await runWith([], cli), 2);
    t.match(out.stderr, /^raykeeper redis-cleanup: cannot read CA certificate ".*nope\.crt": ENOENT\n$/);
  });
}
