// The alerts and the Grafana dashboard an admin installs with the chart (charts/raykeeper/files/) or
// manifests/optional/monitoring: promtool (Debian's prometheus package, installed by tools/setup.sh) checks
// the rules and runs their unit tests (alerts-test.yaml); every alert is tested firing; every alert links a
// runbook (docs/runbooks/<alert>.md) that says what it means, its impact, how to diagnose and fix it; every
// aggregation keeps the install's namespace and job, and every dashboard query is scoped by the $namespace
// and $job variables; every raykeeper series they read is one raykeeper exports (the API server's:
// webhook-live.test.ts); the chart writes its values into the thresholds and runbook links, ships exactly
// these files when asked and nothing when not; the kustomize copies are current.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parse, stringify } from 'yaml';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { createMetricsRegistry } from '../../kube/metrics.ts';
import { CHART_DIR, helm, requireHelm, template, valuesFile } from '../chart/helm.ts';
import { missingPart } from '../helpers/parts.ts';
import { kustomizeCopies } from './kustomize-copy.ts';
import { asChartRenders, chartGroups, dashboard, labelValuesQuery, RULES, type Rule, rules } from './files.ts';

const UNIT_TESTS = join(REPO_ROOT, 'test', 'monitoring', 'alerts-test.yaml');

interface UnitTests {
  tests: Array<{ alert_rule_test?: Array<{ alertname: string; exp_alerts: unknown[] }> }>;
}

const RUNBOOKS = join(REPO_ROOT, 'docs', 'runbooks');

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
  // prom-client's process and Node.js metrics, under the prefix both processes give them.
  const registry = createMetricsRegistry();
  for (const m of registry.getMetricsAsArray()) names.add(m.name);
  registry.clear();
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
  t.ok(names.has('raykeeper_process_start_time_seconds'), "and prom-client's default metrics");
  for (const rule of rules) for (const s of seriesIn(rule.expr)) t.ok(names.has(s), `${rule.alert}: ${s}`);
  for (const v of dashboard.templating.list)
    if (v.type === 'query') for (const s of seriesIn(labelValuesQuery(v.query ?? '').selector)) t.ok(names.has(s), `$${v.name}: ${s}`);
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
  t.same((rule?.spec as { groups: unknown }).groups, chartGroups('raykeeper-system'), 'the groups of files/alerts.yaml');
  const cm = objs.find((o) => o.kind === 'ConfigMap' && o.metadata.name?.endsWith('-dashboard'));
  t.equal((cm?.metadata.labels as Record<string, string> | undefined)?.grafana_dashboard, '1', "Grafana's sidecar label");
  t.same(JSON.parse((cm?.data as Record<string, string>)['raykeeper.json']!), dashboard, 'the dashboard JSON, unchanged');
});

/** The label lists of every `by (...)` in a PromQL expression, and whether it aggregates without one. */
function aggregations(expr: string): { by: string[][]; unscoped: string[] } {
  const by = [...expr.matchAll(/\b(?:sum|max|min|avg|count)\s+by\s*\(([^)]*)\)/g)].map((m) => m[1]!.split(',').map((l) => l.trim()));
  const unscoped = [...expr.matchAll(/\b(sum|max|min|avg|count)\s*\(/g)].map((m) => m[1]!);
  return { by, unscoped };
}

t.test("every alert is scoped: raykeeper's by the install's namespace and job, the API server's by the webhook's name", async (t) => {
  const table: Array<[string, { by: string[][]; unscoped: string[] }]> = [
    ['sum by (namespace, job, reason) (increase(x[5m])) > 0', { by: [['namespace', 'job', 'reason']], unscoped: [] }],
    ['sum(raykeeper_leader) == 0', { by: [], unscoped: ['sum'] }],
    ['histogram_quantile(0.99, sum by (le) (rate(x[5m])))', { by: [['le']], unscoped: [] }],
  ];
  for (const [expr, want] of table) t.same(aggregations(expr), want, `aggregations(${expr})`);
  for (const rule of rules) {
    const { by, unscoped } = aggregations(rule.expr);
    t.same(unscoped, [], `${rule.alert}: no aggregation without by (...)`);
    const keep = rule.expr.includes('apiserver_') ? ['name', 'type'] : ['namespace', 'job'];
    for (const labels of by) for (const l of keep) t.ok(labels.includes(l), `${rule.alert}: by (${labels.join(', ')}) keeps ${l}`);
  }
});

