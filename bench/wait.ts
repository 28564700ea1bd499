// Waiting in the benchmarks: until a condition holds or a cap passes, saying how it goes.
import { sleep } from '../kube/backoff.ts';

/** Until `done()` or `capMs` passed, asking every `everyMs`; `report()` said every 10 s. True when done. */
export async function waitFor(
  done: () => boolean | Promise<boolean>,
  capMs: number,
  report: () => string,
  say: (s: string) => void,
  everyMs = 100,
): Promise<boolean> {
  const t0 = performance.now();
  let last = t0;
  for (;;) {
    if (await done()) return true;
    if (performance.now() - t0 >= capMs) return false;
    await sleep(everyMs);
    if (performance.now() - last > 10_000) {
      last = performance.now();
      say(`  ${report()} (${Math.round((last - t0) / 1000)} s)`);
    }
  }
}
