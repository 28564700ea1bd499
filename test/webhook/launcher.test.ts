// bin/raykeeper.js started by a Node older than 22.18 re-runs itself under the pinned Node: the launcher
// must be transparent, as real processes see it. SIGTERM, SIGINT and SIGHUP reach the child (once, also
// when sent to the whole process group), the launcher lives until the child ends and ends the same way.
// The child is the webhook: cheap, long-running, and it says in its log what each signal did.
import t, { type Test } from 'tap';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { certDir, httpsCall } from './helpers.ts';

const BIN = fileURLToPath(new URL('../../bin/raykeeper.js', import.meta.url));

/**
 * The command that runs the launcher's re-run path: the system Node where it is older than 22.18 (v20
 * on our machines), else this Node told to report 20.0.0 before bin/raykeeper.js reads its version.
 */
function olderNode(): string[] {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    const node = join(dir, 'node');
    if (dir.includes('node_modules') || !existsSync(node)) continue;
    const [major = 0, minor = 0] = spawnSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' })
      .stdout.trim()
      .split('.')
      .map(Number);
    if (major < 22 || (major === 22 && minor < 18)) return [node];
    break;
  }
  return [process.execPath, '--import', `data:text/javascript,Object.defineProperty(process.versions,'node',{value:'20.0.0'})`];
}
const OLD_NODE = olderNode();
t.comment(`launcher run by ${OLD_NODE.join(' ')}`);

interface Launched {
  launcher: ChildProcess;
  /** The re-run process (the pinned Node), from the pid in the webhook's log. */
  childPid: number;
  port: number;
  /** The CA of the webhook's serving certificate. */
  ca: string;
  logs(): string;
  /** Resolves when `re` matches the output; rejects when the launcher exits first or after 30 s. */
  waitFor(re: RegExp): Promise<void>;
  /** How the launcher ended (rejects when it has not within 30 s). */
  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** The webhook through the launcher, in a process group of its own (so the test can signal the group). */
async function launchWebhook(tt: Test): Promise<Launched> {
  const certs = await certDir(tt);
  const [node, ...nodeArgs] = OLD_NODE as [string, ...string[]];
  const launcher = spawn(
    node,
    [...nodeArgs, BIN, 'webhook', '--cert', certs.certFile, '--key', certs.keyFile, '--host', '127.0.0.1', '--port', '0'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  );
  let out = '';
  const waiters = new Set<() => void>();
  const onData = (c: Buffer) => {
    out += c.toString();
    for (const w of waiters) w();
  };
  launcher.stdout!.on('data', onData);
  launcher.stderr!.on('data', onData);
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    launcher.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const waitFor = (re: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => settle(new Error(`no ${re} within 30 s: ${out}`)), 30_000);
      const settle = (err?: Error) => {
        waiters.delete(check);
        clearTimeout(timer);
        if (err) reject(err);
        else resolve();
      };
      const check = () => {
        if (re.test(out)) settle();
      };
      waiters.add(check);
      check();
      void exit.then(() => {
        if (!re.test(out)) settle(new Error(`the launcher exited before ${re}: ${out}`));
      });
    });
  tt.teardown(() => {
    try {
      process.kill(-launcher.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  });
  await waitFor(/"msg":"admission webhook listening/);
  const listening = JSON.parse(out.split('\n').find((l) => l.includes('admission webhook listening'))!) as { pid: number; port: number };
  // Bounded, so that a launcher that does not end (the old one, blocked in spawnSync) fails with its log.
  const exited = async () => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>(
      (_, reject) => (timer = setTimeout(() => reject(new Error(`the launcher did not exit within 30 s: ${out}`)), 30_000)),
    );
    try {
      return await Promise.race([exit, late]);
    } finally {
      clearTimeout(timer);
    }
  };
  return { launcher, childPid: listening.pid, port: listening.port, ca: certs.bundle.caCert, logs: () => out, waitFor, exited };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const count = (text: string, needle: string) => text.split('\n').filter((l) => l.includes(needle)).length;

t.test('SIGTERM to the launcher: the child shuts down gracefully, then the launcher exits with its status', async (tt) => {
  const w = await launchWebhook(tt);
  tt.not(w.childPid, w.launcher.pid, 'the webhook runs in a re-run child, not in the launcher');
  w.launcher.kill('SIGTERM');
  const end = await w.exited();
  tt.same(end, { code: 0, signal: null }, 'the launcher exits 0, as the child did');
  tt.notOk(alive(w.childPid), 'no orphaned child');
  tt.equal(count(w.logs(), '"signal":"SIGTERM","msg":"shutting down'), 1, 'the child shut down on SIGTERM, once');
  tt.match(w.logs(), /admission webhook stopped/);
});

t.test('SIGHUP to the launcher: the child re-reads its certificates and keeps serving; SIGINT stops it', async (tt) => {
  const w = await launchWebhook(tt);
  w.launcher.kill('SIGHUP');
  await w.waitFor(/SIGHUP: re-reading certificate files/);
  const status = (await httpsCall(w.port, '/healthz', { ca: w.ca })).status;
  tt.equal(status, 200, 'still serving after SIGHUP');
  tt.equal(w.launcher.exitCode, null, 'the launcher lives on');
  w.launcher.kill('SIGINT');
  tt.same(await w.exited(), { code: 0, signal: null });
  tt.equal(count(w.logs(), '"signal":"SIGINT","msg":"shutting down'), 1);
  tt.notOk(alive(w.childPid));
});

t.test('a signal to the whole process group (Ctrl-C, kill -- -PGID) reaches the child once', async (tt) => {
  const w = await launchWebhook(tt);
  // Both processes get the group's signal; a relayed copy that the child handles after its own would
  // be a second one (it does in about half the rounds when the launcher simply kill()s the child).
  const rounds = 5;
  for (let i = 1; i <= rounds; i++) {
    process.kill(-w.launcher.pid!, 'SIGHUP');
    await w.waitFor(new RegExp(`(SIGHUP: re-reading certificate files[^]*){${i}}`));
  }
  process.kill(-w.launcher.pid!, 'SIGINT');
  tt.same(await w.exited(), { code: 0, signal: null });
  // The relayed copies were handled before the SIGINT that stopped it (one ordered channel).
  tt.equal(count(w.logs(), 'SIGHUP: re-reading certificate files'), rounds, `one reload for each of ${rounds} SIGHUPs to the group`);
  tt.equal(count(w.logs(), 'shutting down'), 1, 'one shutdown for one SIGINT to the group');
  tt.notOk(alive(w.childPid));
});

t.test("the child's end is the launcher's: its exit code, or death by the same signal", async (tt) => {
  const [node, ...nodeArgs] = OLD_NODE as [string, ...string[]];
  const usage = spawnSync(node, [...nodeArgs, BIN, 'webhook'], { encoding: 'utf8', timeout: 30_000 });
  tt.equal(usage.status, 2, 'exit code 2 of a flag error passes through');
  tt.match(usage.stderr, /missing --cert, --key/);
  const w = await launchWebhook(tt);
  process.kill(w.childPid, 'SIGKILL');
  tt.same(await w.exited(), { code: null, signal: 'SIGKILL' }, 'the launcher dies of the signal that killed the child');
});
