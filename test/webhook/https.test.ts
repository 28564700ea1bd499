// The webhook over a REAL HTTPS listener on 127.0.0.1:0: the chain verifies against the generated CA,
// TLS 1.1 is refused (1.2 and 1.3 accepted), and rotated certificate files are served without a restart.
import t from 'tap';
import { X509Certificate } from 'node:crypto';
import { connect, createServer, type ConnectionOptions } from 'node:tls';
import { generateCertificates } from '../../certs/generate.ts';
import { writeBundle } from '../../certs/files.ts';
import { buildApp } from '../../webhook/app.ts';
import { rayCluster, review, FT, FINALIZER } from '../admission/fixtures.ts';
import { capturingLogger, certDir, decodePatch, httpsCall } from './helpers.ts';
import { sleep } from '../../kube/backoff.ts';

const CLUSTER = '/mutate-ray-io-v1-raycluster';
const certs = await certDir(t);
const log = capturingLogger();
const app = await buildApp({
  certFile: certs.certFile,
  keyFile: certs.keyFile,
  logger: log.logger,
  finalizerEnabled: true,
  certificatePollIntervalMs: 500,
});
t.teardown(() => app.close());
await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
const port = typeof address === 'object' && address !== null ? address.port : 0;

function fingerprint(pem: string): string {
  return new X509Certificate(pem).fingerprint256;
}

/** Handshake result: the negotiated protocol and the leaf's fingerprint, or the error. */
function handshake(
  options: ConnectionOptions & { port: number },
): Promise<{ protocol: string | null; fingerprint?: string } | { error: Error }> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', servername: 'localhost', ...options }, () => {
      const protocol = socket.getProtocol();
      const fingerprint = socket.getPeerCertificate().fingerprint256;
      socket.end();
      resolve({ protocol, fingerprint });
    });
    socket.on('error', (error) => resolve({ error }));
  });
}

t.test('a mutate call over HTTPS, the server verified against the generated CA', async (t) => {
  const res = await httpsCall(port, CLUSTER, {
    ca: certs.bundle.caCert,
    body: JSON.stringify(review('RayCluster', 'CREATE', rayCluster({ annotations: { [FT]: 'true' } }))),
  });
  t.equal(res.status, 200);
  const body = JSON.parse(res.body);
  t.equal(body.response.allowed, true);
  t.ok(decodePatch(body.response.patch).some((op) => JSON.stringify(op.value).includes(FINALIZER)));
  const health = await httpsCall(port, '/healthz', { ca: certs.bundle.caCert });
  t.equal(health.status, 200);
});

t.test('the chain check is real: another CA is rejected', async (t) => {
  const other = generateCertificates({ service: 'x', namespace: 'y' });
  await t.rejects(httpsCall(port, '/healthz', { ca: other.caCert }), /self-signed|unable to verify|certificate/i);
});

t.test('TLS 1.2 and 1.3 are accepted', async (t) => {
  const v12 = await handshake({ port, ca: certs.bundle.caCert, minVersion: 'TLSv1.2', maxVersion: 'TLSv1.2' });
  t.same('protocol' in v12 ? v12.protocol : v12.error.message, 'TLSv1.2');
  const v13 = await handshake({ port, ca: certs.bundle.caCert, minVersion: 'TLSv1.3' });
  t.same('protocol' in v13 ? v13.protocol : v13.error.message, 'TLSv1.3');
});

/** A TLS 1.1-only client, allowed to go below the default security level so only the server can refuse. */
const tls11: ConnectionOptions = {
  minVersion: 'TLSv1.1',
  maxVersion: 'TLSv1.1',
  ciphers: 'DEFAULT:@SECLEVEL=0',
  rejectUnauthorized: false,
};

