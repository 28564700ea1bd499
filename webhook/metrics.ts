// The webhook's Prometheus metrics, registered on the process registry it is given.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export type ErrorReason = 'invalid_review' | 'internal' | 'invalid_json' | 'body_too_large' | 'unsupported_media_type' | 'overloaded' | 'other';

export interface WebhookMetrics {
  requests: Counter<'resource' | 'operation'>;
  patches: Counter<'resource' | 'operation'>;
  errors: Counter<'resource' | 'reason'>;
  duration: Histogram<'resource'>;
  certificateNotAfter: Gauge;
  certificateReloads: Counter<'result'>;
}

export function createWebhookMetrics(registry: Registry): WebhookMetrics {
  const registers = [registry];
  return {
    requests: new Counter({
      name: 'raykeeper_webhook_requests_total',
      help: 'Admission requests answered, by resource and operation (operation "invalid" when unreadable).',
      labelNames: ['resource', 'operation'],
      registers,
    }),
    patches: new Counter({
      name: 'raykeeper_webhook_patches_total',
      help: 'Admission answers that carried a JSON patch.',
      labelNames: ['resource', 'operation'],
      registers,
    }),
    errors: new Counter({
      name: 'raykeeper_webhook_errors_total',
      help: 'Admission requests refused because of bad input or an internal error, by reason.',
      labelNames: ['resource', 'reason'],
      registers,
    }),
    duration: new Histogram({
      name: 'raykeeper_webhook_request_duration_seconds',
      help: 'Time from receiving an admission request to sending its answer.',
      labelNames: ['resource'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers,
    }),
    certificateNotAfter: new Gauge({
      name: 'raykeeper_webhook_certificate_not_after_timestamp_seconds',
      help: 'Expiry (notAfter, Unix seconds) of the serving certificate currently presented.',
      registers,
    }),
    certificateReloads: new Counter({
      name: 'raykeeper_webhook_certificate_reloads_total',
      help: 'Attempts to load changed certificate files, by result (success, failure).',
      labelNames: ['result'],
      registers,
    }),
  };
}
