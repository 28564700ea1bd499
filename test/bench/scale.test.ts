// The scale bench's pure parts: per-object durations, its flags, and its table's last line (the ratio).
import t from 'tap';
import { countResidue, DEFAULT_SCALE_OPTIONS, durations, formatScaleFigures, parseScaleArgs, type ScaleRound } from '../../bench/scale.ts';
import type { KubeObject } from '../../kube/model.ts';
import { apiserverRequests, machineJiffies, type PhaseLoad } from '../../bench/plane-load.ts';

t.test('durations: seconds per object that got there, sorted; the ones that did not are left out', async (t) => {
  const from = new Map([
    ['a/x', 1000],
    ['a/y', 2000],
    ['b/z', 3000],
  ]);
  const to = new Map([
    ['a/x', 4000],
    ['a/y', 2500],
  ]);
  t.same(durations(from, to), [0.5, 3]);
});

t.test('flags: numbers into options; a bad one names itself', async (t) => {
  t.same(parseScaleArgs(['--clusters', '1000', '--rounds', '1', '--job-seconds', '5']), { clusters: 1000, rounds: 1, jobSeconds: 5 });
  t.same(parseScaleArgs([]), {});
  t.same(parseScaleArgs(['--shards', '2']), { shards: 2 });
  t.same(parseScaleArgs(['--only', 'ours']), { only: 'ours' });
  t.throws(() => parseScaleArgs(['--only', 'both']), /--only: ours or kuberay, not both/);
  t.throws(() => parseScaleArgs(['--qps', 'fast']), /--qps: a number >= 0, not fast/);
  t.throws(() => parseScaleArgs(['--clusterz', '3']));
});

// k tells the phases apart (create 1, delete 2, settle 3, RayJobs 4): a row reading another phase's figures fails.
const load = (cpu: number, k: number): PhaseLoad => ({
  busyPercent: 50 + 10 * k + cpu,
  cpu: { 'kube-apiserver': cpu * 10 * k, etcd: cpu * k, simulation: 2 * cpu * k, contender: cpu, bench: 1 },
  writes: 4 * cpu * k,
  reads: 2,
});

const round = (ready: number[], cpu: number): ScaleRound => ({
  ready,
  gone: [1, 2],
  jobs: [3],
  jobsClusterReady: [1, cpu],
  jobsRunning: [2],
  unfinished: { ready: 0, gone: 0, jobs: 0 },
  residue: { pods: cpu, jobs: 1, settleSeconds: 30, kwokSeconds: 2, quietSeconds: 4 },
  load: { create: load(cpu, 1), delete: load(cpu, 2), settle: load(cpu, 3), rayjobs: load(cpu, 4) },
  cpuSeconds: cpu,
  peakRssMiB: 100,
  companionPeakRssMiB: 0,
  peakQueueDepth: 7,
  requests: { GET: 10, POST: 20, PUT: 0, PATCH: 0, DELETE: 5 },
  reconcileErrors: cpu,
  load1: 2,
});