// Control: the same client completes a TLS 1.1 handshake with a server that allows it. Without this, a
// refusal could come from this machine's OpenSSL policy rather than from the webhook.
const permissive = createServer(
  { cert: certs.bundle.cert, key: certs.bundle.key, minVersion: 'TLSv1', ciphers: 'DEFAULT:@SECLEVEL=0' },
  (s) => s.end(),
);
await new Promise<void>((resolve) => permissive.listen(0, '127.0.0.1', resolve));
const control = await handshake({ port: (permissive.address() as { port: number }).port, ...tls11 });
permissive.close();
const tls11Unavailable =
  'protocol' in control && control.protocol === 'TLSv1.1'
    ? false
    : `this machine's OpenSSL cannot speak TLS 1.1 at all (${'error' in control ? control.error.message : control.protocol}); a refusal would prove nothing`;

t.test('TLS 1.1 is refused', { skip: tls11Unavailable }, async (t) => {
  const refused = await handshake({ port, ...tls11 });
  t.ok('error' in refused, 'handshake failed');
  if ('error' in refused) t.match(refused.error.message, /protocol|version/i);
});

t.test('rotated files are served without a restart; TLS 1.2+ still enforced', async (t) => {
  const before = await handshake({ port, ca: certs.bundle.caCert });
  t.equal('fingerprint' in before ? before.fingerprint : undefined, fingerprint(certs.bundle.cert), 'the first certificate is served');

  // Rotate as `raykeeper certs generate --reuse-ca` does: same CA, new serving cert and key.
  const rotated = generateCertificates({
    service: 'raykeeper-webhook',
    namespace: 'raykeeper',
    ips: ['127.0.0.1'],
    dnsNames: ['localhost'],
    ca: { cert: certs.bundle.caCert, key: certs.bundle.caKey },
  });
  await writeBundle(certs.dir, rotated);
  const want = fingerprint(rotated.cert);
  let seen: string | undefined;
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const now = await handshake({ port, ca: certs.bundle.caCert });
    seen = 'fingerprint' in now ? now.fingerprint : undefined;
    if (seen === want) break;
    await sleep(100);
  }
  t.equal(seen, want, 'the rotated certificate is presented by the same server');
  const res = await httpsCall(port, CLUSTER, {
    ca: certs.bundle.caCert,
    body: JSON.stringify(review('RayCluster', 'CREATE', rayCluster())),
  });
  t.equal(res.status, 200, 'requests work on the rotated certificate, verified against the same CA');
  if (tls11Unavailable === false) {
    const old11 = await handshake({ port, ...tls11 });
    t.ok('error' in old11, 'TLS 1.1 still refused after rotation');
  }
  t.ok(
    log.lines().some((l) => l.msg === 'serving certificate reloaded'),
    'the reload is logged',
  );
});

t.test('a cert/key pair that does not match is not installed; the current one keeps serving', async (t) => {
  const current = (await handshake({ port, ca: certs.bundle.caCert })) as { fingerprint: string };
  const other = generateCertificates({
    service: 'raykeeper-webhook',
    namespace: 'raykeeper',
    ips: ['127.0.0.1'],
    dnsNames: ['localhost'],
    ca: { cert: certs.bundle.caCert, key: certs.bundle.caKey },
  });
  const { writeFile } = await import('node:fs/promises');
  await writeFile(certs.certFile, other.cert); // new certificate, old key: a half-finished rotation
  t.equal(await app.reloadCertificates(), false, 'not installed');
  const after = (await handshake({ port, ca: certs.bundle.caCert })) as { fingerprint: string };
  t.equal(after.fingerprint, current.fingerprint, 'still the previous certificate');
  await writeFile(certs.keyFile, other.key, { mode: 0o600 });
  // The watcher may already have installed it; either way the new pair must end up served.
  await app.reloadCertificates();
  const finished = (await handshake({ port, ca: certs.bundle.caCert })) as { fingerprint: string };
  t.equal(finished.fingerprint, fingerprint(other.cert), 'installed once the key matches');
  const metrics = await app.inject({ method: 'GET', url: '/metrics' });
  t.match(metrics.body, /raykeeper_webhook_certificate_reloads_total\{result="failure"\} [1-9]/);
  t.match(metrics.body, /raykeeper_webhook_certificate_reloads_total\{result="success"\} [1-9]/);
});

