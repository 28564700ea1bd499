// Waiting for a fact in tests (never a fixed sleep): polls `fn` every `every` ms until it returns
// something truthy, which it resolves with; throws after `ms` naming what it waited for.
import { sleep } from '../../kube/backoff.ts';

export async function until<T>(fn: () => T | Promise<T>, what: string, ms = 60_000, every = 100): Promise<NonNullable<T>> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(every);
  }
}