t.test('the table: ours beside KubeRay, the ratio of medians, and the last line with the create-to-ready p99 ratio', async (t) => {
  const text = formatScaleFigures({
    options: { ...DEFAULT_SCALE_OPTIONS, rounds: 3, clusters: 4, rayjobs: 1 },
    rounds: {
      raykeeper: [round([1, 1, 1, 2], 3), round([1, 1, 1, 4], 5), round([1, 1, 1, 3], 4)],
      'kuberay v1.6.2': [round([1, 1, 1, 6], 10), round([1, 1, 1, 8], 8), round([1, 1, 1, 12], 9)],
    },
  });
  const lines = text.split('\n');
  t.match(
    lines.find((l) => l.startsWith('create-to-ready s p99')),
    /3\.0 \(2\.0-4\.0\)\s+8\.0 \(6\.0-12\.0\)\s+0\.38$/,
  );
  t.match(
    lines.find((l) => l.startsWith('controller CPU s')),
    /4\.0 \(3\.0-5\.0\)\s+9\.0 \(8\.0-10\.0\)\s+0\.44$/,
  );
  // The RayJob's phases: its cluster ready (p99 of [1, cpu]: 3, 5, 4 and 10, 8, 9)
  t.match(
    lines.find((l) => l.startsWith('RayJob create-to-cluster-ready s p99')),
    /4\.0 \(3\.0-5\.0\)\s+9\.0 \(8\.0-10\.0\)\s+0\.44$/,
  );
  t.match(
    lines.find((l) => l.startsWith('RayJob create-to-Running s p50')),
    /2\.0 \(2\.0-2\.0\)\s+2\.0 \(2\.0-2\.0\)\s+1\.00$/,
  );
  t.match(
    lines.find((l) => l.startsWith('pods left when all were gone')),
    /4\.0 \(3\.0-5\.0\)\s+9\.0 \(8\.0-10\.0\)\s+0\.44$/,
  );
  t.match(
    lines.find((l) => l.startsWith('seconds until none was left')),
    /30\.0 \(30\.0-30\.0\)\s+30\.0 \(30\.0-30\.0\)\s+1\.00$/,
  );
  t.match(
    lines.find((l) => l.startsWith('then seconds until a probe pod ran (kwok)')),
    /2\.0 \(2\.0-2\.0\)\s+2\.0 \(2\.0-2\.0\)\s+1\.00$/,
  );
  t.match(
    lines.find((l) => l.startsWith('peak work queue depth')),
    /7\.0 \(7\.0-7\.0\)\s+7\.0 \(7\.0-7\.0\)\s+1\.00$/,
  );
  // per object: 20 POSTs over 4 clusters + 1 RayJob
  t.match(
    lines.find((l) => l.startsWith('API POST per object')),
    /4\.0 \(4\.0-4\.0\)\s+4\.0 \(4\.0-4\.0\)\s+1\.00$/,
  );
  // errors (here = cpu: 3, 5, 4 and 10, 8, 9) over 5 objects
  t.match(
    lines.find((l) => l.startsWith('reconcile errors per object')),
    /0\.8 \(0\.6-1\.0\)\s+1\.8 \(1\.6-2\.0\)\s+0\.44$/,
  );
  t.match(
    lines.find((l) => l.startsWith('then seconds until the API server was quiet')),
    /4\.0 \(4\.0-4\.0\)\s+4\.0 \(4\.0-4\.0\)\s+1\.00$/,
  );
  // Where the machine's time went, per phase: kube-apiserver CPU = 10 x cpu x 4 in the RayJobs (medians 160 and 360)
  t.match(
    lines.find((l) => l.startsWith('RayJobs: CPU s kube-apiserver')),
    /160 \(120-200\)\s+360 \(320-400\)\s+0\.44$/,
  );
  // 50 + 10 x 2 + cpu
  t.match(
    lines.find((l) => l.startsWith('deleting clusters: machine busy %')),
    /74\.0 \(73\.0-75\.0\)\s+79\.0 \(78\.0-80\.0\)\s+0\.94$/,
  );
  // every client's writes (4 x cpu x 1) per object of the phase: 4 clusters
  t.match(
    lines.find((l) => l.startsWith('creating clusters: API writes per object, every client')),
    /4\.0 \(3\.0-5\.0\)\s+9\.0 \(8\.0-10\.0\)\s+0\.44$/,
  );
  // the settling after the deletion: etcd = cpu x 3
  t.match(
    lines.find((l) => l.startsWith('after the deletion (settling): CPU s etcd')),
    /12\.0 \(9\.0-15\.0\)\s+27\.0 \(24\.0-30\.0\)\s+0\.44$/,
  );
  t.match(
    lines.find((l) => l.startsWith('RayJobs: CPU s KCM+scheduler+kwok')),
    /32\.0 \(24\.0-40\.0\)\s+72\.0 \(64\.0-80\.0\)\s+0\.44$/,
  );
  t.equal(lines.at(-1), 'scale: 4 RayClusters, 1 RayJobs, 3 rounds: create-to-ready p99 ours 3.0 s, KubeRay 8.0 s, ratio 0.38');
});

