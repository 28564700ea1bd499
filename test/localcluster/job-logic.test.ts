// The job runner's pure decisions (no API server): which Jobs start, the statuses it writes, env
// resolution and $(VAR) expansion, the command table.
import t from 'tap';
import {
  retryDelay,
  decideJobRun,
  finishStatuses,
  type RunnerJob,
  k8sTime,
  localCommand,
  localPod,
  startStatus,
  suspendedStatus,
  DEADLINE_EXCEEDED,
} from '../../localcluster/job-logic.ts';
import { EnvResolutionError, type EnvLookups, expand, resolveEnv } from '../../kube/env.ts';

const job = (
  over: { spec?: Partial<RunnerJob['spec']>; status?: RunnerJob['status']; metadata?: Partial<RunnerJob['metadata']> } = {},
): RunnerJob => ({
  metadata: { name: 'j', namespace: 'ns', uid: 'job-uid', ...over.metadata },
  spec: {
    template: { metadata: { labels: { app: 'x' }, annotations: { note: 'n' } }, spec: { containers: [{ name: 'c', command: ['sh'] }] } },
    ...over.spec,
  },
  ...(over.status ? { status: over.status } : {}),
});
const cond = (type: string, status = 'True', reason = 'R', message = 'M') => ({ type, status, reason, message });

t.test('decideJobRun: one row per situation', async (t) => {
  const rows: Array<[string, RunnerJob, boolean, string]> = [
    ['new job', job(), false, 'start'],
    ['new job we already run (same uid)', job(), true, 'running'],
    ['started elsewhere: never rerun', job({ status: { startTime: '2026-01-01T00:00:00Z' } }), false, 'orphaned'],
    ['started by us', job({ status: { startTime: '2026-01-01T00:00:00Z' } }), true, 'running'],
    ['complete', job({ status: { startTime: 'x', conditions: [cond('Complete')] } }), false, 'finished'],
    ['failed', job({ status: { startTime: 'x', conditions: [cond('Failed')] } }), true, 'finished'],
    ['Complete=False is not finished', job({ status: { conditions: [cond('Complete', 'False')] } }), false, 'start'],
    ['interim FailureTarget only', job({ status: { startTime: 'x', conditions: [cond('FailureTarget')] } }), false, 'finalize'],
    ['interim SuccessCriteriaMet only', job({ status: { startTime: 'x', conditions: [cond('SuccessCriteriaMet')] } }), false, 'finalize'],
    [
      'interim condition of a Job we run: our own write',
      job({ status: { startTime: 'x', conditions: [cond('FailureTarget')] } }),
      true,
      'running',
    ],
    ['suspended, never started', job({ spec: { suspend: true } }), false, 'suspended'],
    ['deleting', job({ metadata: { deletionTimestamp: '2026-01-01T00:00:00Z' } }), true, 'deleting'],
  ];
  for (const [name, j, here, kind] of rows) t.equal(decideJobRun(j, here).kind, kind, name);

  const orphan = decideJobRun(job({ spec: { activeDeadlineSeconds: 10 }, status: { startTime: '2026-01-01T00:00:00Z' } }), false);
  t.same(orphan, { kind: 'orphaned', deadlineAt: Date.parse('2026-01-01T00:00:10Z') }, 'an orphan keeps its deadline');
  t.same(decideJobRun(job({ spec: { suspend: true }, status: { conditions: [cond('Suspended')] } }), false), {
    kind: 'suspended',
    markSuspended: false,
  });
  const finalize = decideJobRun(job({ status: { conditions: [cond('FailureTarget', 'True', 'DeadlineExceeded', 'late')] } }), false);
  t.same(finalize, { kind: 'finalize', outcome: { kind: 'failed', reason: 'DeadlineExceeded', message: 'late' } });
});

t.test("retryDelay: the job controller's pod failure backoff, 10 s doubled, at most 6 min", async (t) => {
  const rows: Array<[number, number | undefined, number]> = [
    [1, undefined, 10_000],
    [2, undefined, 20_000],
    [3, undefined, 40_000],
    [6, undefined, 320_000],
    [7, undefined, 360_000],
    [60, undefined, 360_000],
    [1, 200, 200],
    [3, 200, 800],
  ];
  for (const [failed, base, ms] of rows) t.equal(retryDelay(failed, base), ms, `after ${failed} failure(s), base ${base ?? 'default'}`);
});

