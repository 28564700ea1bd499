// A REAL Ray head plays the RayCluster's dashboard: the submitter Job (run by the test job runner)
// really runs `ray job submit` / `ray job logs --follow`, Ray really runs the entrypoint, and the
// controller reads Ray's real JobDetails. One entrypoint succeeds, one fails; each RayJob must end in
// the right state. Needs Ray (tools/install-ray.sh; found by localcluster/ray.ts). Without Ray the file fails, naming the set-up command (test/helpers/parts.ts).
import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../localcluster/net.ts';
import { findRay } from '../../localcluster/ray.ts';
import { spawnSupervised } from '../../localcluster/process.ts';
import { shellQuote } from '../../src/shell.ts';
import { inState, manifest, rayJobHarness } from './helpers/harness.ts';
import { sleep } from '../../src/backoff.ts';
import { RAYJOBS } from '../../kube/resources.ts';
import { missingPart } from '../helpers/parts.ts';

/** The `ray` CLI as a shell command, or why there is none. */
function rayCommand(): { command: string; argv: string[] } | { missing: string } {
  const found = findRay();
  return 'missing' in found ? found : { command: shellQuote(found.ray), argv: [found.ray] };
}

interface RayHead {
  dashboardUrl: string;
  stop(): Promise<void>;
}

/** `ray start --head --block` on free ports in a temp dir of its own. */
async function startRayHead(argv: string[], log: (line: string) => void): Promise<RayHead> {
  const dir = await mkdtemp(join(tmpdir(), 'rk-ray-'));
  const [gcs, dashboard, client, agent, nodeManager, objectManager, metrics] = await Promise.all(Array.from({ length: 7 }, freePort));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    RAY_USAGE_STATS_ENABLED: '0',
    NO_PROXY: '127.0.0.1,localhost',
    no_proxy: '127.0.0.1,localhost',
  };
  delete env.RAY_REDIS_ADDRESS;
  delete env.RAY_ADDRESS;
  const args = [
    ...argv.slice(1),
    'start',
    '--head',
    '--block',
    `--port=${gcs}`,
    '--node-ip-address=127.0.0.1',
    '--include-dashboard=true',
    '--dashboard-host=127.0.0.1',
    `--dashboard-port=${dashboard}`,
    `--ray-client-server-port=${client}`,
    `--dashboard-agent-listen-port=${agent}`,
    `--node-manager-port=${nodeManager}`,
    `--object-manager-port=${objectManager}`,
    `--metrics-export-port=${metrics}`,
    '--num-cpus=1',
    '--disable-usage-stats',
    `--temp-dir=${dir}`,
  ];
  // Supervised, in its own process group: stop() signals the whole group (every Ray process of this
  // head, nothing else), and a watchdog kills the group if this test process dies without teardown.
  const head = await spawnSupervised(argv[0] ?? 'ray', args, { env, group: true, stdio: ['ignore', 'pipe', 'pipe'], graceSeconds: 20 });
  let output = '';
  head.child.stdout?.on('data', (b: Buffer) => (output += b.toString()));
  head.child.stderr?.on('data', (b: Buffer) => (output += b.toString()));
  const stop = async () => {
    await head.stop(20_000);
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  };
  const url = `http://127.0.0.1:${dashboard}`;
  const deadline = Date.now() + 180_000;
  for (;;) {
    if (head.child.exitCode !== null) throw new Error(`ray start exited with ${head.child.exitCode}:\n${output.slice(-3000)}`);
    try {
      const res = await fetch(`${url}/api/version`, { signal: AbortSignal.timeout(2000) });
      if (res.ok) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`the Ray dashboard did not answer within 180 s:\n${output.slice(-3000)}`);
    }
    await sleep(1000);
  }
  log(`Ray head up: dashboard ${url}`);
  return { dashboardUrl: url, stop };
}

