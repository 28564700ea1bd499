// kube/superseded.ts as a table: which cached copies predate our own writes.
import t from 'tap';
import { MAX_TRACKED_OBJECTS, SupersededVersions } from '../../kube/superseded.ts';

type Step = ['replaced', string, string, string] | ['forget', string] | ['isStale', string, string | undefined, boolean];

const rows: Array<{ name: string; steps: Step[]; size: number }> = [
  { name: 'never written: never stale', steps: [['isStale', 'a', '1', false]], size: 0 },
  {
    name: 'the copy a write started from is stale until the cache shows what the write produced',
    steps: [
      ['replaced', 'a', '5', '6'],
      ['isStale', 'a', '5', true],
      ['isStale', 'a', '5', true],
      ['isStale', 'a', '6', false], // caught up: forgotten
      ['isStale', 'a', '5', false],
    ],
    size: 0,
  },
  {
    name: 'a write that changed nothing (same version back: no watch event) marks nothing',
    steps: [
      ['replaced', 'a', '5', '5'],
      ['isStale', 'a', '5', false],
    ],
    size: 0,
  },
  {
    name: 'a version neither replaced nor produced (older, or another writer’s) is not stale, and keeps the entries',
    steps: [
      ['replaced', 'a', '5', '7'],
      ['isStale', 'a', '3', false],
      ['isStale', 'a', '5', true],
      ['isStale', 'a', '9', false],
    ],
    size: 1,
  },
  {
    name: 'two writes in a row: both starting versions are stale, the last produced one ends it',
    steps: [
      ['replaced', 'a', '5', '6'],
      ['replaced', 'a', '6', '7'],
      ['isStale', 'a', '5', true],
      ['isStale', 'a', '6', true],
      ['isStale', 'a', '7', false],
    ],
    size: 0,
  },
  {
    name: 'objects are apart',
    steps: [
      ['replaced', 'a', '5', '6'],
      ['isStale', 'b', '5', false],
      ['isStale', 'a', '5', true],
    ],
    size: 1,
  },
  {
    name: 'a write with no version read, or none answered, records nothing',
    steps: [
      ['replaced', 'a', '', '6'],
      ['replaced', 'a', '5', ''],
      ['isStale', 'a', '5', false],
    ],
    size: 0,
  },
  {
    name: 'a copy without a version is not known stale',
    steps: [
      ['replaced', 'a', '5', '6'],
      ['isStale', 'a', undefined, false],
      ['isStale', 'a', '5', true],
    ],
    size: 1,
  },
  {
    name: 'forget: gone',
    steps: [
      ['replaced', 'a', '5', '6'],
      ['forget', 'a'],
      ['isStale', 'a', '5', false],
    ],
    size: 0,
  },
];

for (const row of rows) {
  t.test(row.name, async (t) => {
    const s = new SupersededVersions();
    for (const step of row.steps) {
      if (step[0] === 'replaced') s.replaced(step[1], step[2], step[3]);
      else if (step[0] === 'forget') s.forget(step[1]);
      else t.equal(s.isStale(step[1], step[2]), step[3], `isStale(${step[1]}, ${step[2]})`);
    }
    t.equal(s.size, row.size, 'objects tracked');
  });
}

t.test('bounded: the least recently written object goes first', async (t) => {
  const s = new SupersededVersions();
  for (let i = 0; i < MAX_TRACKED_OBJECTS; i++) s.replaced(`o${i}`, '1', '2');
  s.replaced('o0', '2', '3'); // o0 is now the most recent
  s.replaced('extra', '1', '2');
  t.equal(s.size, MAX_TRACKED_OBJECTS);
  t.equal(s.isStale('o1', '1'), false, 'the oldest was evicted');
  t.equal(s.isStale('o0', '1'), true, 'a rewritten object was kept');
  t.equal(s.isStale('extra', '1'), true);
});

t.test('at most 8 versions per object', async (t) => {
  const s = new SupersededVersions();
  for (let v = 1; v <= 9; v++) s.replaced('a', String(v), String(v + 1));
  t.equal(s.isStale('a', '2'), true);
  t.equal(s.isStale('a', '1'), false, 'the first of nine was dropped');
});
