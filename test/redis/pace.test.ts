// The sweep's pace in server time (src/redis/pace.ts) and how server time is read from
// INFO commandstats (controller/redis-cleanup/meter.ts): pure, as tables. The real server's SLOWLOG checks it in budget.test.ts.
import t from 'tap';
import { AIM, BATCH_PACE, GROW_BELOW, nextSize, Pace, SCAN_PACE, type PaceLimits } from '../../src/redis/pace.ts';
import { parseCommandStats, spentUs } from '../../src/redis/commandstats.ts';
import { parseCommandBudget } from '../../src/redis/budget.ts';

t.test('nextSize: halves (at least) on a call over the budget, grows only well under it, keeps between', async (t) => {
  const rows: Array<[size: number, serverMs: number, budgetMs: number, limits: PaceLimits, want: number, why: string]> = [
    [1000, 0, 5, SCAN_PACE, 2000, 'no measurable time: doubles'],
    [1000, 0.5, 5, SCAN_PACE, 2000, 'far under: doubles, not x5'],
    [1000, 1.0, 5, SCAN_PACE, 2000, 'aim 2.5 ms is 2.5x away: doubles'],
    [1000, 1.5, 5, SCAN_PACE, 1666, 'under 35%: grows to the aim (2.5 ms)'],
    [1000, 1.75, 5, SCAN_PACE, 1000, 'at 35% of the budget: keeps'],
    [1000, 4.9, 5, SCAN_PACE, 1000, 'under the budget: keeps'],
    [1000, 5, 5, SCAN_PACE, 1000, 'at the budget exactly: keeps'],
    [1000, 5.1, 5, SCAN_PACE, 490, 'just over: halves (to the aim, a little under half)'],
    [1000, 6, 5, SCAN_PACE, 416, 'over: to the aim'],
    [1000, 20, 5, SCAN_PACE, 125, '4x over: one step to the aim, not three halvings'],
    [150_000, 0.1, 5, SCAN_PACE, SCAN_PACE.max, 'capped at max'],
    [12, 100, 5, SCAN_PACE, SCAN_PACE.min, 'floored at min'],
    [1000, 0.2, 1, SCAN_PACE, 2000, 'budget 1 ms: 0.2 is well under'],
    [1000, 0.4, 1, SCAN_PACE, 1000, 'budget 1 ms: 0.4 is kept'],
    [1000, 1.5, 1, SCAN_PACE, 333, 'budget 1 ms: 1.5 ms is over'],
    [3, 50, 5, BATCH_PACE, 1, 'a pipeline shrinks to one key, never none'],
    [200, 0.3, 5, BATCH_PACE, 400, 'a pipeline doubles'],
  ];
  for (const [size, ms, budget, limits, want, why] of rows)
    t.equal(nextSize(size, ms, budget, limits), want, `${size} after ${ms} ms / ${budget}: ${why}`);
});

t.test(
  'on a server whose time grows with the size, the pace never goes over after the first call and settles under the budget',
  async (t) => {
    // us per key: a fast server, round 1's (0.65), a three times slower one, a very slow one.
    for (const usPerKey of [0.2, 0.65, 2, 6]) {
      for (const budget of [1, 5, 20]) {
        const pace = new Pace(budget, SCAN_PACE);
        const times: number[] = [];
        for (let call = 0; call < 30; call++) {
          const ms = (pace.size * usPerKey) / 1000;
          times.push(ms);
          pace.observe(ms);
        }
        const label = `${usPerKey} us/key, budget ${budget} ms`;
        const overAfterFirst = times.slice(1).filter((ms) => ms > budget);
        t.same(overAfterFirst, [], `${label}: no call over the budget after the first (${times.map((x) => x.toFixed(2)).join(' ')})`);
        const settled = times.slice(-10);
        const atMax = pace.size === SCAN_PACE.max;
        t.ok(
          atMax || settled.every((ms) => ms >= GROW_BELOW * budget && ms <= budget),
          `${label}: settles between ${GROW_BELOW} and 1 of the budget, or at the cap (last ${settled.map((x) => x.toFixed(2)).join(' ')})`,
        );
        t.equal(pace.longestMs, Math.max(...times), `${label}: the longest is kept`);
      }
    }
  },
);

t.test('a slow spike: the next call of the same cost lands at the aim', async (t) => {
  const pace = new Pace(5, SCAN_PACE);
  pace.size = 8000;
  pace.observe(20); // 2.5 us/key
  t.ok((pace.size * 2.5) / 1000 <= AIM * 5, `size ${pace.size}`);
});

t.test('a fixed size (--scan-count) is measured but never adapted', async (t) => {
  const pace = new Pace(5, SCAN_PACE, 50);
  pace.observe(100);
  pace.observe(0);
  t.equal(pace.size, 50);
  t.equal(pace.longestMs, 100);
});

t.test('parseCommandBudget: milliseconds in (0, 1000]', async (t) => {
  for (const [ok, ms] of [
    ['5', 5],
    ['0.5', 0.5],
    ['1000', 1000],
    [' 2 ', 2],
  ] as const)
    t.same(parseCommandBudget(ok), { ms }, ok);
  for (const bad of ['0', '-1', '1001', 'abc', '', ' ', 'NaN', 'Infinity'])
    t.match(parseCommandBudget(bad), { problem: /milliseconds/ }, JSON.stringify(bad));
});

t.test('parseCommandStats: the cmdstat lines of INFO commandstats, by lower-case name', async (t) => {
  const info = [
    '# Commandstats',
    'cmdstat_scan:calls=12,usec=3456,usec_per_call=288.00,rejected_calls=0,failed_calls=0',
    'cmdstat_type:calls=3,usec=4,usec_per_call=1.33,rejected_calls=0,failed_calls=0',
    'cmdstat_client|setinfo:calls=2,usec=3,usec_per_call=1.50,rejected_calls=0,failed_calls=0',
    'cmdstat_broken:calls=x,usec=1',
    '',
  ].join('\r\n');
  const stats = parseCommandStats(info);
  t.same([...stats.keys()], ['scan', 'type', 'client|setinfo']);
  t.same(stats.get('scan'), { calls: 12, usec: 3456 });
});

t.test('spentUs: the usec between two snapshots; undefined when counters went back or did not move', async (t) => {
  const snap = (scan: [number, number], unlink?: [number, number]) =>
    new Map(
      [['scan', { calls: scan[0], usec: scan[1] }], ...(unlink ? [['unlink', { calls: unlink[0], usec: unlink[1] }] as const] : [])].map(
        ([k, v]) => [k as string, v as { calls: number; usec: number }],
      ),
    );
  t.equal(spentUs(snap([1, 100]), snap([2, 1100]), ['scan']), 1000, 'one call of 1 ms');
  t.equal(spentUs(snap([1, 100]), snap([1, 100], [3, 90]), ['unlink']), 90, 'a command first seen after the first snapshot');
  t.equal(spentUs(snap([1, 100]), snap([1, 100]), ['scan']), undefined, 'no call counted');
  t.equal(spentUs(snap([5, 900]), snap([1, 10]), ['scan']), undefined, 'CONFIG RESETSTAT in between');
  t.equal(spentUs(snap([1, 100]), snap([2, 200]), ['unlink']), undefined, 'a command never counted');
});
