// The images of the local real node, built for real by tools/build-images.sh (debootstrap, npm, PyPI,
// and our Dockerfile unchanged through buildah with no pull), then checked from their OCI archives
// alone, the way containerd gets them: names, digests, configs, and each image RUN with runc doing what
// the cluster asks of it (our cleanup Job from our image, and KubeRay's from the Ray image, against a
// real Redis; the samples' Redis command; the sandbox image's wait and clean exit).
//
// It needs root, buildah and runc (tools/setup.sh --node installs them), and a cold build takes ~10
// minutes; without them it fails, naming the set-up command.
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { freePort, redisServerMissing, startRedisServer, waitForRedis } from '../helpers/redis-server.ts';
import { client, seedCurrent, seedLegacy, snapshot } from '../redis/fixtures.ts';
import { normalizeRef, type OciImage, readArchive, runImage, scratch, unpackRootfs, waitRunning } from './oci.ts';
import { sleep } from '../../kube/backoff.ts';
import { missingPart } from '../helpers/parts.ts';

const SCRIPT = join(REPO_ROOT, 'tools/build-images.sh');
const PASSWORD = 'Images-Secret-4c1d';

/** Why the image build cannot be tested here, or undefined when it must run. */
function gate(): string | undefined {
  if (process.getuid?.() !== 0) return 'building images needs root';
  for (const c of ['buildah', 'debootstrap', 'runc']) {
    if (spawnSync(c, ['--version']).error) return `${c} is not installed`;
  }
  return undefined;
}

/** Every container image the admin manifests and the samples name. */
function manifestImages(): string[] {
  const out = new Set<string>();
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if ((k === 'containers' || k === 'initContainers') && Array.isArray(x))
          for (const c of x) if (typeof c?.image === 'string') out.add(c.image);
        walk(x);
      }
    }
  };
  for (const dir of ['manifests/base', 'manifests/samples']) {
    for (const f of readdirSync(join(REPO_ROOT, dir)).filter((x) => x.endsWith('.yaml'))) {
      for (const doc of parseAllDocuments(readFileSync(join(REPO_ROOT, dir, f), 'utf8'))) walk(doc.toJS());
    }
  }
  return [...out].sort();
}

