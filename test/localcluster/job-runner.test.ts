// The test job runner against the real API server: it runs a Job's command as a local process with the
// env resolved through the API and writes the status a job controller would; never twice.
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { pino } from 'pino';
import { JobRunner, type JobRunnerOptions, startJobRunner } from '../../localcluster/job-runner.ts';
import type { BatchJob } from '../../kube/model.ts';
import { isAlive, waitForExit } from '../../localcluster/process.ts';
import { MERGE_PATCH } from '../../kube/client.ts';
import { CONFIGMAPS, JOBS, SECRETS } from '../../kube/resources.ts';
import { testNamespace, type TestNamespace } from '../helpers/control-plane.ts';
import { until } from '../helpers/until.ts';

const quiet = pino({ level: 'silent' });

async function scratch(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'raykeeper-jobrunner-test-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function jobSpec(
  name: string,
  command: string[],
  extra: { env?: unknown[]; spec?: Record<string, unknown>; args?: string[] } = {},
): Record<string, unknown> {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name },
    spec: {
      backoffLimit: 0,
      ...extra.spec,
      template: {
        metadata: { labels: { app: 'runner-test' } },
        spec: {
          restartPolicy: 'Never',
          containers: [
            { name: 'main', image: 'unused:latest', command, ...(extra.args ? { args: extra.args } : {}), env: extra.env ?? [] },
          ],
        },
      },
    },
  };
}

async function createJob(ns: TestNamespace, body: Record<string, unknown>): Promise<BatchJob> {
  return ns.kube.create({ ...JOBS, namespace: ns.name }, body);
}

async function readJob(ns: TestNamespace, name: string): Promise<BatchJob> {
  return ns.kube.get({ ...JOBS, namespace: ns.name, name });
}

async function patchJob(ns: TestNamespace, name: string, body: Record<string, unknown>, subresource?: 'status'): Promise<BatchJob> {
  return ns.kube.patch({ ...JOBS, namespace: ns.name, name, subresource }, body, MERGE_PATCH);
}

async function runner(
  t: { teardown(fn: () => unknown): void },
  ns: TestNamespace,
  options: Partial<JobRunnerOptions> = {},
): Promise<JobRunner> {
  const r = await startJobRunner({ kubeConfig: ns.kubeConfig, namespaces: [ns.name], logger: quiet, retryDelayMs: 50, ...options });
  t.teardown(() => r.stop());
  return r;
}

const conditionTypes = (job: BatchJob) => (job.status?.conditions ?? []).map((c) => [c.type, c.status, c.reason]);

t.test('exit 0: SuccessCriteriaMet + Complete, succeeded 1, start and completion times', async (t) => {
  const ns = await testNamespace(t);
  const logLines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => logLines.push(line) });
  const r = await runner(t, ns, { logger });
  const before = Date.now();
  const created = await createJob(ns, jobSpec('ok', ['sh', '-c', 'echo out; echo err >&2; exit 0']));
  t.equal(created.status?.startTime, undefined, 'nothing runs Jobs but the runner');
  const result = await r.waitFor(ns.name, 'ok');
  t.same(result.outcome, { kind: 'succeeded' });
  t.equal(result.exitCode, 0);
  t.match(result.output, /out\n/);
  t.match(result.output, /err\n/, 'stderr captured too');
  const job = await readJob(ns, 'ok');
  t.same(conditionTypes(job), [
    ['SuccessCriteriaMet', 'True', 'CompletionsReached'],
    ['Complete', 'True', 'CompletionsReached'],
  ]);
  for (const c of job.status!.conditions!) t.match(c.lastTransitionTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  t.equal(job.status!.succeeded, 1);
  t.notOk(job.status!.active, 'no active pod');
  t.notOk(job.status!.failed);
  const start = Date.parse(job.status!.startTime!);
  const end = Date.parse(job.status!.completionTime!);
  t.ok(start >= Math.floor(before / 1000) * 1000 && end >= start && end <= Date.now(), 'startTime <= completionTime, both during the test');
  // The output reaches the runner's log; stale events about our own writes are not taken for orphans
  // (the runner has handled the Job as its last write left it, so every earlier event too).
  await r.waitForHandled(ns.name, 'ok', job.metadata.resourceVersion!);
  t.ok(
    logLines.some((l) => JSON.parse(l).msg === 'out' && JSON.parse(l).stream === 'stdout'),
    'stdout lines are logged',
  );
  t.notOk(
    logLines.some((l) => /not running it again/.test(l)),
    'no spurious orphan warning',
  );
});

