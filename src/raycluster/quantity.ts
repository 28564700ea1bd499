// Kubernetes resource quantities ("500m", "2Gi", "1e3") as numbers, the way KubeRay reads them for
// `ray start`: Quantity.Value() is the value rounded UP to an integer ("500m" CPU -> 1).
// (@kubernetes/client-node's quantityToScalar rejects "1.5Gi" and answers bigint for "2G".)

const SUFFIX: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

const QUANTITY = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$/;

/** The quantity as a number, or undefined when it is not a quantity. */
export function parseQuantity(raw: unknown): number | undefined {
  if (typeof raw === 'number') return Number.isFinite(raw) ? raw : undefined;
  if (typeof raw !== 'string') return undefined;
  const m = QUANTITY.exec(raw.trim());
  if (!m) return undefined;
  const base = Number(m[1]);
  if (m[2]) return Number(`${m[1]}${m[2]}`);
  const suffix = m[3] ?? '';
  // Milli / micro / nano: divide (1500 * 1e-3 is 1.5000000000000002, 1500 / 1000 is 1.5).
  if (suffix === 'm') return base / 1e3;
  if (suffix === 'u') return base / 1e6;
  if (suffix === 'n') return base / 1e9;
  return base * (SUFFIX[suffix] ?? 1);
}

/** Quantity.Value(): rounded up to an integer (0 when absent or invalid). */
export function quantityValue(raw: unknown): number {
  const v = parseQuantity(raw);
  return v === undefined ? 0 : Math.ceil(v);
}

/** Quantity.IsZero(): absent, invalid or 0. */
export function isZeroQuantity(raw: unknown): boolean {
  const v = parseQuantity(raw);
  return v === undefined || v === 0;
}
