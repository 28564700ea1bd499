// A Ray pod as a LOCAL PROCESS: the Ray container of a Pod built by src/raycluster/pods.ts (or another
// of its containers, such as SidecarMode's submitter), run the way the kubelet would run it (its command + args, `/bin/bash -c -- "ulimit ...; ray start ..."`, with
// its env resolved like the kubelet: values, $(VAR), secretKeyRef, fieldRef), `ray` from the test venv
// first on PATH. Cluster DNS names (the head Service's FQDN) are mapped to 127.0.0.1. Ports come from
// the pod's own rayStartParams: give the RayCluster free ones (two Ray nodes on one machine cannot
// share 6379). Used by the real-Ray tests; what a kubelet stand-in for Ray pods would build on.
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname } from 'node:path';
import type { Pod } from '../kube/model.ts';
import { resolveEnv, type EnvLookups, type LocalPod } from '../kube/env.ts';
import { stopRay, type RayInstall } from './ray.ts';

export interface RayPodProcess {
  proc: ChildProcess;
  /** The resolved environment the process got (tests compare it with the cleanup's). */
  env: Record<string, string>;
  log(): string;
  stop(): Promise<void>;
}

export interface RayPodOptions {
  ray: RayInstall;
  lookups: EnvLookups;
  /** Host names to replace with 127.0.0.1 in args and env (e.g. the head Service FQDN). */
  hosts?: string[];
  /** Extra env last (e.g. RAY_USAGE_STATS_ENABLED=0). */
  extraEnv?: Record<string, string>;
  /** Which of the pod's containers (default 0, the Ray container; SidecarMode's submitter is another). */
  container?: number;
}

function localPodOf(pod: Pod): LocalPod {
  return {
    name: pod.metadata.name ?? `${pod.metadata.generateName ?? 'pod-'}local`,
    namespace: pod.metadata.namespace ?? 'default',
    uid: pod.metadata.uid ?? 'local',
    labels: { ...(pod.metadata.labels ?? {}) },
    annotations: { ...(pod.metadata.annotations ?? {}) },
    serviceAccountName: 'default',
  };
}

function mapHosts(s: string, hosts: string[]): string {
  let out = s;
  for (const h of hosts) out = out.split(h).join('127.0.0.1');
  return out;
}

/** Starts one of the pod's containers (the Ray container unless told) as a local process group. */
export async function startRayPod(pod: Pod, options: RayPodOptions): Promise<RayPodProcess> {
  const container = pod.spec?.containers[options.container ?? 0];
  if (!container?.command || container.command.length === 0)
    throw new Error(`the container ${container?.name ?? options.container} has no command (built by src/raycluster/pods.ts?)`);
  const hosts = options.hosts ?? [];
  const resolved = await resolveEnv(container, localPodOf(pod), options.lookups);
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(resolved)) env[k] = mapHosts(v, hosts);
  const base = {
    PATH: `${dirname(options.ray.ray)}:${process.env.PATH ?? '/usr/bin:/bin'}`,
    HOME: process.env.HOME ?? '/tmp',
    LANG: process.env.LANG ?? 'C.UTF-8',
  };
  const argv = [...container.command, ...(container.args ?? [])].map((a) => mapHosts(a, hosts));
  const proc = spawn(argv[0]!, argv.slice(1), {
    env: { ...base, ...env, ...(options.extraEnv ?? {}) },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  return { proc, env, log: () => out, stop: () => stopRay(proc) };
}
