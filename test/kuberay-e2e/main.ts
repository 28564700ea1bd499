// `npm run test:kuberay`: KubeRay's own e2e suites (v1.6.2, built by tools/build-kuberay-e2e.sh) against
// raykeeper standalone on the real node (`raykeeper dev --kubelet`: containerd, kubelet, raykeeper
// installed from manifests/, Redis and Ray images imported, nothing pulled). Prints a line per test as
// it ends, then the table (test, result, seconds, first failure line) and `N passed, N failed of N`.
// Exits 0 only when every selected test passed. Needs root and `bash tools/setup.sh --node`.
//
//   npm run test:kuberay [-- --ci | --run PATTERN ... | --list] [--out DIR] [--no-validating-webhook]
//     (none)         every test of test/e2e, test/e2erayjob and test/e2eraycronjob (about 2-3 hours on 2 cores)
//     --ci           the subset CI runs (suite.ts CI_SUBSET)
//     --run PATTERN  the tests a `go test -run` pattern selects (repeatable: any of them)
//     --list         print the selected tests and exit (no node)
//     --out DIR      where each run's test2json stream, KubeRay's output (pod logs, events) and
//                    results.json / table.md go (default .raykeeper/kuberay-e2e/<time>)
//     --no-validating-webhook
//                    install raykeeper without its ValidatingWebhookConfiguration (`raykeeper dev
//                    --no-validating-webhook`): the objects our webhook refuses at admission where KubeRay
//                    stores them and marks them ValidationFailed reach our controller, which marks them as
//                    KubeRay does (docs/reference/validation.md)
//     --operator kuberay
//                    KubeRay's own operator (v1.6.2) runs the pods and the RayJobs, raykeeper only its webhook
//                    and GCS-FT cleanup (companion mode): whether a failure is a raykeeper difference,
//                    answered by KubeRay (kuberay-operator.ts); with --kubeconfig the node stays so
//                    (KubeRay's CRDs, raykeeper in companion mode) after the run
//     --kubeconfig F against a node already running (`raykeeper dev --kubelet` in another terminal:
//                    its kubeconfig) instead of starting one; extra images must then be imported by hand
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startKubeletDev } from '../../dev/kubelet.ts';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { KubeClient } from '../../kube/client.ts';
import { loadKubeConfig } from '../../kube/kubeconfig.ts';
import { missingPart } from '../helpers/parts.ts';
import { handOverToKubeRay } from './kuberay-operator.ts';
import { runAll } from './runner.ts';
import { buildDir, CI_SUBSET, extraImages, readTests, selectTests } from './suite.ts';
import { resultTable, summaryLine } from './table.ts';

const { values } = parseArgs({
  options: {
    ci: { type: 'boolean' },
    run: { type: 'string', multiple: true },
    list: { type: 'boolean' },
    out: { type: 'string' },
    kubeconfig: { type: 'string' },
    'no-validating-webhook': { type: 'boolean' },
    operator: { type: 'string', default: 'raykeeper' },
  },
  strict: true,
});

if (values.kubeconfig && values['no-validating-webhook']) {
  process.stderr.write('test:kuberay: --no-validating-webhook installs the node it starts; with --kubeconfig, start that node with it\n');
  process.exit(2);
}
if (values.operator !== 'raykeeper' && values.operator !== 'kuberay') {
  process.stderr.write(`test:kuberay: --operator is raykeeper (the default) or kuberay, not ${JSON.stringify(values.operator)}\n`);
  process.exit(2);
}
const dir = buildDir();
if (!existsSync(join(dir, 'tests.jsonl'))) {
  process.stderr.write(`${missingPart(`KubeRay's e2e suites are not built (${dir})`)}\n`);
  process.exit(1);
}
const patterns = values.ci ? [...CI_SUBSET, ...(values.run ?? [])] : (values.run ?? []);
const tests = selectTests(readTests(dir), patterns);
if (values.list) {
  for (const t of tests) process.stdout.write(`${t.test}\n`);
  process.stdout.write(`${tests.length} tests\n`);
  process.exit(0);
}

const outDir = resolve(values.out ?? join(REPO_ROOT, '.raykeeper', 'kuberay-e2e', new Date().toISOString().replace(/[:.]/g, '-')));
await mkdir(outDir, { recursive: true });
const progress = (line: string): void => void process.stderr.write(`${line}\n`);
progress(`test:kuberay: ${tests.length} tests; output in ${outDir}`);
const started = Date.now();
let kubeconfig: string;
let stopNode = async (): Promise<void> => {};
if (values.kubeconfig) {
  kubeconfig = resolve(values.kubeconfig);
} else {
  const env = await startKubeletDev({
    stateDir: join(outDir, 'node'),
    progress,
    extraImages: extraImages(tests),
    validatingWebhook: !values['no-validating-webhook'],
  });
  progress(`test:kuberay: node ready in ${Math.round((Date.now() - started) / 1000)} s`);
  kubeconfig = env.kubeconfig;
  stopNode = () => env.stop();
}
const kube = new KubeClient(loadKubeConfig(kubeconfig));
let stopOperator = async (): Promise<void> => {};
let stopping = false;
const stop = async (): Promise<void> => {
  if (stopping) return;
  stopping = true;
  await stopOperator();
  kube.close();
  await stopNode();
};
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    progress(`${signal}: stopping...`);
    void stop().finally(() => process.exit(130));
  });

let failed = true;
try {
  if (values.operator === 'kuberay') {
    const kuberay = await handOverToKubeRay(kube, kubeconfig, progress);
    stopOperator = async () => {
      await kuberay.stop();
      await writeFile(join(outDir, 'kuberay-operator.log'), kuberay.log());
    };
  }
  const results = await runAll(tests, { buildDir: dir, kubeconfig, kube, outDir, progress }, (r) =>
    progress(`  ${r.result} ${Math.round(r.seconds)} s${r.reason ? `: ${r.reason}` : ''}`),
  );
  const table = resultTable(results);
  const summary = summaryLine(results);
  await writeFile(join(outDir, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  await writeFile(join(outDir, 'table.md'), `${table}\n\n${summary}\n`);
  process.stdout.write(`\n${table}\n\n${summary}\n`);
  failed = results.some((r) => r.result !== 'pass');
} finally {
  await stop();
}
process.exit(failed ? 1 : 0);
