// Whether the cleanup sweeps the keyspace (SCAN MATCH `RAY<ns>@*`) after unlinking the tables it knows
// by name. Pure. For any Ray up to RAY_RELEASE, the tables of src/redis/keys.ts RAY_TABLES and the old
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
}

/** One place a Ray version may come from, named for the reason (`spec.rayVersion`, `image tag`). */
export interface VersionSource {
  from: string;
  version: unknown;
}

/**
 * The Ray version an image's tag names, for Ray's own images only (repository `ray` or `ray-*`:
 * rayproject/ray, rayproject/ray-ml, a mirror's .../ray): another image's tag says nothing about the
 * Ray inside. A digest (`@sha256:...`) pins content the tag may not describe: no version.
 */
export function imageRayVersion(image: unknown): string | undefined {
  if (typeof image !== 'string' || image.includes('@')) return undefined;
  const ref = image.trim();
  const last = ref.slice(ref.lastIndexOf('/') + 1);
  const colon = last.indexOf(':');
  if (colon < 0) return undefined;
  if (!/^ray(-[a-z0-9._-]+)?$/.test(last.slice(0, colon))) return undefined;
  const tag = last.slice(colon + 1);
  return parseRayVersion(tag) ? tag : undefined;
}

/**
 * `auto`: skip the sweep only when some source names a Ray version and none names one that may be
 * newer than `release` (the release whose tables RAY_TABLES lists).
 */
export function autoSweep(sources: VersionSource[], release: string = RAY_RELEASE): SweepDecision {
  const known = parseRayVersion(release);
  if (!known) throw new Error(`not a Ray release: ${JSON.stringify(release)}`);
  const found = sources.flatMap((s) => {
    const v = parseRayVersion(s.version);
    return v ? [{ from: s.from, v }] : [];
  });
  if (found.length === 0) return { mode: 'always', reason: `Ray version unknown (nothing in ${sources.map((s) => s.from).join(', ') || 'no source'}): tables may be new` };
  const newer = found.find((f) => mayBeNewer(f.v, known));
  if (newer) {
    const relation = newer.v.patch === undefined && newer.v.major === known.major && newer.v.minor === known.minor ? 'may be newer than' : '>';
    return { mode: 'always', reason: `Ray ${formatRayVersion(newer.v)} (${newer.from}) ${relation} ${release}: tables may be new` };
  }
  const highest = found.reduce((a, b) => (mayBeNewer(b.v, a.v) ? b : a));
  return { mode: 'never', reason: `Ray ${formatRayVersion(highest.v)} (${highest.from}) <= ${release}: tables known` };
}
