// The AdmissionReviews a real kube-apiserver (v1.35) sent our webhook, recorded byte for byte by
// bench/capture-reviews.ts into bench/reviews/<shape>.json. The webhook benchmark sends them, and
// test/admission/apiserver-reviews.test.ts defaults them.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REVIEWS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'reviews');

/** Each recorded review: the kubectl verb and the sample (manifests/samples) it sent. */
export const RECORDED_REVIEWS = [
  // Our sample like KubeRay's ray-cluster.external-redis.yaml (options form): managedFields and the
  // last-applied-configuration annotation included, as the API server and kubectl add them.
  { shape: 'kubectl-apply', verb: 'apply', sample: 'raycluster-gcs-ft.yaml' },
  // The annotation form, created: managedFields, no last-applied-configuration.
  { shape: 'kubectl-create', verb: 'create', sample: 'raycluster-gcs-ft-annotation.yaml' },
] as const;
export type RecordedShape = (typeof RECORDED_REVIEWS)[number]['shape'];

export function reviewFile(shape: RecordedShape): string {
  return join(REVIEWS_DIR, `${shape}.json`);
}

/** The recorded body, as the API server sent it. */
export function recordedReview(shape: RecordedShape): string {
  return readFileSync(reviewFile(shape), 'utf8');
}
