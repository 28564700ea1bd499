// The webhook's Prometheus metrics, registered on the process registry it is given.
//
// The per-request figures are counted into plain typed arrays on the hot path (an index and an add: no
// label hashing, no label validation, no objects) and handed to prom-client only when /metrics is scraped
// (each metric's collect() / get()). The exposition is the same as with prom-client's own counters.
import { Counter, Gauge, type Registry } from 'prom-client';
import { DENIAL_REASONS } from '../src/admission/validate.ts';

export const RESOURCES = ['raycluster', 'rayjob', 'raycronjob'] as const;
export type Resource = (typeof RESOURCES)[number];
/** Admission operations, and "invalid" when the request could not be read. */
export const METRIC_OPERATIONS = ['CREATE', 'UPDATE', 'DELETE', 'CONNECT', 'invalid'] as const;
export type MetricOperation = (typeof METRIC_OPERATIONS)[number];
export const ERROR_REASONS = [
  'invalid_review',
  'internal',
  'invalid_json',
  'body_too_large',
  'unsupported_media_type',
  'overloaded',
  'other',
] as const;
export type ErrorReason = (typeof ERROR_REASONS)[number];

/** Validating admission results, and the bounded reason of a refusal ("none" when allowed or warned). */
export const VALIDATION_RESULTS = ['allowed', 'warned', 'denied'] as const;
export type ValidationResultLabel = (typeof VALIDATION_RESULTS)[number];
export const VALIDATION_REASONS = ['none', ...DENIAL_REASONS] as const;
export type ValidationReasonLabel = (typeof VALIDATION_REASONS)[number];

export const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1] as const;

const R = RESOURCES.length;
const O = METRIC_OPERATIONS.length;
const E = ERROR_REASONS.length;
const B = DURATION_BUCKETS.length;

/** What the request path records; all methods are O(1) and allocation-free. */
export interface AdmissionRecorder {
  request(resource: Resource, operation: MetricOperation, seconds: number): void;
  patched(resource: Resource, operation: MetricOperation): void;
  error(resource: Resource, reason: ErrorReason): void;
  /** A validating admission answer, by result and (when denied) its reason. */
  validated(resource: Resource, operation: MetricOperation, result: ValidationResultLabel, reason: ValidationReasonLabel): void;
}

export interface WebhookMetrics {
  record: AdmissionRecorder;
  certificateNotAfter: Gauge;
  certificateReloads: Counter<'result'>;
}

function index<T>(list: readonly T[], value: T): number {
  const i = list.indexOf(value);
  return i < 0 ? list.length - 1 : i; // unknown values fall into the last slot ("invalid" / "other")
}

/**
 * A counter whose children are read from `values` (row-major over the two label lists) at scrape time:
 * those counted so far, or with `zeros` every pair from the start (a series an alert reads with
 * increase() must exist at 0 before its first count, or Prometheus sees no increase).
 */
function tableCounter<A extends string, B extends string>(
  registry: Registry,
  name: string,
  help: string,
  labels: readonly [string, string],
  first: readonly A[],
  second: readonly B[],
  values: Float64Array,
  zeros = false,
): void {
  new Counter({
    name,
    help,
    labelNames: [...labels],
    registers: [registry],
    collect() {
      this.reset();
      for (let i = 0; i < first.length; i++) {
        for (let j = 0; j < second.length; j++) {
          const v = values[i * second.length + j]!;
          if (v > 0 || zeros) this.inc({ [labels[0]]: first[i]!, [labels[1]]: second[j]! }, v);
        }
      }
    },
  });
}

/** Histogram per resource from bucket counts kept by the request path; a prom-client custom metric. */
class DurationHistogram {
  readonly name = 'raykeeper_webhook_request_duration_seconds';
  readonly help = 'Time from receiving an admission request to sending its answer.';
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  /** Per resource: B bucket counts (not cumulative), then +Inf, then sum. */
  readonly data = new Float64Array(R * (B + 2));

  observe(resource: number, seconds: number): void {
    const base = resource * (B + 2);
    let b = 0;
    while (b < B && seconds > DURATION_BUCKETS[b]!) b++;
    this.data[base + b]!++;
    this.data[base + B + 1]! += seconds;
  }

