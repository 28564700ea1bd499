// Runs KubeRay's e2e tests, one process per test, against a cluster (raykeeper on the real node):
//   <build>/test2json -t -p <package> <build>/<binary> -test.v=test2json -test.run <exact pattern> ...
// with KubeRay's support package configured as a KubeRay user runs it: KUBECONFIG (the cluster's admin
// kubeconfig), KUBERAY_TEST_RAY_IMAGE / KUBERAY_TEST_RAY_VERSION (our Ray image, the release it holds),
// KUBERAY_TEST_OUTPUT_DIR (where it writes pod logs and events of each test namespace). Its timeouts
// are KubeRay's defaults: nothing is lengthened.
//
// Before each test the runner waits until the namespaces earlier tests left (`test-ns-*`, deleted by
// KubeRay's own cleanup) are gone, so a test never shares the node's 2 cores with the last one's pods.
// Each run's test2json stream and KubeRay's output land in <out>/<nn>-<test>/.
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loopbackEnv } from '../../localcluster/control-plane.ts';
import type { KubeClient } from '../../kube/client.ts';
import { NAMESPACES } from '../../kube/resources.ts';
import { sleep } from '../../kube/backoff.ts';
import { RAY_IMAGE, RAY_RELEASE } from '../../src/ray-release.ts';
import { outcome, parseEvents } from './outcome.ts';
import { exactPattern, groupUnits, type SuiteTest } from './suite.ts';
import type { TestResult } from './table.ts';

/** KubeRay's support package names every test namespace test-ns-<random> (support/namespace.go). */
const TEST_NAMESPACE_PREFIX = 'test-ns-';
/** The binary's own -test.timeout (a panic naming the test); the runner kills it a little later. */
const TEST_TIMEOUT_MINUTES = 30;
const NAMESPACE_WAIT_MS = 300_000;

export interface RunnerOptions {
  /** tools/build-kuberay-e2e.sh's directory (binaries, test2json). */
  buildDir: string;
  kubeconfig: string;
  kube: KubeClient;
  /** Where each run's stream and KubeRay's output go. */
  outDir: string;
  progress?: (line: string) => void;
}

/** The environment of a test binary: KubeRay's variables, and no proxy for the loopback API server. */
export function testEnv(kubeconfig: string, outputDir: string, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return {
    ...loopbackEnv(base),
    KUBECONFIG: kubeconfig,
    KUBERAY_TEST_RAY_IMAGE: RAY_IMAGE,
    KUBERAY_TEST_RAY_VERSION: RAY_RELEASE,
    KUBERAY_TEST_OUTPUT_DIR: outputDir,
  };
}

/** A directory name for a test: its index and a filesystem-safe name. */
export function runDirName(index: number, test: string): string {
  return `${String(index + 1).padStart(2, '0')}-${test.replace(/[^\w.-]+/g, '_').slice(0, 100)}`;
}

/** Waits (up to 5 minutes) until no test namespace is left; answers those still there. */
async function waitForTestNamespaces(kube: KubeClient): Promise<string[]> {
  const deadline = Date.now() + NAMESPACE_WAIT_MS;
  for (;;) {
    const left = (await kube.list(NAMESPACES)).items.map((n) => n.metadata?.name ?? '').filter((n) => n.startsWith(TEST_NAMESPACE_PREFIX));
    if (left.length === 0 || Date.now() > deadline) return left;
    await sleep(2000);
  }
}

/** Runs one unit (one test, or a whole top-level test) in a process of its own and reads each test's outcome. */
export async function runUnit(unit: SuiteTest[], index: number, options: RunnerOptions): Promise<TestResult[]> {
  const first = unit[0]!;
  const progress = options.progress ?? (() => {});
  const left = await waitForTestNamespaces(options.kube);
  if (left.length > 0) progress(`  still terminating after ${NAMESPACE_WAIT_MS / 1000} s: ${left.join(', ')} (running anyway)`);
  const dir = join(options.outDir, runDirName(index, first.unit));
  const kuberayOutput = join(dir, 'kuberay-output');
  await mkdir(kuberayOutput, { recursive: true });
  const args = [
    '-t',
    '-p',
    first.package,
    join(options.buildDir, first.binary),
    '-test.v=test2json',
    '-test.run',
    exactPattern(first.unit),
    '-test.timeout',
    `${TEST_TIMEOUT_MINUTES}m`,
    '-test.count=1',
  ];
  const started = Date.now();
  const child = spawn(join(options.buildDir, 'test2json'), args, {
    cwd: dir,
    env: testEnv(options.kubeconfig, kuberayOutput),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const file = createWriteStream(join(dir, 'test2json.jsonl'));
  let text = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    text += d;
    file.write(d);
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const killer = setTimeout(() => child.kill('SIGKILL'), (TEST_TIMEOUT_MINUTES + 2) * 60_000);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  clearTimeout(killer);
  await new Promise<void>((resolve) => file.end(resolve));
  if (stderr !== '') await writeFile(join(dir, 'stderr.txt'), stderr);
  const wall = (Date.now() - started) / 1000;
  const events = parseEvents(text);
  return unit.map((test) => {
    const o = outcome(events, test.test);
    // A unit of several tests: each its own time; of one: the process's (with its parent's set-up).
    const base = { test: test.test, seconds: unit.length > 1 ? (o.elapsed ?? wall) : wall, log: dir };
    // The process's exit must agree: a "pass" from a binary that then failed, or a binary that ran no
    // test because it could not run at all, is a failure.
    if (code !== 0 && o.result !== 'fail' && !(o.result === 'pass' && unit.length > 1))
      return {
        ...base,
        result: 'fail' as const,
        reason: `${o.result === 'pass' ? 'passed, but ' : ''}the test binary exited ${code}: ${stderr.trim().slice(0, 200)}`,
      };
    return { ...base, result: o.result, reason: o.reason };
  });
}

/** Runs the tests unit by unit, in order, reporting each result as it comes. */
export async function runAll(
  tests: SuiteTest[],
  options: RunnerOptions,
  onResult: (r: TestResult) => void = () => {},
): Promise<TestResult[]> {
  const results: TestResult[] = [];
  const units = groupUnits(tests);
  for (const [i, unit] of units.entries()) {
    options.progress?.(`[${i + 1}/${units.length}] ${unit[0]!.unit}${unit.length > 1 ? ` (${unit.length} tests)` : ''}`);
    for (const r of await runUnit(unit, i, options)) {
      results.push(r);
      onResult(r);
    }
  }
  return results;
}