t.test('every alert links its runbook, which says what it means, its impact, how to diagnose and fix it', async (t) => {
  const index = readFileSync(join(RUNBOOKS, 'README.md'), 'utf8');
  for (const rule of rules) {
    t.equal(rule.annotations?.runbook_url, `docs/runbooks/${rule.alert}.md`, `${rule.alert}: runbook_url`);
    t.match(rule.labels?.severity, /^(warning|critical)$/, `${rule.alert}: severity`);
    const file = join(RUNBOOKS, `${rule.alert}.md`);
    if (!existsSync(file)) {
      t.fail(`${rule.alert}: ${file} is missing`);
      continue;
    }
    const text = readFileSync(file, 'utf8');
    t.match(text, new RegExp(`^# ${rule.alert}\n`), `${rule.alert}: its title`);
    t.match(text, new RegExp(`\\*\\*Severity\\*\\* ${rule.labels?.severity}\\.`), `${rule.alert}: its severity`);
    for (const section of ['What it means', 'Impact', 'Diagnose', 'Fix'])
      t.match(text, new RegExp(`^## ${section}`, 'm'), `${rule.alert}: ${section}`);
    t.ok(index.includes(`[${rule.alert}](${rule.alert}.md)`), `${rule.alert}: in docs/runbooks/README.md`);
  }
  const pages = readdirSync(RUNBOOKS).filter((f) => f !== 'README.md');
  t.same(pages.sort(), rules.map((r) => `${r.alert}.md`).sort(), 'one page per alert, none for an alert that is gone');
});

t.test('the dashboard has $namespace and $job, and every raykeeper query is scoped by both', async (t) => {
  const vars = Object.fromEntries(dashboard.templating.list.map((v) => [v.name, v]));
  for (const name of ['namespace', 'job']) {
    t.match(vars[name], { type: 'query', multi: true, includeAll: true, allValue: '.*' }, `$${name}: several or all installs`);
    t.equal(labelValuesQuery(vars[name]?.query ?? '').label, name, `$${name}: the values of the ${name} label`);
  }
  t.match(vars.job?.query, /namespace=~"\$namespace"/, '$job: of the namespaces chosen');
  for (const panel of dashboard.panels)
    for (const target of panel.targets)
      for (const m of target.expr.matchAll(/\b(?:raykeeper|kuberay)_[a-z_]+(\{[^}]*\})?/g))
        t.match(m[1], /^\{namespace=~"\$namespace", job=~"\$job"/, `${panel.title}: ${m[0]}`);
});

t.test('the kustomize copies (manifests/optional/monitoring) are current', async (t) => {
  for (const [path, text] of Object.entries(kustomizeCopies()))
    t.equal(readFileSync(path, 'utf8'), text, `${path}: out of date? run: node test/monitoring/kustomize-copy.ts --write`);
});

