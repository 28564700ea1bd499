// The per-test table `npm run test:kuberay` and the CI file print (Markdown, so docs/kuberay-e2e.md can
// hold it as printed): test, result, seconds, the first failure line; then one summary line.
import type { Result } from './outcome.ts';

export interface TestResult {
  /** "TestX/Sub_name", as go test names it. */
  test: string;
  result: Result;
  /** Wall seconds of its process: the test with its parent's set-up (namespace, a shared cluster). */
  seconds: number;
  reason?: string;
  /** The run's test2json stream and KubeRay's output directory (pod logs, events). */
  log?: string;
}

const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\s+/g, ' ').trim();

export function resultTable(results: TestResult[]): string {
  const rows = results.map((r) => `| ${cell(r.test)} | ${r.result} | ${Math.round(r.seconds)} | ${cell(r.reason ?? '')} |`);
  return ['| test | result | s | first failure line |', '| --- | --- | ---: | --- |', ...rows].join('\n');
}

/** "N passed, N failed of N (M min)", with skipped / missing when there are any. */
export function summaryLine(results: TestResult[]): string {
  const count = (r: Result): number => results.filter((x) => x.result === r).length;
  const extra = (['skip', 'missing'] as const)
    .filter((r) => count(r) > 0)
    .map((r) => `, ${count(r)} ${r === 'skip' ? 'skipped' : 'missing'}`);
  const minutes = results.reduce((s, r) => s + r.seconds, 0) / 60;
  return `${count('pass')} passed, ${count('fail')} failed${extra.join('')} of ${results.length} (${minutes.toFixed(1)} min)`;
}
