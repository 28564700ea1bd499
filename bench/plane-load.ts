// What the whole simulated cluster did during a phase of the scale bench: the machine's CPU, each
// component's (kube-apiserver, etcd, the simulation: kube-controller-manager, kube-scheduler, kwok; the
// contender; the bench itself, which also serves the stand-in Ray dashboard the contenders poll and
// watches their RayClusters and RayJobs), and the object requests the API server served from every client
// (apiserver_request_total). It answers issue 29's "where does it break: etcd, apiserver, the bench, or
// an operator" per phase, and tells when the API server has gone quiet after a phase.
import { readFileSync } from 'node:fs';
import type { KubeClient } from '../kube/client.ts';
import { sleep } from '../kube/backoff.ts';
import { cpuSeconds, metricTextSum } from './controller.ts';
import { waitFor } from './wait.ts';

export const COMPONENTS = ['kube-apiserver', 'etcd', 'simulation', 'contender', 'bench'] as const;
export type Component = (typeof COMPONENTS)[number];

export interface PlaneSnapshot {
  /** Jiffies of the whole machine (/proc/stat): busy and all. */
  machine: { busy: number; all: number };
  cpu: Record<Component, number>;
  /** apiserver_request_total on objects: writes (not of Leases: node and leader heartbeats) and reads (GET, LIST). */
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

// resource="" is a request for no object (/metrics, /readyz, discovery): the bench's own scrapes among them.
// ([{,] keeps `subresource=` from reading as `resource=`.)
const WRITES = /^(?=.*[{,]resource="[^"])(?!.*[{,]resource="leases").*[{,]verb="(POST|PUT|PATCH|DELETE|DELETECOLLECTION|APPLY)"/;
const READS = /^(?=.*[{,]resource="[^"]).*[{,]verb="(GET|LIST)"/;

/**
 * Busy and total jiffies from /proc/stat's first line: user nice system idle iowait irq softirq (guest time
 * is inside user and nice; steal, time the hypervisor gave elsewhere, is in neither).
 */
export function machineJiffies(procStat: string): { busy: number; all: number } {
  const fields = (procStat.split('\n')[0] ?? '').trim().split(/\s+/).slice(1, 8).map(Number);
  const all = fields.reduce((a, b) => a + b, 0);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
  return { busy: all - idle, all };
}

/** Object writes and reads in one scrape of the API server's /metrics. */
export function apiserverRequests(metricsText: string): { writes: number; reads: number } {
  return {
    writes: metricTextSum(metricsText, 'apiserver_request_total', WRITES),
    reads: metricTextSum(metricsText, 'apiserver_request_total', READS),
  };
}

/** The API server's object requests so far; a failed scrape (it is busiest when read) is tried twice more. */
async function requestsNow(kube: KubeClient): Promise<{ writes: number; reads: number }> {
  for (let attempt = 1; ; attempt++) {
    try {
      return apiserverRequests(String(await kube.request('GET', '/metrics', { accept: 'text/plain' })));
    } catch (err) {
      if (attempt >= 3) throw err;
      await sleep(2_000);
    }
  }
}

/** The last CPU reading of each pid: a process that exited keeps what it had used (0 would make a delta negative). */
const lastCpu = new Map<number, number>();
function cpuOf(pid: number): number {
  try {
    const s = cpuSeconds(pid);
    lastCpu.set(pid, s);
    return s;
  } catch {
    return lastCpu.get(pid) ?? 0;
  }
}

export async function snapshot(kube: KubeClient, pids: PlanePids): Promise<PlaneSnapshot> {
  const requests = await requestsNow(kube);
  const cpu = Object.fromEntries(COMPONENTS.map((c) => [c, pids[c].reduce((sum, pid) => sum + cpuOf(pid), 0)])) as Record<
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

/** Below this many object writes a second (Leases apart) the API server counts as quiet. */
export const QUIET_WRITES_PER_SECOND = 5;

/**
 * Until the API server served fewer than QUIET_WRITES_PER_SECOND object writes a second over two windows
 * of about 2 s in a row, at most `capMs`. After a mass deletion the garbage collector, the EndpointSlice
 * and Job controllers and kwok go on writing after the last pod and Job are gone; the next phase would
 * pay for that work of the one before. A failed scrape counts as not quiet.
 */
export async function apiServerQuiet(
  kube: KubeClient,
  capMs: number,
  say: (s: string) => void,
): Promise<{ seconds: number; quiet: boolean }> {
  const t0 = performance.now();
  let last: { writes: number; at: number } | undefined;
  let quietWindows = 0;
  let rate = Number.NaN;
  const quiet = await waitFor(
    async () => {
      const writes = await requestsNow(kube).then(
        (r) => r.writes,
        () => undefined,
      );
      const at = performance.now();
      if (writes === undefined) {
        quietWindows = 0;
        return false;
      }
      if (last) {
        rate = (writes - last.writes) / ((at - last.at) / 1000);
        quietWindows = rate < QUIET_WRITES_PER_SECOND ? quietWindows + 1 : 0;
      }
      last = { writes, at };
      return quietWindows >= 2;
    },
    capMs,
    () => `the API server still serves ${Number.isNaN(rate) ? '?' : Math.round(rate)} writes/s`,
    say,
    2_000,
  );
  return { seconds: (performance.now() - t0) / 1000, quiet };
}
