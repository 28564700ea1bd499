#!/usr/bin/env node
// Launcher. raykeeper is TypeScript run by Node >= 22.18's type stripping; the project pins such a Node
// as the npm package `node`. When started by an older system Node, re-run under the pinned one, and be
// transparent about it: SIGTERM, SIGINT and SIGHUP reach the child, the launcher lives as long as the
// child and ends as it did (same exit code, or killed by the same signal).
//
// A signal sent to the whole process group (Ctrl-C in a terminal, `kill -- -PGID`) reaches the child
// directly AND the launcher, which relays it: the child must act on it once (a second SIGINT means "exit
// now" to some subcommands). So the launcher relays over an IPC channel instead of kill(): the child
// raises a relayed signal on itself unless the same signal reached it directly just before.
import { spawn } from 'node:child_process';
import { setFlagsFromString } from 'node:v8';
import { existsSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const RELAYED = ['SIGTERM', 'SIGINT', 'SIGHUP'];
/** Tells the re-run child that its IPC channel carries relayed signals (removed from its env at once). */
const RELAY_ENV = 'RAYKEEPER_SIGNAL_RELAY';
/** A direct signal this recent stands for the relayed copy of the same signal... */
const SAME_SIGNAL_MS = 2_000;
/** ...and so does one arriving this soon after it (the group's copy can reach the child late). */
const RELAY_WAIT_MS = 200;

const [major, minor] = process.versions.node.split('.').map(Number);
if (major > 22 || (major === 22 && minor >= 18)) {
  if (process.env[RELAY_ENV] === '1' && process.send) acceptRelayedSignals();
  delete process.env[RELAY_ENV];
  // Node strips TypeScript with a WebAssembly build of swc that runs only while modules load: the
  // baseline compiler alone is enough, and V8's optimising tier-up of it cost a quarter of the
  // start-up CPU (bench/redis-cleanup.ts). Set before the first .ts file is imported.
  setFlagsFromString('--liftoff-only');
  // The image's stripped-TypeScript cache (bin/strip-cache.js): swc then does not load at all.
  if (process.env.RAYKEEPER_STRIP_CACHE) (await import('./strip-cache.js')).registerStripCache(process.env.RAYKEEPER_STRIP_CACHE);
  const { main } = await import('./cli.ts');
  process.exitCode = await main(process.argv.slice(2)).catch((err) => {
    process.stderr.write(`raykeeper: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  });
} else {
  const pinned = join(dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', 'node', 'bin', 'node');
  if (!existsSync(pinned)) {
    process.stderr.write(`raykeeper needs Node >= 22.18 (this is ${process.version}); run \`npm ci\` first.\n`);
    process.exit(1);
  }
  runPinned(pinned);
}

/** The launcher: runs this file under the pinned Node, relays signals, ends as the child ended. */
function runPinned(node) {
  const child = spawn(node, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, [RELAY_ENV]: '1' },
  });
  // Until the child listens on the channel (its first milliseconds), a plain kill() is the only way.
  let relaying = false;
  child.on('message', (m) => {
    if (m === 'relay-ready') relaying = true;
  });
  const relay = (signal) => {
    if (relaying && child.connected) child.send({ signal }, () => {});
    else child.kill(signal);
  };
  for (const signal of RELAYED) process.on(signal, relay);
  child.on('error', (err) => {
    if (child.pid !== undefined) return; // the IPC channel closing with the child: its exit decides
    process.stderr.write(`raykeeper: cannot run ${node}: ${err.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    for (const s of RELAYED) process.off(s, relay);
    if (signal) {
      // No handler any more: dies of the same signal (not SIGUSR1: Node would open its inspector).
      if (signal !== 'SIGUSR1') process.kill(process.pid, signal);
      process.exitCode = 128 + (constants.signals[signal] ?? 0); // a signal whose default is not to die
    } else process.exitCode = code ?? 1;
    if (child.connected) child.disconnect();
  });
}

/**
 * The child's side. A relayed signal is raised on this process (RELAY_WAIT_MS later) unless the same
 * signal arrived directly around it (then that was the process group's copy). Listening for a signal takes away
 * Node's default action, so a direct signal nobody else listens to is re-raised with the default.
 */
function acceptRelayedSignals() {
  /** Times of direct signals not yet matched by a relayed one, per signal. */
  const direct = new Map(RELAYED.map((s) => [s, []]));
  const raising = new Map(RELAYED.map((s) => [s, 0]));
  for (const signal of RELAYED) {
    const onSignal = () => {
      if (raising.get(signal) > 0) raising.set(signal, raising.get(signal) - 1);
      else direct.get(signal).push(Date.now());
      if (process.listenerCount(signal) === 1) {
        process.off(signal, onSignal);
        process.kill(process.pid, signal);
      }
    };
    process.on(signal, onSignal);
  }
  process.on('message', (m) => {
    const signal = m && typeof m === 'object' ? m.signal : undefined;
    if (!RELAYED.includes(signal)) return;
    const relayedAt = Date.now();
    setTimeout(() => {
      const recent = direct.get(signal).filter((at) => at > relayedAt - SAME_SIGNAL_MS);
      const matched = recent.length > 0;
      direct.set(signal, recent.slice(1));
      if (matched) return;
      raising.set(signal, raising.get(signal) + 1);
      process.kill(process.pid, signal);
    }, RELAY_WAIT_MS).unref();
  });
  process.channel?.unref();
  process.send('relay-ready');
}
