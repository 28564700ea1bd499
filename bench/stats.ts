// The benchmarks' one summary statistic.

/** The middle value; of an even count the lower of the two middle ones, so it is always a measured value. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}