t.test('a Kubernetes Secret volume rotation (atomic ..data symlink swap) is picked up by the file watch', async (t) => {
  const { mkdirSync, symlinkSync, renameSync, writeFileSync, rmSync } = await import('node:fs');
  const { join } = await import('node:path');
  const dir = join(certs.dir, 'secret-volume');
  const version = (name: string, pair: { cert: string; key: string }) => {
    mkdirSync(join(dir, name));
    writeFileSync(join(dir, name, 'tls.crt'), pair.cert);
    writeFileSync(join(dir, name, 'tls.key'), pair.key, { mode: 0o600 });
  };
  mkdirSync(dir);
  version('..2026_11_01_00_00_00.1', certs.bundle);
  symlinkSync('..2026_11_01_00_00_00.1', join(dir, '..data'));
  symlinkSync('..data/tls.crt', join(dir, 'tls.crt'));
  symlinkSync('..data/tls.key', join(dir, 'tls.key'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));

  // Polling effectively off: only the directory watch can notice the swap.
  const volumeApp = await buildApp({
    certFile: join(dir, 'tls.crt'),
    keyFile: join(dir, 'tls.key'),
    logger: capturingLogger().logger,
    certificatePollIntervalMs: 3_600_000,
  });
  t.teardown(() => volumeApp.close());
  await volumeApp.listen({ host: '127.0.0.1', port: 0 });
  const volumePort = (volumeApp.server.address() as { port: number }).port;

  const next = generateCertificates({
    service: 'raykeeper-webhook',
    namespace: 'raykeeper',
    ips: ['127.0.0.1'],
    dnsNames: ['localhost'],
    ca: { cert: certs.bundle.caCert, key: certs.bundle.caKey },
  });
  version('..2026_12_01_00_00_00.2', next);
  symlinkSync('..2026_12_01_00_00_00.2', join(dir, '..data_tmp'));
  renameSync(join(dir, '..data_tmp'), join(dir, '..data')); // what the kubelet's atomic writer does

  const want = fingerprint(next.cert);
  let seen: string | undefined;
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const now = await handshake({ port: volumePort, ca: certs.bundle.caCert });
    seen = 'fingerprint' in now ? now.fingerprint : undefined;
    if (seen === want) break;
    await sleep(100);
  }
  t.equal(seen, want, 'the swapped-in certificate is presented');
});

t.test('drainMs: after close() starts, new connections are still answered, each answer closing its connection', async (t) => {
  const draining = await buildApp({
    certFile: certs.certFile,
    keyFile: certs.keyFile,
    logger: log.logger,
    finalizerEnabled: true,
    drainMs: 1500,
  });
  await draining.listen({ host: '127.0.0.1', port: 0 });
  const addr = draining.server.address();
  const drainPort = typeof addr === 'object' && addr !== null ? addr.port : 0;
  let closed = false;
  const closing = draining.close().then(() => (closed = true));
  const res = await httpsCall(drainPort, CLUSTER, {
    ca: certs.bundle.caCert,
    body: JSON.stringify(review('RayCluster', 'CREATE', rayCluster({ annotations: { [FT]: 'true' } }))),
  });
  t.equal(res.status, 200, 'answered while draining');
  t.ok(
    decodePatch(JSON.parse(res.body).response.patch).some((op) => JSON.stringify(op.value).includes(FINALIZER)),
    'with the defaults',
  );
  t.equal(res.headers.connection, 'close', 'and the connection is not kept alive');
  t.notOk(closed, 'close() waits for the drain');
  await closing;
  await t.rejects(httpsCall(drainPort, '/healthz', { ca: certs.bundle.caCert }), 'refused after the drain');
});
