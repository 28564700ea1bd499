// A real Prometheus (Debian's package) for the live monitoring tests: started on a free loopback port with
// its own config and TSDB in a temporary directory, stopped and removed in teardown; and the HTTP API
// calls those tests make.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Test } from 'tap';
import { stringify } from 'yaml';
import { freePort } from '../../localcluster/net.ts';
import { waitForLine } from '../dev/dev-process.ts';
import { until } from '../helpers/until.ts';
import { type Dashboard, grafanaMultiValue, grafanaQuery, labelValuesQuery } from './files.ts';

export interface Prometheus {
  url: string;
  log: { text: string };
}

/** Why Prometheus cannot run here (a missing part), or undefined. */
export function prometheusMissing(): string | undefined {
  const v = spawnSync('prometheus', ['--version'], { encoding: 'utf8' });
  return v.error || v.status !== 0 ? 'prometheus (Debian package prometheus) is not installed' : undefined;
}

/** prometheus with its own config and TSDB in a temporary dir, on a free loopback port; stopped and removed in teardown. */
export async function startPrometheus(tt: Test, config: object): Promise<Prometheus> {
  const dir = mkdtempSync('/tmp/rk-prom-');
  const file = join(dir, 'prometheus.yml');
  writeFileSync(file, stringify(config));
  const check = spawnSync('promtool', ['check', 'config', file], { encoding: 'utf8' });
  tt.equal(check.status, 0, `promtool check config: ${check.stdout}${check.stderr}`);
  const port = await freePort();
  const child: ChildProcess = spawn(
    'prometheus',
    [`--config.file=${file}`, `--storage.tsdb.path=${join(dir, 'tsdb')}`, `--web.listen-address=127.0.0.1:${port}`],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const log = { text: '' };
  child.stdout!.on('data', (b: Buffer) => (log.text += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (log.text += b.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  tt.teardown(async () => {
    child.kill('SIGTERM');
    const gone = await Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 10_000).unref())]);
    if (!gone) {
      child.kill('SIGKILL');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });
  await waitForLine(child, 'stderr', /Server is ready to receive web requests/, 60_000, log);
  return { url: `http://127.0.0.1:${port}`, log };
}

export async function api<T>(p: Prometheus, path: string): Promise<T> {
  const res = await fetch(`${p.url}${path}`);
  const body = (await res.json()) as { status: string; data: T; error?: string };
  if (body.status !== 'success') throw new Error(`${path}: ${body.error ?? res.status}`);
  return body.data;
}

export type Vector = Array<{ metric: Record<string, string>; value: [number, string] }>;

/** An instant query's samples that are numbers (histogram_quantile over no requests gives NaN: no data). */
export async function samples(p: Prometheus, query: string): Promise<Vector> {
  const data = await api<{ resultType: string; result: Vector }>(p, `/api/v1/query?query=${encodeURIComponent(query)}`);
  return data.result.filter((s) => !Number.isNaN(Number(s.value[1])));
}

/** Polls an instant query until it has samples (at most ms): those samples, or none. */
export async function poll(p: Prometheus, query: string, ms = 60_000): Promise<Vector> {
  return until(
    async () => {
      const got = await samples(p, query);
      return got.length > 0 ? got : undefined;
    },
    query,
    ms,
    500,
  ).catch(() => []);
}

export interface Alert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: string;
}

export async function alerts(p: Prometheus): Promise<Alert[]> {
  return (await api<{ alerts: Alert[] }>(p, '/api/v1/alerts')).alerts;
}

/** Polls /api/v1/alerts until `match` finds one (at most ms): it, or undefined. */
export async function pollAlert(p: Prometheus, what: string, match: (a: Alert) => boolean, ms = 60_000): Promise<Alert | undefined> {
  return until(async () => (await alerts(p)).find(match), what, ms, 500).catch(() => undefined);
}

/** Every target Prometheus scrapes, once all are up (at most ms), or throws with their errors. */
export async function targetsUp(
  p: Prometheus,
  count: number,
  ms = 60_000,
): Promise<Array<{ scrapePool: string; labels: Record<string, string> }>> {
  type Target = { scrapePool: string; health: string; lastError: string; labels: Record<string, string> };
  let last: Target[] = [];
  return until(
    async () => {
      last = (await api<{ activeTargets: Target[] }>(p, '/api/v1/targets')).activeTargets;
      return last.length === count && last.every((a) => a.health === 'up') ? last : undefined;
    },
    `${count} targets up`,
    ms,
    500,
  ).catch(() => {
    throw new Error(`targets not up: ${JSON.stringify(last.map((a) => [a.scrapePool, a.health, a.lastError]))}`);
  });
}

/**
 * The dashboard's query variables as Grafana resolves them against this Prometheus, in order (a
 * variable's query may use the ones before it), every value selected: name -> values found.
 */
export async function dashboardVariables(
  p: Prometheus,
  dash: Dashboard,
  builtins: Readonly<Record<string, string>>,
): Promise<Record<string, string[]>> {
  const found: Record<string, string[]> = {};
  const values: Record<string, string> = { ...builtins };
  for (const v of dash.templating.list) {
    if (v.type !== 'query' || v.query === undefined) continue;
    const { selector, label } = labelValuesQuery(grafanaQuery(v.query, values));
    const got = await until(
      async () => {
        const list = await api<string[]>(p, `/api/v1/label/${label}/values?match[]=${encodeURIComponent(selector)}`);
        return list.length > 0 ? list : undefined;
      },
      `values of $${v.name}`,
      60_000,
      500,
    ).catch(() => []);
    found[v.name] = got;
    values[v.name] = got.length > 0 ? grafanaMultiValue(got) : (v.allValue ?? '');
  }
  return found;
}
