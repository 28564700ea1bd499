// The request-byte budget as pure bookkeeping (tables), and the JSON container count that guards parsing.
import t from 'tap';
import { ByteBudget, jsonContainerCount } from '../../webhook/budget.ts';
import { sleep } from '../../kube/backoff.ts';

const budget = (capacity = 100, maxWaiters = 2, maxWaitMs = 50) => new ByteBudget({ capacity, maxWaitMs, maxWaiters });

t.test('tryAcquire: fits or not; weights are clamped to [0, capacity]', async (t) => {
  const rows: Array<[held: number[], weight: number, ok: boolean, usedAfter: number]> = [
    [[], 100, true, 100],
    [[], 101, true, 100], // a request larger than the budget runs alone, never starves
    [[60], 40, true, 100],
    [[60], 41, false, 60],
    [[100], 0, true, 100],
    [[], -5, true, 0],
  ];
  for (const [held, weight, ok, usedAfter] of rows) {
    const b = budget();
    for (const h of held) t.ok(b.tryAcquire(h));
    t.equal(b.tryAcquire(weight), ok, `held ${held} + ${weight}`);
    t.equal(b.used, usedAfter, `held ${held} + ${weight}: used`);
  }
});

t.test('acquire waits in FIFO order and is woken by release', async (t) => {
  const b = budget(100, 5, 5_000);
  t.ok(b.tryAcquire(90));
  const order: string[] = [];
  const big = b.acquire(50).then((ok) => order.push(`big ${ok}`));
  const small = b.acquire(5).then((ok) => order.push(`small ${ok}`));
  t.equal(b.waiting, 2);
  t.notOk(b.tryAcquire(5), 'a newcomer does not jump the queue even though 5 bytes are free');
  b.release(90);
  await Promise.all([big, small]);
  t.same(order, ['big true', 'small true'], 'the head first, then the next that fits');
  t.equal(b.used, 55);
  t.equal(b.waiting, 0);
});

t.test('acquire gives up after maxWaitMs, and at once when maxWaiters wait already', async (t) => {
  const b = budget(100, 1, 30);
  t.ok(b.tryAcquire(100));
  const started = Date.now();
  const waiting = b.acquire(10);
  t.equal(await b.acquire(10), false, 'the second waiter is refused at once');
  t.equal(await waiting, false, 'the first times out');
  t.ok(Date.now() - started >= 25, 'after about maxWaitMs');
  t.equal(b.waiting, 0);
  b.release(100);
  t.equal(b.used, 0);
});

t.test('a timed-out head lets the waiters behind it in', async (t) => {
  const b = new ByteBudget({ capacity: 100, maxWaiters: 5, maxWaitMs: 30 });
  t.ok(b.tryAcquire(60));
  const head = b.acquire(100); // cannot fit until the 60 are released
  await sleep(10); // not a wait for anything: the next waiter's deadline falls 10 ms after the head's
  const next = b.acquire(40); // fits now, but waits behind the head
  t.equal(await head, false);
  t.equal(await next, true, 'admitted as soon as the head left the queue');
  t.equal(b.used, 100);
});

t.test('releasing more than held is a bug, reported', async (t) => {
  const b = budget();
  t.throws(() => b.release(1), /released more than it held/);
});

t.test('jsonContainerCount counts { and [ anywhere', async (t) => {
  const rows: Array<[string, number]> = [
    ['', 0],
    ['{}', 1],
    ['[{},[],{"a":[1]}]', 5],
    ['"{["', 2], // inside strings too: an over-estimate is safe
    ['{"x":"y"}', 1],
  ];
  for (const [text, n] of rows) t.equal(jsonContainerCount(text), n, text);
});
