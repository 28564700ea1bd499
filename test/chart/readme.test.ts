// The chart's documentation cannot drift from its values: the README's table is the one values.yaml
// makes, every value is documented, and values.schema.json covers exactly the documented values.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { CHART_DIR } from './helm.ts';
import { valueRows, valuesTable, withTable } from './values-table.ts';

const valuesYaml = readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8');

t.test("the chart README's values table is current", async (t) => {
  const readme = readFileSync(join(CHART_DIR, 'README.md'), 'utf8');
  t.ok(readme.includes(valuesTable(valuesYaml)), 'out of date? run: node test/chart/values-table.ts --write');
});

interface SchemaNode {
  properties?: Record<string, SchemaNode>;
}

/** Leaf property paths of the schema (objects without declared properties are leaves). */
function schemaLeaves(node: SchemaNode, prefix = ''): string[] {
  return Object.entries(node.properties ?? {}).flatMap(([k, v]) =>
    v.properties && Object.keys(v.properties).length > 0 ? schemaLeaves(v, `${prefix}${k}.`) : [`${prefix}${k}`],
  );
}

t.test('values.schema.json and the documented values are the same set', async (t) => {
  const schema = JSON.parse(readFileSync(join(CHART_DIR, 'values.schema.json'), 'utf8')) as SchemaNode;
  const documented = valueRows(valuesYaml).map((r) => r.key);
  const covered = (path: string, by: string[]) => by.some((k) => k === path || path.startsWith(`${k}.`) || k.startsWith(`${path}.`));
  t.same(
    schemaLeaves(schema).filter((p) => !covered(p, documented)),
    [],
    'every schema property is a documented value',
  );
  t.same(
    documented.filter((k) => !covered(k, schemaLeaves(schema))),
    [],
    'every documented value is in the schema',
  );
});

t.test('valueRows: documented keys are rows, undocumented maps are walked, an undocumented leaf is an error', async (t) => {
  const yaml = [
    '# header',
    '',
    '# -- the a',
    'a: 1',
    'b:',
    '  # -- first of b',
    '  c: [x]',
    '  # -- d, on',
    '  #   two lines',
    '  d: {k: v}',
  ].join('\n');
  t.same(valueRows(yaml), [
    { key: 'a', default: '1', description: 'the a' },
    { key: 'b.c', default: '["x"]', description: 'first of b' },
    { key: 'b.d', default: '{"k":"v"}', description: 'd, on two lines' },
  ]);
  t.throws(() => valueRows('# -- a\na: 1\nb: 2\n'), /no "# -- " description for b/);
  t.throws(() => withTable('no markers', yaml), /markers/);
});
