// `raykeeper uninstall`'s pure parts as tables: what it does with each RayCluster, the words of its Events,
// its exit status, and the controller settings it reads from the controller's Deployment.
import t from 'tap';
import type { RayJob } from '../../src/types.ts';
import { cluster, T0, withFinalizer } from '../gcsft/fixtures.ts';
import {
  deadlineReleaseEvent,
  decideUninstall,
  finalizerWriter,
  liveReleaseEvent,
  newStatusReset,
  rayJobFinalizerRelease,
  readdedEvent,
  uninstallExitCode,
  type UninstallDecision,
  type UninstallReport,
} from '../../src/uninstall/decide.ts';
import { controllerSettings } from '../../controller/uninstall/settings.ts';
import { deadlineMargin } from '../../controller/uninstall/run.ts';
import type { RayCluster } from '../../src/types.ts';

const UID = '0b7c1a52-5f7e-4b8e-9a43-2d1f0c2e9f10';

t.test('decideUninstall: per RayCluster', async (t) => {
  const rows: Array<[string, RayCluster, string[], UninstallDecision['action']]> = [
    ['no finalizer', cluster(), [], 'none'],
    ['another finalizer only', cluster({ finalizers: ['example.com/keep'] }), [], 'none'],
    ['live, ours', cluster({ finalizers: withFinalizer }), [], 'release'],
    ['live, ours, options form', cluster({ ft: 'options', finalizers: withFinalizer }), [], 'release'],
    ['live, ours, already released by this run: something added it back', cluster({ finalizers: withFinalizer }), [UID], 'readded'],
    ['live, ours, a cluster of the same name released before (another UID)', cluster({ finalizers: withFinalizer }), ['other'], 'release'],
    ['deleting, ours', cluster({ finalizers: withFinalizer, deletedAt: T0 }), [], 'finish'],
    [
      'deleting, ours, released before (the same UID): still finish',
      cluster({ finalizers: withFinalizer, deletedAt: T0 }),
      [UID],
      'finish',
    ],
    ['deleting, not ours', cluster({ finalizers: ['example.com/keep'], deletedAt: T0 }), [], 'none'],
  ];
  for (const [name, c, released, action] of rows) t.equal(decideUninstall(c, new Set(released)).action, action, name);
});

t.test('the Warning on a live cluster says what stays, where, and how to delete it by hand; no password', async (t) => {
  const c = cluster({
    ft: 'options',
    finalizers: withFinalizer,
    options: { redisAddress: 'redis://user:s3cret@redis.team-a:6379', externalStorageNamespace: 'team-a-demo' },
  });
  const e = liveReleaseEvent(c);
  t.equal(e.type, 'Warning');
  t.equal(e.reason, 'FinalizerReleasedForUninstall');
  t.match(e.message, /raykeeper was uninstalled: removed the finalizer ray\.io\/gcs-ft-redis-cleanup-finalizer/);
  t.match(e.message, /Nothing was cleaned: the cluster is live/);
  t.match(e.message, /storage namespace "team-a-demo" in Redis at redis:\/\/\*\*\*@redis\.team-a:6379\) stays/);
  t.match(e.message, /RAY_external_storage_namespace=team-a-demo .*raykeeper redis-cleanup/);
  t.notMatch(e.message, /s3cret/, 'the password in the address is never shown');
  const d = decideUninstall(c, new Set());
  t.same(d, { action: 'release', event: e }, 'the decision carries that Event');
  const rocks = liveReleaseEvent(cluster({ ft: 'rocksdb', finalizers: withFinalizer }));
  t.match(rocks.message, /keeps no GCS data in Redis, so nothing is left behind/);
});

t.test('the Warning at the deadline names the timeout and what may remain', async (t) => {
  const e = deadlineReleaseEvent(cluster({ finalizers: withFinalizer, deletedAt: T0 }), 240);
  t.equal(e.reason, 'FinalizerReleasedForUninstall');
  t.match(e.message, /before the Redis cleanup of this deleting cluster ended \(raykeeper uninstall --timeout 240 s\)/);
  t.match(e.message, /so storage namespace "0b7c1a52-5f7e-4b8e-9a43-2d1f0c2e9f10" in Redis at redis:6379 may remain/);
  t.match(e.message, /To delete it by hand run: .*raykeeper redis-cleanup/);
});