t.test('exit 3 with backoffLimit 0: FailureTarget + Failed BackoffLimitExceeded, failed 1', async (t) => {
  const ns = await testNamespace(t);
  const r = await runner(t, ns);
  await createJob(ns, jobSpec('bad', ['sh', '-c', 'exit 3']));
  const result = await r.waitFor(ns.name, 'bad');
  t.equal(result.exitCode, 3);
  t.equal(result.attempts, 1);
  const job = await readJob(ns, 'bad');
  t.same(conditionTypes(job), [
    ['FailureTarget', 'True', 'BackoffLimitExceeded'],
    ['Failed', 'True', 'BackoffLimitExceeded'],
  ]);
  t.equal(job.status!.failed, 1);
  t.equal(job.status!.completionTime, undefined, 'a failed Job has no completionTime');
  t.ok(job.status!.startTime);
});

t.test('retries up to backoffLimit: fails once, then succeeds', async (t) => {
  const ns = await testNamespace(t);
  const dir = await scratch(t);
  const r = await runner(t, ns);
  const marker = join(dir, 'tried');
  await createJob(
    ns,
    jobSpec('flaky', ['sh', '-c', `if [ -e ${marker} ]; then exit 0; else touch ${marker}; exit 1; fi`], { spec: { backoffLimit: 2 } }),
  );
  const result = await r.waitFor(ns.name, 'flaky');
  t.equal(result.attempts, 2);
  t.same(result.outcome, { kind: 'succeeded' });
  const job = await readJob(ns, 'flaky');
  t.equal(job.status!.failed, 1, 'the failed attempt is counted');
  t.equal(job.status!.succeeded, 1);
  t.equal(conditionTypes(job).at(-1)![0], 'Complete');
});

t.test('env: secretKeyRef and configMapKeyRef read through the API, fieldRef, $(VAR) in args', async (t) => {
  const ns = await testNamespace(t);
  const dir = await scratch(t);
  await ns.kube.create(SECRETS.at(ns.name), { metadata: { name: 'redis' }, stringData: { password: 's3cr3t pass' } });
  await ns.kube.create(CONFIGMAPS.at(ns.name), { metadata: { name: 'cfg' }, data: { address: '127.0.0.1:6379' } });
  const r = await runner(t, ns);
  const out = join(dir, 'env.txt');
  await createJob(
    ns,
    jobSpec('env', ['sh', '-c'], {
      args: [`printf '%s|%s|%s|%s|%s' "$REDIS_PASSWORD" "$ADDR" "$MY_NS" "$1" "$HOME_SET" > ${out}`, 'ignored-$0', '$(ADDR)'],
      env: [
        { name: 'REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: 'redis', key: 'password' } } },
        { name: 'ADDR', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'address' } } },
        { name: 'MY_NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
        { name: 'HOME_SET', value: '$(MY_NS)-x' },
      ],
    }),
  );
  const result = await r.waitFor(ns.name, 'env');
  t.same(result.outcome, { kind: 'succeeded' }, result.output);
  t.equal(readFileSync(out, 'utf8'), `s3cr3t pass|127.0.0.1:6379|${ns.name}|127.0.0.1:6379|${ns.name}-x`);
});

