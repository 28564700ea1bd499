// manifests/optional/monitoring's PrometheusRule and dashboard ConfigMap, made from the chart's files
// (charts/raykeeper/files/alerts.yaml, grafana-dashboard.json) as the chart renders them with its default
// values: kustomize cannot read a file outside its directory, so the copies are committed, and
// alerts.test.ts checks they are current (test/chart/equivalence.test.ts that they equal the chart's objects).
//
//   node test/monitoring/kustomize-copy.ts --write    # rewrites both copies
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { chartGroups, DASHBOARD } from './files.ts';

export const KUSTOMIZE_DIR = join(REPO_ROOT, 'manifests', 'optional', 'monitoring');

const HEADER = (source: string) =>
  `# GENERATED from charts/raykeeper/files/${source} by \`node test/monitoring/kustomize-copy.ts --write\`; do not edit.\n`;

const metadata = (name: string, extra: Record<string, string> = {}) => ({
  name,
  namespace: 'raykeeper-system',
  labels: { 'app.kubernetes.io/name': 'raykeeper', 'app.kubernetes.io/component': 'monitoring', ...extra },
});

/** The copies' paths and contents. Pure but for reading the two source files. */
export function kustomizeCopies(): Record<string, string> {
  const rule = {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: metadata('raykeeper'),
    spec: { groups: chartGroups('raykeeper-system') },
  };
  const dashboard = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: metadata('raykeeper-dashboard', { grafana_dashboard: '1' }),
    // The chart's `|-` block: the file without its final newline.
    data: { 'raykeeper.json': readFileSync(DASHBOARD, 'utf8').replace(/\n+$/, '') },
  };
  return {
    [join(KUSTOMIZE_DIR, 'prometheusrule.yaml')]: HEADER('alerts.yaml') + stringify(rule, { lineWidth: 0 }),
    [join(KUSTOMIZE_DIR, 'grafana-dashboard.yaml')]: HEADER('grafana-dashboard.json') + stringify(dashboard, { lineWidth: 0 }),
  };
}

if (process.argv[1] && import.meta.filename === process.argv[1] && process.argv.includes('--write')) {
  for (const [path, text] of Object.entries(kustomizeCopies())) {
    writeFileSync(path, text);
    process.stdout.write(`wrote ${path}\n`);
  }
}
