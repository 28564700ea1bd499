// grafanaQuery: a dashboard panel's query with Grafana's variables replaced, as the live Prometheus test
// (prometheus-live.test.ts) sends it.
import t from 'tap';
import { GRAFANA_BUILTINS, grafanaQuery } from './files.ts';

const values = { ...GRAFANA_BUILTINS, namespace: 'ml', job: 'raykeeper-controller' };

const table: Array<[string, string]> = [
  ['raykeeper_leader', 'raykeeper_leader'],
  ['rate(x_total[$__rate_interval])', 'rate(x_total[1m])'],
  ['rate(x_total[$__interval])', 'rate(x_total[15s])'],
  ['rate(x_total[$__interval_ms])', 'rate(x_total[15000])'],
  ['increase(x_total[$__range])', 'increase(x_total[1h])'],
  ['x{namespace="$namespace"}', 'x{namespace="ml"}'],
  ['x{namespace=~"${namespace}"}', 'x{namespace=~"ml"}'],
  ['x{namespace=~"${namespace:regex}"}', 'x{namespace=~"ml"}'],
  ['x{namespace="[[namespace]]"}', 'x{namespace="ml"}'],
  ['x{namespace="$namespace",job="$job"}[$__rate_interval]', 'x{namespace="ml",job="raykeeper-controller"}[1m]'],
  ['label_replace(x, "to", "$1", "from", "(.*)")', 'label_replace(x, "to", "$1", "from", "(.*)")'],
];

t.test('grafanaQuery: every form of a variable, and PromQL $1 kept', async (t) => {
  for (const [expr, want] of table) t.equal(grafanaQuery(expr, values), want, expr);
});

t.test('grafanaQuery: a variable without a value throws, naming it', async (t) => {
  t.throws(() => grafanaQuery('x{cluster="$cluster"}', values), /\$cluster: no value for the Grafana variable cluster/);
  t.throws(() => grafanaQuery('x[${__range_typo}]', values), /__range_typo/);
  t.throws(() => grafanaQuery('x{a="$toString"}', values), /toString/, 'an inherited property is no value');
});