t.test('a missing Secret makes the Job wait (like the kubelet) until the Secret appears', async (t) => {
  const ns = await testNamespace(t);
  const dir = await scratch(t);
  const r = await runner(t, ns, { envRetryMs: 100 });
  const out = join(dir, 'late.txt');
  await createJob(
    ns,
    jobSpec('late', ['sh', '-c', `printf %s "$PW" > ${out}`], {
      env: [{ name: 'PW', valueFrom: { secretKeyRef: { name: 'later', key: 'pw' } } }],
    }),
  );
  await until(() => r.output(ns.name, 'late').includes('CreateContainerConfigError'), 'the Job to wait for its Secret', 5000, 50);
  t.match(r.output(ns.name, 'late'), /CreateContainerConfigError: secret "later" not found/);
  t.ok((await readJob(ns, 'late')).status?.startTime, 'started (the pod exists), waiting');
  t.notOk(existsSync(out), 'the command has not run');
  await ns.kube.create(SECRETS.at(ns.name), { metadata: { name: 'later' }, stringData: { pw: 'now' } });
  await r.waitFor(ns.name, 'late');
  t.equal(readFileSync(out, 'utf8'), 'now');
});

t.test('activeDeadlineSeconds: the process is killed, Failed DeadlineExceeded', async (t) => {
  const ns = await testNamespace(t);
  const r = await runner(t, ns, { killGraceMs: 500 });
  const pids: number[] = [];
  r.on('started', (s: { pid: number }) => pids.push(s.pid));
  await createJob(ns, jobSpec('slow', ['sh', '-c', 'sleep 60 & wait'], { spec: { activeDeadlineSeconds: 1 } }));
  const result = await r.waitFor(ns.name, 'slow', 30_000);
  t.same(result.outcome, { kind: 'failed', reason: 'DeadlineExceeded', message: 'Job was active longer than specified deadline' });
  const job = await readJob(ns, 'slow');
  t.same(conditionTypes(job), [
    ['FailureTarget', 'True', 'DeadlineExceeded'],
    ['Failed', 'True', 'DeadlineExceeded'],
  ]);
  t.equal(job.status!.failed, 1);
  t.equal(pids.length, 1);
  t.ok(await waitForExit(pids, 5000), 'the process group is gone (sh and its sleep)');
});

t.test('the command table: raykeeper runs our CLI under the pinned Node; other words can be mapped', async (t) => {
  const ns = await testNamespace(t);
  const r = await runner(t, ns, { commands: { 'fancy-tool': ['sh', '-c', 'echo fancy "$@"', 'fancy-tool'] } });
  await createJob(ns, jobSpec('cli', ['raykeeper', '--help']));
  await createJob(ns, jobSpec('mapped', ['/usr/local/bin/fancy-tool', 'a', 'b']));
  await createJob(ns, jobSpec('nonexistent', ['raykeeper-no-such-program-xyz']));
  const cli = await r.waitFor(ns.name, 'cli');
  t.equal(cli.exitCode, 0, cli.output);
  t.match(cli.output, /Usage: raykeeper <subcommand>/);
  const mapped = await r.waitFor(ns.name, 'mapped');
  t.equal(mapped.output, 'fancy a b\n');
  const missing = await r.waitFor(ns.name, 'nonexistent');
  t.equal(missing.outcome.kind, 'failed', 'an unknown program fails the Job');
  t.match(missing.output, /cannot start raykeeper-no-such-program-xyz/);
});

