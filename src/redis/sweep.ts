// Whether the cleanup sweeps the keyspace (SCAN MATCH `RAY<ns>@*`) after unlinking the tables it knows
// by name. Pure. For any Ray up to RAY_RELEASE, the tables of keys.ts RAY_TABLES and the old
// layout's hash `<ns>` are all its GCS writes, so the sweep (a walk of the whole keyspace: ~0.6 s of
// Redis CPU per million keys) finds nothing more; a newer or unknown Ray may write tables we cannot
// name, and only the sweep finds them.
import { RAY_RELEASE } from '../ray-release.ts';
import { formatRayVersion, mayBeNewer, parseRayVersion } from '../ray-version.ts';

/** `raykeeper redis-cleanup --sweep`: auto decides from the Ray version (--ray-version). */
export const SWEEP_MODES = ['auto', 'always', 'never'] as const;
export type SweepMode = (typeof SWEEP_MODES)[number];

/** What the cleanup does, and why (reported in its result and the controller's log). */
export interface SweepDecision {
  mode: 'always' | 'never';
  reason: string;
  /**
   * `always` only for want of a version: the cleanup may read the one the namespace's own head recorded
   * (keys.ts CLUSTER_METADATA_FIELD) and skip the sweep when it is known.
   */
  fromData?: boolean | undefined;
}

/** One place a Ray version may come from, named for the reason (`spec.rayVersion`, `head image tag`). */
export interface VersionSource {
  from: string;
  version: unknown;
  /** The source is a Ray image whose reference names no version (latest, nightly, only a digest): sweep. */
  unversioned?: boolean | undefined;
}

/** Ray's own images: any rayproject/ repository, or one named exactly ray, ray-ml or ray-llm (a mirror's). */
const RAY_REPOSITORY = /^ray(-ml|-llm)?$/;

function repositoryAndTag(image: string): { path: string; name: string; tag: string | undefined } {
  const ref = image.trim().split('@')[0]!;
  const slash = ref.lastIndexOf('/');
  const last = ref.slice(slash + 1);
  const colon = last.indexOf(':');
  return {
    path: ref.slice(0, slash + 1),
    name: colon < 0 ? last : last.slice(0, colon),
    tag: colon < 0 ? undefined : last.slice(colon + 1),
  };
}

/** rayproject/*, or a repository named ray, ray-ml or ray-llm. */
export function isRayImage(image: unknown): boolean {
  if (typeof image !== 'string' || image.trim() === '') return false;
  const { path, name } = repositoryAndTag(image);
  return RAY_REPOSITORY.test(name) || /(^|\/)rayproject\/$/.test(path);
}

/**
 * The Ray version an image's tag names, for Ray's own images only (isRayImage): another image's tag says
 * nothing about the Ray inside. `name:tag@sha256:...` counts by its tag; without a tag there is none.
 */
export function imageRayVersion(image: unknown): string | undefined {
  if (!isRayImage(image)) return undefined;
  const { tag } = repositoryAndTag(image as string);
  return tag !== undefined && parseRayVersion(tag) ? tag : undefined;
}

/** The head image as a version source: a Ray image without a readable version forces the sweep. */
export function imageVersionSource(image: unknown): VersionSource {
  const version = imageRayVersion(image);
  return { from: 'head image tag', version, unversioned: isRayImage(image) && version === undefined };
}

/**
 * `auto`: skip the sweep only when some source names a Ray version, none names one that may be newer
 * than `release` (the release whose tables RAY_TABLES lists), and no Ray image runs without a version
 * (`rayproject/ray:latest` beside a stale spec.rayVersion must not skip it).
 */
export function autoSweep(sources: VersionSource[], release: string = RAY_RELEASE): SweepDecision {
  const known = parseRayVersion(release);
  if (!known) throw new Error(`not a Ray release: ${JSON.stringify(release)}`);
  const blind = sources.find((s) => s.unversioned);
  if (blind) return { mode: 'always', reason: `a Ray image without a version (${blind.from}): tables may be new`, fromData: true };
  const found = sources.flatMap((s) => {
    const v = parseRayVersion(s.version);
    return v ? [{ from: s.from, v }] : [];
  });
  if (found.length === 0)
    return {
      mode: 'always',
      reason: `Ray version unknown (nothing in ${sources.map((s) => s.from).join(', ') || 'no source'}): tables may be new`,
      fromData: true,
    };
  const newer = found.find((f) => mayBeNewer(f.v, known));
  if (newer) {
    const relation =
      newer.v.patch === undefined && newer.v.major === known.major && newer.v.minor === known.minor ? 'may be newer than' : '>';
    return { mode: 'always', reason: `Ray ${formatRayVersion(newer.v)} (${newer.from}) ${relation} ${release}: tables may be new` };
  }
  const highest = found.reduce((a, b) => (mayBeNewer(b.v, a.v) ? b : a));
  return { mode: 'never', reason: `Ray ${formatRayVersion(highest.v)} (${highest.from}) <= ${release}: tables known` };
}
