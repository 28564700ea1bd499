// Ray version numbers as RayCluster specs and image tags write them: `2.40.0`, `v2.9.3`, `2.53`,
// `2.9.3-py310-gpu` (the leading major.minor[.patch] counts, whatever follows). Pure.

export interface RayVersion {
  major: number;
  minor: number;
  /** Undefined when the text gave only major.minor. */
  patch?: number | undefined;
}

const VERSION = /^v?(\d+)\.(\d+)(?:\.(\d+))?/;

/** The version at the start of `text`, or undefined (not a string, no major.minor there). */
export function parseRayVersion(text: unknown): RayVersion | undefined {
  if (typeof text !== 'string') return undefined;
  const m = VERSION.exec(text.trim());
  if (!m) return undefined;
  return { major: Number(m[1]), minor: Number(m[2]), patch: m[3] === undefined ? undefined : Number(m[3]) };
}

export function formatRayVersion(v: RayVersion): string {
  return v.patch === undefined ? `${v.major}.${v.minor}` : `${v.major}.${v.minor}.${v.patch}`;
}

/**
 * Can `v` be newer than `than`? A version without a patch (`2.60`) stands for any 2.60.x, so it may be
 * newer than 2.60.0.
 */
export function mayBeNewer(v: RayVersion, than: RayVersion): boolean {
  if (v.major !== than.major) return v.major > than.major;
  if (v.minor !== than.minor) return v.minor > than.minor;
  if (v.patch === undefined) return true;
  return v.patch > (than.patch ?? 0);
}