t.test('never twice: a restarted runner does not rerun a started Job, and fails it at its deadline', async (t) => {
  const ns = await testNamespace(t);
  const dir = await scratch(t);
  const count = join(dir, 'count');
  const first = new JobRunner({ kubeConfig: ns.kubeConfig, namespaces: [ns.name], logger: quiet, killGraceMs: 200 });
  await first.start();
  const started = new Promise<{ pid: number }>((res) => first.once('started', res));
  await createJob(ns, jobSpec('once', ['sh', '-c', `echo run >> ${count}; sleep 60`], { spec: { activeDeadlineSeconds: 4 } }));
  const { pid } = await started;
  await until(() => existsSync(count), 'the command to write its file', 5000, 25);
  t.ok(existsSync(count), 'the command runs');
  const startTime = (await readJob(ns, 'once')).status!.startTime;
  t.ok(startTime);
  await first.stop();
  t.notOk(isAlive(pid), 'stop() kills the processes it runs');
  const afterStop = await readJob(ns, 'once');
  t.equal(afterStop.status!.active, 1, 'the Job is left active (a stopped kubelet does not fail pods)');

  const second = await runner(t, ns);
  const result = await second.waitFor(ns.name, 'once', 30_000);
  t.equal(result.attempts, 0, 'the second runner never ran it');
  t.same(result.outcome, { kind: 'failed', reason: 'DeadlineExceeded', message: 'Job was active longer than specified deadline' });
  t.equal(readFileSync(count, 'utf8'), 'run\n', 'the command ran exactly once');
  const job = await readJob(ns, 'once');
  t.equal(job.status!.startTime, startTime, 'startTime unchanged');
  t.equal(conditionTypes(job).at(-1)![1], 'True');
  t.equal(conditionTypes(job).at(-1)![0], 'Failed');
});

t.test('two runners on the same namespace run each Job once', async (t) => {
  const ns = await testNamespace(t);
  const dir = await scratch(t);
  const a = await runner(t, ns);
  const b = await runner(t, ns);
  const names = ['j1', 'j2', 'j3', 'j4'];
  for (const n of names) await createJob(ns, jobSpec(n, ['sh', '-c', `echo ${n} >> ${join(dir, 'log')}`]));
  for (const n of names)
    await until(async () => (await readJob(ns, n)).status?.conditions?.some((c) => c.type === 'Complete'), `Job ${n} Complete`, 10_000, 50);
  const lines = readFileSync(join(dir, 'log'), 'utf8').trim().split('\n').sort();
  t.same(lines, names, 'each command ran exactly once');
  const ranBy = names.map((n) => (a.result(ns.name, n) ? 'a' : '') + (b.result(ns.name, n) ? 'b' : ''));
  t.ok(
    ranBy.every((x) => x === 'a' || x === 'b'),
    `each Job finished by exactly one runner: ${ranBy.join(',')}`,
  );
});

t.test("suspended Jobs do not start until resumed; a deleted Job's process is killed", async (t) => {
  const ns = await testNamespace(t);
  const r = await runner(t, ns, { killGraceMs: 200 });
  await createJob(ns, jobSpec('held', ['sh', '-c', 'exit 0'], { spec: { suspend: true } }));
  const suspended = async (name: string) => {
    const j = await readJob(ns, name);
    return j.status?.conditions?.some((c) => c.type === 'Suspended' && c.status === 'True') ? j : undefined;
  };
  let job = await until(() => suspended('held'), 'held marked Suspended', 5000, 50);
  t.same(conditionTypes(job), [['Suspended', 'True', 'JobSuspended']], 'marked Suspended, as the job controller does');
  t.notOk(job.status?.startTime, 'not started');
  await patchJob(ns, 'held', { spec: { suspend: false } });
  await r.waitFor(ns.name, 'held');
  job = await readJob(ns, 'held');
  t.same(
    conditionTypes(job).map((c) => c.slice(0, 2)),
    [
      ['Suspended', 'False'],
      ['SuccessCriteriaMet', 'True'],
      ['Complete', 'True'],
    ],
  );

  // Suspending a running Job stops its process and clears startTime; resuming runs it again.
  const firstRun = new Promise<{ pid: number }>((res) => r.once('started', res));
  await createJob(ns, jobSpec('paused', ['sh', '-c', 'sleep 60']));
  const { pid: pausedPid } = await firstRun;
  await patchJob(ns, 'paused', { spec: { suspend: true } });
  t.ok(await waitForExit([pausedPid], 10_000), 'suspending kills the process');
  job = await until(() => suspended('paused'), 'paused marked Suspended', 5000, 50);
  t.same(conditionTypes(job), [['Suspended', 'True', 'JobSuspended']]);
  t.notOk(job.status?.startTime, 'startTime cleared');
  t.notOk(job.status?.active, 'no active pod');
  const secondRun = new Promise<{ pid: number }>((res) => r.once('started', res));
  await patchJob(ns, 'paused', { spec: { suspend: false } });
  const { pid: resumedPid } = await secondRun;
  t.not(resumedPid, pausedPid, 'resumed: runs again');
  t.ok((await readJob(ns, 'paused')).status?.startTime, 'with a new startTime');

  const started = new Promise<{ pid: number }>((res) => r.once('started', res));
  await createJob(ns, jobSpec('doomed', ['sh', '-c', 'sleep 60']));
  const { pid } = await started;
  await ns.kube.delete({ ...JOBS, namespace: ns.name, name: 'doomed' });
  t.ok(await waitForExit([pid], 10_000), 'the process of a deleted Job is killed');
  t.equal(r.result(ns.name, 'doomed'), undefined, 'and no result is recorded');
});

