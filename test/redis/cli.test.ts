// `raykeeper redis-cleanup` as the Job runs it: environment, flags, exit codes, one-line reasons, and no
// password in any output. The main paths run as real processes (bin/raykeeper.js); the option tables run
// the same entry in-process (runWith) to keep the file fast.
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runWith } from '../../controller/redis-cleanup/cli.ts';
import { redisServerMissing, startRedisServer, freePort } from '../helpers/redis-server.ts';
import { CLUSTER_METADATA_FIELD } from '../../src/redis/keys.ts';
import { client, seedCurrent, seedLegacy, snapshot } from './fixtures.ts';

const BIN = fileURLToPath(new URL('../../bin/raykeeper.js', import.meta.url));
const PASSWORD = 'Cli-Secret-9f3e';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI with only the given environment (plus PATH), like a container would. */
function raykeeper(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'redis-cleanup', ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The same entry in-process: runWith with the given environment and captured output. */
async function inProcess(args: string[], env: Record<string, string>): Promise<Run> {
  const out = { stdout: '', stderr: '' };
  const code = await runWith(args, {
    env,
    stdout: { write: (s: string) => (out.stdout += s) },
    stderr: { write: (s: string) => (out.stderr += s) },
  });
  return { code, ...out };
}

const missing = redisServerMissing();
if (missing) {
  t.fail(missing); // a missing redis-server fails, like a missing control plane
} else {
  const server = await startRedisServer({ password: PASSWORD });
  t.teardown(() => server.stop());
  const r = client(server.port, { password: PASSWORD });
  t.teardown(() => r.disconnect());
  const dir = await mkdtemp(join(tmpdir(), 'raykeeper-cli-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const address = `127.0.0.1:${server.port}`;
  const base = { RAY_REDIS_ADDRESS: address, REDIS_PASSWORD: PASSWORD, RAY_external_storage_namespace: 'cli1' };

  t.beforeEach(async () => {
    await r.flushall();
    await seedCurrent(r, 'cli1');
    await seedLegacy(r, 'cli1');
    await seedCurrent(r, 'cli2');
  });

  const noSecret = (t: Test, run: Run, secret = PASSWORD) => {
    t.notOk((run.stdout + run.stderr).includes(secret), 'the password appears nowhere in the output');
  };

  t.test("KubeRay's environment: exit 0, summary on stdout, namespace gone, other intact", async (t) => {
    const run = await raykeeper([], base);
    t.equal(run.code, 0, run.stderr);
    t.match(run.stdout, /^namespace "cli1" on 127\.0\.0\.1:\d+ \(standalone\): deleted 4 key\(s\); old-layout hash deleted \(4 fields\)/);
    t.equal(run.stderr, '', 'nothing on stderr for a quick run');
    noSecret(t, run);
    t.same([...(await snapshot(r)).keys()].sort(), ['RAYcli2@ACTOR_TASK_SPEC', 'RAYcli2@JOB', 'RAYcli2@JobCounter', 'RAYcli2@NODE']);
    const again = await inProcess([], base);
    t.equal(again.code, 0, 'a second run (namespace gone) is success too');
    t.match(again.stdout, /deleted 0 key\(s\) in \d+ ms$/m);
  });

  t.test("password in the URL, and REDIS_PASSWORD winning over it (KubeRay's order)", async (t) => {
    const inUrl = await inProcess([], { RAY_REDIS_ADDRESS: `redis://:${PASSWORD}@${address}`, RAY_external_storage_namespace: 'cli1' });
    t.equal(inUrl.code, 0, inUrl.stderr);
    noSecret(t, inUrl);
    const envWins = await inProcess([], {
      RAY_REDIS_ADDRESS: `redis://:url-wrong-pw@${address}`,
      REDIS_PASSWORD: PASSWORD,
      RAY_external_storage_namespace: 'cli2',
    });
    t.equal(envWins.code, 0, envWins.stderr);
    noSecret(t, envWins);
    noSecret(t, envWins, 'url-wrong-pw');
  });

  t.test('--password-env and --password-file', async (t) => {
    const viaEnv = await raykeeper(['--password-env', 'MY_REDIS_SECRET'], {
      RAY_REDIS_ADDRESS: address,
      RAY_external_storage_namespace: 'cli1',
      MY_REDIS_SECRET: PASSWORD,
    });
    t.equal(viaEnv.code, 0, viaEnv.stderr);
    noSecret(t, viaEnv);
    const file = join(dir, 'password');
    await writeFile(file, `${PASSWORD}\n`, { mode: 0o600 });
    const viaFile = await inProcess(['--password-file', file], { RAY_REDIS_ADDRESS: address, RAY_external_storage_namespace: 'cli2' });
    t.equal(viaFile.code, 0, viaFile.stderr);
    t.equal((await snapshot(r)).size, 0);
    const unset = await inProcess(['--password-env', 'NOPE'], { RAY_REDIS_ADDRESS: address, RAY_external_storage_namespace: 'cli1' });
    t.equal(unset.code, 2);
    t.match(unset.stderr, /^raykeeper redis-cleanup: --password-env: environment variable "NOPE" is not set\n$/);
  });

  t.test('flags override the environment', async (t) => {
    const run = await inProcess(['--address', address, '--namespace', 'cli2'], { ...base, RAY_REDIS_ADDRESS: 'nowhere.invalid:1' });
    t.equal(run.code, 0, run.stderr);
    t.equal(await r.exists('RAYcli2@JOB'), 0);
    t.equal(await r.exists('RAYcli1@JOB'), 1, 'the env namespace was not the one cleaned');
  });

  t.test('wrong password: exit 1 at once, ONE line naming the cause, password not printed', async (t) => {
    const started = Date.now();
    const run = await raykeeper(['--timeout', '60'], { ...base, REDIS_PASSWORD: 'Wrong-Secret-77' });
    t.equal(run.code, 1);
    t.ok(Date.now() - started < 30_000, 'did not retry until the 60 s timeout');
    t.match(
      run.stderr,
      /^raykeeper redis-cleanup: failed: 127\.0\.0\.1:\d+: WRONGPASS invalid username-password pair or user is disabled\.\n$/,
    );
    t.equal(run.stdout, '');
    noSecret(t, run, 'Wrong-Secret-77');
    t.equal((await snapshot(r)).size, 9, 'nothing deleted');
  });

  t.test('unreachable Redis: retries on stderr, then exit 1 with one final line within --timeout', async (t) => {
    const port = await freePort();
    const started = Date.now();
    const run = await raykeeper(['--timeout', '2'], { ...base, RAY_REDIS_ADDRESS: `redis://:${PASSWORD}@127.0.0.1:${port}` });
    t.equal(run.code, 1);
    t.ok(Date.now() - started < 20_000, 'ended by its 2 s timeout (plus process start-up)');
    const lines = run.stderr.trimEnd().split('\n');
    t.ok(lines.length >= 2, 'retry lines first');
    t.match(lines[0], /^raykeeper redis-cleanup: retry 1 in \d+ ms: .*ECONNREFUSED/);
    t.match(lines.at(-1), /^raykeeper redis-cleanup: failed: gave up after \d+\.\ds: deadline reached; last error: .*ECONNREFUSED/);
    noSecret(t, run);
    const quiet = await inProcess(['--timeout', '1', '--quiet'], { ...base, RAY_REDIS_ADDRESS: `127.0.0.1:${port}` });
    t.equal(quiet.code, 1);
    t.equal(quiet.stderr.trimEnd().split('\n').length, 1, '--quiet: only the reason');
  });

  t.test('usage and configuration errors: exit 2, one line', async (t) => {
    const cases: Array<[string[], Record<string, string>, RegExp]> = [
      [[], { RAY_external_storage_namespace: 'x' }, /no Redis address: set RAY_REDIS_ADDRESS or --address/],
      [[], { RAY_REDIS_ADDRESS: address }, /no storage namespace: set RAY_external_storage_namespace or --namespace/],
      [[], { RAY_REDIS_ADDRESS: address, RAY_external_storage_namespace: 'a@b' }, /contains '@', which Ray forbids/],
      // An address holding '@' may hold a secret: the error names the faulty part, quotes nothing.
      [
        [],
        { RAY_REDIS_ADDRESS: `redis://:${PASSWORD}@host:notaport`, RAY_external_storage_namespace: 'x' },
        /redis:\/\/ address: port is not a number$/,
      ],
      [
        [],
        { RAY_REDIS_ADDRESS: `redis://default:${PASSWORD}#1@host:notaport`, RAY_external_storage_namespace: 'x' },
        /redis:\/\/ address: port is not a number$/,
      ],
      [['--password', PASSWORD], base, /unknown option --password \(see raykeeper redis-cleanup --help\)$/],
      [[`--password=${PASSWORD}`], base, /unknown option --password \(see raykeeper redis-cleanup --help\)$/],
      [['--timeout=0'], base, /--timeout must be a positive number/],
      [['--timeout', '-1'], base, /option '--timeout' argument is ambiguous/],
      [['--mode', 'weird'], base, /--mode must be one of auto, standalone, sentinel, cluster/],
      [['--layout', 'x'], base, /--layout must be both, current or legacy/],
      [['--legacy'], base, /--legacy goes with --list/],
      [['--sweep', 'sometimes'], base, /--sweep must be one of auto, always, never/],
      [['--sweep', 'never', '--ray-version', '2.40.0'], base, /--ray-version goes with --sweep auto/],
      [['--command-budget-ms', '0'], base, /--command-budget-ms must be a number of milliseconds in \(0, 1000\], got "0"/],
      [['--command-budget-ms', 'fast'], base, /--command-budget-ms must be a number of milliseconds/],
    ];
    for (const [i, [args, env, re]] of cases.entries()) {
      // The first through a real process (exit code as the Job sees it), the rest in-process.
      const run = i === 0 ? await raykeeper(args, env) : await inProcess(args, env);
      t.equal(run.code, 2, `${args.join(' ')} exits 2`);
      const lines = run.stderr.trimEnd().split('\n');
      t.equal(lines.length, 1, 'one line');
      t.match(lines[0], re);
      t.notOk(run.stderr.includes(PASSWORD) && !args.includes('--password'), 'no password echoed');
    }
    t.equal((await snapshot(r)).size, 9, 'nothing deleted by any of them');
  });

  t.test('a namespace that is not valid UTF-8 is refused (exit 2) before connecting, never read as "\\ufffd"', async (t) => {
    // The lossy reading of \xff: a namespace that must survive.
    await r.hset('RAY\ufffd@JOB', 'f', 'v');
    await r.hset('\ufffd', '\ufffd@JOB:k', 'v');
    const connections = async () => Number(/total_connections_received:(\d+)/.exec(await r.info('stats'))?.[1]);
    const before = await connections();
    const keys = await snapshot(r);
    // Bytes, not a JavaScript string: bash sets the variable, then becomes the CLI.
    const run = await new Promise<Run>((resolve, reject) => {
      const child = spawn(
        'bash',
        ['-c', `export RAY_external_storage_namespace=$'\\xff'; exec "$0" "$@"`, process.execPath, BIN, 'redis-cleanup'],
        {
          env: { PATH: process.env.PATH ?? '', RAY_REDIS_ADDRESS: address, REDIS_PASSWORD: PASSWORD },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.once('error', reject);
      child.once('close', (code) => resolve({ code, stdout, stderr }));
    });
    t.equal(run.code, 2, run.stderr);
    t.match(run.stderr, /RAY_external_storage_namespace is not valid UTF-8 \(bytes ff\)/);
    t.equal(run.stderr.trimEnd().split('\n').length, 1, 'one line');
    t.equal(await connections(), before, 'no connection was made');
    t.same(await snapshot(r), keys, 'nothing deleted');
    // Where the bytes are not known (an environment handed over as strings), U+FFFD itself is refused.
    const lossy = await inProcess([], { ...base, RAY_external_storage_namespace: 'a\ufffd' });
    t.equal(lossy.code, 2);
    t.match(lossy.stderr, /holds U\+FFFD/);
    // A valid non-ASCII namespace is fine.
    await seedCurrent(r, 'é-ns');
    const ok = await inProcess([], { ...base, RAY_external_storage_namespace: 'é-ns' });
    t.equal(ok.code, 0, ok.stderr);
    t.equal((await r.keys('RAYé-ns@*')).length, 0);
  });

  t.test('--connect-budget: nothing listening, the process gives up after the budget with one line', async (t) => {
    const port = await freePort();
    const started = Date.now();
    const run = await raykeeper(['--connect-budget', '2', '--timeout', '120', '--quiet'], {
      ...base,
      RAY_REDIS_ADDRESS: `redis://:${PASSWORD}@127.0.0.1:${port}`,
    });
    const elapsed = Date.now() - started;
    t.equal(run.code, 1);
    t.match(
      run.stderr,
      /^raykeeper redis-cleanup: failed: Redis unreachable for \d+s \(\d+ attempts, connection budget spent\): 127\.0\.0\.1:\d+: .*ECONNREFUSED[^\n]*\n$/,
    );
    t.ok(elapsed >= 2000 && elapsed < 20_000, `exited after ${elapsed} ms (budget 2 s, timeout 120 s)`);
    noSecret(t, run);
    const usage = await inProcess(['--connect-budget', '0'], base);
    t.equal(usage.code, 2);
    t.match(usage.stderr, /--connect-budget must be a positive number/);
  });

  t.test('--dry-run: exit 0, lists what would go, deletes nothing', async (t) => {
    await r.rpush('RAYcli1@FAKE', 'x');
    const before = await snapshot(r);
    const run = await raykeeper(['--dry-run'], base);
    t.equal(run.code, 0, run.stderr);
    t.match(run.stdout, /would delete 4 key\(s\); old-layout hash would be deleted \(4 fields\); left alone 1 look-alike/);
    for (const k of ['RAYcli1@JOB', 'RAYcli1@NODE', 'RAYcli1@ACTOR_TASK_SPEC', 'RAYcli1@JobCounter'])
      t.match(run.stdout, `  would delete ${k} (`);
    t.match(run.stdout, /  left alone RAYcli1@FAKE \(list\): is a list/);
    t.same(await snapshot(r), before);
  });

  t.test('--json: one parseable object; failures too', async (t) => {
    const run = await raykeeper(['--json'], base);
    t.equal(run.code, 0);
    const out = JSON.parse(run.stdout);
    t.match(out, { ok: true, namespace: 'cli1', deletedCount: 4, legacy: 'deleted', mode: 'standalone', attempts: 1 });
    const bad = await inProcess(['--json'], { ...base, REDIS_PASSWORD: 'nope-nope' });
    t.equal(bad.code, 1);
    t.match(JSON.parse(bad.stdout), { ok: false, error: /WRONGPASS/ });
  });

  t.test(
    '--sweep: never leaves a table not on the list, always (the default) and auto for a newer Ray remove it; the result says why',
    async (t) => {
      await r.hset('RAYcli1@NEWTABLE', 'f', 'v');
      const never = await raykeeper(['--sweep', 'never', '--json'], base);
      t.equal(never.code, 0, never.stderr);
      t.match(JSON.parse(never.stdout), {
        ok: true,
        deletedCount: 4,
        legacy: 'deleted',
        sweep: 'skipped',
        sweepReason: '--sweep never',
        scanCalls: 0,
      });
      t.same(
        [...(await snapshot(r)).keys()].filter((k) => k.startsWith('RAYcli1')),
        ['RAYcli1@NEWTABLE'],
        'never: only the unknown table is left',
      );
      t.equal((await snapshot(r)).size, 5, 'cli2 intact');

      // --sweep auto is the default: --ray-version alone is enough.
      const oldRay = await inProcess(['--ray-version', '2.40.0', '--verbose'], base);
      t.equal(oldRay.code, 0, oldRay.stderr);
      t.match(oldRay.stdout, /: deleted 0 key\(s\) in \d+ ms\n$/, 'the summary says what was deleted, plainly');
      t.match(
        oldRay.stderr,
        /detail: sweep skipped \(Ray 2\.40\.0 \(--ray-version\) <= \d+\.\d+\.\d+: tables known\), 0 SCAN calls, old layout absent$/m,
        '--verbose says how',
      );
      t.equal(await r.exists('RAYcli1@NEWTABLE'), 1);

      const newRay = await inProcess(['--sweep', 'auto', '--ray-version', '99.0.0', '--json'], base);
      t.equal(newRay.code, 0, newRay.stderr);
      t.match(JSON.parse(newRay.stdout), { deletedCount: 1, sweep: 'ran', sweepReason: /^Ray 99\.0\.0 \(--ray-version\) > / });
      t.equal(await r.exists('RAYcli1@NEWTABLE'), 0, 'auto with a newer Ray sweeps');

      await r.hset('RAYcli1@NEWTABLE', 'f', 'v');
      const unknown = await inProcess(['--sweep', 'auto', '--json'], base);
      t.match(JSON.parse(unknown.stdout), { deletedCount: 1, sweep: 'ran', sweepReason: /^Ray version unknown/ });

      // No version given: the one the head recorded (CLUSTER_METADATA in RAY<ns>@KV) decides.
      const recorded = (version: string) => r.hset('RAYcli1@KV', CLUSTER_METADATA_FIELD, JSON.stringify({ ray_version: version }));
      await r.hset('RAYcli1@NEWTABLE', 'f', 'v');
      await recorded('2.40.0');
      const oldRecorded = await inProcess(['--sweep', 'auto', '--json'], base);
      t.match(JSON.parse(oldRecorded.stdout), {
        deletedCount: 1,
        sweep: 'skipped',
        sweepReason: /^Ray 2\.40\.0 \(recorded in RAYcli1@KV\) <= /,
      });
      t.equal(await r.exists('RAYcli1@NEWTABLE'), 1, 'a recorded old Ray: no walk');
      await recorded('99.0.0');
      const newRecorded = await inProcess(['--sweep', 'auto', '--json'], base);
      t.match(JSON.parse(newRecorded.stdout), {
        deletedCount: 2,
        sweep: 'ran',
        sweepReason: /^Ray 99\.0\.0 \(recorded in RAYcli1@KV\) > /,
      });
      t.equal(await r.exists('RAYcli1@NEWTABLE'), 0, 'a recorded newer Ray: the walk');

      await r.hset('RAYcli1@NEWTABLE', 'f', 'v');
      const byDefault = await inProcess(['--json'], base);
      t.match(JSON.parse(byDefault.stdout), {
        deletedCount: 1,
        sweep: 'ran',
        sweepReason: /^Ray version unknown \(nothing in --ray-version\): tables may be new; no version recorded in RAYcli1@KV$/,
      });
      await recorded('2.40.0');
      const byDefaultRecorded = await inProcess(['--json'], base);
      t.match(JSON.parse(byDefaultRecorded.stdout), { sweep: 'skipped' }, 'by default, the recorded version decides');
      t.same(
        [...(await snapshot(r)).keys()].sort(),
        ['RAYcli2@ACTOR_TASK_SPEC', 'RAYcli2@JOB', 'RAYcli2@JobCounter', 'RAYcli2@NODE'],
        'the neighbour namespace intact throughout',
      );
    },
  );

  t.test('--list (and --json): namespaces with counts and sizes', async (t) => {
    const run = await raykeeper(['--list', '--legacy'], base);
    t.equal(run.code, 0, run.stderr);
    t.match(run.stdout, /NAMESPACE\s+LAYOUT\s+KEYS\s+FIELDS\s+BYTES/);
    t.match(run.stdout, /\ncli1\s+current\s+4\s+9\s+\d+\s+0/);
    t.match(run.stdout, /\ncli1\s+legacy\s+1\s+4\s+\d+/);
    t.match(run.stdout, /\ncli2\s+current\s+4\s+9\s+\d+/);
    const json = JSON.parse((await inProcess(['--list', '--json'], base)).stdout);
    t.same(
      json.namespaces.map((n: { namespace: string }) => n.namespace),
      ['cli1', 'cli2'],
    );
    t.equal((await snapshot(r)).size, 9, 'listing deletes nothing');
  });

  t.test('--list --orphans without a kubeconfig: exit 2, one line saying what is missing', async (t) => {
    const home = await mkdtemp(join(tmpdir(), 'raykeeper-home-'));
    t.teardown(() => rm(home, { recursive: true, force: true }));
    const run = await raykeeper(['--list', '--orphans'], { ...base, HOME: home });
    t.equal(run.code, 2, run.stderr);
    t.match(
      run.stderr,
      /^raykeeper redis-cleanup: --orphans reads the RayClusters from Kubernetes: no Kubernetes cluster configured \(use --kubeconfig, KUBECONFIG, or run in a pod\)\n$/,
    );
    t.equal(run.stdout, '', 'no table without the clusters');
    const usage = await inProcess(['--orphans'], base);
    t.equal(usage.code, 2);
    t.match(usage.stderr, /--orphans goes with --list/);
    t.match((await inProcess(['--list', '--kubeconfig', '/x'], base)).stderr, /--kubeconfig goes with --orphans/);
  });

  t.test('--help and the top-level command table', async (t) => {
    const help = await raykeeper(['--help'], {});
    t.equal(help.code, 0);
    t.match(help.stdout, /Minimal ACL for the cleanup: \+scan \+type \+unlink \+hscan, plus \+info/);
    const top = await new Promise<string>((resolve) => {
      const child = spawn(process.execPath, [BIN, '--help'], { stdio: ['ignore', 'pipe', 'ignore'] });
      let s = '';
      child.stdout.on('data', (d) => (s += d));
      child.once('close', () => resolve(s));
    });
    t.match(top, /redis-cleanup\s+delete one Ray GCS storage namespace/);
  });
}
