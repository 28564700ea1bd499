// Whether the cleanup walks the keyspace: the pure decision from Ray version sources, as tables.
import t from 'tap';
import { autoSweep, imageRayVersion, imageVersionSource } from '../../src/redis/sweep.ts';
import { mayBeNewer, parseRayVersion } from '../../src/ray-version.ts';
import { RAY_RELEASE } from '../../src/ray-release.ts';

t.test('parseRayVersion: the leading major.minor[.patch], v prefix allowed', async (t) => {
  const table: Array<[unknown, ReturnType<typeof parseRayVersion>]> = [
    ['2.40.0', { major: 2, minor: 40, patch: 0 }],
    ['v2.9.3', { major: 2, minor: 9, patch: 3 }],
    [' 2.53 ', { major: 2, minor: 53, patch: undefined }],
    ['2.9.3-py310-gpu', { major: 2, minor: 9, patch: 3 }],
    ['2.61.0rc1', { major: 2, minor: 61, patch: 0 }],
    ['latest', undefined],
    ['nightly-py310', undefined],
    ['2', undefined],
    ['', undefined],
    [2.4, undefined],
    [undefined, undefined],
  ];
  for (const [text, want] of table) t.same(parseRayVersion(text), want, JSON.stringify(text));
});

t.test('mayBeNewer: a version without a patch may be any patch of its minor', async (t) => {
  const release = parseRayVersion('2.60.0')!;
  const table: Array<[string, boolean]> = [
    ['2.60.0', false],
    ['2.59.9', false],
    ['2.9.3', false],
    ['1.13.1', false],
    ['2.59', false],
    ['2.60.1', true],
    ['2.61.0', true],
    ['3.0.0', true],
    ['2.60', true],
    ['2.100.0', true],
  ];
  for (const [v, want] of table) t.equal(mayBeNewer(parseRayVersion(v)!, release), want, `${v} vs 2.60.0`);
});

t.test("imageRayVersion: the tag of Ray's images only (rayproject/*, ray, ray-ml, ray-llm)", async (t) => {
  const table: Array<[unknown, string | undefined]> = [
    ['rayproject/ray:2.40.0', '2.40.0'],
    ['rayproject/ray:2.9.3-py310-gpu', '2.9.3-py310-gpu'],
    ['rayproject/ray-ml:2.9.3-gpu', '2.9.3-gpu'],
    ['docker.io/rayproject/ray:2.60.0', '2.60.0'],
    ['registry.example:5000/mirror/ray:2.61.0', '2.61.0'],
    ['rayproject/ray@sha256:0123abcd', undefined],
    ['rayproject/ray:2.40.0@sha256:0123abcd', '2.40.0'],
    ['rayproject/ray-llm:2.46.0', '2.46.0'],
    ['myorg/ray-base:1.4.0', undefined],
    ['myorg/raytrainer:2.9.0', undefined],
    ['rayproject/custom-trainer:2.9.0', '2.9.0'],
    ['rayproject/ray', undefined],
    ['registry.example:5000/rayproject/ray', undefined],
    ['rayproject/ray:latest', undefined],
    ['rayproject/ray:nightly-py310', undefined],
    ['example.com/trainer:1.2.3', undefined],
    ['example.com/array:2.0.0', undefined],
    [undefined, undefined],
  ];
  for (const [image, want] of table) t.equal(imageRayVersion(image), want, String(image));
});

t.test(`autoSweep: skip only when a version is known and none may be newer than ${RAY_RELEASE}`, async (t) => {
  const src = (rayVersion?: string, image?: string) => [{ from: 'spec.rayVersion', version: rayVersion }, imageVersionSource(image)];
  const table: Array<[string, ReturnType<typeof src>, 'always' | 'never', RegExp]> = [
    ['rayVersion 2.40.0', src('2.40.0'), 'never', /^Ray 2\.40\.0 \(spec\.rayVersion\) <= 2\.60\.0: tables known$/],
    ['image tag 2.60.0', src(undefined, 'rayproject/ray:2.60.0'), 'never', /^Ray 2\.60\.0 \(head image tag\) <= 2\.60\.0: tables known$/],
    ['both known: the higher is named', src('2.40.0', 'rayproject/ray:2.60.0'), 'never', /^Ray 2\.60\.0 \(head image tag\) <= /],
    ['old Ray (old layout: the hash <ns>)', src('1.13.0'), 'never', /^Ray 1\.13\.0 /],
    ['rayVersion 2.61.0', src('2.61.0'), 'always', /^Ray 2\.61\.0 \(spec\.rayVersion\) > 2\.60\.0: tables may be new$/],
    ['patch release 2.60.1', src('2.60.1'), 'always', /^Ray 2\.60\.1 /],
    ['2.60 without a patch', src('2.60'), 'always', /^Ray 2\.60 \(spec\.rayVersion\) may be newer than 2\.60\.0/],
    [
      'old rayVersion, newer image: any newer source sweeps',
      src('2.40.0', 'rayproject/ray:2.61.0'),
      'always',
      /^Ray 2\.61\.0 \(head image tag\) > /,
    ],
    ['newer rayVersion, old image', src('3.0.0', 'rayproject/ray:2.40.0'), 'always', /^Ray 3\.0\.0 \(spec\.rayVersion\) > /],
    ['no version anywhere', src(), 'always', /^Ray version unknown \(nothing in spec\.rayVersion, head image tag\): tables may be new$/],
    ['digest only', src(undefined, 'rayproject/ray@sha256:0123abcd'), 'always', /^a Ray image without a version \(head image tag\)/],
    ['a non-Ray image tag is not a Ray version', src(undefined, 'example.com/trainer:1.2.3'), 'always', /^Ray version unknown/],
    ['rayVersion not a version, image known', src('latest', 'rayproject/ray:2.9.3-py310-gpu'), 'never', /^Ray 2\.9\.3 \(head image tag\)/],
    ['stale rayVersion, Ray image latest', src('2.9.0', 'myregistry/ray:latest'), 'always', /^a Ray image without a version/],
    ['stale rayVersion, nightly Ray image', src('2.46.0', 'rayproject/ray:nightly-py311'), 'always', /^a Ray image without a version/],
    ['rayVersion, Ray image without a tag', src('2.40.0', 'rayproject/ray'), 'always', /^a Ray image without a version/],
    ['rayVersion, digest-pinned Ray image', src('2.40.0', 'rayproject/ray@sha256:0123abcd'), 'always', /^a Ray image without a version/],
    [
      'rayVersion beside a custom image: the declared version counts',
      src('2.9.0', 'mycorp/train:1.2.3'),
      'never',
      /^Ray 2\.9\.0 \(spec\.rayVersion\)/,
    ],
    ['a ray-* image that is not Ray is no version', src(undefined, 'myorg/ray-base:1.4.0'), 'always', /^Ray version unknown/],
  ];
  for (const [name, sources, mode, reason] of table) {
    const d = autoSweep(sources, '2.60.0');
    t.equal(d.mode, mode, `${name}: ${mode}`);
    t.match(d.reason, reason, `${name}: ${d.reason}`);
  }
  t.equal(
    autoSweep([{ from: '--ray-version', version: RAY_RELEASE }]).mode,
    'never',
    'the default release is the one the tables were read from',
  );
  t.throws(() => autoSweep([], 'next'), /not a Ray release/);
});
