// Volumes of a PersistentVolumeClaim, for the Ray pod runner (no kubelet, no volumes): a claim is a
// directory of its own under the runner's state (by the claim's uid: a claim deleted and made again starts
// empty), which outlives the pod as the claim does, so a new head
// of a cluster with embedded GCS storage (RAY_gcs_storage_path on the claim's mount) reads back what the
// old one wrote, and two clusters never share one. The Ray container sees no mounts, so what names a
// mount path in its env (a literal value equal to the path or under it) is pointed at the claim's
// directory instead (subPath honoured). Pure: the runner creates the directories.
import { join, posix } from 'node:path';
import type { Pod } from '../kube/model.ts';

/** The claim names of the pod's persistentVolumeClaim volumes. */
export function claimNames(pod: Pod): string[] {
  return [...claimVolumes(pod).values()];
}

function claimVolumes(pod: Pod): Map<string, string> {
  const claims = new Map<string, string>();
  for (const v of pod.spec?.volumes ?? []) {
    const claim = (v.persistentVolumeClaim as { claimName?: unknown } | undefined)?.claimName;
    if (typeof claim === 'string' && claim !== '') claims.set(v.name, claim);
  }
  return claims;
}

/**
 * Env overrides for the pod's container `index` (default the Ray container), and the directories they
 * name; `dirOf(claim)`: the claim's directory.
 */
export function claimDirEnv(pod: Pod, dirOf: (claim: string) => string, index = 0): { env: Record<string, string>; dirs: string[] } {
  const container = pod.spec?.containers[index];
  const claims = claimVolumes(pod);
  const mounts: Array<{ path: string; dir: string }> = [];
  for (const m of container?.volumeMounts ?? []) {
    const claim = claims.get(m.name);
    // The API server refuses a subPath with `..`; a pod that reached us anyway gets no mapping.
    if (claim === undefined || (m.subPath ?? '').split('/').includes('..')) continue;
    mounts.push({ path: posix.normalize(m.mountPath).replace(/(.)\/+$/, '$1'), dir: join(dirOf(claim), m.subPath ?? '') });
  }
  const env: Record<string, string> = {};
  const dirs = new Set<string>();
  for (const e of container?.env ?? []) {
    if (typeof e.value !== 'string' || !e.value.startsWith('/')) continue;
    const value = posix.normalize(e.value);
    const m = mounts.find((x) => value === x.path || value.startsWith(`${x.path}/`));
    if (!m) continue;
    env[e.name] = join(m.dir, value.slice(m.path.length));
    dirs.add(m.dir);
  }
  return { env, dirs: [...dirs] };
}
