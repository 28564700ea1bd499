// `raykeeper controller` argument handling, through the real launcher.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { defaultLeaseNamespace } from '../../controller/main.ts';
import { RECONCILER_MODULES } from '../../controller/reconcilers.ts';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { argumentError, controllerUsage } from '../../controller/cli.ts';
import { DEFAULT_CONTROLLER_HEALTH_PORT, DEFAULT_WEBHOOK_PORT } from '../../src/names.ts';
import { gcsFtCleanupModule, operatorCommandBudget } from '../../controller/gcsft-cleanup/module.ts';
import { gcsOrphansModule } from '../../controller/gcsft-orphans/module.ts';
import type { ControllerContext } from '../../kube/reconciler.ts';
import { createLogger } from '../../kube/logger.ts';

function raykeeper(...args: string[]) {
  return spawnSync(process.execPath, [join(REPO_ROOT, 'bin', 'raykeeper.js'), ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: '/nonexistent', KUBECONFIG: '/nonexistent/kubeconfig' },
    timeout: 60_000,
  });
}

t.test('--help lists the runtime flags and every module flag', async (tt) => {
  const r = raykeeper('controller', '--help');
  tt.equal(r.status, 0);
  for (const flag of [
    '--watch-namespace',
    '--workers',
    '--reconcile-concurrency',
    '--qps',
    '--burst',
    '--leader-elect',
    '--lease-namespace',
    '--shards',
    '--health-port',
    '--cleanup-image',
    '--cleanup-cpu',
    '--cleanup-sweep',
    '--cleanup-command-budget-ms',
  ])
    tt.match(r.stdout, flag);
  for (const m of RECONCILER_MODULES) tt.match(r.stdout, `${m.name}:`);
  tt.match(raykeeper('--help').stdout, /controller\s+run the reconcilers/, 'registered as a subcommand');
});

t.test('bad flags exit 2 with a message', async (tt) => {
  const unknown = raykeeper('controller', '--no-such-flag');
  tt.equal(unknown.status, 2);
  tt.match(unknown.stderr, /no-such-flag/);
  const workers = raykeeper('controller', '--workers', '0');
  tt.equal(workers.status, 2);
  tt.match(workers.stderr, /--workers must be an integer >= 1/);
  // KubeRay's names for the tuning flags (issue 29).
  const both = raykeeper('controller', '--workers', '2', '--reconcile-concurrency', '3');
  tt.equal(both.status, 2);
  tt.match(both.stderr, /--workers 2 and --reconcile-concurrency 3 name the same setting/);
  const concurrency = raykeeper('controller', '--reconcile-concurrency', '0');
  tt.equal(concurrency.status, 2);
  tt.match(concurrency.stderr, /--reconcile-concurrency must be an integer >= 1/);
  const qps = raykeeper('controller', '--qps=-1');
  tt.equal(qps.status, 2);
  tt.match(qps.stderr, /--qps must be a number >= 0, got "-1"/);
  const burst = raykeeper('controller', '--qps', '10', '--burst', '0');
  tt.equal(burst.status, 2);
  tt.match(burst.stderr, /--burst must be an integer >= 1/);
  const burstAlone = raykeeper('controller', '--burst', '10');
  tt.equal(burstAlone.status, 2);
  tt.match(burstAlone.stderr, /--burst needs --qps/);
  // A renew deadline as long as the lease: two replicas could lead at once. Refused before starting.
  const timing = raykeeper(
    'controller',
    '--leader-elect',
    '--lease-duration',
    '10',
    '--renew-deadline',
    '10',
    '--kubeconfig',
    '/nonexistent/kubeconfig',
  );
  tt.equal(timing.status, 2);
  tt.match(timing.stderr, /renew deadline \(10000 ms\) must be shorter than the lease duration \(10000 ms\)/);
  const retry = raykeeper(
    'controller',
    '--leader-elect',
    '--renew-deadline',
    '2',
    '--retry-period',
    '2',
    '--kubeconfig',
    '/nonexistent/kubeconfig',
  );
  tt.equal(retry.status, 2);
  tt.match(retry.stderr, /must be longer than 1.2 x the retry period/);
  const unelected = raykeeper('controller', '--shards', '2');
  tt.equal(unelected.status, 2);
  tt.match(unelected.stderr, /--shards > 1 needs --leader-elect/, 'shards are Leases: no sharding without leader election');
  const zero = raykeeper('controller', '--leader-elect', '--shards', '0');
  tt.equal(zero.status, 2);
  tt.match(zero.stderr, /--shards must be an integer >= 1/);
});

