// The copy that defaulting works on (the rules record their writes as patch operations, patch.ts; the copy
// is what they read back and what `raykeeper mutate` prints). Only the containers a rule may write to are
// copied (shallowly); all other subtrees are SHARED with the original, so the cost stays flat however
// large the pod templates are.
//
// Contract for every defaulting rule: write ONLY into these containers (or replace them as a whole):
//   obj (top-level keys), obj.metadata, obj.metadata.annotations, obj.metadata.finalizers,
//   obj.spec (its own keys), obj.spec.gcsFaultToleranceOptions, obj.status.
// A write anywhere else would change the original too (and bypass the recorded patch); the property test
// (test/admission/patch-property.test.ts) checks every answer against defaulting on a FULL deep copy.
import type { Json, JsonObject } from '../../kube/model.ts';
import { isJsonObject } from './json.ts';

function shallow(value: Json | undefined): Json | undefined {
  if (Array.isArray(value)) return [...value];
  if (isJsonObject(value)) return { ...value };
  return value;
}

export function copyForDefaulting(original: JsonObject): JsonObject {
  const copy: JsonObject = { ...original };
  if (isJsonObject(original.metadata)) {
    const metadata: JsonObject = { ...original.metadata };
    if ('annotations' in metadata) metadata.annotations = shallow(metadata.annotations) as Json;
    if ('finalizers' in metadata) metadata.finalizers = shallow(metadata.finalizers) as Json;
    copy.metadata = metadata;
  }
  if (isJsonObject(original.spec)) {
    const spec: JsonObject = { ...original.spec };
    if ('gcsFaultToleranceOptions' in spec) spec.gcsFaultToleranceOptions = shallow(spec.gcsFaultToleranceOptions) as Json;
    copy.spec = spec;
  }
  if (isJsonObject(original.status)) copy.status = { ...original.status };
  return copy;
}
