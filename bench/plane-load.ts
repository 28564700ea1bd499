// What the whole simulated cluster did during a phase of the scale bench: the machine's CPU, each
// component's (kube-apiserver, etcd, the simulation: kube-controller-manager, kube-scheduler, kwok; the
// contender; the bench itself), and the requests the API server served from every client
// (apiserver_request_total). It answers issue 29's "where does it break: etcd, apiserver, the bench, or
// an operator" per phase, and tells when the API server has gone quiet after a phase.
import { readFileSync } from 'node:fs';
import type { KubeClient } from '../kube/client.ts';
import { sleep } from '../src/backoff.ts';
import { cpuSeconds, metricTextSum } from './controller.ts';

export const COMPONENTS = ['kube-apiserver', 'etcd', 'simulation', 'contender', 'bench'] as const;
export type Component = (typeof COMPONENTS)[number];

export interface PlaneSnapshot {
  /** Jiffies of the whole machine (/proc/stat): busy and all. */
  machine: { busy: number; all: number };
  cpu: Record<Component, number>;
  /** apiserver_request_total: writes (not of Leases: node and leader heartbeats) and reads (GET, LIST). */
  writes: number;
  reads: number;
}

export interface PhaseLoad {
  /** Share of the machine's CPU time that was busy, in percent. */
  busyPercent: number;
  cpu: Record<Component, number>;
  writes: number;
  reads: number;
}

/** The pids behind each component (a group's CPU is summed). */
export type PlanePids = Record<Component, number[]>;

const WRITES = /^(?!.*resource="leases").*verb="(POST|PUT|PATCH|DELETE|DELETECOLLECTION|APPLY)"/;
const READS = /verb="(GET|LIST)"/;

/** Busy and total jiffies from /proc/stat's first line (user nice system idle iowait irq softirq steal). */
export function machineJiffies(procStat: string): { busy: number; all: number } {
  const fields = (procStat.split('\n')[0] ?? '').trim().split(/\s+/).slice(1, 9).map(Number);
  const all = fields.reduce((a, b) => a + b, 0);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
  return { busy: all - idle, all };
}

/** Writes and reads in one scrape of the API server's /metrics. */
export function apiserverRequests(metricsText: string): { writes: number; reads: number } {
  return {
    writes: metricTextSum(metricsText, 'apiserver_request_total', WRITES),
    reads: metricTextSum(metricsText, 'apiserver_request_total', READS),
  };
}

async function scrape(kube: KubeClient): Promise<string> {
  return String(await kube.request('GET', '/metrics', { accept: 'text/plain' }));
}

/** A process that has exited counts what it had used (0 from then on would make a delta negative). */
function cpuOr0(pid: number): number {
  try {
    return cpuSeconds(pid);
  } catch {
    return 0;
  }
}

export async function snapshot(kube: KubeClient, pids: PlanePids): Promise<PlaneSnapshot> {
  const requests = apiserverRequests(await scrape(kube));
  const cpu = Object.fromEntries(COMPONENTS.map((c) => [c, pids[c].reduce((sum, pid) => sum + cpuOr0(pid), 0)])) as Record<
    Component,
    number
  >;
  return { machine: machineJiffies(readFileSync('/proc/stat', 'utf8')), cpu, ...requests };
}

export function phaseLoad(from: PlaneSnapshot, to: PlaneSnapshot): PhaseLoad {
  const all = to.machine.all - from.machine.all;
  return {
    busyPercent: all > 0 ? (100 * (to.machine.busy - from.machine.busy)) / all : 0,
    cpu: Object.fromEntries(COMPONENTS.map((c) => [c, to.cpu[c] - from.cpu[c]])) as Record<Component, number>,
    writes: to.writes - from.writes,
    reads: to.reads - from.reads,
  };
}

/** Below this many writes a second (Leases apart) the API server counts as quiet. */
export const QUIET_WRITES_PER_SECOND = 5;

/**
 * Seconds until the API server served fewer than QUIET_WRITES_PER_SECOND writes a second over two
 * 2-second windows in a row (at most `capMs`). After a mass deletion the garbage collector, the
 * EndpointSlice and Job controllers and kwok go on writing after the last pod and Job are gone; the next
 * phase would pay for that work of the one before.
 */
export async function apiServerQuiet(kube: KubeClient, capMs: number, say: (s: string) => void): Promise<number> {
  const t0 = performance.now();
  let last = apiserverRequests(await scrape(kube)).writes;
  let quietWindows = 0;
  let told = t0;
  while (quietWindows < 2 && performance.now() - t0 < capMs) {
    await sleep(2_000);
    const now = apiserverRequests(await scrape(kube)).writes;
    const rate = (now - last) / 2;
    last = now;
    quietWindows = rate < QUIET_WRITES_PER_SECOND ? quietWindows + 1 : 0;
    if (performance.now() - told > 10_000) {
      told = performance.now();
      say(`  the API server still serves ${Math.round(rate)} writes/s (${Math.round((told - t0) / 1000)} s)`);
    }
  }
  return (performance.now() - t0) / 1000;
}
