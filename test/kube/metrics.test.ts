// The process registry: prom-client's default metrics under our prefix; the webhook's registry has every
// one of them except nodejs_gc_duration_seconds (kube/metrics.ts says why), and serves them on /metrics.
import t from 'tap';
import { buildApp } from '../../webhook/app.ts';
import { createMetricsRegistry } from '../../kube/metrics.ts';
import { ERROR_REASONS, RESOURCES } from '../../webhook/metrics.ts';
import { capturingLogger, certDir } from '../webhook/helpers.ts';

const GC_DURATIONS = 'raykeeper_nodejs_gc_duration_seconds';

async function names(registry: ReturnType<typeof createMetricsRegistry>): Promise<string[]> {
  return (await registry.getMetricsAsJSON()).map((m) => m.name).sort();
}

t.test('without gcDurations: the same default metrics less the GC histogram', async (t) => {
  const all = await names(createMetricsRegistry());
  const lean = await names(createMetricsRegistry(undefined, { gcDurations: false }));
  t.ok(all.includes(GC_DURATIONS), 'the full set has the GC histogram');
  t.ok(all.length > 10, `the full set has prom-client's default metrics (${all.length})`);
  t.same(
    lean,
    all.filter((n) => n !== GC_DURATIONS),
  );
});

t.test("the webhook's /metrics: process and event-loop metrics, no GC histogram", async (t) => {
  const certs = await certDir(t);
  const app = await buildApp({ certFile: certs.certFile, keyFile: certs.keyFile, logger: capturingLogger().logger });
  t.teardown(() => app.close());
  const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  t.match(text, /^raykeeper_process_cpu_user_seconds_total \d/m);
  t.match(text, /^raykeeper_nodejs_eventloop_lag_p99_seconds \d/m);
  t.match(text, /^raykeeper_nodejs_heap_size_used_bytes \d/m);
  t.notMatch(text, GC_DURATIONS);
});

t.test("the webhook's errors counter: every resource and reason at 0 before the first error", async (t) => {
  const certs = await certDir(t);
  const app = await buildApp({ certFile: certs.certFile, keyFile: certs.keyFile, logger: capturingLogger().logger });
  t.teardown(() => app.close());
  const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  // RaykeeperWebhookErrors reads increase(...{reason="internal"}): a series first scraped at 1 has no increase.
  for (const resource of RESOURCES)
    for (const reason of ERROR_REASONS) t.match(text, `\nraykeeper_webhook_errors_total{resource="${resource}",reason="${reason}"} 0\n`);
  t.notMatch(text, /^raykeeper_webhook_requests_total\{/m, 'the request counts only once counted');
});