t.test("the machine's busy jiffies from /proc/stat, and every client's writes and reads from the API server's metrics", async (t) => {
  // user nice system idle iowait irq softirq (steal, 9 here, and the guest columns, inside user and nice, not added)
  t.same(machineJiffies('cpu  100 5 50 800 40 3 2 9 7 0\ncpu0 50 2 25 400 20 1 1 0 0 0\n'), { busy: 160, all: 1000 });
  const text = [
    '# TYPE apiserver_request_total counter',
    'apiserver_request_total{code="201",component="apiserver",resource="pods",verb="POST",version="v1"} 30',
    'apiserver_request_total{code="200",component="apiserver",resource="rayjobs",subresource="status",verb="PUT",version="v1"} 7',
    'apiserver_request_total{code="200",component="apiserver",group="coordination.k8s.io",resource="leases",verb="PUT",version="v1"} 500',
    'apiserver_request_total{code="200",component="apiserver",resource="pods",verb="PATCH",version="v1"} 2',
    'apiserver_request_total{code="200",component="apiserver",resource="pods",verb="DELETE",version="v1"} 1',
    'apiserver_request_total{code="200",component="apiserver",resource="pods",verb="LIST",version="v1"} 4',
    'apiserver_request_total{code="200",component="apiserver",resource="pods",verb="GET",version="v1"} 6',
    'apiserver_request_total{code="200",component="apiserver",resource="pods",verb="WATCH",version="v1"} 9',
    'apiserver_request_total{code="200",component="apiserver",group="apps",resource="deployments",verb="APPLY",version="v1"} 3',
    'apiserver_request_total{code="200",component="apiserver",resource="events",verb="DELETECOLLECTION",version="v1"} 2',
    'apiserver_request_total{code="200",component="",dry_run="",group="",resource="",scope="",subresource="/metrics",verb="GET",version=""} 50',
    'apiserver_request_duration_seconds_count{resource="pods",verb="POST"} 30',
  ].join('\n');
  t.same(
    apiserverRequests(text),
    { writes: 45, reads: 10 },
    'Lease heartbeats, watches, requests for no object and other metrics not counted',
  );
});

t.test('a sharded third column: shown beside the two, the ratio still ours/KubeRay', async (t) => {
  const text = formatScaleFigures({
    options: { ...DEFAULT_SCALE_OPTIONS, rounds: 1, clusters: 4, rayjobs: 1, shards: 2 },
    rounds: {
      raykeeper: [round([1, 1, 1, 2], 3)],
      'kuberay v1.6.2': [round([1, 1, 1, 4], 6)],
      'raykeeper x2 shards': [round([1, 1, 1, 1], 8)],
    },
  });
  const lines = text.split('\n');
  t.match(lines[1], /raykeeper\s+kuberay v1\.6\.2\s+raykeeper x2 shards\s+ours\/KubeRay$/);
  t.match(
    lines.find((l) => l.startsWith('controller CPU s')),
    /3\.0\s+6\.0\s+8\.0\s+0\.50$/,
  );
  t.equal(lines.at(-1), 'scale: 4 RayClusters, 1 RayJobs, 1 rounds: create-to-ready p99 ours 2.0 s, KubeRay 4.0 s, ratio 0.50');
});

t.test('one contender alone (--only), no RayJobs: its column, no ratio, and "-" for the empty phase', async (t) => {
  const alone = { ...round([1, 2], 3), jobs: [], jobsClusterReady: [], jobsRunning: [] };
  alone.load = { ...alone.load, rayjobs: undefined };
  const text = formatScaleFigures({
    options: { ...DEFAULT_SCALE_OPTIONS, rounds: 1, clusters: 2, rayjobs: 0, only: 'ours' },
    rounds: { raykeeper: [alone] },
  });
  const lines = text.split('\n');
  t.match(lines[1], /raykeeper\s+ours\/KubeRay$/);
  t.match(
    lines.find((l) => l.startsWith('create-to-ready s p99')),
    /2\.0\s+-$/,
  );
  t.match(
    lines.find((l) => l.startsWith('RayJob create-to-Complete s p99')),
    /\s-\s+-$/,
  );
  t.match(
    lines.find((l) => l.startsWith('RayJobs: machine busy %')),
    /\s-\s+-$/,
  );
  t.equal(lines.at(-1), 'scale: 2 RayClusters, 0 RayJobs, 1 rounds: create-to-ready p99 ours 2.0 s, KubeRay -, ratio -');
});

