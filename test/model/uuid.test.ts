// randomUuid: RFC 9562 version-4 text, no repeats, and every byte varying (the pool is used once per UUID,
// across its refills).
import t from 'tap';
import { randomUuid } from '../../src/uuid.ts';

const V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

t.test('5000 UUIDs (several pool refills): version 4 text, all distinct', async (t) => {
  const seen = new Set<string>();
  let bad = 0;
  for (let i = 0; i < 5000; i++) {
    const id = randomUuid();
    if (!V4.test(id)) bad++;
    seen.add(id);
  }
  t.equal(bad, 0, 'every UUID has the version-4 layout');
  t.equal(seen.size, 5000, 'no UUID repeats');
});

t.test('each random hex position takes many values (no stuck bytes)', async (t) => {
  const values = Array.from({ length: 36 }, () => new Set<string>());
  for (let i = 0; i < 2000; i++) [...randomUuid()].forEach((c, at) => values[at]!.add(c));
  const fixed = new Map([
    [8, 1],
    [13, 1],
    [14, 1],
    [18, 1],
    [19, 4],
    [23, 1],
  ]);
  for (let at = 0; at < 36; at++) {
    const expected = fixed.get(at) ?? 16;
    t.equal(values[at]!.size, expected, `position ${at} takes ${expected} values`);
  }
});
