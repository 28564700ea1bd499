// One Prometheus registry per process; every module registers its metrics on the one it is given.
import { collectDefaultMetrics, Registry } from 'prom-client';

export function createMetricsRegistry(prefix = 'raykeeper_'): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix });
  return registry;
}

export type { Registry };
