// A real Ray head (GCS fault tolerance against our test Redis) writes its tables as RAY<ns>@<TABLE>; a
// driver adds JOB, ACTOR and the JobCounter string, and the head its version (CLUSTER_METADATA in KV).
// After Ray is stopped our cleanup, run as the Job runs it for a cluster that names no version
// (`--sweep auto`: it reads the recorded one, RAY_RELEASE's tables are known, no keyspace sweep), must
// leave nothing of that namespace, and a neighbouring namespace (a byte-exact copy under RAY<ns>0@...)
// must stay intact.
// Needs Ray (tools/install-ray.sh; found by localcluster/ray.ts); fails without it, naming the set-up command.
import t from 'tap';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { runWith } from '../../controller/redis-cleanup/cli.ts';
import { CLUSTER_METADATA_FIELD, metadataRayVersion, RAY_TABLES } from '../../src/redis/keys.ts';
import { RAY_RELEASE } from '../../src/ray-release.ts';
import { findRay, stopRay, waitForRayStart } from '../../localcluster/ray.ts';
import { freePort, redisServerMissing, startRedisServer } from '../helpers/redis-server.ts';
import { client, snapshot } from './fixtures.ts';
import { missingPart } from '../helpers/parts.ts';

const missing = redisServerMissing();
const found = findRay();
if (missing) {
  t.fail(missing); // a missing redis-server fails, like a missing control plane
} else if ('missing' in found) {
  t.fail(missingPart(found.missing));
} else {
  t.test('real Ray GCS tables in Redis are removed completely; a neighbouring namespace stays', { timeout: 240_000 }, async (t) => {
    const python = found.python;
    const redis = await startRedisServer();
    t.teardown(() => redis.stop());
    const r = client(redis.port);
    t.teardown(() => r.disconnect());
    const ns = `rk${randomBytes(4).toString('hex')}`;
    const temp = await mkdtemp(join(tmpdir(), 'rk-ray-'));
    t.teardown(() => rm(temp, { recursive: true, force: true }));
    const env = {
      ...process.env,
      RAY_REDIS_ADDRESS: `127.0.0.1:${redis.port}`,
      RAY_external_storage_namespace: ns,
      RAY_USAGE_STATS_ENABLED: '0',
    };
    const rayKeys = async () => (await r.keys(`RAY${ns}@*`)).sort();
    // `ray start` gives its raylet 30 s to register and exits if it has not, which a loaded machine can
    // cause: that one exit is retried (up to 3 starts, fresh ports); any other exit fails the test.
    let head!: ChildProcess;
    let headLog = (): string => '';
    let gcsPort = 0;
    let started = 0;
    t.teardown(() => stopRay(head));
    for (let attempt = 1; ; attempt++) {
      const [clientPort, agentPort] = [await freePort(), await freePort()];
      gcsPort = await freePort();
      head = spawn(
        found.ray,
        [
          'start',
          '--head',
          '--block',
          `--port=${gcsPort}`,
          `--ray-client-server-port=${clientPort}`,
          `--dashboard-agent-listen-port=${agentPort}`,
          '--node-ip-address=127.0.0.1',
          '--num-cpus=1',
          '--include-dashboard=false',
          '--disable-usage-stats',
          `--temp-dir=${temp}`,
          '--object-store-memory=100000000',
        ],
        { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
      );
      // This start's own output (a failed start's processes may still write to theirs).
      const chunks: string[] = [];
      head.stdout!.on('data', (d) => chunks.push(String(d)));
      head.stderr!.on('data', (d) => chunks.push(String(d)));
      headLog = () => chunks.join('');
      started = Date.now();
      const outcome = await waitForRayStart(
        head,
        headLog,
        async () => (await rayKeys()).includes(`RAY${ns}@NODE`),
        150_000,
        `ray start (start ${attempt})`,
      );
      if (outcome === 'ready') break;
      if (attempt === 3) throw new Error(`Ray timed out starting three times: ${headLog().slice(-2000)}`);
      t.comment(`Ray timed out starting (start ${attempt}); starting it again with fresh ports, the namespace's keys removed`);
      await stopRay(head);
      // Keys the failed start wrote would otherwise satisfy the next start's checks.
      const stale = await rayKeys();
      if (stale.length > 0) await r.del(...stale);
    }
    t.comment(`Ray head wrote its tables after ${Date.now() - started} ms`);

    // A driver: a job (JOB table, JobCounter string) and an actor (ACTOR, ACTOR_TASK_SPEC).
    const driver = spawnSync(
      python,
      [
        '-c',
        `import ray\nray.init(address="127.0.0.1:${gcsPort}", log_to_driver=False)\n@ray.remote(num_cpus=0)\nclass A:\n    def ping(self):\n        return 1\nprint(ray.get(A.remote().ping.remote()))\nray.shutdown()\n`,
      ],
      { env, encoding: 'utf8', timeout: 120_000 },
    );
    t.equal(driver.status, 0, `the driver ran (${driver.stderr.slice(-500)})`);

    await stopRay(head);
    const written = await rayKeys();
    t.comment(`Ray wrote: ${written.join(', ')}`);
    for (const table of ['NODE', 'KV', 'JOB', 'JobCounter', 'ACTOR'])
      t.ok(written.includes(`RAY${ns}@${table}`), `Ray wrote RAY${ns}@${table}`);
    t.equal(await r.type(`RAY${ns}@JobCounter`), 'string', 'JobCounter is a string, the tables hashes');
    const recorded = metadataRayVersion(await r.hgetBuffer(`RAY${ns}@KV`, CLUSTER_METADATA_FIELD));
    t.equal(recorded, RAY_RELEASE, `the head recorded its version in RAY${ns}@KV ${CLUSTER_METADATA_FIELD}`);
    // Every table this Ray wrote is on the list the cleanup unlinks by name before its SCAN sweep.
    for (const key of written) t.ok(RAY_TABLES.includes(key.slice(`RAY${ns}@`.length)), `${key} is one of RAY_TABLES`);

    // The neighbour: the same real data under RAY<ns>0@..., byte for byte.
    for (const key of written) {
      const dump = await r.dumpBuffer(key);
      await r.restore(key.replace(`RAY${ns}@`, `RAY${ns}0@`), 0, dump!);
    }
    const before = await snapshot(r);

    const out = { stdout: '', stderr: '' };
    const code = await runWith(['--timeout', '60', '--sweep', 'auto', '--verbose'], {
      env: { RAY_REDIS_ADDRESS: `127.0.0.1:${redis.port}`, RAY_external_storage_namespace: ns },
      stdout: { write: (s: string) => (out.stdout += s) },
      stderr: { write: (s: string) => (out.stderr += s) },
    });
    t.equal(code, 0, out.stderr);
    t.match(out.stdout, new RegExp(`deleted ${written.length} key\\(s\\)`));
    t.match(
      out.stderr,
      new RegExp(`detail: sweep skipped \\(Ray [\\d.]+ \\(recorded in RAY${ns}@KV\\) <= [\\d.]+: tables known\\), 0 SCAN calls`),
      'without walking the keyspace: the version the head recorded',
    );
    t.same(await rayKeys(), [], 'nothing of the namespace remains');
    const after = await snapshot(r);
    const neighbour = [...before.keys()].filter((k) => k.startsWith(`RAY${ns}0@`));
    t.equal(neighbour.length, written.length);
    for (const k of neighbour) t.equal(after.get(k), before.get(k), `${k} intact`);
    t.equal(after.size, neighbour.length, 'nothing else was there or left');
  });
}
