// A CA and a serving certificate made with node-forge. Pure: returns PEM strings, writes nothing.
import forge from 'node-forge';

export interface CertificateRequest {
  /** Kubernetes Service name; SANs cover <svc>, <svc>.<ns>, <svc>.<ns>.svc, <svc>.<ns>.svc.cluster.local. */
  service: string;
  namespace: string;
  /** Extra IP SANs, e.g. 127.0.0.1 for a webhook reached by URL. */
  ips?: string[];
  /** Extra DNS SANs (e.g. localhost). */
  dnsNames?: string[];
  days?: number;
  /** RSA modulus length; node-forge signs X.509 with RSA only. */
  bits?: 2048 | 3072 | 4096;
  /** Issue the serving certificate from this CA instead of a new one (rotation keeps the caBundle). */
  ca?: { cert: string; key: string };
  now?: Date;
}

export interface CertificateBundle {
  caCert: string;
  caKey: string;
  cert: string;
  key: string;
}

export const DEFAULT_DAYS = 365;

export function serviceDnsNames(service: string, namespace: string): string[] {
  return [service, `${service}.${namespace}`, `${service}.${namespace}.svc`, `${service}.${namespace}.svc.cluster.local`];
}

function serial(): string {
  // Positive 16-byte serial: a leading 0x7f mask keeps the DER INTEGER non-negative.
  const bytes = forge.random.getBytesSync(16);
  return (String.fromCharCode(bytes.charCodeAt(0) & 0x7f) + bytes.slice(1))
    .split('')
    .map((c) => c.charCodeAt(0).toString(16).padStart(2, '0'))
    .join('');
}

function validity(cert: forge.pki.Certificate, now: Date, days: number): void {
  cert.validity.notBefore = new Date(now.getTime() - 5 * 60 * 1000); // tolerate clock skew
  cert.validity.notAfter = new Date(now.getTime() + days * 24 * 60 * 60 * 1000);
}

function keyPair(bits: number): forge.pki.rsa.KeyPair {
  return forge.pki.rsa.generateKeyPair({ bits, e: 0x10001 });
}

function createCa(now: Date, days: number, bits: number): { cert: forge.pki.Certificate; key: forge.pki.rsa.PrivateKey } {
  const keys = keyPair(bits);
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = serial();
  validity(cert, now, days);
  const subject = [
    { name: 'commonName', value: 'raykeeper-ca' },
    { name: 'organizationName', value: 'raykeeper' },
  ];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(keys.privateKey, forge.md.sha256.create());
  return { cert, key: keys.privateKey };
}

export function generateCertificates(req: CertificateRequest): CertificateBundle {
  const now = req.now ?? new Date();
  const days = req.days ?? DEFAULT_DAYS;
  const bits = req.bits ?? 2048;
  if (!Number.isInteger(days) || days < 1) throw new Error(`--days must be a positive whole number, got ${days}`);
  const ca = req.ca
    ? { cert: forge.pki.certificateFromPem(req.ca.cert), key: forge.pki.privateKeyFromPem(req.ca.key) as forge.pki.rsa.PrivateKey }
    : createCa(now, Math.max(days, DEFAULT_DAYS * 10), bits);

  const keys = keyPair(bits);
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = serial();
  validity(cert, now, days);
  const dns = [...serviceDnsNames(req.service, req.namespace), ...(req.dnsNames ?? [])];
  cert.setSubject([{ name: 'commonName', value: `${req.service}.${req.namespace}.svc` }]);
  cert.setIssuer(ca.cert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    {
      name: 'subjectAltName',
      altNames: [...dns.map((value) => ({ type: 2, value })), ...(req.ips ?? []).map((ip) => ({ type: 7, ip }))],
    },
  ]);
  cert.sign(ca.key, forge.md.sha256.create());

  return {
    caCert: forge.pki.certificateToPem(ca.cert),
    caKey: forge.pki.privateKeyToPem(ca.key),
    cert: forge.pki.certificateToPem(cert),
    key: forge.pki.privateKeyToPem(keys.privateKey),
  };
}

/** A new CA (the local node's cluster CA: client certificates, kube-controller-manager's CSR signer). */
export function generateCa(days = DEFAULT_DAYS * 10, bits: 2048 | 3072 | 4096 = 2048, now = new Date()): { cert: string; key: string } {
  const ca = createCa(now, days, bits);
  return { cert: forge.pki.certificateToPem(ca.cert), key: forge.pki.privateKeyToPem(ca.key) };
}

/**
 * A client certificate from a CA: Kubernetes reads the user from the commonName and the groups from
 * the organizations (e.g. `system:node:localhost` in `system:nodes`).
 */
export function generateClientCertificate(req: {
  ca: { cert: string; key: string };
  commonName: string;
  organizations?: string[];
  days?: number;
  bits?: 2048 | 3072 | 4096;
  now?: Date;
}): { cert: string; key: string } {
  const now = req.now ?? new Date();
  const ca = { cert: forge.pki.certificateFromPem(req.ca.cert), key: forge.pki.privateKeyFromPem(req.ca.key) as forge.pki.rsa.PrivateKey };
  const keys = keyPair(req.bits ?? 2048);
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = serial();
  validity(cert, now, req.days ?? DEFAULT_DAYS);
  cert.setSubject([
    { name: 'commonName', value: req.commonName },
    ...(req.organizations ?? []).map((value) => ({ name: 'organizationName', value })),
  ]);
  cert.setIssuer(ca.cert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', clientAuth: true },
  ]);
  cert.sign(ca.key, forge.md.sha256.create());
  return { cert: forge.pki.certificateToPem(cert), key: forge.pki.privateKeyToPem(keys.privateKey) };
}

/** The base64 caBundle a webhook configuration carries. */
export function caBundle(caCertPem: string): string {
  return Buffer.from(caCertPem, 'utf8').toString('base64');
}
