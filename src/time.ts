// Kubernetes' metav1.Time as status fields carry it: RFC 3339 at second precision.

export function formatTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** Milliseconds since the epoch, or undefined for anything that is not a readable time. */
export function parseTime(value: unknown): number | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * A duration flag in milliseconds: Go's notation (`90s`, `10m`, `1h30m`, `7d`), or `0` (off). Undefined
 * when it is not one.
 */
export function parseDuration(raw: string): number | undefined {
  const text = raw.trim();
  if (text === '0') return 0;
  if (!/^(\d+(\.\d+)?(ms|s|m|h|d))+$/.test(text)) return undefined;
  let ms = 0;
  for (const [, n, , unit] of text.matchAll(/(\d+(\.\d+)?)(ms|s|m|h|d)/g)) ms += Number(n) * UNIT_MS[unit!]!;
  return Math.round(ms);
}
