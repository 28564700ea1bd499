// The alerts and the Grafana dashboard an admin installs with the chart (charts/raykeeper/files/):
// promtool (Debian's prometheus package, installed by tools/setup.sh) checks the rules and runs their unit
// tests (alerts-test.yaml); every alert is tested firing; every series the alerts and the dashboard read is
// one raykeeper exports; the chart ships exactly these files when asked, and nothing when not.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parse } from 'yaml';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { requireHelm, template } from '../chart/helm.ts';
import { missingPart } from '../helpers/parts.ts';
import { dashboard, RULES, rules } from './files.ts';

const UNIT_TESTS = join(REPO_ROOT, 'test', 'monitoring', 'alerts-test.yaml');

interface UnitTests {
  tests: Array<{ alert_rule_test?: Array<{ alertname: string; exp_alerts: unknown[] }> }>;
}

function promtool(args: string[], cwd = REPO_ROOT) {
  return spawnSync('promtool', args, { cwd, encoding: 'utf8', timeout: 60_000 });
}

/** Every metric name the product's code registers (source text of kube/, controller/, webhook/, src/). */
function exportedNames(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir)) {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) walk(path);
      else if (path.endsWith('.ts'))
        for (const m of readFileSync(path, 'utf8').matchAll(/'((?:raykeeper|kuberay)_[a-z_]+)'/g)) names.add(m[1]!);
    }
  };
  for (const dir of ['kube', 'controller', 'webhook', 'src']) walk(join(REPO_ROOT, dir));
  return names;
}

/** The series names a PromQL expression reads (function and keyword names excluded by their prefix). */
function seriesIn(expr: string): string[] {
  return [...expr.matchAll(/\b((?:raykeeper|kuberay)_[a-z_]+)/g)].map((m) => m[1]!.replace(/_(bucket|sum|count)$/, ''));
}

const found = spawnSync('promtool', ['--version'], { encoding: 'utf8' });
if (found.error || found.status !== 0) {
  t.fail(missingPart('promtool (Debian package prometheus) is not installed'));
} else {
  t.test('promtool check rules: the chart ships valid rules', async (t) => {
    const r = promtool(['check', 'rules', RULES]);
    t.equal(r.status, 0, r.stdout + r.stderr);
    t.match(r.stdout, new RegExp(`SUCCESS: ${rules.length} rules found`));
  });

  t.test('promtool test rules: every alert fires on its input and stays quiet on the look-alike', async (t) => {
    const r = promtool(['test', 'rules', UNIT_TESTS]);
    t.equal(r.status, 0, r.stdout + r.stderr);
    const tests = parse(readFileSync(UNIT_TESTS, 'utf8')) as UnitTests;
    const firing = new Set(
      tests.tests.flatMap((u) => (u.alert_rule_test ?? []).filter((a) => a.exp_alerts.length > 0).map((a) => a.alertname)),
    );
    for (const rule of rules) t.ok(firing.has(rule.alert), `${rule.alert} has a test where it fires`);
  });
}

t.test('every series the alerts and the dashboard read is one raykeeper exports', async (t) => {
  const names = exportedNames();
  t.ok(names.has('raykeeper_gcsft_finalizer_held_seconds') && names.has('kuberay_job_info'), 'the scan finds the registered names');
  for (const rule of rules) for (const s of seriesIn(rule.expr)) t.ok(names.has(s), `${rule.alert}: ${s}`);
  const ids = new Set<number>();
  for (const panel of dashboard.panels) {
    t.notOk(ids.has(panel.id), `panel id ${panel.id} is unique`);
    ids.add(panel.id);
    t.equal(panel.datasource?.uid, '${datasource}', `${panel.title}: the dashboard's datasource variable`);
    t.ok(panel.targets.length > 0, `${panel.title}: has a query`);
    for (const target of panel.targets) for (const s of seriesIn(target.expr)) t.ok(names.has(s), `${panel.title}: ${s}`);
  }
});

t.test('the chart: a PrometheusRule with exactly these groups and the dashboard ConfigMap, each only when enabled', async (t) => {
  requireHelm();
  const none = template({});
  t.notOk(
    none.some((o) => o.kind === 'PrometheusRule' || o.metadata.name?.endsWith('-dashboard')),
    'off by default',
  );
  const objs = template({
    metrics: { prometheusRule: { enabled: true, labels: { release: 'prom' } }, grafanaDashboard: { enabled: true } },
  });
  const rule = objs.find((o) => o.kind === 'PrometheusRule');
  t.equal(rule?.apiVersion, 'monitoring.coreos.com/v1');
  t.equal((rule?.metadata.labels as Record<string, string> | undefined)?.release, 'prom', 'labels for the ruleSelector');
  t.same((rule?.spec as { groups: unknown }).groups, parse(readFileSync(RULES, 'utf8')).groups, 'the groups of files/alerts.yaml');
  const cm = objs.find((o) => o.kind === 'ConfigMap' && o.metadata.name?.endsWith('-dashboard'));
  t.equal((cm?.metadata.labels as Record<string, string> | undefined)?.grafana_dashboard, '1', "Grafana's sidecar label");
  t.same(JSON.parse((cm?.data as Record<string, string>)['raykeeper.json']!), dashboard, 'the dashboard JSON, unchanged');
});
