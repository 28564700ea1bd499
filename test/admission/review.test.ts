// AdmissionReview parsing: every malformed input is a clear error, with the uid whenever it was readable.
import t from 'tap';
import { parseAdmissionReview } from '../../src/admission/review.ts';
import { rayCluster, review } from './fixtures.ts';

const UID = 'e911857d-c318-11e8-bbad-025000000001';

t.test('a well-formed CREATE parses into a typed request', async (t) => {
  const body = review('RayCluster', 'CREATE', rayCluster(), undefined, { dryRun: true, subResource: '' });
  const parsed = parseAdmissionReview(body);
  t.ok(parsed.ok);
  if (!parsed.ok) return;
  t.equal(parsed.request.uid, UID);
  t.equal(parsed.request.apiVersion, 'admission.k8s.io/v1');
  t.same(parsed.request.kind, { group: 'ray.io', version: 'v1', kind: 'RayCluster' });
  t.equal(parsed.request.operation, 'CREATE');
  t.equal(parsed.request.dryRun, true);
  t.equal(parsed.request.subResource, undefined, 'an empty subResource is the main resource');
  t.equal(parsed.request.namespace, 'ray');
  t.same(parsed.request.object, rayCluster());
  t.equal(parsed.request.oldObject, null);
});

t.test('v1beta1 is accepted and echoed', async (t) => {
  const body = { ...review('RayCluster', 'CREATE', rayCluster()), apiVersion: 'admission.k8s.io/v1beta1' };
  const parsed = parseAdmissionReview(body);
  t.ok(parsed.ok && parsed.request.apiVersion === 'admission.k8s.io/v1beta1');
});

t.test('DELETE needs no object; UPDATE needs both', async (t) => {
  t.ok(parseAdmissionReview(review('RayCluster', 'DELETE', null, rayCluster())).ok, 'DELETE with object null');
  t.ok(parseAdmissionReview(review('RayCluster', 'CONNECT', undefined)).ok, 'CONNECT without object');
  t.ok(parseAdmissionReview(review('RayCluster', 'UPDATE', rayCluster(), rayCluster())).ok, 'UPDATE with both');
});

t.test('bad inputs', async (t) => {
  const good = review('RayCluster', 'CREATE', rayCluster());
  const rows: Array<[string, unknown, RegExp, string | undefined, string?]> = [
    ['not an object', 'hello', /AdmissionReview JSON object/, undefined],
    ['an array', [good], /AdmissionReview JSON object/, undefined],
    ['null', null, /AdmissionReview JSON object/, undefined],
    ['wrong apiVersion', { ...good, apiVersion: 'admission.k8s.io/v2' }, /apiVersion must be one of/, UID],
    ['no apiVersion', { ...good, apiVersion: undefined }, /apiVersion must be one of/, UID],
    ['wrong kind', { ...good, kind: 'Pod' }, /kind must be AdmissionReview/, UID],
    ['wrong kind, no uid', { ...good, kind: 'Pod', request: { uid: 7 } }, /kind must be AdmissionReview/, undefined],
    ['missing request', { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' }, /no request object/, undefined],
    ['request not an object', { ...good, request: 'x' }, /no request object/, undefined],
    ['missing uid', review('RayCluster', 'CREATE', rayCluster(), undefined, { uid: undefined as never }), /request\.uid/, undefined],
    ['empty uid', review('RayCluster', 'CREATE', rayCluster(), undefined, { uid: '' }), /request\.uid/, undefined],
    ['numeric uid', review('RayCluster', 'CREATE', rayCluster(), undefined, { uid: 7 }), /request\.uid/, undefined],
    ['missing kind', review('RayCluster', 'CREATE', rayCluster(), undefined, { kind: null }), /request\.kind/, UID],
    ['unknown operation', review('RayCluster', 'PATCH', rayCluster()), /request\.operation/, UID],
    ['object missing on CREATE', review('RayCluster', 'CREATE', undefined), /request\.object .* got nothing/, UID],
    ['object a string', review('RayCluster', 'CREATE', 'x'), /request\.object .* got a string/, UID],
    ['object an array', review('RayCluster', 'CREATE', []), /request\.object .* got an array/, UID],
    ['object null on UPDATE', review('RayCluster', 'UPDATE', null, rayCluster()), /request\.object .* got null/, UID],
    ['oldObject missing on UPDATE', review('RayCluster', 'UPDATE', rayCluster()), /request\.oldObject/, UID],
  ];
  for (const [name, body, message, uid] of rows) {
    const parsed = parseAdmissionReview(body);
    t.notOk(parsed.ok, `${name}: refused`);
    if (parsed.ok) continue;
    t.match(parsed.error.message, message, `${name}: message`);
    t.equal(parsed.error.uid, uid, `${name}: uid ${uid === undefined ? 'unknown' : 'kept'}`);
    t.equal(parsed.error.code, 400, `${name}: 400`);
  }
});

t.test('an error keeps the request apiVersion when it was valid', async (t) => {
  const body = { ...review('RayCluster', 'CREATE', undefined), apiVersion: 'admission.k8s.io/v1beta1' };
  const parsed = parseAdmissionReview(body);
  t.ok(!parsed.ok && parsed.error.apiVersion === 'admission.k8s.io/v1beta1');
});
