// The API server calls a mutating webhook at https://127.0.0.1:PORT (certificate from our certs tooling,
// IP SAN 127.0.0.1, caBundle in the configuration) and applies its patch: the TLS path the real webhook
// uses in the end-to-end test and in `raykeeper dev`. The webhook here is a tiny stand-in.
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { caBundle, generateCertificates } from '../../certs/generate.ts';
import { JSON_PATCH, type KubeApiError } from '../../kube/client.ts';
import { MUTATING_WEBHOOK_CONFIGURATIONS } from '../../kube/resources.ts';
import { RAYCLUSTERS, type RayCluster } from '../../src/types.ts';
import { testNamespace } from '../helpers/control-plane.ts';
import { sleep } from '../../kube/backoff.ts';

interface Review {
  apiVersion: string;
  kind: string;
  request: {
    uid: string;
    operation: string;
    kind: { kind: string };
    namespace: string;
    object: { metadata: { annotations?: Record<string, string> } };
  };
}

t.test('the API server calls an HTTPS webhook on 127.0.0.1 and applies its patch', async (t) => {
  const ns = await testNamespace(t);
  const certs = generateCertificates({ service: 'stand-in', namespace: ns.name, ips: ['127.0.0.1'] });
  const seen: Review[] = [];
  const server = createServer({ cert: certs.cert, key: certs.key, minVersion: 'TLSv1.2' }, (req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      const review = JSON.parse(body) as Review;
      seen.push(review);
      const patch = review.request.object.metadata.annotations
        ? [{ op: 'add', path: '/metadata/annotations/stand-in~1patched', value: 'yes' }]
        : [{ op: 'add', path: '/metadata/annotations', value: { 'stand-in/patched': 'yes' } }];
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          apiVersion: review.apiVersion,
          kind: 'AdmissionReview',
          response: {
            uid: review.request.uid,
            allowed: true,
            patchType: 'JSONPatch',
            patch: Buffer.from(JSON.stringify(patch)).toString('base64'),
          },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  const port = (server.address() as AddressInfo).port;

  const name = `stand-in-${ns.name}`;
  const config = MUTATING_WEBHOOK_CONFIGURATIONS.at(undefined, name);
  const rayclusters = RAYCLUSTERS.at(ns.name);
  await ns.kube.create(config, {
    metadata: { name },
    webhooks: [
      {
        name: 'stand-in.raykeeper.test',
        admissionReviewVersions: ['v1'],
        sideEffects: 'None',
        timeoutSeconds: 10,
        failurePolicy: 'Fail', // a TLS or network failure must show as an error here, not be ignored
        clientConfig: { url: `https://127.0.0.1:${port}/mutate`, caBundle: caBundle(certs.caCert) },
        rules: [{ apiGroups: ['ray.io'], apiVersions: ['v1'], resources: ['rayclusters'], operations: ['CREATE'], scope: 'Namespaced' }],
        // Only this test's namespace: the control plane is shared with other test files.
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns.name } },
      },
    ],
  });
  t.teardown(() => ns.kube.delete(config));

  const cluster = {
    apiVersion: 'ray.io/v1',
    kind: 'RayCluster',
    metadata: { name: 'rc' },
    spec: { headGroupSpec: { template: { spec: { containers: [{ name: 'ray-head', image: 'rayproject/ray:2.46.0' }] } } } },
  };
  // A new webhook configuration takes a moment to reach the admission chain: retry until it is called.
  let stored: RayCluster | undefined;
  for (let i = 0; i < 100 && seen.length === 0; i++) {
    stored = await ns.kube.create(rayclusters, { ...cluster, metadata: { name: `rc-${i}` } });
    if (seen.length === 0) await sleep(100);
  }
  t.ok(seen.length > 0, 'the webhook was called over TLS');
  t.equal(seen[0]!.apiVersion, 'admission.k8s.io/v1');
  t.equal(seen[0]!.request.operation, 'CREATE');
  t.equal(seen[0]!.request.kind.kind, 'RayCluster');
  t.equal(seen[0]!.request.namespace, ns.name);
  t.equal(seen[0]!.request.object.metadata.annotations, undefined, 'the object arrived with metadata.annotations absent');
  t.same(stored!.metadata.annotations, { 'stand-in/patched': 'yes' }, 'the API server applied the patch');

  // With a caBundle that does not match, the call fails: the TLS is really verified.
  const other = generateCertificates({ service: 'other', namespace: ns.name });
  await ns.kube.patch(config, [{ op: 'replace', path: '/webhooks/0/clientConfig/caBundle', value: caBundle(other.caCert) }], JSON_PATCH);
  let refused: KubeApiError | undefined;
  for (let i = 0; i < 100 && !refused; i++) {
    refused = await ns.kube.create(rayclusters, { ...cluster, metadata: { name: `wrong-ca-${i}` } }).then(
      () => undefined,
      (err: KubeApiError) => err,
    );
    if (!refused) await sleep(100);
  }
  t.ok(refused, 'a wrong caBundle makes the call fail (failurePolicy Fail refuses the object)');
  t.match(refused!.message, /certificate|x509|tls/i);
});
