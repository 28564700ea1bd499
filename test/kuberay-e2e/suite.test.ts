// The pieces of `npm run test:kuberay` that decide what ran and what it said, as tables: Go's -run
// selection, the one pattern a test runs by, outcomes read from real test2json streams (passing,
// failing through the parent's gomega, a parent failing before its subtest ran, a timeout panic, a
// missing test), the table; and the build's test list against KubeRay's published suites.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { missingPart } from '../helpers/parts.ts';
import { firstFailure, outcome, parseEvents } from './outcome.ts';
import { testEnv } from './runner.ts';
import {
  buildDir,
  CI_SUBSET,
  exactPattern,
  extraImages,
  groupUnits,
  parseTests,
  readTests,
  selects,
  selectTests,
  splitPattern,
  type SuiteTest,
} from './suite.ts';
import { resultTable, summaryLine } from './table.ts';

const suite = (names: string[]): SuiteTest[] => names.map((test) => ({ package: 'p', binary: 'p.test', test, unit: test }));

t.test('-run patterns select as go test does: level by level, unanchored, top-level | alternatives', async (t) => {
  const cases: Array<[string, string, boolean]> = [
    ['TestRayJob', 'TestRayJob/Successful_RayJob', true],
    ['TestRayJob', 'TestRayJobSuspend/Create_a_suspended_RayJob,_and_then_resume_it.', true],
    ['^TestRayJob$', 'TestRayJobSuspend/Create_a_suspended_RayJob,_and_then_resume_it.', false],
    ['^TestRayJob$/^Successful_RayJob$', 'TestRayJob/Successful_RayJob', true],
    ['^TestRayJob$/^Successful_RayJob$', 'TestRayJob/Successful_RayJob_in_K8s_Job_mode_with_auth_token', false],
    ['^TestRayJob$/Successful', 'TestRayJob/Successful_RayJob_in_K8s_Job_mode_with_auth_token', true],
    ['/Successful', 'TestRayJobLightWeightMode/Successful_RayJob', true],
    ['TestA/x|TestB', 'TestB/y', true],
    ['TestA/x|TestB', 'TestA/y', false],
    ['TestA/(x|y)', 'TestA/y', true],
    ['TestA/[/]', 'TestA/z', false],
    ['TestSolo/anything', 'TestSolo', true],
  ];
  for (const [pattern, test, want] of cases)
    t.equal(selects(pattern, test), want, `${pattern} ${want ? 'selects' : 'does not select'} ${test}`);
  t.same(splitPattern('^A$/b|C/(d|e)/[/]'), [
    ['^A$', 'b'],
    ['C', '(d|e)', '[/]'],
  ]);
});

t.test('a test runs by a pattern that selects it and nothing else', async (t) => {
  const names = [
    "TestRayJob/Should_transition_to_'Complete'_if_the_Ray_job_has_stopped.",
    'TestRayJob/Successful_RayJob',
    'TestRayJob/Successful_RayJob_in_K8s_Job_mode_with_auth_token',
    'TestRayJobSuspend/Create_a_suspended_RayJob,_and_then_resume_it.',
    'TestDeletionStrategy/Multi-stage_deletion_should_execute_in_TTL_order:_Workers->Cluster->Self',
    'TestRayClusterAuthOptions/RayCluster_with_token_authentication_enabled/Submit_job_with_auth_token_should_succeed',
    'TestRayClusterSuspend',
  ];
  for (const name of names) {
    const p = exactPattern(name);
    t.same(
      names.filter((n) => selects(p, n)),
      [name],
      `${p} selects only ${name}`,
    );
  }
  t.equal(exactPattern('TestX/a.b(c)'), '^TestX$/^a\\.b\\(c\\)$');
});

