// The host state a real node changes, and putting it back: the node's bridge and its egress guard
// (iptables), sysctls (the bridge plugin turns on ip_forward; kubelet sets kernel.panic,
// kernel.panic_on_oops, vm.overcommit_memory), directories kubelet creates at fixed paths
// (/var/lib/kubelet/device-plugins, /var/log/containers), network namespace pins in /run/netns,
// `kubepods` cgroups in every hierarchy, mounts under the state directory, and containerd shims.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { rm, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { NodeNetwork } from './config.ts';
import { sleep } from '../../kube/backoff.ts';
import { errorMessage } from '../../src/errors.ts';

const execFileP = promisify(execFile);

/** Runs a command; rejects with its stderr in the message. */
export async function run(command: string, args: string[], options: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): Promise<string> {
  try {
    const { stdout } = await execFileP(command, args, {
      timeout: options.timeoutMs ?? 60_000,
      env: options.env,
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${command} ${args.join(' ')}: ${(e.stderr ?? '').trim() || e.message}`);
  }
}

/** Sysctls the node's components change, restored on stop (those that exist on this kernel). */
export const GUARDED_SYSCTLS = [
  'net/ipv4/ip_forward',
  'net/ipv4/conf/all/forwarding',
  'net/ipv4/conf/default/forwarding',
  'net/ipv4/conf/all/route_localnet',
  'net/bridge/bridge-nf-call-iptables',
  'net/bridge/bridge-nf-call-ip6tables',
  'net/netfilter/nf_conntrack_max',
  'net/netfilter/nf_conntrack_tcp_timeout_established',
  'net/netfilter/nf_conntrack_tcp_timeout_close_wait',
  'kernel/panic',
  'kernel/panic_on_oops',
  'kernel/keys/root_maxkeys',
  'kernel/keys/root_maxbytes',
  'vm/overcommit_memory',
  'vm/panic_on_oom',
];

/** Paths kubelet, containerd and the CNI plugins create outside the state directory. */
export const FIXED_HOST_PATHS = [
  '/var/lib/kubelet',
  '/var/log/containers',
  '/var/log/pods',
  '/run/netns',
  '/var/lib/cni',
  '/run/containerd',
  '/etc/cni',
  '/opt/cni',
  '/opt/containerd',
];

export const EGRESS_CHAIN = 'RAYKEEPER-NODE-EGRESS';

export function readSysctls(names: string[] = GUARDED_SYSCTLS): Record<string, string> {
  const values: Record<string, string> = {};
  for (const name of names) {
    try {
      values[name] = readFileSync(join('/proc/sys', name), 'utf8').trim();
    } catch {
      // not on this kernel
    }
  }
  return values;
}

export interface HostSnapshot {
  sysctls: Record<string, string>;
  /** `iptables -t <table> -S` per table: rules the node's components add are removed again. */
  iptables: Record<string, string[]>;
  netns: string[];
  /** The FIXED_HOST_PATHS that did not exist before the node (removed again on stop). */
  absentPaths: string[];
}

function listNetns(): string[] {
  try {
    return readdirSync('/run/netns');
  } catch {
    return [];
  }
}

export const IPTABLES_TABLES = ['filter', 'nat', 'mangle'];

/** `iptables -t <table> -S` lines of every table (IPv4 and IPv6), keyed `iptables/<table>`, `ip6tables/<table>`. */
export async function iptablesRules(): Promise<Record<string, string[]>> {
  const rules: Record<string, string[]> = {};
  for (const cmd of ['iptables', 'ip6tables']) {
    for (const table of IPTABLES_TABLES) {
      rules[`${cmd}/${table}`] = (await run(cmd, ['-w', '-t', table, '-S']).catch(() => '')).split('\n').filter(Boolean);
    }
  }
  return rules;
}

export async function snapshotHost(): Promise<HostSnapshot> {
  return {
    sysctls: readSysctls(),
    iptables: await iptablesRules(),
    netns: listNetns(),
    absentPaths: FIXED_HOST_PATHS.filter((p) => !existsSync(p)),
  };
}

/**
 * Removes the iptables rules and chains added since the snapshot (kubelet's KUBE-FIREWALL, anything
 * kube-proxy --cleanup left): rules first (`-A` turned into `-D`, newest first), then new chains.
 */
async function restoreIptables(before: Record<string, string[]>, errors: string[]): Promise<void> {
  const now = await iptablesRules();
  for (const [key, lines] of Object.entries(now)) {
    const [cmd, table] = key.split('/') as [string, string];
    const old = new Set(before[key] ?? []);
    const added = lines.filter((l) => !old.has(l));
    for (const rule of added.filter((l) => l.startsWith('-A ')).reverse()) {
      await quietly(() => run(cmd, ['-w', '-t', table, ...splitRule(rule.replace(/^-A /, '-D '))]), errors);
    }
    for (const chain of added.filter((l) => l.startsWith('-N ')).map((l) => l.slice(3))) {
      await quietly(() => run(cmd, ['-w', '-t', table, '-F', chain]), errors);
    }
    for (const chain of added.filter((l) => l.startsWith('-N ')).map((l) => l.slice(3))) {
      await quietly(() => run(cmd, ['-w', '-t', table, '-X', chain]), errors);
    }
  }
}

/** Splits an `iptables -S` line into arguments (double-quoted comments kept whole). */
export function splitRule(line: string): string[] {
  const args: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"|(\S+)/g;
  for (let m = re.exec(line); m; m = re.exec(line)) args.push(m[1] !== undefined ? m[1].replace(/\\"/g, '"') : m[2]!);
  return args;
}

/**
 * Creates the node's bridge with the gateway address (before the apiserver, which listens on it) and an
 * egress guard: nothing from the bridge is forwarded to any other interface (no traffic leaves).
 */
export async function setUpNetwork(net: NodeNetwork): Promise<void> {
  if (existsSync(`/sys/class/net/${net.bridge}`)) {
    throw new Error(`the bridge ${net.bridge} exists: another local node is running on this machine`);
  }
  // No bridge but the guard chain: left by a node that was killed before its restore. Nothing uses it.
  if ((await run('iptables', ['-w', '-S']).catch(() => '')).includes(`-N ${EGRESS_CHAIN}`)) {
    while (
      await run('iptables', ['-w', '-D', 'FORWARD', '-j', EGRESS_CHAIN])
        .then(() => true)
        .catch(() => false)
    );
    await run('iptables', ['-w', '-F', EGRESS_CHAIN]);
    await run('iptables', ['-w', '-X', EGRESS_CHAIN]);
  }
  await run('ip', ['link', 'add', net.bridge, 'type', 'bridge']);
  await run('ip', ['addr', 'add', `${net.gateway}/${net.prefixLength}`, 'dev', net.bridge]);
  await run('ip', ['link', 'set', net.bridge, 'up']);
  await run('iptables', ['-w', '-N', EGRESS_CHAIN]);
  await run('iptables', ['-w', '-A', EGRESS_CHAIN, '-i', net.bridge, '!', '-o', net.bridge, '-j', 'DROP']);
  await run('iptables', ['-w', '-I', 'FORWARD', '1', '-j', EGRESS_CHAIN]);
}

/** Where each node keeps its state (mkdtemp of this prefix). */
export const NODE_STATE_PREFIX = '/tmp/raykeeper-node-';

/**
 * Puts back what a node that was killed before its restore left (SIGKILL, an ended session): stale state
 * directories and the mounts under them, the network namespaces holding a pod address, the bridge.
 * Only when no node process is alive (then a bridge means another node runs: setUpNetwork says so), and
 * only what a raykeeper node leaves: the kubepods cgroups only with its bridge there and no kubelet running.
 * The egress guard is setUpNetwork's; iptables rules and cgroups are compared against a snapshot taken
 * after this. Returns what it removed.
 */
export async function sweepKilledNode(net: NodeNetwork): Promise<string[]> {
  // A killed node's processes die by their watchdogs within their grace period (5 s): wait that long.
  let mentioning = processesMentioning(NODE_STATE_PREFIX);
  let shims = mentioning.filter((pid) => commandName(pid).startsWith('containerd-shim'));
  for (let i = 0; i < 20 && mentioning.length > shims.length && existsSync(`/sys/class/net/${net.bridge}`); i++) {
    await sleep(500);
    mentioning = processesMentioning(NODE_STATE_PREFIX);
    shims = mentioning.filter((pid) => commandName(pid).startsWith('containerd-shim'));
  }
  if (mentioning.length > shims.length) return [];
  // Evidence of a killed node: its bridge, or a state directory no process uses (without the bridge, one
  // younger than a minute may be a node starting this moment). Without it nothing is touched: the kubepods
  // cgroups may be a host's own Kubernetes (k3s runs its kubelet inside the k3s process).
  const bridge = existsSync(`/sys/class/net/${net.bridge}`);
  const stale = readdirSync('/tmp')
    .map((e) => join('/tmp', e))
    .filter((p) => p.startsWith(NODE_STATE_PREFIX) && (bridge || Date.now() - statSync(p).mtimeMs > 60_000));
  if (!bridge && stale.length === 0) return [];
  const removed: string[] = [];
  const errors: string[] = [];
  // Shims outlive a killed containerd, and the pods' processes their shims: kill both.
  for (const pid of shims) {
    try {
      process.kill(pid, 'SIGKILL');
      removed.push(`containerd-shim ${pid}`);
    } catch {
      // gone
    }
  }
  if (bridge && !processesNamed('kubelet')) {
    for (const cg of kubepodsCgroups()) {
      killCgroup(cg);
      for (const sub of subdirsDepthFirst(cg)) await quietly(() => rmdir(sub), errors);
      removed.push(`cgroup ${cg}`);
    }
  }
  for (const dir of stale) {
    for (const point of mountsUnder(dir)) await quietly(() => run('umount', ['-l', point]), errors);
    await quietly(() => rm(dir, { recursive: true, force: true }), errors);
    removed.push(dir);
  }
  const podPrefix = net.podCidr.split('.').slice(0, 3).join('.');
  for (const ns of listNetns()) {
    const addrs = await run('ip', ['-n', ns, '-4', '-o', 'addr']).catch(() => '');
    if (!addrs.includes(` ${podPrefix}.`)) continue;
    await quietly(() => run('ip', ['netns', 'del', ns]), errors);
    removed.push(`netns ${ns}`);
  }
  if (existsSync(`/sys/class/net/${net.bridge}`)) {
    await quietly(() => run('ip', ['link', 'del', net.bridge]), errors);
    removed.push(`bridge ${net.bridge}`);
  }
  return [...removed, ...errors.map((e) => `failed: ${e}`)];
}

async function quietly(fn: () => Promise<unknown>, errors: string[]): Promise<void> {
  try {
    await fn();
  } catch (err) {
    errors.push(err instanceof Error ? err.message : String(err));
  }
}

function commandName(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

function processesNamed(name: string): boolean {
  return readdirSync('/proc').some((e) => /^\d+$/.test(e) && commandName(Number(e)) === name);
}

/** Processes whose command line contains `needle` (e.g. containerd shims of our socket), not us. */
export function processesMentioning(needle: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(needle)) pids.push(Number(entry));
    } catch {
      // gone
    }
  }
  return pids;
}

/** Every cgroup directory named like `kubepods*` at the top of each v1 hierarchy (and unified). */
export function kubepodsCgroups(): string[] {
  const found: string[] = [];
  let hierarchies: string[] = [];
  try {
    hierarchies = readdirSync('/sys/fs/cgroup');
  } catch {
    return found;
  }
  for (const h of hierarchies) {
    const base = join('/sys/fs/cgroup', h);
    try {
      for (const entry of readdirSync(base)) if (entry.startsWith('kubepods')) found.push(join(base, entry));
    } catch {
      // not a directory
    }
  }
  return found;
}

function subdirsDepthFirst(dir: string): string[] {
  const out: string[] = [];
  let entries: import('node:fs').Dirent[] = [];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) if (e.isDirectory()) out.push(...subdirsDepthFirst(join(dir, e.name)));
  out.push(dir);
  return out;
}

function killCgroup(dir: string): void {
  for (const sub of subdirsDepthFirst(dir)) {
    let procs: string[] = [];
    try {
      procs = readFileSync(join(sub, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean);
    } catch {
      continue;
    }
    for (const pid of procs) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // gone
      }
    }
  }
}

/** Mount points at or under `dir`, deepest first (from /proc/self/mountinfo). */
export function mountsUnder(dir: string): string[] {
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  const points = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' ')[4]!.replace(/\\040/g, ' '))
    .filter((p) => p === dir || p.startsWith(prefix));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

/**
 * Puts the host back after the node's processes stopped: kills what is left in kubepods cgroups and the
 * shims of our containerd, removes the cgroups, unmounts everything under the state directory, removes
 * network namespaces that appeared, the bridge, the egress guard, restores the sysctls, and removes the
 * fixed paths that did not exist before. Returns the steps that failed (empty: all clean).
 */
export async function restoreHost(snapshot: HostSnapshot, net: NodeNetwork, stateDir: string, containerdSocket: string): Promise<string[]> {
  const errors: string[] = [];
  for (const pid of processesMentioning(containerdSocket)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  const cgroups = kubepodsCgroups();
  for (const cg of cgroups) killCgroup(cg);
  for (const cg of cgroups) {
    for (const sub of subdirsDepthFirst(cg)) {
      // A killed task leaves its cgroup a moment later: retry briefly.
      let lastError: unknown;
      for (let i = 0; i < 50; i++) {
        try {
          await rmdir(sub);
          lastError = undefined;
          break;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
            lastError = undefined;
            break;
          }
          lastError = err;
          killCgroup(sub);
          await sleep(100);
        }
      }
      if (lastError) errors.push(`rmdir ${sub}: ${(lastError as Error).message}`);
    }
  }
  for (const ns of listNetns().filter((n) => !snapshot.netns.includes(n))) {
    await quietly(() => run('umount', ['-l', join('/run/netns', ns)]).catch(() => ''), errors);
    await quietly(() => rm(join('/run/netns', ns), { force: true }), errors);
  }
  for (const point of mountsUnder(stateDir)) await quietly(() => run('umount', ['-l', point]), errors);
  for (const path of snapshot.absentPaths) {
    for (const point of mountsUnder(path)) await quietly(() => run('umount', ['-l', point]), errors);
  }
  if (existsSync(`/sys/class/net/${net.bridge}`)) await quietly(() => run('ip', ['link', 'del', net.bridge]), errors);
  // Our egress guard and whatever kubelet and kube-proxy left (they were not there before).
  await restoreIptables(snapshot.iptables, errors);
  // ip_forward first: writing it resets the per-interface forwarding values, which follow.
  const names = Object.keys(snapshot.sysctls).sort((a, b) => (a === 'net/ipv4/ip_forward' ? -1 : b === 'net/ipv4/ip_forward' ? 1 : 0));
  const now = readSysctls(names);
  for (const name of names) {
    if (now[name] === snapshot.sysctls[name]) continue;
    try {
      writeFileSync(join('/proc/sys', name), snapshot.sysctls[name]!);
    } catch (err) {
      errors.push(`sysctl ${name}=${snapshot.sysctls[name]}: ${errorMessage(err)}`);
    }
  }
  for (const path of snapshot.absentPaths) await quietly(() => rm(path, { recursive: true, force: true }), errors);
  return errors;
}