t.test('k8sTime has second precision', async (t) => {
  t.equal(k8sTime(new Date('2026-03-04T05:06:07.891Z')), '2026-03-04T05:06:07Z');
});

t.test('startStatus and suspendedStatus', async (t) => {
  const now = new Date('2026-01-01T00:00:05.5Z');
  t.same(startStatus(job(), now), { startTime: '2026-01-01T00:00:05Z', active: 1, ready: 0 });
  const resumed = startStatus(job({ status: { conditions: [cond('Suspended')] } }), now);
  t.match(resumed, { conditions: [{ type: 'Suspended', status: 'False', reason: 'JobResumed' }] }, 'resuming flips Suspended to False');
  const s = suspendedStatus(job({ status: { startTime: 'x', conditions: [cond('Other')] } }), now);
  t.equal(s.startTime, null, 'suspending clears startTime (merge patch null)');
  t.same(
    (s.conditions as Array<{ type: string }>).map((c) => c.type),
    ['Other', 'Suspended'],
  );
});

t.test('finishStatuses: interim then final condition, like the 1.35 job controller', async (t) => {
  const now = new Date('2026-01-01T00:01:00Z');
  const [a, b] = finishStatuses(job({ status: { startTime: 'x' } }), { kind: 'succeeded' }, { succeeded: 1, failed: 0 }, now);
  t.same(
    (a.conditions as Array<{ type: string }>).map((c) => c.type),
    ['SuccessCriteriaMet'],
  );
  t.same(
    (b.conditions as Array<{ type: string; reason: string; message: string }>).map((c) => [c.type, c.reason, c.message]),
    [
      ['SuccessCriteriaMet', 'CompletionsReached', 'Reached expected number of succeeded pods'],
      ['Complete', 'CompletionsReached', 'Reached expected number of succeeded pods'],
    ],
  );
  t.equal(b.completionTime, '2026-01-01T00:01:00Z');
  t.equal(a.completionTime, undefined, 'completionTime only with the final condition');
  t.match(b, { active: 0, succeeded: 1, failed: 0 });

  const [fa, fb] = finishStatuses(job(), DEADLINE_EXCEEDED, { succeeded: 0, failed: 2 }, now);
  t.same(
    (fa.conditions as Array<{ type: string }>).map((c) => c.type),
    ['FailureTarget'],
  );
  t.same(
    (fb.conditions as Array<{ type: string; reason: string }>).map((c) => [c.type, c.reason]),
    [
      ['FailureTarget', 'DeadlineExceeded'],
      ['Failed', 'DeadlineExceeded'],
    ],
  );
  t.equal(fb.completionTime, undefined, 'a failed Job has no completionTime');
  t.equal(fb.failed, 2);

  // Finalizing after a restart reuses the stored interim condition's reason.
  const stored = job({ status: { conditions: [cond('FailureTarget', 'True', 'BackoffLimitExceeded', 'from before')] } });
  const [, final] = finishStatuses(stored, { kind: 'failed', reason: 'Other', message: 'other' }, { succeeded: 0, failed: 1 }, now);
  t.match((final.conditions as unknown[])[1], { type: 'Failed', reason: 'BackoffLimitExceeded', message: 'from before' });
  t.equal((final.conditions as unknown[]).length, 2, 'the interim condition is not duplicated');
});

t.test('expand: Kubernetes $(VAR) rules', async (t) => {
  const vars: Record<string, string> = { A: 'a', EMPTY: '' };
  const rows: Array<[string, string]> = [
    ['$(A)', 'a'],
    ['x$(A)y$(A)', 'xaya'],
    ['$(MISSING)', '$(MISSING)'],
    ['$$(A)', '$(A)'],
    ['$$', '$'],
    ['$A', '$A'],
    ['$(A', '$(A'],
    ['$(EMPTY)!', '!'],
    ['tail$', 'tail$'],
  ];
  for (const [input, want] of rows)
    t.equal(
      expand(input, (n) => vars[n]),
      want,
      input,
    );
});

const lookups = (secrets: Record<string, Record<string, string>>, configMaps: Record<string, Record<string, string>> = {}): EnvLookups => ({
  secret: async (_ns, name) => secrets[name],
  configMap: async (_ns, name) => configMaps[name],
});