t.test('a selection that names no test is an error; extra images follow the selected tests', async (t) => {
  const tests = suite(['TestRayJob/A', 'TestRayClusterUpgradeStrategy', 'TestGcsFaultToleranceOptions/B']);
  t.same(
    selectTests(tests, ['^TestRayJob$', 'Gcs']).map((x) => x.test),
    ['TestRayJob/A', 'TestGcsFaultToleranceOptions/B'],
  );
  t.same(selectTests(tests, []), tests, 'no pattern: everything');
  t.throws(() => selectTests(tests, ['^TestRayJob$', '^TestRayJobz$']), /-run \^TestRayJobz\$ selects none of the 3 tests/);
  t.same(extraImages(tests), ['rayupgrade']);
  t.same(extraImages(tests.slice(0, 1)), []);
  t.throws(() => parseTests('{"package":"p","binary":"p.test","test":"T"}\n'), /line 1 is not/);
  const auth = [
    { package: 'p', binary: 'p.test', test: 'TestAuth/cluster', unit: 'TestAuth' },
    { package: 'p', binary: 'p.test', test: 'TestAuth/submit', unit: 'TestAuth' },
    { package: 'p', binary: 'p.test', test: 'TestB/x', unit: 'TestB/x' },
  ];
  t.same(
    selectTests(auth, ['/submit$']).map((x) => x.test),
    ['TestAuth/cluster', 'TestAuth/submit'],
    'a test selects the rest of its unit (they run together)',
  );
  t.same(
    groupUnits(auth).map((u) => u.map((x) => x.test)),
    [['TestAuth/cluster', 'TestAuth/submit'], ['TestB/x']],
  );
});

t.test("the test binary's environment: KubeRay's variables, the kubeconfig, no proxy for the loopback API server", async (t) => {
  const env = testEnv('/k/kubeconfig', '/out', { HTTPS_PROXY: 'http://proxy:3128', NO_PROXY: 'example.com' });
  t.match(env, {
    KUBECONFIG: '/k/kubeconfig',
    KUBERAY_TEST_RAY_IMAGE: 'rayproject/ray:2.60.0',
    KUBERAY_TEST_RAY_VERSION: '2.60.0',
    KUBERAY_TEST_OUTPUT_DIR: '/out',
    HTTPS_PROXY: 'http://proxy:3128',
  });
  t.match(env.NO_PROXY, /^127\.0\.0\.1,localhost,.*example\.com$/);
});

