// Records the AdmissionReviews a real kube-apiserver sends our webhook, byte for byte, into
// bench/reviews/<shape>.json (bench/reviews.ts says which). A local control plane (localcluster) calls a
// recording HTTPS server registered with our MutatingWebhookConfiguration (it answers "allowed", no
// patch) while kubectl sends each sample.
//
//   node bench/capture-reviews.ts          (~30 s with the control plane binaries built)
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:https';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { caBundle, generateCertificates } from '../certs/generate.ts';
import { applyObject } from '../localcluster/apply.ts';
import { REPO_ROOT, requireKubeCommand } from '../localcluster/binaries.ts';
import { startControlPlane } from '../localcluster/control-plane.ts';
import { localWebhookConfiguration, readWebhookConfigurationManifest } from '../localcluster/webhook-config.ts';
import { KubeClient } from '../kube/client.ts';
import { run } from '../localcluster/node/host.ts';
import { until } from '../test/helpers/until.ts';
import { RECORDED_REVIEWS, reviewFile } from './reviews.ts';

async function capture(): Promise<void> {
  const kubectl = requireKubeCommand('kubectl');
  const say = (m: string) => process.stderr.write(`${m}\n`);
  const cp = await startControlPlane({ onProgress: say });
  const received: string[] = [];
  const bundle = generateCertificates({ service: 'raykeeper-webhook', namespace: 'raykeeper-system', ips: ['127.0.0.1'] });
  const server = createServer({ cert: bundle.cert, key: bundle.key }, (req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      received.push(body);
      const uid = (JSON.parse(body) as { request: { uid: string } }).request.uid;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid, allowed: true } }));
    });
  });
  try {
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    const port = (server.address() as { port: number }).port;
    const manifest = await readWebhookConfigurationManifest();
    const configuration = localWebhookConfiguration(manifest, { baseUrl: `https://127.0.0.1:${port}`, caBundle: caBundle(bundle.caCert) });
    await applyObject(new KubeClient(cp.kubeConfig()), configuration);
    const kubectlFlags = ['--kubeconfig', cp.info.kubeconfigPath, '--namespace', 'default'];
    for (const { shape, verb, sample } of RECORDED_REVIEWS) {
      const file = join(REPO_ROOT, 'manifests', 'samples', sample);
      // The API server calls webhooks once it has seen their configuration (a second or so): server-side
      // dry runs (the webhook has no side effects) until one reaches the recorder; their reviews are dropped.
      await until(
        async () => {
          const before = received.length;
          await run(kubectl, [...kubectlFlags, 'create', '--dry-run=server', '-f', file]);
          return received.length > before;
        },
        'the API server to call the recording webhook (failurePolicy Ignore: a TLS or CA failure looks the same; see its log)',
        30_000,
        200,
      );
      const before = received.length;
      await run(kubectl, [...kubectlFlags, verb, '-f', file]);
      const body = received[before];
      if (body === undefined) throw new Error(`the API server did not call the webhook for kubectl ${verb} ${sample}`);
      await writeFile(reviewFile(shape), body);
      say(`${shape}: ${Buffer.byteLength(body)} bytes -> ${reviewFile(shape)}`);
    }
  } finally {
    server.close();
    await cp.stop();
  }
}

if (resolve(process.argv[1] ?? '') === fileURLToPath(import.meta.url)) await capture();
