// One Prometheus registry per process; every module registers its metrics on the one it is given.
import { collectDefaultMetrics, Counter, Gauge, Registry, type CounterConfiguration, type GaugeConfiguration } from 'prom-client';

export function createMetricsRegistry(prefix = 'raykeeper_'): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix });
  return registry;
}

/**
 * The counter `name` of `registry`, created on first use: a reconciler built again on the same registry
 * (a second instance, a restart within one process) counts on in the same series instead of failing to
 * register twice. No registry: a counter registered nowhere.
 */
export function sharedCounter<L extends string = string>(registry: Registry | undefined, config: Omit<CounterConfiguration<L>, 'registers'>): Counter<L> {
  return (registry?.getSingleMetric(config.name) as Counter<L> | undefined) ?? new Counter<L>({ ...config, registers: registry ? [registry] : [] });
}

/** The gauge `name` of `registry`, created on first use (see sharedCounter). */
export function sharedGauge<L extends string = string>(registry: Registry | undefined, config: Omit<GaugeConfiguration<L>, 'registers'>): Gauge<L> {
  return (registry?.getSingleMetric(config.name) as Gauge<L> | undefined) ?? new Gauge<L>({ ...config, registers: registry ? [registry] : [] });
}

export type { Registry };
