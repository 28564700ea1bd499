// The benchmarks' median: an even count of rounds (the webhook bench runs 4) favours neither middle value.
import t from 'tap';
import { median } from '../../bench/stats.ts';

const rows: [readonly number[], number][] = [
  [[], Number.NaN],
  [[3], 3],
  [[3, 1, 2], 2],
  [[0.9, 1.1], 1],
  [[1.2, 0.8, 1.0, 1.1], 1.05],
  [[5, 5, 1, 9], 5],
];
for (const [values, expected] of rows) {
  t.test(`median(${JSON.stringify(values)})`, async (t) => {
    const got = median(values);
    if (Number.isNaN(expected)) t.ok(Number.isNaN(got));
    else t.ok(Math.abs(got - expected) < 1e-12, `${got} = ${expected}`);
  });
}
t.test('the input is not reordered', async (t) => {
  const values = [3, 1, 2, 0];
  median(values);
  t.same(values, [3, 1, 2, 0]);
});
