// Records the AdmissionReviews a real kube-apiserver sends our webhook, byte for byte, into
// bench/reviews/<shape>.json (bench/reviews.ts says which). A local control plane (localcluster) calls a
// recording HTTPS server registered with our MutatingWebhookConfiguration (it answers "allowed", no
// patch) while kubectl sends each sample.
//
//   node bench/capture-reviews.ts          (~30 s with the control plane binaries built)
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:https';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { caBundle, generateCertificates } from '../certs/generate.ts';
import { applyObject } from '../localcluster/apply.ts';
import { REPO_ROOT, requireKubeCommand } from '../localcluster/binaries.ts';
import { startControlPlane } from '../localcluster/control-plane.ts';
import { localWebhookConfiguration, readWebhookConfigurationManifest } from '../localcluster/webhook-config.ts';
import { KubeClient } from '../src/kube.ts';
import { sleep } from '../src/backoff.ts';
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
    await applyObject(new KubeClient(cp.kubeConfig()), localWebhookConfiguration(manifest, { baseUrl: `https://127.0.0.1:${port}`, caBundle: caBundle(bundle.caCert) }));
    const kubeconfig = join(cp.info.dir, 'kubeconfig');
    for (const { shape, verb, sample } of RECORDED_REVIEWS) {
      // The API server picks the new configuration up within a second or so; until then it calls nobody.
      for (let attempt = 0; ; attempt++) {
        const before = received.length;
        // Asynchronous: the recording server must answer while kubectl waits.
        await promisify(execFile)(kubectl, ['--kubeconfig', kubeconfig, '--namespace', 'default', verb, '-f', join(REPO_ROOT, 'manifests', 'samples', sample)]);
        const body = received[before];
        if (body !== undefined) {
          await writeFile(reviewFile(shape), body);
          say(`${shape}: ${Buffer.byteLength(body)} bytes -> ${reviewFile(shape)}`);
          break;
        }
        if (attempt === 10) throw new Error(`the API server did not call the webhook for ${verb} ${sample}`);
        await promisify(execFile)(kubectl, ['--kubeconfig', kubeconfig, '--namespace', 'default', 'delete', '-f', join(REPO_ROOT, 'manifests', 'samples', sample)]);
        await sleep(1000);
      }
    }
  } finally {
    server.close();
    await cp.stop();
  }
}

if (resolve(process.argv[1] ?? '') === fileURLToPath(import.meta.url)) await capture();