function script(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [SCRIPT, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => {
      stderr += d;
      process.stderr.write(`# ${String(d).trimEnd().replace(/\n/g, '\n# ')}\n`);
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function parseLines(stdout: string): Map<string, string> {
  const m = new Map<string, string>();
  for (const line of stdout.trim().split('\n')) {
    const x = /^name=(\S+) archive=(\S+)$/.exec(line);
    if (!x) throw new Error(`not a name=... archive=... line: ${line}`);
    m.set(x[1]!, x[2]!);
  }
  return m;
}

const lockedNode = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8')).packages['node_modules/node'].version as string;
const version = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')).version as string;
const rayVersion = /RAYKEEPER_RAY_VERSION:-([\d.]+)/.exec(readFileSync(join(REPO_ROOT, 'tools/install-ray.sh'), 'utf8'))![1]!;
const sampleImages = manifestImages();
const rayRef = normalizeRef(sampleImages.find((i) => i.startsWith('rayproject/ray:'))!);
const REFS = {
  pause: 'registry.k8s.io/pause:3.10',
  node: `docker.io/library/node:${lockedNode.split('.')[0]}-slim`,
  raykeeper: `docker.io/library/raykeeper:${version}`,
  redis: normalizeRef(sampleImages.find((i) => i.startsWith('redis:'))!),
  ray: rayRef,
};

t.test('image references are normalised as the kubelet does', async (t) => {
  for (const [ref, want] of [
    ['raykeeper:0.1.0', 'docker.io/library/raykeeper:0.1.0'],
    ['node:22-slim', 'docker.io/library/node:22-slim'],
    ['rayproject/ray:2.60.0', 'docker.io/rayproject/ray:2.60.0'],
    ['registry.k8s.io/pause:3.10', 'registry.k8s.io/pause:3.10'],
    ['localhost/x:1', 'localhost/x:1'],
    ['redis', 'docker.io/library/redis:latest'],
    ['host:5000/a/b', 'host:5000/a/b:latest'],
  ] as const) {
    t.equal(normalizeRef(ref), want, ref);
  }
});

const why = gate();
if (why) {
  t.fail(missingPart(why));
} else {
  t.setTimeout(45 * 60_000); // a cold build (debootstrap, npm ci, pip install ray) takes ~10 minutes
  t.test('the images, built for real and run from their archives', async (t) => {
    const tmp = scratch('raykeeper-images-test-');
    t.teardown(tmp.remove);

    const printed = await script(['--print']);
    const promised = parseLines(printed.stdout);

    t.test('--print names the sandbox image, the Dockerfile base and every image the manifests and samples use', async (t) => {
      t.equal(printed.code, 0, printed.stderr);
      const dockerfileFrom = /^FROM (\S+)/m.exec(readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8'))![1]!;
      for (const ref of [REFS.pause, normalizeRef(dockerfileFrom), ...sampleImages.map(normalizeRef)])
        t.ok(promised.has(ref), `builds ${ref}`);
      t.equal(normalizeRef(dockerfileFrom), REFS.node, "the base is the Dockerfile's FROM, at package.json's Node major");
      t.ok(promised.has('docker.io/library/busybox:1.35'), 'and a busybox test image');
    });

    const build = await script([]);
    const built = parseLines(build.stdout);
    const mtimes = new Map([...built.values()].map((a) => [a, statSync(a).mtimeMs]));

    t.test('builds every image (or finds it cached) and prints the lines --print promised', async (t) => {
      t.equal(build.code, 0, build.stderr);
      t.same([...built], [...promised]);
      for (const a of built.values()) t.ok(statSync(a).size > 0, `${a} exists`);
    });

    t.test('a second run builds nothing and leaves every archive as it was', async (t) => {
      const again = await script([]);
      t.equal(again.code, 0, again.stderr);
      t.same([...parseLines(again.stdout)], [...built]);
      t.notMatch(again.stderr, /building/, 'nothing rebuilt');
      for (const [a, m] of mtimes) t.equal(statSync(a).mtimeMs, m, `${a} untouched`);
    });

    const images = new Map<string, OciImage>();
    const rootfs = new Map<string, string>();
    /** The image's archive read and its rootfs unpacked (once per file run). */
    const image = (ref: string): { img: OciImage; root: string } => {
      if (!images.has(ref)) {
        const img = readArchive(built.get(ref)!, tmp.dir);
        const root = join(img.dir, 'rootfs');
        unpackRootfs(img, root);
        images.set(ref, img);
        rootfs.set(ref, root);
      }
      return { img: images.get(ref)!, root: rootfs.get(ref)! };
    };
    const work = join(tmp.dir, 'runc');

    t.test('each archive holds one linux/amd64 image under its printed name, every blob matching its digest', async (t) => {
      for (const [ref, archive] of built) {
        const img = readArchive(archive, tmp.dir); // throws on a digest or size mismatch
        t.equal(img.name, ref, `${archive} is named ${ref} (what ctr images import uses)`);
        t.match(img.config, { os: 'linux', architecture: 'amd64' });
        t.equal(img.manifest.layers.length, img.config.rootfs.diff_ids.length);
      }
    });

    t.test('pause: waits as an unprivileged user until SIGTERM, then exits 0', async (t) => {
      const { img, root } = image(REFS.pause);
      t.equal(img.config.config.User, '65535:65535');
      const c = runImage(img, root, work);
      await waitRunning(c);
      // PID 1 of a PID namespace drops a signal it has no handler for, so a TERM that arrives before the
      // shell has set its trap is lost (it hung a CI run): TERM is sent until the container ends, at most
      // 20 s. It can only end through the trap, with 0; otherwise KILL ends it with 137.
      const deadline = Date.now() + 20_000;
      while (!c.ended() && Date.now() < deadline) {
        c.kill('TERM');
        await Promise.race([c.done, sleep(500)]);
      }
      if (!c.ended()) c.kill('KILL');
      const r = await c.done;
      t.equal(r.code, 0, r.stderr);
    });

    t.test(`node:22-slim: Node ${lockedNode} (package-lock's) and npm, the node user 1000:1000`, async (t) => {
      const { img, root } = image(REFS.node);
      t.ok(img.config.config.Env?.includes(`NODE_VERSION=${lockedNode}`));
      t.same(img.config.config.Cmd, ['node']);
      const r = await runImage(img, root, work, {
        command: ['sh', '-c', 'node --version && npm --version && id -un && id -gn'],
        user: '1000:1000',
        env: { HOME: '/home/node' },
      }).done;
      t.equal(r.code, 0, r.stderr);
      t.match(r.stdout, new RegExp(`^v${lockedNode.replace(/\./g, '\\.')}\\n\\d+\\.\\d+\\.\\d+\\nnode\\nnode\\n$`));
    });

    const redisMissing = redisServerMissing();
    if (redisMissing) t.fail(missingPart(redisMissing));
    t.test(
      `raykeeper:${version}: the Dockerfile's image runs --help, and its redis-cleanup deletes one namespace from a real Redis`,
      { skip: redisMissing && 'redis-server is missing (failed above)' },
      async (t) => {
        const { img, root } = image(REFS.raykeeper);
        t.match(img.config.config, { User: '1000:1000', Entrypoint: ['raykeeper'], Cmd: ['--help'], WorkingDir: '/app' });
        t.same(Object.keys(img.config.config.ExposedPorts ?? {}).sort(), ['8080/tcp', '9443/tcp']);
        const help = await runImage(img, root, work).done;
        t.equal(help.code, 0, help.stderr);
        t.match(help.stdout, /^Usage: raykeeper <subcommand>/);
        t.match(help.stdout, /redis-cleanup/);

        const server = await startRedisServer({ password: PASSWORD });
        t.teardown(() => server.stop());
        const r = client(server.port, { password: PASSWORD });
        t.teardown(() => r.disconnect());
        await seedCurrent(r, 'img1');
        await seedLegacy(r, 'img1');
        await seedCurrent(r, 'img2');
        const neighbour = new Map([...(await snapshot(r))].filter(([k]) => !k.includes('img1')));
        // As the cleanup Job's pod: the image's user, a read-only root, the environment KubeRay provides.
        const run = await runImage(img, root, work, {
          args: ['redis-cleanup'],
          hostNetwork: true,
          env: { RAY_REDIS_ADDRESS: `127.0.0.1:${server.port}`, REDIS_PASSWORD: PASSWORD, RAY_external_storage_namespace: 'img1' },
        }).done;
        t.equal(run.code, 0, run.stderr);
        t.same(await snapshot(r), neighbour, "img1's keys are gone, img2's are intact");
        t.notMatch(run.stdout + run.stderr, PASSWORD, 'the password is in no output');
      },
    );

    t.test(
      "redis: the sample's command serves a password-protected Redis",
      { skip: redisMissing && 'redis-server is missing (failed above)' },
      async (t) => {
        const { img, root } = image(REFS.redis);
        const sample = parseAllDocuments(readFileSync(join(REPO_ROOT, 'manifests/samples/redis.yaml'), 'utf8'))
          .map((d) => d.toJS())
          .find((d) => d.kind === 'Deployment');
        const command: string[] = [...sample.spec.template.spec.containers[0].command];
        const port = await freePort();
        command[command.length - 1] += ` --port ${port} --bind 127.0.0.1`; // host network here: not 6379
        const c = runImage(img, root, work, { command, hostNetwork: true, env: { REDIS_PASSWORD: PASSWORD } });
        t.teardown(() => c.kill('KILL'));
        await waitForRedis(port, false, 20_000, () => !c.ended()).catch(async (err) => {
          throw new Error(`${err.message}: ${(await c.done).stderr}`);
        });
        const r = client(port, { password: PASSWORD });
        t.teardown(() => r.disconnect());
        await r.set('k', 'v');
        t.equal(await r.get('k'), 'v');
        t.match(await r.info('server'), /redis_version:7\./);
        c.kill('TERM');
        const done = await c.done;
        t.equal(done.code, 0, done.stderr);
      },
    );

    t.test('busybox: a shell and nc for test pods', async (t) => {
      const { img, root } = image('docker.io/library/busybox:1.35');
      const r = await runImage(img, root, work, {
        command: [
          'sh',
          '-c',
          // The server is restarted and the client retries until it read something: under load the client's
          // EOF can reach the server before `echo` filled its stdin, and that server then exits having sent nothing.
          'while true; do echo hello | nc -l -p 7777; done & for i in $(seq 50); do out=$(nc 127.0.0.1 7777 </dev/null 2>/dev/null) && [ -n "$out" ] && echo "$out" && exit 0; sleep 0.1; done; exit 1',
        ],
      }).done;
      t.equal(r.code, 0, r.stderr);
      t.equal(r.stdout, 'hello\n');
    });

    t.test(
      `ray (${rayRef}): Ray ${rayVersion} runs KubeRay's cleanup Job command against a real Redis`,
      { skip: redisMissing && 'redis-server is missing (failed above)' },
      async (t) => {
        const { img, root } = image(REFS.ray);
        t.match(img.config.config, { User: '1000:100', WorkingDir: '/home/ray', Labels: { 'io.raykeeper.ray-version': rayVersion } });
        const tools = await runImage(img, root, work, {
          // pkill: KubeRay's GCS fault-tolerance e2e test kills the head's gcs_server with it; ray from bytecode
          command: [
            '/bin/bash',
            '-lc',
            '--',
            'ray --version && command -v python wget pkill && python -c "import ray, importlib.util as u, os; assert os.path.exists(u.cache_from_source(ray.__file__))"',
          ],
          readonlyRoot: false,
        }).done;
        t.equal(tools.code, 0, tools.stderr);
        t.match(tools.stdout, `ray, version ${rayVersion}`);

        const server = await startRedisServer({ password: PASSWORD });
        t.teardown(() => server.stop());
        const r = client(server.port, { password: PASSWORD });
        t.teardown(() => r.disconnect());
        await seedCurrent(r, 'rayimg1');
        await seedCurrent(r, 'rayimg2');
        const neighbour = new Map([...(await snapshot(r))].filter(([k]) => !k.includes('rayimg1@')));
        // KubeRay v1.6.2's cleanup Job (raycluster_controller.go), without a Redis username.
        const py =
          'from ray._private.gcs_utils import cleanup_redis_storage; from urllib.parse import urlparse; import os; import sys; ' +
          "redis_address = os.getenv('RAY_REDIS_ADDRESS', '').split(',')[0]; " +
          "redis_address = redis_address if '://' in redis_address else 'redis://' + redis_address; " +
          'parsed = urlparse(redis_address); ' +
          "sys.exit(1) if not cleanup_redis_storage(host=parsed.hostname, port=parsed.port, password=os.getenv('REDIS_PASSWORD', parsed.password or ''), " +
          "use_ssl=parsed.scheme=='rediss', storage_namespace=os.getenv('RAY_external_storage_namespace')) else None";
        const run = await runImage(img, root, work, {
          command: ['/bin/bash', '-c', '--', `python -c "${py}"`],
          hostNetwork: true,
          readonlyRoot: false,
          env: {
            RAY_REDIS_ADDRESS: `127.0.0.1:${server.port}`,
            REDIS_PASSWORD: PASSWORD,
            RAY_external_storage_namespace: 'rayimg1',
            RAY_redis_db_connect_retries: '120',
          },
        }).done;
        t.equal(run.code, 0, run.stderr);
        t.same(await snapshot(r), neighbour, "rayimg1's keys are gone, rayimg2's are intact");
      },
    );
  });
}
