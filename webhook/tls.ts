// Serving certificate: loading a cert/key pair from files, and reloading it when the files change
// (cert-manager or `raykeeper certs generate --reuse-ca` rotating them) without restarting the server.
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { X509Certificate } from 'node:crypto';
import { dirname } from 'node:path';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import type { Logger } from '../kube/logger.ts';
import { errorMessage } from '../src/errors.ts';

/** TLS 1.2 is the oldest protocol the webhook accepts. */
export const TLS_MIN_VERSION = 'TLSv1.2' as const;

export interface TlsMaterial {
  cert: string;
  key: string;
  notAfter: Date;
  fingerprint256: string;
}

/** TLS 1.3 suites (all AEAD, all forward secret by the protocol), strongest first. */
export const TLS13_CIPHER_SUITES = ['TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256', 'TLS_AES_128_GCM_SHA256'] as const;

/**
 * TLS 1.2 suites: ECDHE key exchange (forward secret) with an AEAD cipher only. Node's default list also
 * allows static-RSA (AES128-GCM-SHA256: no forward secrecy), CBC with SHA-1 (AES128-SHA,
 * ECDHE-RSA-AES128-SHA) and CBC-SHA2 suites; none of those is offered here. The ECDSA suites serve an EC key.
 */
export const TLS12_CIPHER_SUITES = [
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
] as const;

/** The OpenSSL cipher string of the webhook (TLS 1.3 and 1.2 suites, nothing else). */
export const TLS_CIPHERS = [...TLS13_CIPHER_SUITES, ...TLS12_CIPHER_SUITES].join(':');

/**
 * What node's tls/https servers take; the protocol floor and the cipher list are part of every secure
 * context, rotated ones included. The server's order wins (the strongest suite both sides support).
 */
export function secureContextOptions(material: Pick<TlsMaterial, 'cert' | 'key'>): SecureContextOptions {
  return { cert: material.cert, key: material.key, minVersion: TLS_MIN_VERSION, ciphers: TLS_CIPHERS, honorCipherOrder: true };
}

/** Reads and checks a pair: both PEM, the key matching the certificate. Throws a clear error otherwise. */
export async function loadTlsMaterial(certFile: string, keyFile: string): Promise<TlsMaterial> {
  const [cert, key] = await Promise.all([readFile(certFile, 'utf8'), readFile(keyFile, 'utf8')]);
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch (err) {
    throw new Error(`${certFile} is not a PEM certificate: ${errorMessage(err)}`);
  }
  try {
    createSecureContext(secureContextOptions({ cert, key })); // fails when the key does not match
  } catch (err) {
    throw new Error(`cannot use ${certFile} with ${keyFile}: ${errorMessage(err)}`);
  }
  return { cert, key, notAfter: new Date(x509.validTo), fingerprint256: x509.fingerprint256 };
}

export interface CertificateReloaderOptions {
  certFile: string;
  keyFile: string;
  initial: TlsMaterial;
  /** Installs new material (server.setSecureContext). */
  apply: (material: TlsMaterial) => void;
  log: Logger;
  /** Re-read the files this often even without a file event (some volumes emit none). Default 30 s. */
  pollIntervalMs?: number;
  /** Called after each attempt to load changed files. */
  onReload?: (result: 'success' | 'failure', material: TlsMaterial) => void;
}

const DEBOUNCE_MS = 100;
const RETRY_MS = 1000;

/**
 * Watches the directories holding the files (a Kubernetes Secret volume swaps a `..data` symlink, so the
 * files' own inodes are not stable) and polls as a fallback. A changed pair that fails to load (e.g. the
 * key already new, the certificate not yet) keeps the old one serving and is retried when the files change
 * again (or once, a second later).
 */
export class CertificateReloader {
  #options: CertificateReloaderOptions;
  #current: TlsMaterial;
  #watchers: FSWatcher[] = [];
  #poll: NodeJS.Timeout | undefined;
  #pending: NodeJS.Timeout | undefined;
  #running: Promise<boolean> = Promise.resolve(false);
  #stopped = false;
  /** The file contents that last failed to load: not retried (nor logged again) until they change. */
  #failed: string | undefined;

  constructor(options: CertificateReloaderOptions) {
    this.#options = options;
    this.#current = options.initial;
  }

  get current(): TlsMaterial {
    return this.#current;
  }

  start(): void {
    const dirs = new Set([dirname(this.#options.certFile), dirname(this.#options.keyFile)]);
    for (const dir of dirs) {
      try {
        const watcher = watch(dir, { persistent: false }, () => this.#schedule(DEBOUNCE_MS));
        watcher.on('error', (err) => this.#options.log.warn({ err, dir }, 'certificate directory watch failed; polling only'));
        this.#watchers.push(watcher);
      } catch (err) {
        this.#options.log.warn({ err, dir }, 'cannot watch certificate directory; polling only');
      }
    }
    this.#poll = setInterval(() => void this.reload(), this.#options.pollIntervalMs ?? 30_000);
    this.#poll.unref();
  }

  stop(): void {
    this.#stopped = true;
    for (const w of this.#watchers) w.close();
    this.#watchers = [];
    clearInterval(this.#poll);
    clearTimeout(this.#pending);
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    clearTimeout(this.#pending);
    this.#pending = setTimeout(() => void this.reload(), delayMs);
    this.#pending.unref();
  }

  /** Re-reads the files; resolves true when a new pair was installed. Calls never overlap. */
  reload(): Promise<boolean> {
    this.#running = this.#running.then(() => this.#reloadOnce());
    return this.#running;
  }

  async #reloadOnce(): Promise<boolean> {
    if (this.#stopped) return false;
    const { certFile, keyFile, log } = this.#options;
    let raw: [string, string];
    try {
      raw = await Promise.all([readFile(certFile, 'utf8'), readFile(keyFile, 'utf8')]);
    } catch (err) {
      log.warn({ err }, 'cannot read certificate files; keeping the current certificate');
      this.#schedule(RETRY_MS);
      return false;
    }
    if (raw[0] === this.#current.cert && raw[1] === this.#current.key) return false;
    const content = raw[0] + '\0' + raw[1];
    if (content === this.#failed) return false;
    try {
      const material = await loadTlsMaterial(certFile, keyFile);
      if (this.#stopped) return false;
      this.#options.apply(material);
      this.#current = material;
      this.#failed = undefined;
      log.info({ notAfter: material.notAfter.toISOString(), fingerprint256: material.fingerprint256 }, 'serving certificate reloaded');
      this.#options.onReload?.('success', material);
      return true;
    } catch (err) {
      log.warn({ err }, 'changed certificate files do not load yet; keeping the current certificate');
      this.#options.onReload?.('failure', this.#current);
      this.#failed = content;
      this.#schedule(RETRY_MS);
      return false;
    }
  }
}
