// KubeRay's own e2e tests against raykeeper on the real node (`npm run test:cluster`, root): the CI subset
// of `npm run test:kuberay` (test/kuberay-e2e/suite.ts CI_SUBSET: every GCS fault-tolerance test and short
// tests of what issue 47 closed, about 17 minutes), each KubeRay test a tap test of its own that passes only when KubeRay's
// test passed (its first failure line and its logs' directory otherwise), then the per-test table. The
// tests are KubeRay v1.6.2's as published (tools/build-kuberay-e2e.sh), run with KubeRay's timeouts.
// Then the host is restored. docs/kuberay-e2e.md has the whole suite's last result.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { missingPart } from '../helpers/parts.ts';
import { runUnit } from '../kuberay-e2e/runner.ts';
import { buildDir, CI_SUBSET, groupUnits, readTests, selectTests } from '../kuberay-e2e/suite.ts';
import { resultTable, summaryLine, type TestResult } from '../kuberay-e2e/table.ts';
import { nodeUnderTest } from './helpers.ts';

const dir = buildDir();
if (!existsSync(join(dir, 'tests.jsonl'))) throw new Error(missingPart(`KubeRay's e2e suites are not built (${dir})`));
const tests = selectTests(readTests(dir), CI_SUBSET);
// Each KubeRay test takes up to 3 minutes on 2 cores (most well under one); the node's start and stop a few more.
t.setTimeout((10 + tests.length * 6) * 60_000);

const { env, kube, stopAndAssertRestored } = await nodeUnderTest(t);
// Not in t.testdir(): a second call empties that directory, which holds the node's state (its kubeconfig);
// and the logs outlive the run, as `npm run test:kuberay`'s do.
const outDir = join(REPO_ROOT, '.raykeeper', 'kuberay-e2e', `ci-${new Date().toISOString().replace(/[:.]/g, '-')}`);
const results: TestResult[] = [];

for (const [i, unit] of groupUnits(tests).entries()) {
  t.test(`KubeRay ${unit[0]!.unit}`, async (t) => {
    const rs = await runUnit(unit, i, { buildDir: dir, kubeconfig: env.kubeconfig, kube, outDir, progress: (m) => t.comment(m) });
    results.push(...rs);
    for (const r of rs) t.equal(r.result, 'pass', r.reason ?? `${r.test} passed`, { seconds: Math.round(r.seconds), log: r.log });
  });
}

t.test('the table', async (t) => {
  t.comment(`\n${resultTable(results)}\n\n${summaryLine(results)}\nlogs: ${outDir}`);
  t.equal(results.length, tests.length, 'every selected test ran');
});

t.test('stopping the node restores the host', stopAndAssertRestored);
