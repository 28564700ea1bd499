// A real Ray head (`ray start --head --block` from the venv tools/install-ray.sh made) on free ports,
// for the tests that need Ray's own dashboard.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../../localcluster/net.ts';
import { findRay } from '../../../localcluster/ray.ts';
import { spawnSupervised } from '../../../localcluster/process.ts';
import { sleep } from '../../../kube/backoff.ts';
import { authHeaders } from '../../../src/raycluster/auth.ts';
import { shellQuote } from '../../../src/shell.ts';

/** The `ray` CLI as a shell command, or why there is none. */
export function rayCommand(): { command: string; argv: string[] } | { missing: string } {
  const found = findRay();
  return 'missing' in found ? found : { command: shellQuote(found.ray), argv: [found.ray] };
}

export interface RayHead {
  dashboardUrl: string;
  stop(): Promise<void>;
}

/** `ray start --head --block` on free ports in a temp dir of its own. */
export async function startRayHead(
  argv: string[],
  log: (line: string) => void,
  options: { env?: Record<string, string>; token?: string } = {},
): Promise<RayHead> {
  const dir = await mkdtemp(join(tmpdir(), 'rk-ray-'));
  const [gcs, dashboard, client, agent, nodeManager, objectManager, metrics] = await Promise.all(Array.from({ length: 7 }, freePort));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    RAY_USAGE_STATS_ENABLED: '0',
    NO_PROXY: '127.0.0.1,localhost',
    no_proxy: '127.0.0.1,localhost',
    ...options.env,
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
      const res = await fetch(`${url}/api/version`, { signal: AbortSignal.timeout(2000), headers: authHeaders(options.token) });
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