t.test('exit status: 0 nothing held, 1 stuck or an error, 3 added back by another operator', async (t) => {
  const report = (outcomes: string[], errors: string[] = []): UninstallReport => ({
    clusters: outcomes.map((o, i) => ({ key: `ns/c${i}`, outcome: o as never, detail: '' })),
    rayJobsReset: [],
    rayJobsReleased: [],
    errors,
  });
  t.equal(uninstallExitCode(report([])), 0, 'nothing in scope');
  t.equal(uninstallExitCode(report(['finished', 'released', 'released-at-deadline'])), 0);
  t.equal(uninstallExitCode(report(['would-release', 'would-finish'])), 0, 'a dry run');
  t.equal(uninstallExitCode(report(['released', 'stuck'])), 1);
  t.equal(uninstallExitCode(report(['released'], ['listing RayClusters: 403'])), 1);
  t.equal(uninstallExitCode(report(['released', 'readded'])), 3);
  t.equal(uninstallExitCode(report(['released', 'readded']), { addedBackOk: true }), 0, '--added-back-ok');
  t.equal(uninstallExitCode(report(['readded', 'stuck']), { addedBackOk: true }), 1);
  t.equal(uninstallExitCode(report(['readded', 'stuck'])), 1, 'stuck wins');
});

t.test('the deadline margin: a tenth of the timeout, within 2 and 15 s', async (t) => {
  t.equal(deadlineMargin(240_000), 15_000);
  t.equal(deadlineMargin(60_000), 6_000);
  t.equal(deadlineMargin(5_000), 2_000);
});

