// `raykeeper mutate --check` on objects named by generateName: the API server names them after the
// mutating webhooks and before the validating ones, so the offline check validates the generated name
// (webhook/offline.ts named), never the missing one.
import t from 'tap';
import { mutateDocument, named, readDocuments, type DocumentResult } from '../../webhook/offline.ts';
import { counterNamespaces } from '../admission/fixtures.ts';

function check(yaml: string): DocumentResult {
  const [doc] = readDocuments('in.yaml', yaml);
  if (doc === undefined || !('value' in doc)) throw new Error('the manifest did not parse');
  return mutateDocument(doc, doc.value, { newStorageNamespace: counterNamespaces(), finalizerEnabled: true });
}

const head = '{headGroupSpec: {rayStartParams: {}, template: {spec: {containers: [{name: ray-head, image: "rayproject/ray:2.46.0"}]}}}}';
const rayJob = (meta: string) =>
  `apiVersion: ray.io/v1\nkind: RayJob\nmetadata: ${meta}\nspec: {entrypoint: "python -c 1", rayClusterSpec: ${head}}\n`;
const cronJob = (meta: string) =>
  `apiVersion: ray.io/v1\nkind: RayCronJob\nmetadata: ${meta}\nspec: {schedule: "@daily", jobTemplate: {entrypoint: x, rayClusterSpec: ${head}}}\n`;
const cluster = (meta: string) => `apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: ${meta}\nspec: ${head}\n`;

t.test('generateName: validated as the name the API server would give', async (t) => {
  const cases: Array<{ name: string; yaml: string; denied: RegExp | undefined }> = [
    { name: 'RayJob, generateName only', yaml: rayJob('{generateName: nightly-}'), denied: undefined },
    { name: 'RayCronJob, generateName only', yaml: cronJob('{generateName: nightly-}'), denied: undefined },
    { name: 'RayCluster, generateName only', yaml: cluster('{generateName: demo-}'), denied: undefined },
    { name: 'RayJob, no name at all: still refused', yaml: rayJob('{namespace: ray}'), denied: /./ },
    {
      name: "RayJob, a generated name over KubeRay's 47 characters: refused",
      yaml: rayJob(`{generateName: ${'a'.repeat(43)}-}`),
      denied: /47/,
    },
  ];
  for (const c of cases) {
    const result = check(c.yaml);
    if (result.kind !== 'object') throw new Error(`${c.name}: ${result.message}`);
    if (c.denied === undefined) t.equal(result.denied, undefined, `${c.name}: allowed`);
    else t.match(result.denied, c.denied, `${c.name}: denied`);
  }
});

t.test('named: the prefix cut to 58 characters plus 5; a given name kept', async (t) => {
  t.equal((named({ metadata: { generateName: 'x-' } }).metadata as { name: string }).name.length, 7);
  t.equal((named({ metadata: { generateName: 'y'.repeat(70) } }).metadata as { name: string }).name.length, 63);
  t.same(named({ metadata: { name: 'given', generateName: 'x-' } }), { metadata: { name: 'given', generateName: 'x-' } });
  const none = { metadata: { namespace: 'ray' } };
  t.equal(named(none), none, 'nothing to name: the same object');
});
