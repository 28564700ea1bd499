// KubeRay's own e2e suites as tools/build-kuberay-e2e.sh builds them: which tests exist (tests.jsonl,
// read from their source and checked against the binaries), how a `go test -run` pattern selects them
// (Go's semantics, level by level), the one pattern that runs exactly one test, and the subset CI runs.
//
// Every test runs alone in a process of its own (its own test namespace, made and deleted by KubeRay's
// support package): a failing subtest cannot stop its siblings (KubeRay's subtests share the parent's
// gomega, so Go would skip the rest of the parent), and a test never shares 2 cores with the clusters
// an earlier sibling left in a shared namespace. The exception is a test whose subtests run only from
// inside a sibling (KubeRay's auth test: test.T().Run inside a subtest): its unit is the whole
// top-level test, run once for all of its leaves.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../localcluster/binaries.ts';

/**
 * One leaf test: the package, its test binary, the name `go test -json` gives it ("TestX/Sub_name"), and
 * the test to run to run it (itself, or its whole top-level test).
 */
export interface SuiteTest {
  package: string;
  binary: string;
  test: string;
  unit: string;
}

export const BUILD_SCRIPT = join(REPO_ROOT, 'tools', 'build-kuberay-e2e.sh');

/**
 * The subset CI runs (`npm run test:cluster`, test/node/kuberay-e2e.cluster.ts), as `go test -run`
 * patterns: every GCS fault-tolerance test, and short tests that pass today of what issue 47 closed
 * (managedBy refused by the CRD; a RayJob without entrypoint; a RayCluster /status edit reaching its
 * RayJob; token-auth RayJobs in each submission mode). docs/kuberay-e2e.md says how long they take. A
 * test joins it once it passes here; one needing an extra image (EXTRA_IMAGES) would need it built in CI.
 */
export const CI_SUBSET: readonly string[] = [
  '^TestRayClusterGCSFaultTolerance$',
  '^TestGcsFaultToleranceOptions$',
  '^TestGcsFaultToleranceAnnotations$',
  '^TestRayClusterManagedBy$/^Failed_creation_of_cluster,_managed_by_external_non_supported_controller$',
  '^TestRayJobWithClusterSelector$/^RayJob_should_not_be_created_due_to_managedBy_invalid_value$',
  '^TestRayJobLightWeightMode$/^Successful_RayJob_in_HTTP_mode_with_auth_token$',
  '^TestRayJobSidecarMode$/^Successful_RayJob_in_Sidecar_mode_with_auth_token$',
  '^TestRayJob$/^RayCluster_status_update_propagates_to_RayJob$',
  '^TestRayJob$/^Successful_RayJob_in_K8s_Job_mode_with_auth_token$',
  '^TestRayJob$/^RayJob_PreRunningDeadlineSeconds_expires_during_Initializing_state$',
  '^TestRayJob$/^Successful_RayJob$',
  '^TestRayJob$/^RayJob_has_exceed_SubmitterFinishedTimeout$',
];

/** Images a test needs beyond the node's own (tools/build-images.sh names), by top-level test. */
export const EXTRA_IMAGES: Readonly<Record<string, readonly string[]>> = {
  // switches its cluster to rayproject/ray:2.51.0 to trigger the upgrade
  TestRayClusterUpgradeStrategy: ['rayupgrade'],
};

/** Where the build is (tools/build-kuberay-e2e.sh --print-dir; it builds nothing). */
export function buildDir(): string {
  return execFileSync('bash', [BUILD_SCRIPT, '--print-dir'], { encoding: 'utf8' }).trim();
}

/** Parses tests.jsonl (one `{"package","binary","test","unit"}` a line). */
export function parseTests(text: string): SuiteTest[] {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l, i) => {
      const o = JSON.parse(l) as Partial<SuiteTest>;
      if (typeof o.package !== 'string' || typeof o.binary !== 'string' || typeof o.test !== 'string' || typeof o.unit !== 'string')
        throw new Error(`tests.jsonl line ${i + 1} is not {package, binary, test, unit}: ${l}`);
      return { package: o.package, binary: o.binary, test: o.test, unit: o.unit };
    });
}

export function readTests(dir: string): SuiteTest[] {
  return parseTests(readFileSync(join(dir, 'tests.jsonl'), 'utf8'));
}

/**
 * Splits a -run pattern as Go's splitRegexp does: top-level `|` separates alternatives, `/` separates
 * the levels of one alternative; neither counts inside [...] or (...) or after a backslash.
 */
export function splitPattern(pattern: string): string[][] {
  const alternatives: string[][] = [];
  let levels: string[] = [];
  let s = pattern;
  let cs = 0;
  let cp = 0;
  for (let i = 0; i < s.length; ) {
    const c = s[i]!;
    if (c === '[') cs++;
    else if (c === ']') cs = Math.max(0, cs - 1);
    else if (c === '(' && cs === 0) cp++;
    else if (c === ')' && cs === 0) cp--;
    else if (c === '\\') i++;
    else if ((c === '/' || c === '|') && cs === 0 && cp === 0) {
      levels.push(s.slice(0, i));
      s = s.slice(i + 1);
      i = 0;
      if (c === '|') {
        alternatives.push(levels);
        levels = [];
      }
      continue;
    }
    i++;
  }
  levels.push(s);
  alternatives.push(levels);
  return alternatives;
}

/**
 * Whether `go test -run pattern` runs the leaf `test`: for one of the alternatives, each level matches
 * (unanchored) the name at that level; levels beyond the pattern match anything. Patterns are RE2; the
 * common subset (anchors, alternation, classes, escapes) reads the same as a JavaScript RegExp.
 */
export function selects(pattern: string, test: string): boolean {
  const names = test.split('/');
  return splitPattern(pattern).some((levels) => levels.every((p, i) => i >= names.length || new RegExp(p).test(names[i]!)));
}

const RE2_META = /[\\.+*?()|[\]{}^$]/g;

/** The -run pattern that selects exactly this leaf: every level anchored and escaped. */
export function exactPattern(test: string): string {
  return test
    .split('/')
    .map((level) => `^${level.replace(RE2_META, '\\$&')}$`)
    .join('/');
}

/**
 * The tests any of the patterns selects, with the rest of their units (they run together), in the
 * suites' order; a pattern that selects nothing is an error (a misspelt name would otherwise run less
 * than it says).
 */
export function selectTests(tests: SuiteTest[], patterns: readonly string[]): SuiteTest[] {
  if (patterns.length === 0) return tests;
  for (const p of patterns) {
    if (!tests.some((t) => selects(p, t.test))) throw new Error(`-run ${p} selects none of the ${tests.length} tests`);
  }
  const units = new Set(tests.filter((t) => patterns.some((p) => selects(p, t.test))).map((t) => t.unit));
  return tests.filter((t) => units.has(t.unit));
}

/** The selected tests grouped into the units they run by (consecutive in the suites' order). */
export function groupUnits(tests: SuiteTest[]): SuiteTest[][] {
  const groups: SuiteTest[][] = [];
  for (const t of tests) {
    const last = groups.at(-1);
    if (last && last[0]!.unit === t.unit) last.push(t);
    else groups.push([t]);
  }
  return groups;
}

/** The extra images the selected tests need (tools/build-images.sh names), each once. */
export function extraImages(tests: SuiteTest[]): string[] {
  return [...new Set(tests.flatMap((t) => EXTRA_IMAGES[t.test.split('/')[0]!] ?? []))];
}
