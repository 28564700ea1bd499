// kube/rate-limit.ts: client-go's token bucket (--qps, --burst) as arithmetic on a fake clock.
import t from 'tap';
import { TokenBucket, clientRateLimit } from '../../kube/rate-limit.ts';

t.test('burst at once, then qps a second, first come first served', async (t) => {
  let now = 0;
  const b = new TokenBucket(10, 3, () => now);
  t.same([b.reserve(), b.reserve(), b.reserve()], [0, 0, 0], 'the burst goes at once');
  t.equal(b.reserve(), 100, 'the 4th waits one token (1/10 s)');
  t.equal(b.reserve(), 200, 'the 5th waits behind it');
  now = 200; // both debts repaid
  t.equal(b.reserve(), 100, 'the balance is at 0: the next one waits a token');
  now = 10_000;
  t.same([b.reserve(), b.reserve(), b.reserve(), b.reserve()], [0, 0, 0, 100], 'idle refills to the burst, not beyond');
  b.cancel();
  t.equal(b.reserve(), 100, 'a cancelled reservation gave its token back: the next one owes one token, not two');
  now = 20_000;
  b.cancel();
  t.same([b.reserve(), b.reserve(), b.reserve(), b.reserve()], [0, 0, 0, 100], 'cancel never fills past the burst');
});

t.test('steady load at the cap waits nothing', async (t) => {
  let now = 0;
  const b = new TokenBucket(100, 1, () => now);
  const waits: number[] = [];
  for (let i = 0; i < 50; i++) {
    waits.push(b.reserve());
    now += 10;
  }
  t.equal(Math.max(...waits), 0);
});

t.test('bad qps refused', async (t) => {
  t.throws(() => new TokenBucket(0, 1), /qps must be a number > 0/);
  t.throws(() => new TokenBucket(Number.NaN, 1), /qps must be a number > 0/);
});

t.test('flags: 0 is no cap; burst defaults to twice qps (KubeRay 100/200)', async (t) => {
  t.equal(clientRateLimit(0, undefined), undefined);
  t.equal(clientRateLimit(0, 50), undefined);
  t.same(clientRateLimit(100, undefined), { qps: 100, burst: 200 });
  t.same(clientRateLimit(0.5, undefined), { qps: 0.5, burst: 1 });
  t.same(clientRateLimit(20, 5), { qps: 20, burst: 5 });
});