t.test('per-phase rows divide by the objects of their phase: the RayJobs by --rayjobs', async (t) => {
  const text = formatScaleFigures({
    options: { ...DEFAULT_SCALE_OPTIONS, rounds: 1, clusters: 2, rayjobs: 8, only: 'ours' },
    rounds: { raykeeper: [round([1, 2], 3)] },
  });
  const lines = text.split('\n');
  // RayJobs: 4 x 3 x 4 = 48 writes over 8 RayJobs; clusters: 4 x 3 x 1 = 12 over 2 clusters
  t.match(
    lines.find((l) => l.startsWith('RayJobs: API writes per object, every client')),
    /\s6\.0\s+-$/,
  );
  t.match(
    lines.find((l) => l.startsWith('creating clusters: API writes per object, every client')),
    /\s6\.0\s+-$/,
  );
});

t.test("ours' GCS-FT finalizer releases by reason: the last round's, zero counts left out", async (t) => {
  const ours = { ...round([1], 1), releases: { 'job-complete': 4990, timeout: 10, 'job-failed': 0 } };
  const text = formatScaleFigures({
    options: { ...DEFAULT_SCALE_OPTIONS, rounds: 1, clusters: 5000, rayjobs: 1 },
    rounds: { raykeeper: [ours], 'kuberay v1.6.2': [round([1], 1)] },
  });
  t.equal(
    text.split('\n').find((l) => l.includes('finalizer releases by reason')),
    'raykeeper GCS-FT finalizer releases by reason (last round): job-complete 4990, timeout 10',
    'nothing for KubeRay (it has no such metric)',
  );
});

t.test("ours' requests by verb and resource: per object, largest first, the last round's", async (t) => {
  const ours = { ...round([1], 1), requestsByResource: { 'GET pods': 5, 'POST events': 25, 'WATCH pods': 0, 'PATCH rayclusters': 10 } };
  const text = formatScaleFigures({
    options: { ...DEFAULT_SCALE_OPTIONS, rounds: 1, clusters: 4, rayjobs: 1 },
    rounds: { raykeeper: [ours], 'kuberay v1.6.2': [round([1], 1)] },
  });
  t.equal(
    text.split('\n').find((l) => l.includes('by verb and resource')),
    'raykeeper API requests per object by verb and resource (last round): POST events 5.00, PATCH rayclusters 2.00, GET pods 1.00',
    'nothing for KubeRay (its client metrics have no resource), zero counts left out',
  );
});

t.test("the deletion's aftermath: pods and Jobs still there, finished or not, in the round's namespaces only", async (t) => {
  const pod = (namespace: string, phase: string, deleting = false) => ({
    metadata: { namespace, name: 'p', ...(deleting ? { deletionTimestamp: '2026-12-05T00:00:00Z' } : {}) },
    status: { phase },
  });
  const job = (namespace: string, condition?: string, status = 'True') => ({
    metadata: { namespace, name: 'j' },
    status: condition ? { conditions: [{ type: condition, status }] } : {},
  });
  const ns = new Set(['a', 'b']);
  const rows: Array<[string, KubeObject[], KubeObject[], { pods: number; jobs: number }]> = [
    ['nothing', [], [], { pods: 0, jobs: 0 }],
    [
      'pending, running and terminating pods count',
      [pod('a', 'Pending'), pod('a', 'Running'), pod('b', 'Succeeded', true)],
      [],
      { pods: 3, jobs: 0 },
    ],
    [
      'finished pods count too (the garbage collector still has to delete them)',
      [pod('a', 'Succeeded'), pod('b', 'Failed')],
      [],
      { pods: 2, jobs: 0 },
    ],
    ['other namespaces do not', [pod('c', 'Pending')], [job('c')], { pods: 0, jobs: 0 }],
    ['Jobs count, finished or not', [], [job('a'), job('b', 'Complete'), job('a', 'Failed')], { pods: 0, jobs: 3 }],
  ];
  for (const [name, pods, jobs, want] of rows) t.same(countResidue(pods, jobs, ns), want, name);
});
