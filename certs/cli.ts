// `raykeeper certs generate ...`: writes ca.crt, ca.key, tls.crt, tls.key and prints the caBundle.
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { isIP } from 'node:net';
import { caBundle, DEFAULT_DAYS, generateCertificates } from './generate.ts';
import { readCa, writeBundle } from './files.ts';
import { kustomizeOverlay } from './overlay.ts';
import { finish, parseCommandLine, usageError } from '../bin/args.ts';
import { PACKAGE_ROOT } from '../bin/package.ts';

const USAGE = `Usage: raykeeper certs generate --out DIR --service NAME --namespace NS [options]

Writes ca.crt, ca.key (0600), tls.crt and tls.key (0600) in DIR and prints the base64 caBundle
for the MutatingWebhookConfiguration and ValidatingWebhookConfiguration.

Options:
  --out DIR             where to write the PEM files (created if missing)
  --service NAME        the webhook's Service name
  --namespace NS        the Service's namespace
  --ip IP               an IP SAN (repeatable), e.g. 127.0.0.1 for a webhook reached by URL
  --dns NAME            an extra DNS SAN (repeatable), e.g. localhost
  --days N              serving certificate lifetime in days (default ${DEFAULT_DAYS})
  --bits N              RSA key size: 2048 (default), 3072 or 4096
  --reuse-ca            keep DIR's existing ca.crt/ca.key and issue a new serving certificate
                        from it (rotation without changing the caBundle)
  --ca-bundle-file F    also write the base64 caBundle to F
  --kustomize DIR       also write a kustomize overlay in DIR that installs raykeeper with this
                        certificate (TLS Secret filled, caBundle set): kubectl apply --server-side -k DIR
  --base PATH           the kustomization the overlay builds on (default manifests/default; use
                        manifests/base where KubeRay's CRDs are installed)
`;

const OPTIONS = {
  out: { type: 'string' },
  service: { type: 'string' },
  namespace: { type: 'string' },
  ip: { type: 'string', multiple: true },
  dns: { type: 'string', multiple: true },
  days: { type: 'string' },
  bits: { type: 'string' },
  'reuse-ca': { type: 'boolean' },
  'ca-bundle-file': { type: 'string' },
  kustomize: { type: 'string' },
  base: { type: 'string' },
} as const;

export async function run(argv: string[]): Promise<number> {
  const [verb, ...rest] = argv;
  if (verb === undefined) {
    process.stdout.write(USAGE);
    return 2;
  }
  if (verb.startsWith('-')) {
    const line = parseCommandLine('raykeeper certs', argv, {}, USAGE);
    if (line.kind === 'exit') return finish(line);
  }
  if (verb !== 'generate')
    return finish({ code: 2, stdout: '', stderr: usageError('raykeeper certs', `unknown command ${JSON.stringify(verb)}`) });
  const line = parseCommandLine('raykeeper certs generate', rest, OPTIONS, USAGE);
  if (line.kind === 'exit') return finish(line);
  const { values } = line;
  const missing = (['out', 'service', 'namespace'] as const).filter((k) => !values[k]);
  if (missing.length > 0) {
    process.stderr.write(usageError('raykeeper certs generate', `missing ${missing.map((m) => `--${m}`).join(', ')}`));
    return 2;
  }
  const days = values.days === undefined ? DEFAULT_DAYS : Number(values.days);
  if (!Number.isInteger(days) || days < 1) {
    process.stderr.write(`raykeeper certs generate: --days must be a positive whole number, got ${JSON.stringify(values.days)}\n`);
    return 2;
  }
  const badIp = (values.ip ?? []).find((ip) => isIP(ip) === 0);
  if (badIp !== undefined) {
    process.stderr.write(`raykeeper certs generate: --ip ${JSON.stringify(badIp)} is not an IPv4 or IPv6 address\n`);
    return 2;
  }
  const bits = values.bits === undefined ? 2048 : Number(values.bits);
  if (bits !== 2048 && bits !== 3072 && bits !== 4096) {
    process.stderr.write(`raykeeper certs generate: --bits must be 2048, 3072 or 4096\n`);
    return 2;
  }
  const ca = values['reuse-ca'] ? await readCa(values.out!) : undefined;
  if (values['reuse-ca'] && ca === undefined) {
    process.stderr.write(`raykeeper certs generate: --reuse-ca but ${values.out} has no ca.crt and ca.key\n`);
    return 2;
  }
  const bundle = generateCertificates({
    service: values.service!,
    namespace: values.namespace!,
    ips: values.ip ?? [],
    dnsNames: values.dns ?? [],
    days,
    bits,
    ca,
  });
  const paths = await writeBundle(values.out!, bundle);
  const b64 = caBundle(bundle.caCert);
  if (values['ca-bundle-file']) await writeFile(values['ca-bundle-file'], b64 + '\n');
  if (values.kustomize) {
    const dir = resolve(values.kustomize);
    const base = resolve(values.base ?? join(PACKAGE_ROOT, 'manifests', 'default'));
    await mkdir(dir, { recursive: true });
    for (const file of kustomizeOverlay(dir, base, bundle, values.namespace!)) {
      await writeFile(join(dir, file.name), file.content, { mode: file.mode });
      await chmod(join(dir, file.name), file.mode);
    }
    process.stderr.write(`wrote kustomize overlay ${dir} (kubectl apply --server-side -k ${dir})\n`);
  }
  process.stderr.write(`wrote ${paths.caCert}, ${paths.cert}, ${paths.key}\n`);
  process.stdout.write(`caBundle: ${b64}\n`);
  return 0;
}
