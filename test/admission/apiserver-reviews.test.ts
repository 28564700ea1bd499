// The AdmissionReviews a real kube-apiserver sent our webhook (bench/reviews.ts, recorded by
// bench/capture-reviews.ts), defaulted as the webhook does: the exact patch, the answer's uid, and the
// object the API server stores once it applies the patch (an independent RFC 6902 applier). The
// recordings must still be of today's samples, or the benchmark measures something else.
import t from 'tap';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { applyPatch } from 'rfc6902';
import { mutate } from '../../src/admission/mutate.ts';
import type { JsonObject } from '../../kube/model.ts';
import { parseManifests } from '../../localcluster/apply.ts';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { recordedReview, RECORDED_REVIEWS, type RecordedShape } from '../../bench/reviews.ts';
import { decodePatch } from '../webhook/helpers.ts';
import { FINALIZER } from './fixtures.ts';

const NAMESPACE = '0b0c7b1e-5a3e-4f7e-9d8a-2c6f1e4b9a10';

const EXPECTED_PATCH: Record<RecordedShape, unknown[]> = {
  // Options form: the namespace goes into spec.gcsFaultToleranceOptions; annotations exist (last-applied).
  'kubectl-apply': [
    { op: 'add', path: '/metadata/finalizers', value: [FINALIZER] },
    { op: 'add', path: '/spec/gcsFaultToleranceOptions/externalStorageNamespace', value: NAMESPACE },
  ],
  // Annotation form: the namespace goes into the annotations next to ray.io/ft-enabled.
  'kubectl-create': [
    { op: 'add', path: '/metadata/finalizers', value: [FINALIZER] },
    { op: 'add', path: '/metadata/annotations/ray.io~1external-storage-namespace', value: NAMESPACE },
  ],
};

for (const { shape, sample } of RECORDED_REVIEWS) {
  t.test(shape, async (t) => {
    const body = JSON.parse(recordedReview(shape)) as { request: { uid: string; operation: string; object: JsonObject } };
    const object = body.request.object;
    const metadata = object.metadata as JsonObject;
    t.equal(body.request.operation, 'CREATE');
    t.ok(metadata.managedFields, 'the recording carries the managedFields the API server adds');
    const [manifest] = parseManifests(await readFile(join(REPO_ROOT, 'manifests', 'samples', sample), 'utf8'));
    t.equal(metadata.name, manifest?.metadata?.name, `a recording of ${sample}`);
    t.same(object.spec, manifest?.spec, `the spec of today's ${sample} (else: node bench/capture-reviews.ts)`);

    const outcome = mutate(body, 'RayCluster', { newStorageNamespace: () => NAMESPACE, finalizerEnabled: true });
    t.equal(outcome.httpStatus, 200);
    t.equal(outcome.answer.response.uid, body.request.uid, 'the answer names the request uid');
    const patch = decodePatch(outcome.answer.response.patch);
    t.same(patch, EXPECTED_PATCH[shape]);

    const stored = structuredClone(object);
    t.same(
      applyPatch(stored, patch as never).filter((r) => r !== null),
      [],
      'the patch applies',
    );
    t.same(outcome.defaulted, stored, 'the object `raykeeper mutate` prints is the one the API server stores');
  });
}
