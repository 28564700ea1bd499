// The webhook's cipher list, by real TLS handshakes against a listening webhook, one suite at a time:
// every listed suite is negotiated (RSA key from `raykeeper certs`, EC key from openssl for the ECDSA
// suites), and the suites Node allows by default but that lack forward secrecy or an AEAD cipher are
// refused. Each refusal has a control: the same client completes the handshake with a server on Node's
// default list, so the refusal comes from the webhook and not from this machine's OpenSSL policy.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, createServer, DEFAULT_CIPHERS, type ConnectionOptions } from 'node:tls';
import { writeBundle } from '../../certs/files.ts';
import { generateCertificates } from '../../certs/generate.ts';
import { buildApp, type WebhookApp } from '../../webhook/app.ts';
import { TLS12_CIPHER_SUITES, TLS13_CIPHER_SUITES } from '../../webhook/tls.ts';
import { capturingLogger, certDir } from './helpers.ts';

/** In Node's default list today, and refused by the webhook: no forward secrecy, or CBC (SHA-1 or SHA-2). */
const REFUSED_TLS12 = [
  'AES128-SHA',
  'AES256-SHA',
  'ECDHE-RSA-AES128-SHA',
  'ECDHE-RSA-AES256-SHA',
  'AES128-GCM-SHA256',
  'AES256-GCM-SHA384',
  'ECDHE-RSA-AES128-SHA256',
  'ECDHE-RSA-AES256-SHA384',
  'DHE-RSA-AES128-GCM-SHA256',
];

type Handshake = { protocol: string | null; cipher: string } | { error: string };

/** One handshake; the negotiated protocol and cipher (OpenSSL name), or the error. */
function handshake(port: number, options: ConnectionOptions, onPeer?: (fingerprint256: string) => void): Promise<Handshake> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, servername: 'localhost', rejectUnauthorized: false, ...options }, () => {
      const result = { protocol: socket.getProtocol(), cipher: socket.getCipher().name };
      onPeer?.(socket.getPeerCertificate().fingerprint256);
      socket.end();
      resolve(result);
    });
    socket.on('error', (err) => resolve({ error: err.message }));
  });
}

const tls12 = (cipher: string): ConnectionOptions => ({ minVersion: 'TLSv1.2', maxVersion: 'TLSv1.2', ciphers: `${cipher}:@SECLEVEL=0` });
const tls13 = (suite: string): ConnectionOptions => ({ minVersion: 'TLSv1.3', maxVersion: 'TLSv1.3', ciphers: suite });

async function listeningWebhook(certFile: string, keyFile: string): Promise<{ app: WebhookApp; port: number }> {
  const app = await buildApp({ certFile, keyFile, logger: capturingLogger().logger, finalizerEnabled: true });
  t.teardown(() => app.close());
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, port: (app.server.address() as { port: number }).port };
}

const rsa = await certDir(t);
const rsaWebhook = await listeningWebhook(rsa.certFile, rsa.keyFile);

// An EC (P-256) serving certificate, for the ECDSA suites (cert-manager can issue these).
const ecCert = join(rsa.dir, 'ec.crt');
const ecKey = join(rsa.dir, 'ec.key');
execFileSync(
  'openssl',
  [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=localhost',
    '-addext',
    'subjectAltName=IP:127.0.0.1,DNS:localhost',
    '-keyout',
    ecKey,
    '-out',
    ecCert,
  ],
  { stdio: 'ignore' },
);
const ecWebhook = await listeningWebhook(ecCert, ecKey);

t.test('every listed TLS 1.3 suite is negotiated', async (t) => {
  for (const suite of TLS13_CIPHER_SUITES) {
    const res = await handshake(rsaWebhook.port, tls13(suite));
    t.same(res, { protocol: 'TLSv1.3', cipher: suite }, suite);
  }
});

t.test('every listed TLS 1.2 suite is negotiated (RSA suites with the RSA key, ECDSA suites with the EC key)', async (t) => {
  for (const suite of TLS12_CIPHER_SUITES) {
    const port = suite.startsWith('ECDHE-ECDSA-') ? ecWebhook.port : rsaWebhook.port;
    const res = await handshake(port, tls12(suite));
    t.same(res, { protocol: 'TLSv1.2', cipher: suite }, suite);
  }
});

t.test('TLS 1.2 suites without forward secrecy or without AEAD are refused; a default Node server accepts each', async (t) => {
  const control = createServer(
    { cert: readFileSync(rsa.certFile), key: readFileSync(rsa.keyFile), ciphers: `${DEFAULT_CIPHERS}:@SECLEVEL=0`, dhparam: 'auto' },
    (s) => s.end(),
  );
  await new Promise<void>((resolve) => control.listen(0, '127.0.0.1', resolve));
  t.teardown(() => control.close());
  const controlPort = (control.address() as { port: number }).port;
  for (const suite of REFUSED_TLS12) {
    t.same(
      await handshake(controlPort, tls12(suite)),
      { protocol: 'TLSv1.2', cipher: suite },
      `control: ${suite} works against Node's default list`,
    );
    const res = await handshake(rsaWebhook.port, tls12(suite));
    t.ok('error' in res, `${suite} refused by the webhook`);
    if ('error' in res) t.match(res.error, /handshake failure|no shared cipher|alert/i, suite);
  }
});

t.test('a rotated certificate keeps the cipher list', async (t) => {
  const next = generateCertificates({ service: 'raykeeper-webhook', namespace: 'raykeeper', ips: ['127.0.0.1'], dnsNames: ['localhost'] });
  await writeBundle(rsa.dir, next);
  await rsaWebhook.app.reloadCertificates(); // the file watch may have installed it first; either way:
  let served = '';
  await handshake(rsaWebhook.port, {}, (fp) => (served = fp));
  t.equal(served, new X509Certificate(next.cert).fingerprint256, 'the rotated certificate is served');
  t.ok('error' in (await handshake(rsaWebhook.port, tls12('AES128-GCM-SHA256'))), 'AES128-GCM-SHA256 still refused');
  t.same(await handshake(rsaWebhook.port, tls12('ECDHE-RSA-AES128-GCM-SHA256')), {
    protocol: 'TLSv1.2',
    cipher: 'ECDHE-RSA-AES128-GCM-SHA256',
  });
});