  get() {
    const values: Array<{ labels: Record<string, string | number>; value: number; metricName: string }> = [];
    for (let r = 0; r < R; r++) {
      const base = r * (B + 2);
      let count = 0;
      for (let b = 0; b <= B; b++) count += this.data[base + b]!;
      if (count === 0) continue;
      const resource = RESOURCES[r]!;
      let acc = 0;
      for (let b = 0; b < B; b++) {
        acc += this.data[base + b]!;
        values.push({ labels: { le: DURATION_BUCKETS[b]!, resource }, value: acc, metricName: `${this.name}_bucket` });
      }
      values.push({ labels: { le: '+Inf', resource }, value: count, metricName: `${this.name}_bucket` });
      values.push({ labels: { resource }, value: this.data[base + B + 1]!, metricName: `${this.name}_sum` });
      values.push({ labels: { resource }, value: count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    this.data.fill(0);
  }
}

/** Read at scrape time: request body bytes held in the budget, and requests waiting for room. */
export interface InFlight {
  readonly used: number;
  readonly waiting: number;
}

export function createWebhookMetrics(registry: Registry, inFlight: InFlight): WebhookMetrics {
  new Gauge({
    name: 'raykeeper_webhook_request_bytes_in_flight',
    help: 'Request body bytes being read, parsed or answered now (capped by the request-byte budget).',
    registers: [registry],
    collect() {
      this.set(inFlight.used);
    },
  });
  new Gauge({
    name: 'raykeeper_webhook_requests_waiting',
    help: 'Requests waiting for room in the request-byte budget.',
    registers: [registry],
    collect() {
      this.set(inFlight.waiting);
    },
  });
  const requests = new Float64Array(R * O);
  const patches = new Float64Array(R * O);
  const errors = new Float64Array(R * E);
  tableCounter(
    registry,
    'raykeeper_webhook_requests_total',
    'Admission requests answered, by resource and operation (operation "invalid" when unreadable).',
    ['resource', 'operation'],
    RESOURCES,
    METRIC_OPERATIONS,
    requests,
  );
  tableCounter(
    registry,
    'raykeeper_webhook_patches_total',
    'Admission answers that carried a JSON patch.',
    ['resource', 'operation'],
    RESOURCES,
    METRIC_OPERATIONS,
    patches,
  );
  tableCounter(
    registry,
    'raykeeper_webhook_errors_total',
    'Admission requests refused because of bad input or an internal error, by reason.',
    ['resource', 'reason'],
    RESOURCES,
    ERROR_REASONS,
    errors,
    true, // RaykeeperWebhookErrors: increase() of reason="internal"
  );
  const V = VALIDATION_RESULTS.length;
  const N = VALIDATION_REASONS.length;
  const validations = new Float64Array(R * O * V * N);
  new Counter({
    name: 'raykeeper_webhook_validations_total',
    help: 'Validating admission answers, by resource, operation, result (allowed, warned, denied) and refusal reason.',
    labelNames: ['resource', 'operation', 'result', 'reason'],
    registers: [registry],
    collect() {
      this.reset();
      for (let i = 0; i < validations.length; i++) {
        const v = validations[i]!;
        if (v === 0) continue;
        const n = i % N;
        const res = Math.floor(i / N) % V;
        const o = Math.floor(i / (N * V)) % O;
        const r = Math.floor(i / (N * V * O));
        this.inc(
          { resource: RESOURCES[r]!, operation: METRIC_OPERATIONS[o]!, result: VALIDATION_RESULTS[res]!, reason: VALIDATION_REASONS[n]! },
          v,
        );
      }
    },
  });
  const duration = new DurationHistogram();
  registry.registerMetric(duration as never);

  const record: AdmissionRecorder = {
    request(resource, operation, seconds) {
      const r = index(RESOURCES, resource);
      requests[r * O + index(METRIC_OPERATIONS, operation)]!++;
      duration.observe(r, seconds);
    },
    patched(resource, operation) {
      patches[index(RESOURCES, resource) * O + index(METRIC_OPERATIONS, operation)]!++;
    },
    error(resource, reason) {
      errors[index(RESOURCES, resource) * E + index(ERROR_REASONS, reason)]!++;
    },
    validated(resource, operation, result, reason) {
      const r = index(RESOURCES, resource);
      validations[
        ((r * O + index(METRIC_OPERATIONS, operation)) * V + index(VALIDATION_RESULTS, result)) * N + index(VALIDATION_REASONS, reason)
      ]!++;
    },
  };
  return {
    record,
    certificateNotAfter: new Gauge({
      name: 'raykeeper_webhook_certificate_not_after_timestamp_seconds',
      help: 'Expiry (notAfter, Unix seconds) of the serving certificate currently presented.',
      registers: [registry],
    }),
    certificateReloads: new Counter({
      name: 'raykeeper_webhook_certificate_reloads_total',
      help: 'Attempts to load changed certificate files, by result (success, failure).',
      labelNames: ['result'],
      registers: [registry],
    }),
  };
}
