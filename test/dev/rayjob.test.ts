// `raykeeper dev` as a user runs it (bin/raykeeper.js dev, a real process with its own control plane):
// `kubectl apply -f manifests/samples/rayjob.yaml` ends Complete / SUCCEEDED, driven by our RayJob state
// machine, our RayCluster operator, the ray pod runner (the head and worker as local Ray processes) and
// the job runner (the submitter's `ray job submit`). A second RayJob runs at the same time (each head has
// its own dashboard port behind dev's loopback proxy). Deleting the RayJobs stops their Ray processes;
// SIGTERM stops dev with exit 0 and no process of it left. Needs Ray (tools/setup.sh installs it): fails without.
// Without Ray (RAYKEEPER_RAY pointing nowhere), dev says in one line that RayJobs will stay Initializing.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { parse, stringify } from 'yaml';
import { REPO_ROOT, requireKubeCommand } from '../../localcluster/binaries.ts';
import { descendants, findRay } from '../../localcluster/ray.ts';
import type { RayJob } from '../../src/types.ts';
import { until } from '../raycluster/harness.ts';
import { missingPart } from '../helpers/parts.ts';

const found = findRay();
// The kubectl built beside kube-apiserver (tools/build-control-plane.sh), as the other tests use.
const kubectl = requireKubeCommand('kubectl');

/**
 * Pids whose command line mentions dir: dev's TMPDIR (dev itself, its control plane, its Ray processes),
 * or the ray pod runner's temp dir under it (`<TMPDIR>/rk-raypods-`: every Ray process has it in its args).
 */
function processesUnder(dir: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(dir)) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out.filter((p) => p !== process.pid);
}

/** A process's identity: pid, start time (clock ticks since boot) and command line; undefined when gone or a zombie. */
function identity(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z') return undefined;
    return `${pid} ${fields[19]} ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim()}`;
  } catch {
    return undefined;
  }
}

/** Lines of a child's stream until one matches (or the child exits / the time is up). */
function waitForLine(child: ChildProcess, stream: 'stdout' | 'stderr', re: RegExp, ms: number, seen: { text: string }): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`timed out after ${ms} ms waiting for ${re} in ${stream}`)), ms);
    const check = () => {
      const m = seen.text.split('\n').find((l) => re.test(l));
      if (m !== undefined) done(undefined, m);
    };
    const onExit = (code: number | null) => done(new Error(`exited (${code}) before ${re} appeared in ${stream}`));
    const done = (err?: Error, line?: string) => {
      clearTimeout(timer);
      child[stream]!.off('data', check);
      child.off('exit', onExit);
      if (err) reject(err);
      else resolve(line!);
    };
    child[stream]!.on('data', check);
    child.once('exit', onExit);
    check();
  });
}

