import t from 'tap';
import { runWorkers, WorkQueue } from '../../kube/queue.ts';
import { Backoff, backoffDelay, sleep } from '../../kube/backoff.ts';
import { FakeClock } from '../helpers/fake-clock.ts';

/** Resolves after every promise callback queued so far has run (a resolved get() would have landed). */
const settled = () => new Promise<void>((resolve) => setImmediate(resolve));

t.test('dedup: a key added many times while waiting is handed out once', async (tt) => {
  const q = new WorkQueue();
  for (let i = 0; i < 5; i++) q.add('ns/a');
  q.add('ns/b');
  tt.equal(q.length, 2);
  tt.equal(await q.get(), 'ns/a');
  tt.equal(await q.get(), 'ns/b');
  tt.equal(q.length, 0);
});

t.test('one in flight per key: re-added while processing comes back only after done', async (tt) => {
  const q = new WorkQueue();
  q.add('k');
  const first = await q.get();
  tt.equal(first, 'k');
  q.add('k');
  q.add('k');
  tt.equal(q.length, 0, 'parked, not ready, while in flight');
  let second: string | undefined;
  void q.get().then((k) => (second = k));
  await settled();
  tt.equal(second, undefined, 'a second worker does not get the same key');
  q.done('k');
  await settled();
  tt.equal(second, 'k', 'after done it is processed once more');
  q.done('k');
  tt.equal(q.length, 0);
});

t.test('concurrent workers never hold the same key at once', async (tt) => {
  const q = new WorkQueue();
  const inFlight = new Set<string>();
  let overlaps = 0;
  let processed = 0;
  const worker = async () => {
    for (;;) {
      const k = await q.get();
      if (k === undefined) return;
      if (inFlight.has(k)) overlaps += 1;
      inFlight.add(k);
      await sleep(Math.random() * 3);
      inFlight.delete(k);
      processed += 1;
      q.done(k);
    }
  };
  const workers = Array.from({ length: 4 }, worker);
  for (let i = 0; i < 200; i++) {
    q.add(`k${i % 5}`);
    if (i % 20 === 0) await sleep(1);
  }
  // Every add is made; the workers are done when nothing is ready or in flight.
  while (q.length > 0 || q.inFlight > 0) await sleep(1);
  q.shutdown();
  await Promise.all(workers);
  tt.equal(overlaps, 0);
  tt.ok(processed >= 5 && processed < 200, `deduplicated: ${processed} reconciles for 200 adds of 5 keys`);
});

t.test('addAfter: delayed, and the earliest deadline wins', async (tt) => {
  const clock = new FakeClock();
  const q = new WorkQueue({ now: clock.now, timers: clock });
  q.addAfter('k', 200);
  q.addAfter('k', 20);
  q.addAfter('k', 500);
  tt.equal(q.delayedCount, 1);
  tt.equal(q.scheduledAt('k'), 1_000_020, 'the earliest schedule is kept');
  clock.advance(19);
  tt.equal(q.length, 0, 'not ready before its time');
  clock.advance(1);
  tt.equal(q.length, 1, 'ready at its time');
  tt.equal(await q.get(), 'k', 'fires');
  tt.equal(q.delayedCount, 0);
  q.done('k');
  q.addAfter('k', 0);
  tt.equal(q.length, 1, 'a zero delay is an immediate add');
  q.shutdown();
});

t.test('rate-limited retries grow exponentially, are capped, and forget resets', async (tt) => {
  const q = new WorkQueue({ retry: { baseMs: 100, maxMs: 1000, factor: 2, jitter: 0 } });
  const delays = [1, 2, 3, 4, 5, 6].map(() => q.addRateLimited('k'));
  tt.same(delays, [100, 200, 400, 800, 1000, 1000]);
  tt.equal(q.failuresOf('k'), 6);
  q.forget('k');
  tt.equal(q.addRateLimited('k'), 100);
  q.shutdown();
});

t.test('jitter stays within [d*(1-j), d]', async (tt) => {
  for (const r of [0, 0.25, 0.5, 0.999]) {
    const d = backoffDelay(3, { baseMs: 1000, maxMs: 60_000, jitter: 0.2 }, () => r);
    tt.ok(d <= 4000 && d >= 3200, `${r} -> ${d}`);
  }
  tt.equal(backoffDelay(5000, { baseMs: 1, maxMs: 777, jitter: 0 }), 777, 'huge failure counts do not overflow');
  const b = new Backoff({ baseMs: 10, maxMs: 100, jitter: 0 });
  tt.same([b.next(), b.next(), b.next()], [10, 20, 40]);
  b.reset();
  tt.equal(b.next(), 10);
});

t.test('shutdown releases waiting workers and drain waits for in-flight keys', async (tt) => {
  const clock = new FakeClock();
  const q = new WorkQueue({ now: clock.now, timers: clock });
  const waiting = q.get();
  q.add('busy');
  tt.equal(await waiting, 'busy');
  const idle = q.get();
  q.shutdown();
  tt.equal(await idle, undefined);
  q.add('ignored');
  tt.equal(q.length, 0, 'no adds after shutdown');
  let drained = false;
  const d = q.drain(1000).then((ok) => (drained = ok));
  clock.advance(999);
  await settled();
  tt.equal(drained, false, 'still in flight');
  q.done('busy');
  await d;
  tt.equal(drained, true);
  tt.equal(await q.drain(10), true, 'nothing in flight');
});

t.test('drain gives up after its timeout', async (tt) => {
  const clock = new FakeClock();
  const q = new WorkQueue({ now: clock.now, timers: clock });
  q.add('stuck');
  await q.get();
  q.shutdown();
  const drained = q.drain(20);
  clock.advance(20);
  tt.equal(await drained, false);
});

t.test('runWorkers: each key handled, a throw retried with backoff then forgotten, ends at shutdown', async (tt) => {
  const q = new WorkQueue({ retry: { baseMs: 5, maxMs: 5, factor: 1, jitter: 0 } });
  const handled: string[] = [];
  const errors: Array<[string, string, number]> = [];
  let failuresLeft = 2;
  let allDone: () => void = () => {};
  const finished = new Promise<void>((resolve) => (allDone = resolve));
  const loops = runWorkers(
    q,
    2,
    async (key) => {
      if (key === 'flaky' && failuresLeft-- > 0) throw new Error('not yet');
      handled.push(key);
      if (handled.length === 3) allDone();
    },
    (key, err, retryInMs) => errors.push([key, (err as Error).message, retryInMs]),
  );
  for (const k of ['a', 'flaky', 'b']) q.add(k);
  await finished;
  tt.ok(await q.drain(1000), 'the last key is done');
  tt.same(handled.sort(), ['a', 'b', 'flaky'], 'every key handled once it succeeds');
  tt.same(
    errors,
    [
      ['flaky', 'not yet', 5],
      ['flaky', 'not yet', 5],
    ],
    'each failure reported with its retry delay',
  );
  tt.equal(q.failuresOf('flaky'), 0, 'the failure count is forgotten after a success');
  q.shutdown();
  await loops;
  tt.equal(q.inFlight, 0, 'the loops ended with the queue');
});