if (!found.error && found.status === 0)
  t.test('the chart writes its values into the thresholds (promtool on the rendered rules) and the runbook links', async (t) => {
    requireHelm();
    const rendered = (values: object): Rule[] =>
      (
        template({ metrics: { prometheusRule: { enabled: true, ...values } } }).find((o) => o.kind === 'PrometheusRule')?.spec as {
          groups: Array<{ rules: Rule[] }>;
        }
      ).groups.flatMap((g) => g.rules);
    const values = {
      certificateExpiryDays: 30,
      webhookSlowFraction: 0.8,
      runbookBaseUrl: 'https://git.example.com/raykeeper/docs/runbooks/',
    };
    const objs = template({ webhook: { timeoutSeconds: 10 }, metrics: { prometheusRule: { enabled: true, ...values } } });
    const groups = (objs.find((o) => o.kind === 'PrometheusRule')?.spec as { groups: unknown }).groups;
    const dir = t.testdir();
    writeFileSync(join(dir, 'rules.yaml'), stringify({ groups }));
    const expiry = (groups as Array<{ rules: Rule[] }>)
      .flatMap((g) => g.rules)
      .find((r) => r.alert === 'RaykeeperWebhookCertificateExpiry');
    for (const rule of (groups as Array<{ rules: Rule[] }>).flatMap((g) => g.rules))
      t.equal(
        rule.annotations?.runbook_url,
        `https://git.example.com/raykeeper/docs/runbooks/${rule.alert}.md`,
        `${rule.alert}: runbook_url`,
      );
    // 20 days left fires at 30 (not at the default 14); a p99 of 6.25 s does not at 0.8 x 10 s (it does at 0.5 x 5 s).
    const bucket = (le: string, values: string) => ({
      series: `apiserver_admission_webhook_admission_duration_seconds_bucket{name="raycluster.mutate.raykeeper.io",type="admit",le="${le}"}`,
      values,
    });
    const tests = {
      rule_files: ['rules.yaml'],
      evaluation_interval: '1m',
      tests: [
        {
          interval: '1m',
          input_series: [
            {
              series: 'raykeeper_webhook_certificate_not_after_timestamp_seconds{namespace="a",job="w",instance="i"}',
              values: `${20 * 86400}x20`,
            },
            bucket('0.5', '0+98x20'),
            bucket('2.5', '0+98x20'),
            bucket('10', '0+100x20'),
            bucket('+Inf', '0+100x20'),
          ],
          alert_rule_test: [
            {
              eval_time: '1m',
              alertname: 'RaykeeperWebhookCertificateExpiry',
              exp_alerts: [
                {
                  exp_labels: { severity: 'warning', namespace: 'a', job: 'w', instance: 'i' },
                  exp_annotations: {
                    ...expiry?.annotations,
                    summary: 'The raykeeper webhook i (a, w) serves a certificate that expires in 20.0 days',
                  },
                },
              ],
            },
            { eval_time: '16m', alertname: 'RaykeeperWebhookSlow', exp_alerts: [] },
          ],
        },
      ],
    };
    writeFileSync(join(dir, 'test.yaml'), stringify(tests));
    const r = promtool(['test', 'rules', 'test.yaml'], dir);
    t.equal(r.status, 0, `thresholds from values: ${r.stdout}${r.stderr}`);
    // The same input against the defaults: the opposite answers (the test above can fail).
    writeFileSync(join(dir, 'rules.yaml'), readFileSync(RULES, 'utf8'));
    const d = promtool(['test', 'rules', 'test.yaml'], dir);
    t.not(d.status, 0, 'with the default thresholds the same expectations fail');
    t.match(
      d.stdout + d.stderr,
      /RaykeeperWebhookCertificateExpiry[\s\S]*RaykeeperWebhookSlow|RaykeeperWebhookSlow[\s\S]*RaykeeperWebhookCertificateExpiry/,
      'both',
    );
    t.same(
      rendered({}),
      rules.map((r) => asChartRenders(r, 'raykeeper-system')),
      "default values: the file as it is, but the controller's absence looked for in the release's namespace",
    );
    // Another install, in another namespace, is scraped; this one is not: the alert fires, for this namespace.
    writeFileSync(
      join(dir, 'rules.yaml'),
      stringify({ groups: [{ name: 'absent', rules: rendered({}).filter((r) => r.alert === 'RaykeeperControllerAbsent') }] }),
    );
    writeFileSync(
      join(dir, 'absent.yaml'),
      stringify({
        rule_files: ['rules.yaml'],
        evaluation_interval: '1m',
        tests: [
          {
            interval: '1m',
            input_series: [{ series: 'raykeeper_leader{namespace="elsewhere",job="raykeeper-controller"}', values: '1x10' }],
            alert_rule_test: [
              {
                eval_time: '6m',
                alertname: 'RaykeeperControllerAbsent',
                exp_alerts: [
                  {
                    exp_labels: { severity: 'critical', namespace: 'raykeeper-system' },
                    exp_annotations: rules.find((r) => r.alert === 'RaykeeperControllerAbsent')?.annotations,
                  },
                ],
              },
            ],
          },
        ],
      }),
    );
    const a = promtool(['test', 'rules', 'absent.yaml'], dir);
    t.equal(a.status, 0, `an install scraped elsewhere does not hide this one's absence: ${a.stdout}${a.stderr}`);
  });

t.test('a threshold naming no value fails the render, naming it', async (t) => {
  requireHelm();
  const chart = join(t.testdir(), 'raykeeper');
  cpSync(CHART_DIR, chart, { recursive: true });
  const file = join(chart, 'files', 'alerts.yaml');
  writeFileSync(
    file,
    readFileSync(file, 'utf8').replace(
      '< 14 # metrics.prometheusRule.certificateExpiryDays',
      '< 14 # metrics.prometheusRule.certificateExpiryDay',
    ),
  );
  const r = helm(['template', 'raykeeper', chart, '-f', valuesFile({ metrics: { prometheusRule: { enabled: true } } })]);
  t.not(r.status, 0, 'helm template fails');
  t.match(r.stderr, /the threshold "metrics\.prometheusRule\.certificateExpiryDay" names no number in the values/);
  for (const bad of [{ certificateExpiryDays: 0 }, { webhookSlowFraction: 0 }, { webhookSlowFraction: 1.5 }]) {
    const s = helm(['template', 'raykeeper', CHART_DIR, '-f', valuesFile({ metrics: { prometheusRule: { enabled: true, ...bad } } })]);
    t.not(s.status, 0, `refused by the schema: ${JSON.stringify(bad)}`);
  }
});
