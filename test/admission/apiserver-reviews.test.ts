// The AdmissionReviews a real kube-apiserver sent our webhook (bench/reviews.ts, recorded by
// bench/capture-reviews.ts), defaulted as the webhook does: the exact patch, the answer's uid, and the
// object the API server stores once it applies the patch (an independent RFC 6902 applier).
import t from 'tap';
import { applyPatch } from 'rfc6902';
import { mutate } from '../../src/admission/mutate.ts';
import type { JsonObject } from '../../src/types.ts';
import { recordedReview, RECORDED_REVIEWS, type RecordedShape } from '../../bench/reviews.ts';
import { FINALIZER, FT, NS_ANNOTATION } from './fixtures.ts';

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
    { op: 'add', path: `/metadata/annotations/${NS_ANNOTATION.replace('/', '~1')}`, value: NAMESPACE },
  ],
};

for (const { shape } of RECORDED_REVIEWS) {
  t.test(shape, async (t) => {
    const body = JSON.parse(recordedReview(shape)) as { request: { uid: string; object: JsonObject } };
    const object = body.request.object;
    t.ok((object.metadata as JsonObject).managedFields, 'the recording carries the managedFields the API server adds');

    const outcome = mutate(body, 'RayCluster', { newStorageNamespace: () => NAMESPACE, finalizerEnabled: true });
    t.equal(outcome.httpStatus, 200);
    t.equal(outcome.answer.response.uid, body.request.uid, 'the answer names the request uid');
    const patch = JSON.parse(Buffer.from(outcome.answer.response.patch ?? '', 'base64').toString('utf8')) as unknown[];
    t.same(patch, EXPECTED_PATCH[shape]);

    const stored = structuredClone(object);
    t.same(applyPatch(stored, patch as never).filter((r) => r !== null), [], 'the patch applies');
    const meta = stored.metadata as JsonObject;
    t.same(meta.finalizers, [FINALIZER]);
    const pinned = shape === 'kubectl-create' ? (meta.annotations as JsonObject)[NS_ANNOTATION] : ((stored.spec as JsonObject).gcsFaultToleranceOptions as JsonObject).externalStorageNamespace;
    t.equal(pinned, NAMESPACE);
    if (shape === 'kubectl-create') t.equal((meta.annotations as JsonObject)[FT], 'true', 'the user annotation is kept');
    t.same(meta.managedFields, (object.metadata as JsonObject).managedFields, 'managedFields untouched');
    t.same(outcome.defaulted, stored, 'the object raykeeper mutate prints is the one the API server stores');
  });
}
