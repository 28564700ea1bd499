// `kubectl kustomize` (the built kubectl's kustomize, tools/build-control-plane.sh) of a kustomization, as objects.
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { type KubeObject, parseManifests } from '../../localcluster/apply.ts';
import { REPO_ROOT, requireKubeCommand } from '../../localcluster/binaries.ts';

/** Renders `dir` (relative to the repository, or absolute); throws with kubectl's message on failure. */
export function kustomize(dir: string): KubeObject[] {
  const r = spawnSync(requireKubeCommand('kubectl'), ['kustomize', resolve(REPO_ROOT, dir)], { encoding: 'utf8' });
  if (r.error) throw new Error(`kubectl is needed to render the kustomization (kubectl kustomize): ${r.error.message}`);
  if (r.status !== 0) throw new Error(`kubectl kustomize ${dir} failed: ${r.stderr}`);
  return parseManifests(r.stdout);
}