// Streams as cmd/test2json writes them for KubeRay's tests (abridged, real shapes).
const ev = (o: object): string => JSON.stringify(o);
const PASSING = [
  ev({ Action: 'start', Package: 'e2e' }),
  ev({ Action: 'run', Package: 'e2e', Test: 'TestGcsFaultToleranceOptions' }),
  ev({ Action: 'run', Package: 'e2e', Test: 'TestGcsFaultToleranceOptions/No_Redis_Password' }),
  ev({
    Action: 'output',
    Test: 'TestGcsFaultToleranceOptions/No_Redis_Password',
    Output: '    raycluster_gcs_ft_test.go:224: [2026-12-05T10:00:00Z] Created RayCluster test-ns-x/raycluster-gcsft successfully\n',
  }),
  ev({ Action: 'pass', Package: 'e2e', Test: 'TestGcsFaultToleranceOptions/No_Redis_Password', Elapsed: 61.2 }),
  ev({ Action: 'pass', Package: 'e2e', Test: 'TestGcsFaultToleranceOptions', Elapsed: 61.3 }),
  ev({ Action: 'pass', Package: 'e2e', Elapsed: 61.4 }),
].join('\n');
// A subtest failing through the parent's gomega: the message is the parent's output.
const FAIL_THROUGH_PARENT = [
  ev({ Action: 'run', Test: 'TestRayJob' }),
  ev({ Action: 'run', Test: 'TestRayJob/Successful_RayJob' }),
  ev({
    Action: 'output',
    Test: 'TestRayJob/Successful_RayJob',
    Output: '    rayjob_test.go:50: [2026-12-05T10:00:00Z] Created RayJob test-ns-y/counter successfully\n',
  }),
  ev({ Action: 'output', Test: 'TestRayJob', Output: '    rayjob_test.go:56: \n' }),
  ev({ Action: 'output', Test: 'TestRayJob', Output: '        Timed out after 60.001s.\n' }),
  ev({ Action: 'output', Test: 'TestRayJob', Output: '        Expected success, but got an error:\n' }),
  ev({ Action: 'output', Test: 'TestRayJob', Output: '            <*errors.StatusError | 0xc000>: \n' }),
  ev({ Action: 'output', Test: 'TestRayJob', Output: '            services "counter-head-svc" not found\n' }),
  ev({
    Action: 'output',
    Test: 'TestRayJob/Successful_RayJob',
    Output: '    testing.go:1712: test executed panic(nil) or runtime.Goexit: subtest may have called FailNow on a parent test\n',
  }),
  ev({ Action: 'fail', Test: 'TestRayJob/Successful_RayJob', Elapsed: 60.4 }),
  ev({ Action: 'fail', Test: 'TestRayJob', Elapsed: 60.5 }),
  ev({ Action: 'fail', Elapsed: 60.6 }),
].join('\n');
// The parent's set-up failed (testify require) before its subtest ran.
const PARENT_SETUP = [
  ev({ Action: 'run', Test: 'TestRayJobWithClusterSelector' }),
  ev({ Action: 'output', Test: 'TestRayJobWithClusterSelector', Output: '    namespace.go:28: \n' }),
  ev({
    Action: 'output',
    Test: 'TestRayJobWithClusterSelector',
    Output: '        \tError Trace:\t/kuberay/ray-operator/test/support/namespace.go:28\n',
  }),
  ev({
    Action: 'output',
    Test: 'TestRayJobWithClusterSelector',
    Output: '        \t            \tgithub.com/ray-project/kuberay/ray-operator@v1.6.2/test/support/test.go:121\n',
  }),
  ev({ Action: 'output', Test: 'TestRayJobWithClusterSelector', Output: '        \tError:      \tReceived unexpected error:\n' }),
  ev({ Action: 'output', Test: 'TestRayJobWithClusterSelector', Output: '        \t            \tnamespaces is forbidden\n' }),
  ev({ Action: 'output', Test: 'TestRayJobWithClusterSelector', Output: '        \tTest:       \tTestRayJobWithClusterSelector\n' }),
  ev({ Action: 'fail', Test: 'TestRayJobWithClusterSelector', Elapsed: 0.1 }),
  ev({ Action: 'fail', Elapsed: 0.2 }),
].join('\n');
const TIMEOUT = [
  ev({ Action: 'run', Test: 'TestRayJobRecovery' }),
  ev({ Action: 'run', Test: 'TestRayJobRecovery/RayJob_should_recover_after_pod_deletion' }),
  ev({ Action: 'output', Output: 'panic: test timed out after 30m0s\n' }),
  ev({ Action: 'output', Output: '\trunning tests:\n' }),
  ev({ Action: 'output', Output: '\t\tTestRayJobRecovery/RayJob_should_recover_after_pod_deletion (30m0s)\n' }),
  ev({ Action: 'fail', Test: 'TestRayJobRecovery/RayJob_should_recover_after_pod_deletion', Elapsed: 1800 }),
  ev({ Action: 'fail', Elapsed: 1800 }),
].join('\n');