function run(args: string[], kubeconfig: string, input?: string): string {
  const r = spawnSync(kubectl, ['--kubeconfig', kubeconfig, ...args], { encoding: 'utf8', input, timeout: 120_000 });
  if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr || r.stdout}`);
  return r.stdout;
}

/** `kubectl get rayjob NAME -w`: every deployment status seen, until Complete or Failed. */
function watchRayJob(kubeconfig: string, name: string, ms: number): Promise<string[]> {
  const w = spawn(
    kubectl,
    [
      '--kubeconfig',
      kubeconfig,
      'get',
      'rayjob',
      name,
      '--watch',
      '-o',
      'jsonpath={.status.jobDeploymentStatus}/{.status.jobStatus}{"\\n"}',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const seen: string[] = [];
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => finish(new Error(`timed out after ${ms} ms; RayJob ${name} went through ${seen.join(' ')}`)), ms);
    const finish = (err?: Error) => {
      clearTimeout(timer);
      w.kill('SIGKILL');
      if (err) reject(err);
      else resolve(seen);
    };
    w.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (line !== '' && seen.at(-1) !== line) seen.push(line);
        if (/^(Complete|Failed)\//.test(line)) finish();
      }
    });
    w.once('exit', (code) => finish(new Error(`kubectl get -w exited (${code}); seen ${seen.join(' ')}`)));
  });
}

interface Dev {
  tmp: string;
  kubeconfig: string;
  dev: ChildProcess;
  out: { text: string };
  err: { text: string };
  exited: Promise<number | null>;
  /** Pids to kill in teardown (after a failure only is anything left). */
  pids: number[];
}

/** `bin/raykeeper.js dev` as a user starts it, with its own TMPDIR and state dir; ready when it says so. */
async function startDevProcess(tt: Test, env: Record<string, string> = {}): Promise<Dev> {
  // A short TMPDIR: Ray's socket paths under it must stay below 107 characters.
  const tmp = mkdtempSync('/tmp/rkd-');
  const kubeconfig = join(tmp, 'state', 'kubeconfig');
  const dev = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'raykeeper.js'), 'dev', '--state-dir', join(tmp, 'state')], {
    cwd: REPO_ROOT,
    env: { ...process.env, TMPDIR: tmp, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const d: Dev = {
    tmp,
    kubeconfig,
    dev,
    out: { text: '' },
    err: { text: '' },
    exited: new Promise((resolve) => dev.once('exit', (code) => resolve(code))),
    pids: [],
  };
  dev.stdout!.on('data', (b: Buffer) => (d.out.text += b.toString()));
  dev.stderr!.on('data', (b: Buffer) => (d.err.text += b.toString()));
  tt.teardown(() => {
    for (const p of [dev.pid!, ...d.pids, ...processesUnder(tmp)]) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        // gone
      }
    }
    rmSync(tmp, { recursive: true, force: true });
  });
  await waitForLine(dev, 'stdout', /^Ctrl-C stops everything\.$/, 180_000, d.out);
  tt.match(d.out.text, `kubeconfig: ${kubeconfig}`, 'dev prints its kubeconfig');
  return d;
}

/** SIGTERM: dev exits 0 within 60 s after printing that it stopped. */
async function stopDev(tt: Test, d: Dev): Promise<void> {
  d.dev.kill('SIGTERM');
  const code = await Promise.race([
    d.exited,
    new Promise<string>((r) => setTimeout(() => r('still running 60 s after SIGTERM'), 60_000).unref()),
  ]);
  tt.equal(code, 0, 'dev exits 0 on SIGTERM');
  tt.match(d.err.text, /SIGTERM: stopping\.\.\.\nstopped\n/);
}

t.test('raykeeper dev without Ray: one line says RayJobs will stay Initializing, and why', { timeout: 240_000 }, async (tt) => {
  const d = await startDevProcess(tt, { RAYKEEPER_RAY: '/nonexistent/ray' });
  tt.match(
    d.err.text,
    /^      Ray not found, so RayJobs will stay Initializing \(their RayCluster's pods are created but nothing runs them\): RAYKEEPER_RAY=\/nonexistent\/ray does not exist$/m,
  );
  tt.notMatch(d.err.text, /Ray pods run as local processes/);
  tt.match(d.out.text, /rayjob\.yaml\s+# stays Initializing without Ray \(bash tools\/setup\.sh installs it\)/);
  await stopDev(tt, d);
});

if ('missing' in found) {
  t.fail(missingPart(found.missing));
} else {
  t.test(
    'raykeeper dev: manifests/samples/rayjob.yaml ends Complete (SUCCEEDED), a second RayJob beside it, clean stop',
    { timeout: 290_000 },
    async (tt) => {
      const d = await startDevProcess(tt);
      const { tmp, kubeconfig, dev, out, err } = d;
      tt.match(out.text, /rayjob\.yaml\s+# New -> Initializing -> Running -> Complete/, 'dev says RayJobs run to Complete');
      tt.match(err.text, /Ray pods run as local processes .*dashboards at http:\/\/127\.0\.0\.1:\d+\/\{namespace\}\/\{cluster\}/);

      // The sample as users apply it, and a second RayJob at the same time (head only, to spare the CPU).
      run(['apply', '-f', join(REPO_ROOT, 'manifests', 'samples', 'rayjob.yaml')], kubeconfig);
      const second = parse(readFileSync(join(REPO_ROOT, 'manifests', 'samples', 'rayjob.yaml'), 'utf8')) as RayJob & {
        spec: { rayClusterSpec: { workerGroupSpecs: Array<Record<string, unknown>> } };
      };
      second.metadata.name = 'rayjob-second';
      second.spec.rayClusterSpec.workerGroupSpecs[0] = { ...second.spec.rayClusterSpec.workerGroupSpecs[0], replicas: 0, minReplicas: 0 };
      writeFileSync(join(tmp, 'second.yaml'), stringify(second));
      run(['apply', '-f', join(tmp, 'second.yaml')], kubeconfig);

      const [first, other] = await Promise.all([
        watchRayJob(kubeconfig, 'rayjob-sample', 200_000),
        watchRayJob(kubeconfig, 'rayjob-second', 200_000),
      ]);
      tt.equal(first.at(-1), 'Complete/SUCCEEDED', `rayjob-sample: ${first.join(' -> ')}`);
      tt.ok(
        first.some((s) => s.startsWith('Running/')),
        'rayjob-sample was Running before Complete',
      );
      tt.equal(other.at(-1), 'Complete/SUCCEEDED', `rayjob-second: ${other.join(' -> ')}`);
      const clusters = run(['get', 'rayjobs', '-o', 'jsonpath={.items[*].status.rayClusterName}'], kubeconfig).trim().split(/\s+/);
      tt.equal(new Set(clusters).size, 2, 'two RayClusters, each with its own head');

      const rayDir = join(tmp, 'rk-raypods-');
      const running = processesUnder(rayDir);
      tt.ok(running.length >= 2, `Ray processes run under dev (${running.length})`);
      d.pids = [...new Set([...descendants(dev.pid!), ...running])];
      const before = d.pids.map(identity).filter((i) => i !== undefined);

      run(['delete', 'rayjob', 'rayjob-sample', 'rayjob-second', '--wait=true', '--timeout=60s'], kubeconfig);
      tt.equal(run(['get', 'rayjobs', '-o', 'name'], kubeconfig).trim(), '', 'the RayJobs are gone (finalizer released)');
      // dev's owner garbage collector takes their RayClusters, pods and Services along; the ray pod
      // runner stops the deleted pods' Ray processes, while dev keeps running.
      await until(() => processesUnder(rayDir).length === 0, "the deleted RayJobs' Ray processes to stop", 90_000, 500);
      // The collector works in passes (owners first, then their children): wait until a pass left nothing.
      const leftover = () =>
        run(['get', 'rayclusters,pods,services,jobs', '-o', 'name'], kubeconfig)
          .trim()
          .split('\n')
          .filter((l) => l !== '' && l !== 'service/kubernetes');
      await until(
        () => leftover().length === 0,
        "the deleted RayJobs' RayClusters, pods, Services and Jobs to be collected",
        60_000,
        500,
      ).catch(() => undefined);
      tt.same(leftover(), [], 'no RayCluster, pod, Service or Job is left');
      tt.equal(dev.exitCode, null, 'dev still runs');

      await stopDev(tt, d);
      tt.same(
        before.filter((i) => identity(Number(i.split(' ')[0])) === i),
        [],
        'no process dev started (Ray included) is left',
      );
      tt.same(processesUnder(tmp), [], "no process with dev's temp dir in its command line is left");
    },
  );
}
