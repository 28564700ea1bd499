// A real Prometheus (Debian's package) with the chart's alerts, scraping our webhook process
// (`raykeeper webhook` over HTTPS, its certificate from `raykeeper certs generate --days 1`) and the real
// kube-apiserver of the test run, which calls that webhook and two dead ones:
// - RaykeeperWebhookCertificateExpiry fires for the webhook (1 day left, under the default 14) with the
//   install's namespace and job, and says how many days are left;
// - every API server series the alerts and the dashboard read exists in kube-apiserver 1.35 with the
//   labels they use: the webhook's successful call (`request_total{code="200"}`, the duration histogram),
//   a failed call ignored (`fail_open_count`, failurePolicy Ignore) and one refused
//   (`rejection_count{error_type="calling_webhook_error"}`, failurePolicy Fail);
// - RaykeeperWebhookFailingOpen and RaykeeperWebhookFailingClosed fire for the dead webhooks by name, and
//   neither for the working one;
// - the dashboard's certificate and API server panels return data.
// The webhook configurations match this test's namespace only (the API server is shared) and carry
// webhook names of their own, so other tests' calls never count here.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { parse } from 'yaml';
import { caBundle } from '../../certs/generate.ts';
import { CONFIGMAPS, MUTATING_WEBHOOK_CONFIGURATIONS, VALIDATING_WEBHOOK_CONFIGURATIONS } from '../../kube/resources.ts';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { freePort } from '../../localcluster/net.ts';
import { localWebhookConfiguration, readWebhookConfigurationManifest } from '../../localcluster/webhook-config.ts';
import { GCS_FT_REDIS_CLEANUP_FINALIZER } from '../../src/names.ts';
import { RAYCLUSTERS, type RayCluster } from '../../src/types.ts';
import { testNamespace } from '../helpers/control-plane.ts';
import { missingPart } from '../helpers/parts.ts';
import { dashboard, GRAFANA_BUILTINS, grafanaQuery, RULES } from './files.ts';
import { alerts, dashboardVariables, poll, pollAlert, prometheusMissing, startPrometheus, targetsUp } from './prometheus.ts';

const BIN = join(REPO_ROOT, 'bin', 'raykeeper.js');
const INSTALL_NAMESPACE = 'raykeeper-system';

/** `raykeeper webhook` on a free port (its JSON log says which); killed in teardown. */
function startWebhook(tt: Test, cert: string, key: string): Promise<{ port: number }> {
  const child: ChildProcess = spawn(
    process.execPath,
    [BIN, 'webhook', '--cert', cert, '--key', key, '--host', '127.0.0.1', '--port', '0'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  tt.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let out = '';
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /"port":(\d+),"msg":"admission webhook listening/.exec(out);
      if (m) resolve({ port: Number(m[1]) });
    });
    child.once('exit', (code) => reject(new Error(`the webhook exited early (${code}): ${out}`)));
  });
}