t.test("the controller's settings from its Deployment: cleanup flags, watch namespace, image and gate", async (t) => {
  const deployment = (args: string[], env: Array<Record<string, unknown>> = [], command?: string[]) => ({
    metadata: { name: 'raykeeper-controller' },
    spec: {
      template: { spec: { containers: [{ name: 'controller', image: 'r/raykeeper:1', ...(command ? { command } : {}), args, env }] } },
    },
  });
  t.same(controllerSettings(undefined), { watchNamespace: undefined, moduleFlags: {}, env: {} }, 'no Deployment: nothing');
  const chart = controllerSettings(
    deployment(
      [
        'controller',
        '--leader-elect',
        '--lease-namespace=$(POD_NAMESPACE)',
        '--watch-namespace=team-a',
        '--cleanup-image=r/raykeeper:1',
        '--cleanup-cpu',
        '300m',
        '--cleanup-sweep=always',
        '--disable-in-process-cleanup',
      ],
      [
        { name: 'RAYKEEPER_IMAGE', value: 'r/raykeeper:1' },
        { name: 'ENABLE_GCS_FT_REDIS_CLEANUP', value: 'false' },
        { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
        { name: 'LOG_LEVEL', value: 'info' },
      ],
    ),
  );
  t.same(chart, {
    watchNamespace: 'team-a',
    moduleFlags: {
      'cleanup-image': 'r/raykeeper:1',
      'cleanup-cpu': '300m',
      'cleanup-sweep': 'always',
      'disable-in-process-cleanup': true,
    },
    env: { RAYKEEPER_IMAGE: 'r/raykeeper:1', ENABLE_GCS_FT_REDIS_CLEANUP: 'false' },
  });
  t.same(
    controllerSettings(deployment(['--health-port=8080'], [], ['raykeeper', 'controller'])),
    { watchNamespace: undefined, moduleFlags: {}, env: {} },
    'the subcommand in `command`, no watch namespace: all namespaces',
  );
  t.same(controllerSettings(deployment(['controller', '--watch-namespace='])).watchNamespace, undefined, 'empty = all');
});

t.test('RayJobs: only raykeeper\'s "New" becomes "", guarded by a test of it', async (t) => {
  t.same(newStatusReset({ status: { jobDeploymentStatus: 'New' } }), [
    { op: 'test', path: '/status/jobDeploymentStatus', value: 'New' },
    { op: 'replace', path: '/status/jobDeploymentStatus', value: '' },
  ]);
  for (const status of [
    undefined,
    null,
    {},
    { jobDeploymentStatus: '' },
    { jobDeploymentStatus: 'Initializing' },
    { jobDeploymentStatus: 'new' },
  ])
    t.equal(newStatusReset({ status }), undefined, JSON.stringify(status));
});

t.test('who added the finalizer back, from managedFields; the Normal Event that says so', async (t) => {
  const entry = (manager: string, time: string, finalizers: string[]) => ({
    manager,
    time,
    fieldsV1: { 'f:metadata': { 'f:finalizers': Object.fromEntries(finalizers.map((f) => [`v:${JSON.stringify(f)}`, {}])) } },
  });
  const F = 'ray.io/gcs-ft-redis-cleanup-finalizer';
  t.equal(finalizerWriter(undefined, F), undefined);
  t.equal(finalizerWriter([entry('kubectl', '2026-12-01T10:00:00Z', ['example.com/x'])], F), undefined, 'another finalizer only');
  t.equal(
    finalizerWriter(
      [entry('raykeeper', '2026-12-01T10:00:00Z', [F]), entry('kuberay-operator', '2026-12-01T10:05:00Z', [F]), { manager: 'x' }],
      F,
    ),
    'kuberay-operator',
    'the latest writer',
  );
  const e = readdedEvent('kuberay-operator');
  t.equal(e.type, 'Normal');
  t.match(e.message, /was added back by kuberay-operator .*holds it now and removes it when this cluster is deleted/);
  t.notMatch(readdedEvent(undefined).message, /by undefined/);
});

t.test(
  "RayJobs: raykeeper's ray.io/rayjob-finalizer is removed, another manager's is not; the Warning says what deleting no longer does",
  async (t) => {
    const writtenBy = (manager: string) => [
      {
        manager,
        operation: 'Update',
        time: '2026-01-01T00:00:00Z',
        fieldsV1: { 'f:metadata': { 'f:finalizers': { '.': {}, 'v:"ray.io/rayjob-finalizer"': {} } } },
      },
    ];
    const job = (extra: {
      managedFields?: unknown;
      deletionTimestamp?: string;
      finalizers?: string[];
      clusterSelector?: Record<string, string>;
    }): RayJob =>
      ({
        apiVersion: 'ray.io/v1',
        kind: 'RayJob',
        metadata: {
          name: 'j',
          namespace: 'n',
          uid: 'u1',
          finalizers: extra.finalizers ?? ['ray.io/rayjob-finalizer'],
          managedFields: extra.managedFields,
          deletionTimestamp: extra.deletionTimestamp,
        },
        spec: { entrypoint: 'x', clusterSelector: extra.clusterSelector },
      }) as RayJob;
    const ours = rayJobFinalizerRelease(job({ managedFields: writtenBy('raykeeper') }), 'raykeeper');
    t.same(ours?.patch, [
      { op: 'test', path: '/metadata/uid', value: 'u1' },
      { op: 'test', path: '/metadata/finalizers', value: ['ray.io/rayjob-finalizer'] },
      { op: 'remove', path: '/metadata/finalizers/0' },
    ]);
    t.match(ours?.event, { type: 'Warning', reason: 'FinalizerReleasedForUninstall', message: /still deletes the RayCluster it made/ });
    t.match(
      rayJobFinalizerRelease(job({ managedFields: writtenBy('raykeeper'), clusterSelector: { 'ray.io/cluster': 'c' } }), 'raykeeper')
        ?.event,
      {
        message: /no longer stops its Ray job on the RayCluster it selected/,
      },
    );
    t.match(
      rayJobFinalizerRelease(job({ managedFields: writtenBy('raykeeper'), deletionTimestamp: '2026-01-01T00:00:00Z' }), 'raykeeper')?.event,
      {
        message: /while this RayJob was being deleted: .*without stopping its Ray job; the RayCluster it made is deleted with it/,
      },
    );
    t.equal(rayJobFinalizerRelease(job({ managedFields: writtenBy('kuberay-operator') }), 'raykeeper'), undefined, "KubeRay's: left");
    t.equal(rayJobFinalizerRelease(job({}), 'raykeeper'), undefined, 'no managedFields: nobody known wrote it, left');
    t.equal(
      rayJobFinalizerRelease(job({ managedFields: writtenBy('raykeeper'), finalizers: [] }), 'raykeeper'),
      undefined,
      'none: nothing',
    );
  },
);
