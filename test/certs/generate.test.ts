// certs/generate.ts: SANs, chain, key usage, lifetimes, CA reuse. Parsed with node:crypto's X509Certificate.
import t from 'tap';
import { X509Certificate, createPrivateKey, createPublicKey } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import { caBundle, DEFAULT_DAYS, generateCertificates, serviceDnsNames } from '../../certs/generate.ts';

const now = new Date('2026-11-01T12:00:00Z');
const bundle = generateCertificates({
  service: 'raykeeper-webhook',
  namespace: 'ray-system',
  ips: ['127.0.0.1', '::1'],
  dnsNames: ['localhost'],
  days: 30,
  now,
});
const ca = new X509Certificate(bundle.caCert);
const leaf = new X509Certificate(bundle.cert);
const DAY = 24 * 60 * 60 * 1000;

t.test('SANs: the four Service names, extra DNS names and IPs', async (t) => {
  const sans = (leaf.subjectAltName ?? '').split(', ');
  t.same(serviceDnsNames('raykeeper-webhook', 'ray-system'), [
    'raykeeper-webhook',
    'raykeeper-webhook.ray-system',
    'raykeeper-webhook.ray-system.svc',
    'raykeeper-webhook.ray-system.svc.cluster.local',
  ]);
  for (const name of [...serviceDnsNames('raykeeper-webhook', 'ray-system'), 'localhost'])
    t.ok(sans.includes(`DNS:${name}`), `DNS:${name}`);
  t.ok(sans.includes('IP Address:127.0.0.1'), 'IPv4 SAN');
  t.ok(sans.includes('IP Address:0:0:0:0:0:0:0:1'), 'IPv6 SAN');
  t.ok(leaf.checkIP('::1'), 'IPv6 check passes');
  t.equal(sans.length, 7);
  t.ok(leaf.checkHost('raykeeper-webhook.ray-system.svc'), 'hostname check passes for the in-cluster name');
  t.ok(leaf.checkIP('127.0.0.1'), 'IP check passes');
  t.notOk(leaf.checkHost('evil.example.com'), 'other names do not match');
});

t.test('the chain verifies: leaf issued and signed by the CA, CA self-signed and a CA', async (t) => {
  t.ok(leaf.checkIssued(ca), 'issuer matches');
  t.ok(leaf.verify(ca.publicKey), 'signature by the CA key');
  t.ok(ca.verify(ca.publicKey), 'CA is self-signed');
  t.ok(ca.ca, 'CA has basicConstraints cA');
  t.notOk(leaf.ca, 'leaf is not a CA');
  const other = generateCertificates({ service: 'x', namespace: 'y' });
  t.notOk(leaf.verify(new X509Certificate(other.caCert).publicKey), 'another CA does not verify it');
  t.same(leaf.keyUsage, ['1.3.6.1.5.5.7.3.1'], 'extended key usage serverAuth only');
});

t.test('keys match their certificates and are RSA 2048 by default', async (t) => {
  t.doesNotThrow(() => createSecureContext({ cert: bundle.cert, key: bundle.key }));
  t.doesNotThrow(() => createSecureContext({ cert: bundle.caCert, key: bundle.caKey }));
  const key = createPrivateKey(bundle.key);
  t.equal(key.asymmetricKeyType, 'rsa');
  t.equal(key.asymmetricKeyDetails?.modulusLength, 2048);
  t.equal(createPublicKey(key).export({ format: 'pem', type: 'spki' }), leaf.publicKey.export({ format: 'pem', type: 'spki' }));
});

t.test('lifetimes: serving certificate --days, CA at least ten years; clock skew tolerated', async (t) => {
  const notBefore = new Date(leaf.validFrom).getTime();
  const notAfter = new Date(leaf.validTo).getTime();
  t.ok(notBefore < now.getTime() && notBefore >= now.getTime() - 10 * 60 * 1000, 'notBefore a few minutes back');
  t.equal(Math.round((notAfter - now.getTime()) / DAY), 30);
  t.ok(new Date(ca.validTo).getTime() - now.getTime() >= DEFAULT_DAYS * 10 * DAY - DAY, 'CA lives 10 years');
  t.throws(() => generateCertificates({ service: 's', namespace: 'n', days: 0 }), /positive whole number/);
  t.throws(() => generateCertificates({ service: 's', namespace: 'n', days: 1.5 }), /positive whole number/);
});

t.test('a given CA is reused: same CA, new leaf it signs; serials differ', async (t) => {
  const again = generateCertificates({
    service: 'raykeeper-webhook',
    namespace: 'ray-system',
    ca: { cert: bundle.caCert, key: bundle.caKey },
  });
  t.equal(again.caCert, bundle.caCert);
  t.not(again.cert, bundle.cert);
  const leaf2 = new X509Certificate(again.cert);
  t.ok(leaf2.verify(ca.publicKey));
  t.not(leaf2.serialNumber, leaf.serialNumber);
  t.ok(/^[0-7]/.test(leaf2.serialNumber), 'serial is positive (top bit clear)');
});

t.test('other RSA sizes', async (t) => {
  const big = generateCertificates({ service: 's', namespace: 'n', bits: 3072 });
  t.equal(createPrivateKey(big.key).asymmetricKeyDetails?.modulusLength, 3072);
});

t.test('caBundle is the base64 of the CA PEM', async (t) => {
  t.equal(Buffer.from(caBundle(bundle.caCert), 'base64').toString('utf8'), bundle.caCert);
});
