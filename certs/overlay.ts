// A kustomize overlay that installs raykeeper with a generated certificate: the TLS Secret filled and
// the caBundle of every webhook (mutating and validating) set. Pure: returns file names and contents; certs/cli.ts writes them.
import { relative } from 'node:path';
import { stringify } from 'yaml';
import { caBundle, type CertificateBundle } from './generate.ts';

export const WEBHOOK_CONFIGURATION_NAME = 'raykeeper';
export const WEBHOOK_TLS_SECRET = 'raykeeper-webhook-tls';
/** Webhooks per configuration: raycluster, rayjob and raycronjob, in the MutatingWebhookConfiguration and the ValidatingWebhookConfiguration. */
export const WEBHOOK_COUNT = 3;
export const WEBHOOK_CONFIGURATION_KINDS = ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'] as const;

export interface OverlayFile {
  name: string;
  content: string;
  /** 0600 for files holding a private key. */
  mode: number;
}

/** `base` is the kustomization the overlay builds on (manifests/default, or manifests/base with KubeRay's CRDs). */
export function kustomizeOverlay(overlayDir: string, base: string, bundle: CertificateBundle, namespace: string): OverlayFile[] {
  const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: WEBHOOK_TLS_SECRET, namespace },
    type: 'kubernetes.io/tls',
    data: { 'tls.crt': b64(bundle.cert), 'tls.key': b64(bundle.key) },
  };
  const caPatch = Array.from({ length: WEBHOOK_COUNT }, (_, i) => ({
    op: 'replace',
    path: `/webhooks/${i}/clientConfig/caBundle`,
    value: caBundle(bundle.caCert),
  }));
  const kustomization = {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    resources: [relative(overlayDir, base) || '.'],
    patches: [
      { path: 'webhook-tls-secret.yaml' },
      ...WEBHOOK_CONFIGURATION_KINDS.map((kind) => ({
        target: { group: 'admissionregistration.k8s.io', version: 'v1', kind, name: WEBHOOK_CONFIGURATION_NAME },
        path: 'webhook-ca-bundle.yaml',
      })),
    ],
  };
  const header = '# Written by `raykeeper certs generate --kustomize`. Apply: kubectl apply --server-side -k <this dir>\n';
  return [
    { name: 'kustomization.yaml', content: header + stringify(kustomization), mode: 0o644 },
    {
      name: 'webhook-tls-secret.yaml',
      content: '# Holds the webhook private key: keep it out of version control.\n' + stringify(secret),
      mode: 0o600,
    },
    { name: 'webhook-ca-bundle.yaml', content: stringify(caPatch), mode: 0o644 },
  ];
}