const ray = rayCommand();
if ('missing' in ray) {
  t.fail(missingPart(ray.missing));
} else {
  // One head for the file (start-up costs tens of seconds); each test has its own namespace.
  let started: Promise<RayHead> | undefined;
  const sharedHead = (): Promise<RayHead> => {
    if (!started) {
      started = startRayHead(ray.argv, (l) => t.comment(l));
      t.teardown(async () => (await started)?.stop());
    }
    return started;
  };

  t.test('a real Ray head runs a succeeding and a failing RayJob', async (t) => {
    const head = await sharedHead();
    const h = await rayJobHarness(t, {
      noFakeDashboard: true,
      dashboardUrl: head.dashboardUrl,
      rayCommand: ray.command,
      machine: { gracePeriodSeconds: 120, statusCheckTimeoutSeconds: 120, submitterFinishedTimeoutSeconds: 60 },
    });
    await h.create(manifest('real-ok', { entrypoint: 'echo hello-from-ray' }));
    await h.create(manifest('real-fail', { entrypoint: 'exit 3' }));
    const [ok, failed] = await Promise.all([
      h.drive('real-ok', inState('Complete', 'Failed'), { autoReady: true, timeoutMs: 240_000, maxSleepMs: 1000 }),
      h.drive('real-fail', inState('Complete', 'Failed'), { autoReady: true, timeoutMs: 240_000, maxSleepMs: 1000 }),
    ]);
    t.same(ok.states, ['New', 'Initializing', 'Running', 'Complete'], 'the succeeding entrypoint');
    t.equal(ok.job?.status?.jobStatus, 'SUCCEEDED', 'Ray says SUCCEEDED');
    t.same(failed.states, ['New', 'Initializing', 'Running', 'Failed'], 'the failing entrypoint');
    t.equal(failed.job?.status?.jobStatus, 'FAILED', 'Ray says FAILED');
    t.equal(failed.job?.status?.reason, 'AppFailed');
    t.match(failed.job?.status?.message, /exit code 3|exited with code 3|failed/i, `Ray's message: ${failed.job?.status?.message}`);
    const output = h.runner.output(h.namespace, 'real-ok');
    t.match(output, /hello-from-ray/, 'the submitter followed the real job logs');
    const info = (await (await fetch(`${head.dashboardUrl}/api/jobs/${ok.job?.status?.jobId}`)).json()) as {
      status: string;
      submission_id: string;
    };
    t.equal(info.submission_id, ok.job?.status?.jobId, 'Ray knows the job by the RayJob status jobId');
  });

  t.test('real Ray, HTTPMode: the controller submits over REST; deleting a running RayJob stops it in Ray', async (t) => {
    const head = await sharedHead();
    const h = await rayJobHarness(t, { noFakeDashboard: true, dashboardUrl: head.dashboardUrl, rayCommand: ray.command });
    await h.create(manifest('real-http', { submissionMode: 'HTTPMode', entrypoint: 'echo via-http' }));
    await h.create(manifest('real-stop', { submissionMode: 'HTTPMode', entrypoint: 'sleep 300' }));
    const [done, running] = await Promise.all([
      h.drive('real-http', inState('Complete', 'Failed'), { autoReady: true, timeoutMs: 180_000, maxSleepMs: 1000 }),
      h.drive('real-stop', (j) => j?.status?.jobStatus === 'RUNNING', { autoReady: true, timeoutMs: 180_000, maxSleepMs: 1000 }),
    ]);
    t.equal(done.job?.status?.jobDeploymentStatus, 'Complete');
    t.equal(done.job?.status?.jobStatus, 'SUCCEEDED');
    const jobId = running.job?.status?.jobId ?? '';
    await h.kube.delete({ ...RAYJOBS, namespace: h.namespace, name: 'real-stop' });
    await h.drive('real-stop', (j) => j === undefined, { timeoutMs: 60_000 });
    let status = '';
    for (let i = 0; i < 60 && status !== 'STOPPED'; i++) {
      status = ((await (await fetch(`${head.dashboardUrl}/api/jobs/${jobId}`)).json()) as { status: string }).status;
      if (status !== 'STOPPED') await sleep(500);
    }
    t.equal(status, 'STOPPED', 'Ray stopped the job when its RayJob was deleted');
  });
}
