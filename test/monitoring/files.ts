// The chart's alerts and Grafana dashboard (charts/raykeeper/files/), as the monitoring tests read them,
// and the Grafana variable substitution a panel's query goes through before it reaches Prometheus.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { CHART_DIR } from '../chart/helm.ts';

export const RULES = join(CHART_DIR, 'files', 'alerts.yaml');
export const DASHBOARD = join(CHART_DIR, 'files', 'grafana-dashboard.json');

export interface Rule {
  alert: string;
  expr: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
export interface Variable {
  name: string;
  type: string;
  query?: string;
  multi?: boolean;
  includeAll?: boolean;
  allValue?: string;
}
export interface Dashboard {
  templating: { list: Variable[] };
  panels: Array<{ id: number; title: string; datasource?: { uid?: string }; targets: Array<{ expr: string }> }>;
}

export const rules = (parse(readFileSync(RULES, 'utf8')) as { groups: Array<{ rules: Rule[] }> }).groups.flatMap((g) => g.rules);
/** The chart's one change to a rule it ships: the controller's absence looked for in its release's namespace. */
export function asChartRenders(rule: Rule, namespace: string): Rule {
  return rule.alert === 'RaykeeperControllerAbsent' ? { ...rule, expr: `absent(raykeeper_leader{namespace="${namespace}"})` } : rule;
}

/** files/alerts.yaml's groups as the chart renders them into a release in `namespace`. */
export function chartGroups(namespace: string): Array<{ name: string; rules: Rule[] }> {
  return (parse(readFileSync(RULES, 'utf8')) as { groups: Array<{ name: string; rules: Rule[] }> }).groups.map((g) => ({
    ...g,
    rules: g.rules.map((r) => asChartRenders(r, namespace)),
  }));
}

export const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;

/** Grafana's built-in interval variables, as a dashboard over the last hour at a 1 s scrape would have them. */
export const GRAFANA_BUILTINS: Readonly<Record<string, string>> = {
  __interval: '15s',
  __interval_ms: '15000',
  __rate_interval: '1m',
  __range: '1h',
  __range_s: '3600',
  __range_ms: '3600000',
};

/**
 * A panel's query as Grafana sends it: `$name`, `${name}`, `${name:format}` and `[[name]]` replaced by
 * `values[name]`. A `$` followed by a digit (label_replace's `$1`) is PromQL's own and stays. A variable
 * without a value throws (Grafana would send it as it is, and Prometheus would refuse the query).
 */
export function grafanaQuery(expr: string, values: Readonly<Record<string, string>>): string {
  return expr.replace(/\$\{([A-Za-z_]\w*)(?::[\w-]+)?\}|\[\[([A-Za-z_]\w*)(?::[\w-]+)?\]\]|\$([A-Za-z_]\w*)/g, (m, a, b, c) => {
    const name = (a ?? b ?? c) as string;
    const value = Object.hasOwn(values, name) ? values[name] : undefined;
    if (value === undefined) throw new Error(`${m}: no value for the Grafana variable ${name}`);
    return value;
  });
}

/**
 * A multi-value variable's selection as Grafana writes it into a Prometheus query: one value
 * regex-escaped, several as `(a|b)`.
 */
export function grafanaMultiValue(selected: readonly string[]): string {
  const escaped = selected.map((v) => v.replace(/[\\^$*+?.()|[\]{}]/g, '\\$&'));
  return escaped.length === 1 ? escaped[0]! : `(${escaped.join('|')})`;
}

/** A query variable's `label_values(selector, label)`: its parts, or throws naming the query. */
export function labelValuesQuery(query: string): { selector: string; label: string } {
  const m = /^label_values\((.+),\s*([A-Za-z_]\w*)\)$/.exec(query.trim());
  if (!m) throw new Error(`${query}: not a label_values(selector, label) query`);
  return { selector: m[1]!, label: m[2]! };
}