t.test('a Job left between the interim and the final condition is finished, not rerun', async (t) => {
  const ns = await testNamespace(t);
  await createJob(ns, jobSpec('half', ['sh', '-c', 'echo must-not-run']));
  // What a runner that stopped between its two writes leaves behind.
  await patchJob(
    ns,
    'half',
    {
      status: {
        startTime: '2026-01-01T00:00:00Z',
        failed: 1,
        conditions: [
          {
            type: 'FailureTarget',
            status: 'True',
            reason: 'BackoffLimitExceeded',
            message: 'Job has reached the specified backoff limit',
            lastTransitionTime: '2026-01-01T00:00:05Z',
          },
        ],
      },
    },
    'status',
  );
  const r = await runner(t, ns, { finalizeAfterMs: 200 });
  const result = await r.waitFor(ns.name, 'half', 10_000);
  t.equal(result.attempts, 0, 'not run');
  t.equal(result.output, '');
  const job = await readJob(ns, 'half');
  t.same(conditionTypes(job), [
    ['FailureTarget', 'True', 'BackoffLimitExceeded'],
    ['Failed', 'True', 'BackoffLimitExceeded'],
  ]);
  t.equal(job.status!.failed, 1);
});

t.test('inProcess: a command run as a function in this process; maxRunning: the other Jobs wait unclaimed', async (t) => {
  const ns = await testNamespace(t);
  let release: () => void = () => {};
  const held = new Promise<void>((res) => (release = res));
  let entered: () => void = () => {};
  const firstCall = new Promise<void>((res) => (entered = res));
  const calls: string[][] = [];
  const r = await runner(t, ns, {
    maxRunning: 1,
    inProcess: {
      'in-proc': async (args, io) => {
        calls.push(args);
        io.stdout.write(`hello ${args.join(' ')} ${io.env.GREETING}\n`);
        entered();
        await held;
        return args[0] === 'fail' ? 3 : 0;
      },
    },
  });
  await createJob(ns, jobSpec('one', ['/usr/bin/in-proc', 'ok', '$(GREETING)'], { env: [{ name: 'GREETING', value: 'hi' }] }));
  await firstCall;
  const two = await createJob(ns, jobSpec('two', ['in-proc', 'fail']));
  await r.waitForHandled(ns.name, 'two', two.metadata.resourceVersion!);
  t.notOk((await readJob(ns, 'two')).status?.startTime, 'the second Job waits unclaimed while the first runs (maxRunning 1)');
  release();
  const one = await r.waitFor(ns.name, 'one');
  t.same(one.outcome, { kind: 'succeeded' });
  t.equal(one.output, 'hello ok hi hi\n', 'args $(VAR)-expanded (basename matched), env resolved, output kept');
  const failed = await r.waitFor(ns.name, 'two');
  t.equal(failed.exitCode, 3, "the function's return value is the exit code");
  t.same(conditionTypes(await readJob(ns, 'two')).at(-1), ['Failed', 'True', 'BackoffLimitExceeded']);
  t.same(calls, [['ok', 'hi'], ['fail']], 'each ran once, the second after the first');
});
