// answerJson writes the answer's JSON by hand (the webhook sends that text): it must be exactly what
// JSON.stringify gives for every answer shape, including text that needs escaping.
import t from 'tap';
import { allowed, answerJson, denied, encodePatch, type AdmissionReviewAnswer } from '../../src/admission/response.ts';
import type { PatchOperation } from '../../src/admission/patch.ts';
import { jsonText } from '../../src/admission/json.ts';
import type { Json } from '../../kube/model.ts';

const ops: PatchOperation[] = [
  { op: 'add', path: '/metadata/finalizers', value: ['ray.io/gcs-ft-redis-cleanup-finalizer'] },
  { op: 'replace', path: '/metadata/annotations/ray.io~1external-storage-namespace', value: 'ns "quoted" \\ ünï \u2028 \u0000' },
];

const rows: Array<[string, AdmissionReviewAnswer]> = [
  ['allowed, no patch', allowed('admission.k8s.io/v1', 'uid-1')],
  ['allowed, v1beta1', allowed('admission.k8s.io/v1beta1', 'uid-2')],
  ['allowed with a patch', allowed('admission.k8s.io/v1', 'uid-3', ops)],
  [
    'allowed with an ASCII patch',
    allowed('admission.k8s.io/v1', 'uid-3a', [{ op: 'add', path: '/status', value: { jobDeploymentStatus: 'New' } }]),
  ],
  ['allowed with a patch and warnings', allowed('admission.k8s.io/v1', 'uid-4', ops, ['both "modes" set', 'line\nbreak', '\u{1F600}'])],
  ['allowed with warnings only', allowed('admission.k8s.io/v1', 'uid-5', [], ['w'])],
  ['denied with a uid', denied('admission.k8s.io/v1', 'uid-6', 400, 'object.metadata.annotations["a\\"b"] must be a string')],
  ['denied without a uid', denied('admission.k8s.io/v1', undefined, 413, 'too large')],
  ['denied, odd uid and message', denied('admission.k8s.io/v1beta1', '"\\\u0001</script>', 500, 'internal error: \t\r\n\ud800')],
];

for (const [name, answer] of rows) {
  t.test(name, async (t) => {
    const text = answerJson(answer);
    t.equal(text, JSON.stringify(answer));
    t.same(JSON.parse(text), answer);
  });
}

t.test('the patch in the text decodes to the operations', async (t) => {
  const parsed = JSON.parse(answerJson(allowed('admission.k8s.io/v1', 'u', ops))) as AdmissionReviewAnswer;
  t.same(JSON.parse(Buffer.from(parsed.response.patch ?? '', 'base64').toString('utf8')), ops);
});

t.test('encodePatch is base64 of the UTF-8 JSON, ASCII or not', async (t) => {
  const rows: Array<[string, PatchOperation[]]> = [
    ['ASCII (the native path)', [{ op: 'add', path: '/status', value: { jobDeploymentStatus: 'New' } }]],
    ['Latin-1 letters (two UTF-8 bytes each)', [{ op: 'add', path: '/metadata/annotations/x', value: 'ünï ÿ' }]],
    ['beyond Latin-1', ops],
    ['astral', [{ op: 'replace', path: '/metadata/annotations/e', value: '\u{1F600}' }]],
  ];
  for (const [name, patch] of rows) {
    t.equal(encodePatch(patch), Buffer.from(JSON.stringify(patch), 'utf8').toString('base64'), name);
  }
});

t.test('jsonText is JSON.stringify for every kind of string and value', async (t) => {
  const values: Json[] = [
    '',
    'plain',
    '705ab4f5-6393-11e8-b7cc-42010a800002',
    '/metadata/annotations/ray.io~1external-storage-namespace',
    'quote "x"',
    'back\\slash',
    'nul \u0000',
    'unit sep \u001f',
    'space ~ and del \u007f',
    'ünï',
    'line \u2028 sep',
    'lone \ud800 surrogate',
    'astral \u{1F600}',
    '</script>',
    0,
    -1.5,
    true,
    false,
    null,
    ['a', 'b"'],
    { k: 'v', n: [1, { x: null }] },
    [],
  ];
  // Named in ASCII: a raw U+2028 in a test name would break the TAP stream.
  const name = (v: Json) => JSON.stringify(v).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  for (const value of values) t.equal(jsonText(value), JSON.stringify(value), name(value));
});
