// A real Prometheus (Debian's package) scraping `raykeeper dev` (bin/raykeeper.js dev as a user runs it)
// at the controller and webhook /metrics URLs dev prints, with the chart's alerts as its rules file:
// - the dashboard's $namespace and $job list the install's namespace (the scrapes labelled as Kubernetes
//   discovery labels them) and both jobs;
// - every query of every panel of the chart's Grafana dashboard (but the API server's, in
//   webhook-live.test.ts), with those selected, returns data (a sample that is not NaN), once dev has what
//   each panel shows: a RayJob run to Complete whose deletion rules match nothing, a GCS-FT RayCluster
//   cleaned up by the controller itself in a terminating namespace, a malformed admission request, and a
//   GCS-FT RayCluster whose deletion is held;
// - with dev's Redis stopped, deleting the GCS-FT sample RayCluster makes RaykeeperRedisCleanupFailed
//   pending or firing (its cleanup Job fails) for that install's namespace and job, and it was not before.
// Needs Ray (tools/setup.sh installs it) and prometheus (tools/install-system-deps.sh): fails without.
import { readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import t from 'tap';
import { parse, stringify } from 'yaml';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { findRay } from '../../localcluster/ray.ts';
import { GCS_FT_DELETION_TIMEOUT_ANNOTATION, GCS_FT_REDIS_CLEANUP_FINALIZER } from '../../src/names.ts';
import type { RayCluster, RayJob } from '../../src/types.ts';
import { processesUnder, run, startDevProcess, stopDev, watchRayJob } from '../dev/dev-process.ts';
import { missingPart } from '../helpers/parts.ts';
import { until } from '../helpers/until.ts';
import { dashboard, GRAFANA_BUILTINS, grafanaMultiValue, grafanaQuery, RULES } from './files.ts';
import { alerts, dashboardVariables, poll, prometheusMissing, startPrometheus, targetsUp } from './prometheus.ts';

const ALERT = 'RaykeeperRedisCleanupFailed';
/** The namespace label given to dev's scrapes, as Kubernetes discovery labels an install's. */
const INSTALL_NAMESPACE = 'raykeeper-system';
/** Series that exist only while a deleted GCS-FT RayCluster waits for its cleanup: checked during the outage. */
const HELD_ONLY = /raykeeper_gcsft_(finalizer_held|deletion_timeout)_seconds/;

/** POST a body that is not JSON to the webhook (its CA from dev's state dir): the status code. */
function postGarbage(url: string, ca: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/mutate-ray-io-v1-raycluster`,
      { method: 'POST', ca, headers: { 'content-type': 'application/json' } },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.once('error', reject);
    req.end('{"kind": "AdmissionReview", ');
  });
}

/** dev's redis-server: a child of dev, its title naming its address (redis-server rewrites its command line). */
function devRedisPid(devPid: number, address: string): number | undefined {
  for (const pid of processesUnder(`redis-server ${address}`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (state !== 'Z' && Number(ppid) === devPid) return pid;
  }
  return undefined;
}

const ray = findRay();
const prometheus = prometheusMissing();

if ('missing' in ray) {
  t.fail(missingPart(ray.missing));
} else if (prometheus) {
  t.fail(missingPart(prometheus));
} else {
  t.test(
    'Prometheus scraping raykeeper dev: every dashboard query has data; Redis stopped during a GCS-FT deletion fires the cleanup alert',
    { timeout: 290_000 },
    async (tt) => {
      const started = Date.now();
      const d = await startDevProcess(tt);
      const { kubeconfig, tmp } = d;
      const get = (args: string[]) => run(['get', ...args], kubeconfig).trim();

      // What dev prints: the two /metrics URLs and Redis's address.
      const urls = /^metrics: (http:\/\/127\.0\.0\.1:\d+)\/metrics \(controller\) (https:\/\/127\.0\.0\.1:\d+)\/metrics \(webhook\)$/m.exec(
        d.out.text,
      );
      tt.ok(urls, 'dev prints the controller and webhook /metrics URLs');
      const redisAddress = /^redis: (127\.0\.0\.1:\d+)$/m.exec(d.out.text)?.[1];
      tt.ok(redisAddress, "dev prints Redis's address");
      if (!urls || !redisAddress) return;
      const [, controllerUrl, webhookUrl] = urls as unknown as [string, string, string];
      const caFile = join(tmp, 'state', 'certs', 'ca.crt');

      // A RayJob whose only deletion rule is for FAILED: it ends SUCCEEDED, so its rules match nothing.
      const job = parse(readFileSync(join(REPO_ROOT, 'manifests', 'samples', 'rayjob-deletion-rules.yaml'), 'utf8')) as RayJob & {
        spec: { rayClusterSpec: { workerGroupSpecs: unknown[] }; deletionStrategy: unknown };
      };
      job.metadata.name = 'rayjob-unmatched';
      job.spec.rayClusterSpec.workerGroupSpecs = [];
      job.spec.deletionStrategy = { deletionRules: [{ policy: 'DeleteCluster', condition: { jobStatus: 'FAILED', ttlSeconds: 0 } }] };
      writeFileSync(join(tmp, 'rayjob.yaml'), stringify(job));
      run(['apply', '-f', join(tmp, 'rayjob.yaml')], kubeconfig);
      const jobDone = watchRayJob(kubeconfig, 'rayjob-unmatched', 200_000);

      // dev's GCS-FT sample, as printed, with a 45 s deletion timeout (the failing cleanup Job's deadline).
      const sample = parse(readFileSync(join(tmp, 'state', 'samples', 'raycluster-gcs-ft.yaml'), 'utf8')) as RayCluster;
      sample.metadata.annotations = { [GCS_FT_DELETION_TIMEOUT_ANNOTATION]: '45' };
      writeFileSync(join(tmp, 'gcs-ft.yaml'), stringify(sample));
      run(['apply', '-f', join(tmp, 'gcs-ft.yaml')], kubeconfig);

      const prom = await startPrometheus(tt, {
        global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
        rule_files: [RULES],
        // The namespace label Kubernetes discovery gives a scrape (ServiceMonitor, kubernetes_sd): the
        // metrics' own namespace (a RayCluster's) then becomes exported_namespace, as in a cluster.
        scrape_configs: [
          {
            job_name: 'raykeeper-controller',
            static_configs: [{ targets: [new URL(controllerUrl).host], labels: { namespace: INSTALL_NAMESPACE } }],
          },
          {
            job_name: 'raykeeper-webhook',
            scheme: 'https',
            tls_config: { ca_file: caFile },
            static_configs: [{ targets: [new URL(webhookUrl).host], labels: { namespace: INSTALL_NAMESPACE } }],
          },
        ],
      });
      const targets = await targetsUp(prom, 2).catch((e: Error) => {
        tt.fail(`${e.message} (${prom.log.text.split('\n').slice(-3).join(' | ')})`);
        return undefined;
      });
      tt.same(targets?.map((a) => a.scrapePool).sort(), ['raykeeper-controller', 'raykeeper-webhook'], 'one target per job');

      // The counters the alerts read with increase() are scraped at 0 before their first count (a series
      // that first appears at 1 has no increase: the first failure after a start would never alert).
      const failedReleases = await poll(
        prom,
        'raykeeper_raycluster_finalizer_releases_total{reason=~"job-failed|inprocess-failed|timeout"}',
      );
      tt.same(
        failedReleases.map((x) => `${x.metric.reason}=${x.value[1]}`).sort(),
        ['inprocess-failed=0', 'job-failed=0', 'timeout=0'],
        'failed cleanups are counted from 0',
      );
      const internalErrors = await poll(prom, 'raykeeper_webhook_errors_total{reason="internal"}');
      tt.same(
        internalErrors.map((x) => `${x.metric.resource}=${x.value[1]}`).sort(),
        ['raycluster=0', 'raycronjob=0', 'rayjob=0'],
        "the webhook's internal errors are counted from 0",
      );

      // In-process cleanup: a GCS-FT RayCluster in a namespace being deleted (no kube-controller-manager in
      // dev, so the namespace stays Terminating and refuses the cleanup Job).
      const doomed = structuredClone(sample) as RayCluster & { spec: { workerGroupSpecs: Array<Record<string, unknown>> } };
      doomed.metadata = { name: 'gcs-ft-doomed', namespace: 'doomed' };
      doomed.spec.workerGroupSpecs = [];
      writeFileSync(join(tmp, 'doomed.yaml'), stringify(doomed));
      run(['create', 'namespace', 'doomed'], kubeconfig);
      run(['apply', '-f', join(tmp, 'doomed.yaml')], kubeconfig);
      await until(
        () =>
          get(['raycluster', '-n', 'doomed', 'gcs-ft-doomed', '-o', 'jsonpath={.metadata.finalizers}']).includes(
            GCS_FT_REDIS_CLEANUP_FINALIZER,
          ),
        'the GCS-FT finalizer on doomed/gcs-ft-doomed',
        60_000,
        500,
      );
      run(['delete', 'namespace', 'doomed', '--wait=false'], kubeconfig);
      run(['delete', 'raycluster', '-n', 'doomed', 'gcs-ft-doomed', '--wait=false'], kubeconfig);
      await until(() => get(['rayclusters', '-n', 'doomed', '-o', 'name']) === '', 'doomed/gcs-ft-doomed released', 120_000, 1000);
      tt.equal(
        (await poll(prom, 'raykeeper_raycluster_inprocess_cleanups_total{result="succeeded"} > 0')).length,
        1,
        'the controller cleaned up doomed/gcs-ft-doomed itself',
      );

      // A malformed admission request: the webhook's errors series.
      tt.equal(await postGarbage(webhookUrl, readFileSync(caFile, 'utf8')), 400, 'the webhook refuses a body that is not JSON');

      const seen = await jobDone;
      tt.equal(seen.at(-1), 'Complete/SUCCEEDED', `rayjob-unmatched: ${seen.join(' -> ')}`);

      // The dashboard's variables list this install's namespace and both jobs.
      const variables = await dashboardVariables(prom, dashboard, GRAFANA_BUILTINS);
      tt.same(
        variables,
        { namespace: [INSTALL_NAMESPACE], job: ['raykeeper-controller', 'raykeeper-webhook'] },
        'the $namespace and $job choices',
      );
      const selected = {
        ...GRAFANA_BUILTINS,
        namespace: grafanaMultiValue(variables.namespace ?? []),
        job: grafanaMultiValue(variables.job ?? []),
      };

      // Every panel's query, as Grafana sends it with every namespace and job selected, has data; those of
      // held finalizers during the outage below. The API server's panels: webhook-live.test.ts.
      const queries = dashboard.panels
        .flatMap((panel) => panel.targets.map((target) => ({ panel: panel.title, query: grafanaQuery(target.expr, selected) })))
        .filter((q) => !q.query.includes('apiserver_'));
      const checkPanels = async (which: typeof queries) => {
        for (const { panel, query } of which) {
          const got = await poll(prom, query);
          tt.ok(got.length > 0, `${panel}: ${query} returns data (${got.length} series)`);
        }
      };
      await checkPanels(queries.filter((q) => !HELD_ONLY.test(q.query)));
      tt.ok(
        queries.some((q) => HELD_ONLY.test(q.query)),
        'the dashboard shows held finalizers',
      );
      tt.notOk(
        (await alerts(prom)).some((a) => a.labels.alertname === ALERT),
        `no ${ALERT} before the outage (the in-process cleanup succeeded)`,
      );

      // Stop dev's Redis (SIGTERM, as a service stop), then delete the GCS-FT sample: its cleanup Job cannot
      // connect and fails at its --timeout. Stopped before the delete, not after: the Job may run within a second
      // of the deletion, and a cleanup that got through first would make the outcome a race.
      const redisPid = devRedisPid(d.dev.pid!, redisAddress);
      tt.ok(redisPid, `dev's redis-server (${redisAddress}) found`);
      if (redisPid === undefined) return;
      process.kill(redisPid, 'SIGTERM');
      await until(() => devRedisPid(d.dev.pid!, redisAddress) === undefined, 'redis-server to exit', 30_000, 200);
      run(['delete', 'raycluster', 'raycluster-gcs-ft', '--wait=false'], kubeconfig);
      const deletedAt = Date.now();
      await checkPanels(queries.filter((q) => HELD_ONLY.test(q.query)));

      const alert = await until(
        async () => (await alerts(prom)).find((a) => a.labels.alertname === ALERT && ['pending', 'firing'].includes(a.state)),
        `${ALERT} pending or firing`,
        180_000,
        1000,
      ).catch(() => undefined);
      tt.ok(alert, `${ALERT} is ${alert?.state ?? 'not active'} ${Math.round((Date.now() - deletedAt) / 1000)} s after the deletion`);
      tt.match(
        alert?.labels.reason,
        /^(job-failed|timeout)$/,
        `released after its cleanup Job failed or at the timeout (${alert?.labels.reason})`,
      );
      tt.match(alert?.labels, { namespace: INSTALL_NAMESPACE, job: 'raykeeper-controller' }, "scoped to the install's namespace and job");
      tt.equal(get(['rayclusters', '-o', 'name']).includes('raycluster-gcs-ft'), false, 'the RayCluster is gone');
      tt.match(
        get([
          'events',
          '--field-selector',
          'involvedObject.name=raycluster-gcs-ft',
          '-o',
          'jsonpath={range .items[*]}{.reason}: {.message}{"\\n"}{end}',
        ]),
        /^(RedisCleanupFailed|ForceDeletedStuckCluster): .*RAY_external_storage_namespace=\S+ RAY_REDIS_ADDRESS=\S+ raykeeper redis-cleanup\b/m,
        'with the Warning event naming the command to run by hand',
      );
      tt.comment(`took ${Math.round((Date.now() - started) / 1000)} s`);
      await stopDev(tt, d);
    },
  );
}
