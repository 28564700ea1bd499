// The webhook process: listen over HTTPS, reload certificates on SIGHUP, shut down gracefully on SIGTERM
// and SIGINT (stop accepting, finish in-flight requests, close idle keep-alive connections, resolve).
import { DEFAULT_WEBHOOK_PORT } from '../src/names.ts';
import { buildApp, type WebhookApp, type WebhookOptions } from './app.ts';

export interface RunWebhookOptions extends WebhookOptions {
  host?: string;
  port?: number;
  /** After this long, connections still open at shutdown are cut. Default 20 s. */
  shutdownTimeoutMs?: number;
  /** Called once listening, with the bound address (tests, the dev runner). */
  onListening?: (address: { host: string; port: number }, app: WebhookApp) => void;
  /** Resolving this shuts the server down as SIGTERM would (tests, an embedding process). */
  stopSignal?: Promise<unknown>;
}

export const DEFAULT_WEBHOOK_HOST = '0.0.0.0';

/** Serves until SIGTERM/SIGINT (or stopSignal); resolves after a graceful shutdown. */
export async function runWebhook(options: RunWebhookOptions): Promise<void> {
  const app = await buildApp(options);
  const host = options.host ?? DEFAULT_WEBHOOK_HOST;
  await app.listen({ host, port: options.port ?? DEFAULT_WEBHOOK_PORT });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : (options.port ?? DEFAULT_WEBHOOK_PORT);
  app.logger.info({ host, port }, 'admission webhook listening (HTTPS, TLS 1.2+)');
  options.onListening?.({ host, port }, app);

  const reload = () => {
    app.logger.info('SIGHUP: re-reading certificate files');
    void app.reloadCertificates();
  };
  let onSignal: (name: string) => void = () => {};
  process.on('SIGHUP', reload);
  try {
    const signal = await new Promise<string>((resolve) => {
      onSignal = (name: string) => resolve(name);
      process.on('SIGTERM', onSignal);
      process.on('SIGINT', onSignal);
      void options.stopSignal?.then(() => resolve('stop'));
    });
    app.logger.info({ signal }, 'shutting down: finishing in-flight requests');
    const timer = setTimeout(() => {
      app.logger.warn('shutdown timeout: closing remaining connections');
      app.server.closeAllConnections();
    }, options.shutdownTimeoutMs ?? 20_000);
    timer.unref();
    await app.close();
    clearTimeout(timer);
    app.logger.info('admission webhook stopped');
  } finally {
    process.off('SIGHUP', reload);
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
}