t.test('--cleanup-sweep takes auto or always (never is per cluster, decided from its Ray version)', async (tt) => {
  const ctx = { env: {}, logger: createLogger('test', { level: 'silent' }) } as unknown as ControllerContext;
  for (const bad of ['never', 'sometimes']) {
    await tt.rejects(
      async () => gcsFtCleanupModule.create(ctx, { 'cleanup-sweep': bad }),
      new RegExp(`--cleanup-sweep: "${bad}" is not one of auto, always`),
    );
  }
});

t.test('--cleanup-command-budget-ms: milliseconds in (0, 1000], for the Jobs and the orphan GC alike', async (tt) => {
  tt.equal(operatorCommandBudget({}), undefined, "unset: the cleanup's default");
  tt.equal(operatorCommandBudget({ 'cleanup-command-budget-ms': '0.5' }), 0.5);
  for (const bad of ['0', 'fast', '5000'])
    tt.throws(
      () => operatorCommandBudget({ 'cleanup-command-budget-ms': bad }),
      /--cleanup-command-budget-ms must be a number of milliseconds in \(0, 1000\]/,
    );
  const ctx = { env: {}, logger: createLogger('test', { level: 'silent' }) } as unknown as ControllerContext;
  await tt.rejects(async () => gcsOrphansModule.create(ctx, { 'cleanup-command-budget-ms': '0' }), /--cleanup-command-budget-ms/);
});

t.test('the removed aliases are unknown options that name the flag to use', async (tt) => {
  const r = raykeeper('controller', '--http-port=8080');
  tt.equal(r.status, 2);
  tt.equal(
    r.stderr,
    'raykeeper controller: unknown option --http-port (removed: use --health-port) (see raykeeper controller --help)\n',
    'one line, no usage',
  );
  const rows: Array<[string[], string]> = [
    [['--http-port', '8080'], 'unknown option --http-port (removed: use --health-port)'],
    [['--leader-election-namespace=ns'], 'unknown option --leader-election-namespace (removed: use --lease-namespace)'],
    [['--no-such-flag=1'], 'unknown option --no-such-flag'],
  ];
  for (const [args, message] of rows) {
    let thrown: unknown;
    try {
      parseArgs({ args, options: { 'health-port': { type: 'string' }, 'lease-namespace': { type: 'string' } }, strict: true });
    } catch (err) {
      thrown = err;
    }
    tt.equal(argumentError(thrown), message, args.join(' '));
  }
});

t.test("the Dockerfile's EXPOSE lists the webhook's and the controller's default ports", async (tt) => {
  const expose = /^EXPOSE\s+(.+)$/m
    .exec(readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8'))?.[1]
    ?.trim()
    .split(/\s+/)
    .map(Number);
  tt.same(expose, [DEFAULT_WEBHOOK_PORT, DEFAULT_CONTROLLER_HEALTH_PORT]);
  tt.match(controllerUsage(), `--health-port PORT         /healthz /readyz /metrics port (default ${DEFAULT_CONTROLLER_HEALTH_PORT};`);
});

t.test('no cluster configured: exit 1, not a hang', async (tt) => {
  const r = raykeeper('controller', '--kubeconfig', '/nonexistent/kubeconfig', '--health-port', '0');
  tt.equal(r.status, 1);
  tt.match(r.stdout + r.stderr, /failed to start/);
});

t.test('lease namespace default: POD_NAMESPACE, else default', async (tt) => {
  tt.equal(defaultLeaseNamespace({ POD_NAMESPACE: 'raykeeper-system' }), 'raykeeper-system');
  tt.equal(defaultLeaseNamespace({}), 'default');
});
