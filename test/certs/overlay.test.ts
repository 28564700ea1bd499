// `raykeeper certs generate --kustomize DIR`: an overlay whose render carries the certificate and caBundle.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { requireKubeCommand } from '../../localcluster/binaries.ts';

const BIN = fileURLToPath(new URL('../../bin/raykeeper.js', import.meta.url));

t.test('the overlay installs raykeeper with the generated certificate', async (t) => {
  const dir = t.testdir();
  const overlay = join(dir, 'overlay');
  const gen = spawnSync(
    process.execPath,
    [
      BIN,
      'certs',
      'generate',
      '--out',
      join(dir, 'certs'),
      '--service',
      'raykeeper-webhook',
      '--namespace',
      'raykeeper-system',
      '--kustomize',
      overlay,
    ],
    { encoding: 'utf8' },
  );
  t.equal(gen.status, 0, gen.stderr);
  t.equal(statSync(join(overlay, 'webhook-tls-secret.yaml')).mode & 0o777, 0o600, 'the file holding the key is 0600');

  const rendered = spawnSync(requireKubeCommand('kubectl'), ['kustomize', overlay], { encoding: 'utf8' });
  t.equal(rendered.status, 0, rendered.stderr);
  const objects = parseAllDocuments(rendered.stdout).map(
    (d) =>
      d.toJSON() as {
        kind: string;
        metadata: { name: string };
        data?: Record<string, string>;
        webhooks?: Array<{ clientConfig: { caBundle: string } }>;
      },
  );
  const ca = readFileSync(join(dir, 'certs', 'ca.crt'), 'utf8');
  const secret = objects.find((o) => o.kind === 'Secret' && o.metadata.name === 'raykeeper-webhook-tls');
  t.equal(Buffer.from(secret?.data?.['tls.crt'] ?? '', 'base64').toString(), readFileSync(join(dir, 'certs', 'tls.crt'), 'utf8'));
  t.equal(Buffer.from(secret?.data?.['tls.key'] ?? '', 'base64').toString(), readFileSync(join(dir, 'certs', 'tls.key'), 'utf8'));
  for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
    const config = objects.find((o) => o.kind === kind);
    t.equal(config?.webhooks?.length, 3, `${kind}: three webhooks`);
    for (const hook of config?.webhooks ?? [])
      t.equal(Buffer.from(hook.clientConfig.caBundle, 'base64').toString(), ca, `${kind}: caBundle is our CA`);
  }
  t.ok(
    objects.some((o) => o.kind === 'CustomResourceDefinition'),
    'default base includes the CRDs',
  );
  t.ok(
    objects.some((o) => o.kind === 'Deployment'),
    'and the Deployments',
  );
});