t.test('outcomes from test2json streams', async (t) => {
  t.same(outcome(parseEvents(PASSING), 'TestGcsFaultToleranceOptions/No_Redis_Password'), { result: 'pass', elapsed: 61.2 });
  t.same(outcome(parseEvents(FAIL_THROUGH_PARENT), 'TestRayJob/Successful_RayJob'), {
    result: 'fail',
    elapsed: 60.4,
    reason:
      'rayjob_test.go:56: Timed out after 60.001s. Expected success, but got an error: <*errors.StatusError | 0xc000>: services "counter-head-svc" not found',
  });
  t.same(outcome(parseEvents(PARENT_SETUP), 'TestRayJobWithClusterSelector/Successful_RayJob'), {
    result: 'fail',
    reason: 'namespace.go:28: Error: Received unexpected error: namespaces is forbidden',
  });
  t.match(outcome(parseEvents(TIMEOUT), 'TestRayJobRecovery/RayJob_should_recover_after_pod_deletion'), {
    result: 'fail',
    reason: /^panic: test timed out after 30m0s running tests: TestRayJobRecovery/,
  });
  t.same(outcome(parseEvents(PASSING), 'TestGcsFaultToleranceOptions/Nope'), {
    result: 'missing',
    reason: 'the binary ran no test of this name',
  });
  t.match(outcome(parseEvents('exec format error\n'), 'TestX'), { result: 'missing' }, 'a binary that never ran a test is not a pass');
  t.equal(firstFailure(parseEvents(PASSING)), undefined, 'progress lines are not failures');
  const onlyParentNote = ev({ Action: 'output', Output: '    testing.go:1712: subtest may have called FailNow on a parent test\n' });
  t.match(firstFailure(parseEvents(onlyParentNote)), /FailNow on a parent/, 'the FailNow note when there is nothing better');
});

t.test('the table and its summary', async (t) => {
  const results = [
    { test: 'TestA/x', result: 'pass' as const, seconds: 61.4 },
    { test: 'TestB', result: 'fail' as const, seconds: 120, reason: 'b_test.go:1: Expected a | b' },
    { test: 'TestC', result: 'missing' as const, seconds: 0.5, reason: 'the binary ran no test of this name' },
  ];
  t.equal(
    resultTable(results),
    [
      '| test | result | s | first failure line |',
      '| --- | --- | ---: | --- |',
      '| TestA/x | pass | 61 |  |',
      '| TestB | fail | 120 | b_test.go:1: Expected a \\| b |',
      '| TestC | missing | 1 | the binary ran no test of this name |',
    ].join('\n'),
  );
  t.equal(summaryLine(results), '1 passed, 1 failed, 1 missing of 3 (3.0 min)');
});

t.test("the build's test list: KubeRay v1.6.2's suites as published, and CI's subset within it", async (t) => {
  const dir = buildDir();
  if (!existsSync(join(dir, 'tests.jsonl'))) {
    t.fail(missingPart(`KubeRay's e2e suites are not built (${dir})`));
    return;
  }
  const tests = readTests(dir);
  const by = (binary: string): number => tests.filter((x) => x.binary === binary).length;
  t.same([by('e2e.test'), by('e2erayjob.test'), by('e2eraycronjob.test')], [22, 45, 1], 'leaf tests per package');
  t.same(
    tests.filter((x) => x.test.startsWith('TestRayClusterAuthOptions/')).map((x) => [x.test, x.unit]),
    [
      ['TestRayClusterAuthOptions/RayCluster_with_token_authentication_enabled', 'TestRayClusterAuthOptions'],
      ['TestRayClusterAuthOptions/Submit_job_with_auth_token_should_succeed', 'TestRayClusterAuthOptions'],
      ['TestRayClusterAuthOptions/Submit_job_with_incorrect_auth_token_should_fail', 'TestRayClusterAuthOptions'],
    ],
    "the auth test's job subtests are the top-level test's (test.T().Run), run with their sibling as one unit",
  );
  for (const b of new Set(tests.map((x) => x.binary))) t.ok(existsSync(join(dir, b)), `${b} built`);
  const ci = selectTests(tests, CI_SUBSET);
  t.ok(ci.filter((x) => /GcsFaultTolerance|GCSFaultTolerance/.test(x.test)).length === 10, 'CI runs all 10 GCS fault-tolerance tests');
  for (const p of CI_SUBSET.filter((p) => !/FaultTolerance/.test(p)))
    t.equal(selectTests(tests, [p]).length, 1, `the CI pattern ${p} selects one test`);
  t.same(extraImages(ci), [], 'no CI test needs an image CI does not build');
});