t.test('resolveEnv: values, refs, envFrom, fieldRefs, order', async (t) => {
  const pod = localPod(job(), 'abcde', 'pod-uid');
  t.equal(pod.name, 'j-abcde');
  t.equal(pod.labels['batch.kubernetes.io/job-name'], 'j');
  t.equal(pod.labels['controller-uid'], 'job-uid');
  const env = await resolveEnv(
    {
      name: 'c',
      envFrom: [{ prefix: 'CM_', configMapRef: { name: 'cm' } }, { secretRef: { name: 'missing', optional: true } }],
      env: [
        { name: 'PW', valueFrom: { secretKeyRef: { name: 's', key: 'password' } } },
        { name: 'URL', value: 'redis://:$(PW)@h:1' },
        { name: 'LATER_REF', value: '$(DEFINED_LATER)' },
        { name: 'DEFINED_LATER', value: 'x' },
        { name: 'MODE', valueFrom: { configMapKeyRef: { name: 'cm', key: 'mode' } } },
        { name: 'OPT', valueFrom: { secretKeyRef: { name: 's', key: 'absent', optional: true } } },
        { name: 'NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
        { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        { name: 'APP', valueFrom: { fieldRef: { fieldPath: "metadata.labels['app']" } } },
        { name: 'NOTE', valueFrom: { fieldRef: { fieldPath: "metadata.annotations['note']" } } },
      ],
    },
    pod,
    lookups({ s: { password: 'p@ss' } }, { cm: { mode: 'fast', other: 'o' } }),
  );
  t.same(env, {
    CM_mode: 'fast',
    CM_other: 'o',
    PW: 'p@ss',
    URL: 'redis://:p@ss@h:1',
    LATER_REF: '$(DEFINED_LATER)',
    DEFINED_LATER: 'x',
    MODE: 'fast',
    NS: 'ns',
    POD: 'j-abcde',
    APP: 'x',
    NOTE: 'n',
  });
});

t.test('resolveEnv: what the kubelet would refuse', async (t) => {
  const pod = localPod(job(), 'abcde', 'u');
  const cases: Array<[string, Parameters<typeof resolveEnv>[0], RegExp]> = [
    [
      'missing secret',
      { name: 'c', env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'nope', key: 'k' } } }] },
      /secret "nope" not found/,
    ],
    [
      'missing key',
      { name: 'c', env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }] },
      /couldn't find key k in Secret ns\/s/,
    ],
    [
      'missing configmap',
      { name: 'c', env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'nope', key: 'k' } } }] },
      /configmap "nope" not found/,
    ],
    ['missing envFrom secret', { name: 'c', envFrom: [{ secretRef: { name: 'nope' } }] }, /secret "nope" not found/],
    [
      'unsupported fieldRef',
      { name: 'c', env: [{ name: 'X', valueFrom: { fieldRef: { fieldPath: 'status.phase' } } }] },
      /cannot resolve fieldRef status.phase/,
    ],
    [
      'resourceFieldRef',
      { name: 'c', env: [{ name: 'X', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } }] },
      /only value, secretKeyRef/,
    ],
  ];
  for (const [name, container, message] of cases) {
    await t.rejects(resolveEnv(container, pod, lookups({ s: { other: 'v' } })), EnvResolutionError, name);
    await t.rejects(resolveEnv(container, pod, lookups({ s: { other: 'v' } })), { message }, name);
  }
});

t.test('localCommand: table by exact word or basename, $(VAR) in args, PATH otherwise', async (t) => {
  const table = { raykeeper: ['/opt/node', '/repo/bin/raykeeper.js'] };
  t.same(localCommand({ name: 'c', command: ['raykeeper', 'redis-cleanup'], args: ['--ns', '$(NS)'] }, table, { NS: 'n1' }), {
    file: '/opt/node',
    args: ['/repo/bin/raykeeper.js', 'redis-cleanup', '--ns', 'n1'],
  });
  t.same(localCommand({ name: 'c', command: ['/usr/local/bin/raykeeper'] }, table, {}), {
    file: '/opt/node',
    args: ['/repo/bin/raykeeper.js'],
  });
  t.same(localCommand({ name: 'c', command: ['sh', '-c'], args: ['exit 3'] }, table, {}), { file: 'sh', args: ['-c', 'exit 3'] });
  t.throws(() => localCommand({ name: 'c', args: ['only-args'] }, table, {}), /no command/, 'an image entrypoint cannot run locally');
});
