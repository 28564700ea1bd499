// One Prometheus registry per process; every module registers its metrics on the one it is given.
import { createRequire } from 'node:module';
import {
  collectDefaultMetrics,
  Counter,
  Gauge,
  Histogram,
  Registry,
  type CounterConfiguration,
  type GaugeConfiguration,
  type HistogramConfiguration,
} from 'prom-client';

export interface MetricsRegistryOptions {
  /**
   * Include prom-client's nodejs_gc_duration_seconds (default true). Its 'gc' PerformanceObserver makes
   * Node create an entry object for every collection, and those promote to the old generation: ~4 KB
   * per young-generation collection, 20-24 bytes per admission request under load (--trace-gc-nvp),
   * garbage that only full collections reclaim. The webhook, whose tail latency is the product, leaves it
   * out and keeps all the other default metrics; the controller keeps it.
   */
  gcDurations?: boolean;
}

/** prom-client's default collectors, one module per name in its metricsList (lib/defaultMetrics.js). */
type DefaultCollector = (registry: Registry, config: { prefix: string; eventLoopMonitoringPrecision: number }) => void;
const requireCollector = createRequire(import.meta.url);
const GC_COLLECTOR = 'gc';
/** collectDefaultMetrics' own default for the event-loop lag histogram's resolution (ms). */
const EVENT_LOOP_MONITORING_PRECISION_MS = 10;

export function createMetricsRegistry(prefix = 'raykeeper_', options: MetricsRegistryOptions = {}): Registry {
  const registry = new Registry();
  if (options.gcDurations ?? true) {
    collectDefaultMetrics({ register: registry, prefix });
    return registry;
  }
  // The same collectors collectDefaultMetrics runs (its own list), with its defaults, less one.
  for (const name of collectDefaultMetrics.metricsList) {
    if (name === GC_COLLECTOR) continue;
    (requireCollector(`prom-client/lib/metrics/${name}.js`) as DefaultCollector)(registry, {
      prefix,
      eventLoopMonitoringPrecision: EVENT_LOOP_MONITORING_PRECISION_MS,
    });
  }
  return registry;
}

/**
 * The counter `name` of `registry`, created on first use: a reconciler built again on the same registry
 * (a second instance, a restart within one process) counts on in the same series instead of failing to
 * register twice. No registry: a counter registered nowhere.
 */
export function sharedCounter<L extends string = string>(
  registry: Registry | undefined,
  config: Omit<CounterConfiguration<L>, 'registers'>,
): Counter<L> {
  return (
    (registry?.getSingleMetric(config.name) as Counter<L> | undefined) ??
    new Counter<L>({ ...config, registers: registry ? [registry] : [] })
  );
}

/** The gauge `name` of `registry`, created on first use (see sharedCounter). */
export function sharedGauge<L extends string = string>(
  registry: Registry | undefined,
  config: Omit<GaugeConfiguration<L>, 'registers'>,
): Gauge<L> {
  return (
    (registry?.getSingleMetric(config.name) as Gauge<L> | undefined) ?? new Gauge<L>({ ...config, registers: registry ? [registry] : [] })
  );
}

/** The histogram `name` of `registry`, created on first use (see sharedCounter). */
export function sharedHistogram<L extends string = string>(
  registry: Registry | undefined,
  config: Omit<HistogramConfiguration<L>, 'registers'>,
): Histogram<L> {
  return (
    (registry?.getSingleMetric(config.name) as Histogram<L> | undefined) ??
    new Histogram<L>({ ...config, registers: registry ? [registry] : [] })
  );
}

/** One series of a gauge. */
export interface Sample<L extends string = string> {
  labels: Record<L, string>;
  value: number;
}

/**
 * A gauge recomputed at every scrape from the objects `source` holds now (an informer cache): one series
 * per object that `sample` gives one for, and none once the object is gone. Only while `active()`: every
 * controller replica caches every object, and only the leader's series count (a standby exporting them
 * too would double every sum and every alert). Created on first use (see sharedCounter).
 */
export function cachedGauge<T>(
  registry: Registry,
  config: { name: string; help: string; labelNames: readonly string[] },
  source: { list(): readonly T[] },
  sample: (obj: T) => Sample | undefined,
  active: () => boolean,
): Gauge {
  const existing = registry.getSingleMetric(config.name) as Gauge | undefined;
  if (existing) return existing;
  return new Gauge({
    ...config,
    registers: [registry],
    collect() {
      this.reset();
      if (!active()) return;
      for (const obj of source.list()) {
        const s = sample(obj);
        if (s) this.set(s.labels, s.value);
      }
    },
  });
}

export type { Registry };