/** A webhook configuration (mutating or validating) with one webhook on a dead port, for this namespace's ConfigMaps labelled `hook`. */
function deadWebhook(kind: string, name: string, hook: string, url: string, failurePolicy: 'Ignore' | 'Fail', ns: string, ca: string) {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind,
    metadata: { name: `${hook}-${ns}` },
    webhooks: [
      {
        name,
        admissionReviewVersions: ['v1'],
        sideEffects: 'None',
        timeoutSeconds: 5,
        failurePolicy,
        clientConfig: { url, caBundle: ca },
        rules: [{ apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'], operations: ['CREATE'], scope: 'Namespaced' }],
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
        objectSelector: { matchLabels: { hook } },
      },
    ],
  };
}

const missing = prometheusMissing();
if (missing) {
  t.fail(missingPart(missing));
} else {
  t.test(
    'a real Prometheus: the certificate-expiry alert fires for our webhook; the API server alerts fire for dead webhooks by name',
    async (tt) => {
      const ns = await testNamespace(tt);
      const { info } = ns.cp;
      const suffix = randomBytes(3).toString('hex');
      const okName = `raycluster-${suffix}.mutate.raykeeper.io`;
      const openName = `open-${suffix}.validate.raykeeper.io`;
      const closedName = `closed-${suffix}.validate.raykeeper.io`;

      // A certificate about to expire, as a user makes one.
      const dir = mkdtempSync(join(tmpdir(), 'rk-webhook-live-'));
      tt.teardown(() => rmSync(dir, { recursive: true, force: true }));
      const gen = spawnSync(
        process.execPath,
        [
          BIN,
          'certs',
          'generate',
          '--out',
          dir,
          '--service',
          'raykeeper-webhook',
          '--namespace',
          INSTALL_NAMESPACE,
          '--ip',
          '127.0.0.1',
          '--days',
          '1',
        ],
        { encoding: 'utf8' },
      );
      tt.equal(gen.status, 0, `raykeeper certs generate --days 1: ${gen.stderr}`);
      const { port } = await startWebhook(tt, join(dir, 'tls.crt'), join(dir, 'tls.key'));
      const bundle = caBundle(readFileSync(join(dir, 'ca.crt'), 'utf8'));
      writeFileSync(join(dir, 'apiserver-ca.crt'), info.caCert);
      writeFileSync(join(dir, 'apiserver-token'), info.token, { mode: 0o600 });

      // The API server calls our webhook (our MutatingWebhookConfiguration, its RayCluster hook renamed) ...
      const ours = localWebhookConfiguration(await readWebhookConfigurationManifest(), {
        baseUrl: `https://127.0.0.1:${port}`,
        caBundle: bundle,
        name: `rk-live-${ns.name}`,
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns.name } },
      }) as unknown as { webhooks: Array<{ name: string }> };
      ours.webhooks = ours.webhooks.filter((w) => w.name === 'raycluster.mutate.raykeeper.io').map((w) => ({ ...w, name: okName }));
      // ... and two on a port nobody listens on.
      const dead = `https://127.0.0.1:${await freePort()}/validate`;
      const configs: Array<[typeof MUTATING_WEBHOOK_CONFIGURATIONS | typeof VALIDATING_WEBHOOK_CONFIGURATIONS, object]> = [
        [MUTATING_WEBHOOK_CONFIGURATIONS, ours],
        [
          VALIDATING_WEBHOOK_CONFIGURATIONS,
          deadWebhook('ValidatingWebhookConfiguration', openName, 'open', dead, 'Ignore', ns.name, bundle),
        ],
        [
          VALIDATING_WEBHOOK_CONFIGURATIONS,
          deadWebhook('ValidatingWebhookConfiguration', closedName, 'closed', dead, 'Fail', ns.name, bundle),
        ],
      ];
      for (const [ref, body] of configs) {
        await ns.kube.create(ref, body);
        const name = (body as { metadata: { name: string } }).metadata.name;
        tt.teardown(async () => {
          await ns.kube.delete({ ...ref, name }).catch(() => {});
        });
      }

      const prom = await startPrometheus(tt, {
        global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
        rule_files: [RULES],
        scrape_configs: [
          {
            job_name: 'raykeeper-webhook',
            scheme: 'https',
            tls_config: { ca_file: join(dir, 'ca.crt') },
            static_configs: [{ targets: [`127.0.0.1:${port}`], labels: { namespace: INSTALL_NAMESPACE } }],
          },
          {
            job_name: 'apiserver',
            scrape_interval: '2s',
            scrape_timeout: '2s',
            scheme: 'https',
            tls_config: { ca_file: join(dir, 'apiserver-ca.crt') },
            authorization: { credentials_file: join(dir, 'apiserver-token') },
            static_configs: [{ targets: [new URL(info.server).host] }],
          },
        ],
      });
      await targetsUp(prom, 2).then(
        () => tt.pass('Prometheus scrapes the webhook and the API server'),
        (e: Error) => tt.fail(e.message),
      );

      // 1. The certificate: firing at the first evaluation (no `for`: an expiry date does not flap).
      const expiry = await pollAlert(
        prom,
        'RaykeeperWebhookCertificateExpiry firing',
        (a) => a.labels.alertname === 'RaykeeperWebhookCertificateExpiry' && a.state === 'firing',
      );
      tt.ok(expiry, 'RaykeeperWebhookCertificateExpiry is firing');
      tt.match(
        expiry?.labels,
        {
          namespace: INSTALL_NAMESPACE,
          job: 'raykeeper-webhook',
          instance: `127.0.0.1:${port}`,
          severity: 'warning',
        },
        "for the webhook's scrape: its namespace, job and instance",
      );
      tt.match(expiry?.annotations.summary, /serves a certificate that expires in (0\.9|1\.0) days$/, `${expiry?.annotations.summary}`);
      tt.equal(expiry?.annotations.runbook_url, 'docs/runbooks/RaykeeperWebhookCertificateExpiry.md', 'with its runbook');

      // 2. The API server calls, in two rounds a scrape apart (a rate needs a series that grows): our
      // webhook answers (and defaults the GCS-FT sample), the Ignore one fails open (the ConfigMap is
      // stored), the Fail one fails closed (the ConfigMap is refused).
      const sample = parse(readFileSync(join(REPO_ROOT, 'manifests', 'samples', 'raycluster-gcs-ft.yaml'), 'utf8')) as RayCluster;
      const round = async (r: number) => {
        const created = await ns.kube.create({ ...RAYCLUSTERS, namespace: ns.name }, { ...sample, metadata: { name: `live-${r}` } });
        tt.same(
          created.metadata.finalizers,
          [GCS_FT_REDIS_CLEANUP_FINALIZER],
          `live-${r}: the API server called our webhook and applied its patch`,
        );
        for (let i = 0; i < 3; i++) {
          await ns.kube.create({ ...CONFIGMAPS, namespace: ns.name }, { metadata: { name: `open-${r}-${i}`, labels: { hook: 'open' } } });
          const refused = await ns.kube
            .create({ ...CONFIGMAPS, namespace: ns.name }, { metadata: { name: `closed-${r}-${i}`, labels: { hook: 'closed' } } })
            .then(
              () => undefined,
              (e: Error) => e.message,
            );
          tt.match(
            refused,
            new RegExp(`failed calling webhook "${closedName.replace(/\./g, '\\.')}"`),
            `closed-${r}-${i} refused by the API server`,
          );
        }
      };
      // Every API server series the alerts and the dashboard read, with the labels they read.
      const series = (calls: number): Array<[string, string]> => [
        [
          `apiserver_admission_webhook_request_total{name="${okName}",type="admit",operation="CREATE",code="200",rejected="false"} >= ${calls / 3}`,
          'calls answered',
        ],
        [
          `apiserver_admission_webhook_admission_duration_seconds_bucket{name="${okName}",type="admit",operation="CREATE",rejected="false",le="2.5"} >= ${calls / 3}`,
          'their durations',
        ],
        [`apiserver_admission_webhook_fail_open_count{name="${openName}",type="validating"} >= ${calls}`, 'calls failed open'],
        [
          `apiserver_admission_webhook_rejection_count{name="${closedName}",type="validating",operation="CREATE",error_type="calling_webhook_error"} >= ${calls}`,
          'calls failed closed',
        ],
      ];
      for (const r of [0, 1]) {
        await round(r);
        for (const [query, what] of series(3 * (r + 1))) tt.ok((await poll(prom, query)).length > 0, `${what}: ${query}`);
      }
      const codes = await poll(prom, `apiserver_admission_webhook_request_total{name="${openName}"}`);
      tt.comment(`a failed call's request_total: ${codes.map((x) => JSON.stringify(x.metric)).join(' ')}`);

      // 3. The alerts on them, by webhook name.
      const open = await pollAlert(
        prom,
        'RaykeeperWebhookFailingOpen firing',
        (a) => a.labels.alertname === 'RaykeeperWebhookFailingOpen' && a.labels.name === openName && a.state === 'firing',
      );
      tt.match(
        open?.labels,
        { name: openName, type: 'validating', severity: 'critical' },
        'RaykeeperWebhookFailingOpen fires for the Ignore webhook',
      );
      const closed = await pollAlert(
        prom,
        'RaykeeperWebhookFailingClosed firing',
        (a) => a.labels.alertname === 'RaykeeperWebhookFailingClosed' && a.labels.name === closedName && a.state === 'firing',
      );
      tt.match(
        closed?.labels,
        { name: closedName, type: 'validating', operation: 'CREATE', severity: 'critical' },
        'RaykeeperWebhookFailingClosed fires for the Fail webhook',
      );
      const quiet = (await alerts(prom)).filter(
        (a) => a.labels.name === okName || (a.labels.name === openName && a.labels.alertname === 'RaykeeperWebhookFailingClosed'),
      );
      tt.same(quiet, [], 'no alert for the webhook that answers, nor a fail-closed one for the Ignore webhook');

      // 4. The dashboard's variables and the panels this setup feeds.
      const variables = await dashboardVariables(prom, dashboard, GRAFANA_BUILTINS);
      tt.same(variables, { namespace: [INSTALL_NAMESPACE], job: ['raykeeper-webhook'] }, 'the $namespace and $job choices');
      const values = { ...GRAFANA_BUILTINS, namespace: INSTALL_NAMESPACE, job: 'raykeeper-webhook' };
      const panels = dashboard.panels.filter((p) => p.targets.some((x) => /apiserver_|certificate_not_after/.test(x.expr)));
      tt.equal(panels.length, 3, 'the certificate panel and the two API server panels');
      for (const panel of panels)
        for (const target of panel.targets) {
          const query = grafanaQuery(target.expr, values);
          tt.ok((await poll(prom, query)).length > 0, `${panel.title}: ${query} returns data`);
        }
    },
  );
}
