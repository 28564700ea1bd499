// What the cleanup needs, from the environment KubeRay gives the cleanup Job's container (and the CLI's
// flags, which override it): the connection (address, credentials, TLS files, mode) and the storage
// namespace. Used by `raykeeper redis-cleanup` (cli.ts) and by the controller's in-process cleanup
// (cleanupFromEnvironment), so both read the same variables the same way.
import { readFileSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { AddressError, parseRedisAddress, resolveCredentials } from '../../src/redis/address.ts';
import { errorMessage } from '../../src/errors.ts';
import { MODE_CHOICES, type ModeChoice } from '../../src/redis/topology.ts';
import { ENV_REDIS_ADDRESS, ENV_REDIS_PASSWORD, ENV_REDIS_USERNAME, ENV_STORAGE_NAMESPACE } from '../../src/names.ts';
import { storageNamespaceProblem } from '../../src/gcsft/rules.ts';
import { RedisCleanupError, type RedisConnectionOptions, type RedisTlsMaterial } from './connect.ts';
import { runCleanup, type CleanupOptions, type CleanupResult } from './cleanup.ts';

/** A configuration the user must fix (exit 2); never holds a password. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Flag values by flag name (parseArgs' result); the environment fills what is not given. */
export type FlagValues = Record<string, string | boolean | undefined>;

export interface Settings {
  connection: RedisConnectionOptions;
  namespace?: string | undefined;
  /** The password in use, to mask it in anything printed. */
  password?: string | undefined;
  warnings: string[];
}

/** A PEM given inline, or the file it names (Ray's RAY_REDIS_* variables are file paths). */
async function pemFrom(value: string, what: string): Promise<string> {
  if (value.includes('-----BEGIN ')) return value;
  try {
    return await readFile(value, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read ${what} ${JSON.stringify(value)}: ${(err as NodeJS.ErrnoException).code ?? errorMessage(err)}`);
  }
}

async function caDirectory(dir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    throw new ConfigError(`cannot read CA directory ${JSON.stringify(dir)}: ${(err as NodeJS.ErrnoException).code ?? errorMessage(err)}`);
  }
  const out: string[] = [];
  for (const name of names.sort()) {
    const path = join(dir, name);
    const info = await stat(path).catch(() => undefined);
    if (!info?.isFile()) continue;
    const text = await readFile(path, 'utf8').catch(() => '');
    if (text.includes('-----BEGIN CERTIFICATE-----')) out.push(text);
  }
  if (out.length === 0) throw new ConfigError(`CA directory ${JSON.stringify(dir)} holds no PEM certificate`);
  return out;
}

/**
 * An environment variable's bytes as the kernel handed them to this process (/proc/self/environ):
 * Node decodes process.env lossily, turning invalid UTF-8 into U+FFFD. Undefined when unknown.
 */
export function processEnvBytes(name: string, file = '/proc/self/environ'): Buffer | undefined {
  let data: Buffer;
  try {
    data = readFileSync(file);
  } catch {
    return undefined;
  }
  const prefix = Buffer.from(`${name}=`);
  for (let start = 0; start < data.length; ) {
    let end = data.indexOf(0, start);
    if (end < 0) end = data.length;
    const entry = data.subarray(start, end);
    if (entry.length >= prefix.length && entry.subarray(0, prefix.length).equals(prefix)) return entry.subarray(prefix.length);
    start = end + 1;
  }
  return undefined;
}

const strict = new TextDecoder('utf-8', { fatal: true });

/**
 * Why a namespace read as text cannot be trusted: its bytes (when known) are not valid UTF-8, or (when
 * not known) it holds U+FFFD, the mark of a lossy decoding. Deleting "\ufffd" instead is never right.
 */
export function namespaceEncodingProblem(text: string, bytes: Buffer | undefined, source: string): string | undefined {
  if (bytes !== undefined) {
    try {
      strict.decode(bytes);
      return undefined;
    } catch {
      return `${source} is not valid UTF-8 (bytes ${bytes.subarray(0, 32).toString('hex')}); Ray's namespaces are UTF-8 strings`;
    }
  }
  return text.includes('\ufffd')
    ? `${source} holds U+FFFD (invalid UTF-8 decoded lossily?); refusing to guess which namespace was meant`
    : undefined;
}

/**
 * Connection and namespace from flags and environment. `envBytes` gives a variable's raw bytes when
 * the environment is this process's own (see processEnvBytes).
 */
export async function resolveSettings(
  values: FlagValues,
  env: Record<string, string | undefined>,
  envBytes?: (name: string) => Buffer | undefined,
): Promise<Settings> {
  const str = (flag: string, envName?: string): string | undefined => {
    const v = values[flag];
    if (typeof v === 'string') return v;
    return envName === undefined ? undefined : env[envName];
  };
  const warnings: string[] = [];
  const rawAddress = str('address', ENV_REDIS_ADDRESS);
  if (rawAddress === undefined || rawAddress.trim() === '')
    throw new ConfigError(`no Redis address: set ${ENV_REDIS_ADDRESS} or --address`);
  let address;
  try {
    address = parseRedisAddress(rawAddress);
  } catch (err) {
    if (err instanceof AddressError) throw new ConfigError(err.message);
    throw err;
  }
  warnings.push(...address.warnings);

  let flagPassword: string | undefined;
  const passwordEnv = values['password-env'];
  if (typeof passwordEnv === 'string') {
    flagPassword = env[passwordEnv];
    if (flagPassword === undefined) throw new ConfigError(`--password-env: environment variable ${JSON.stringify(passwordEnv)} is not set`);
  }
  const passwordFile = values['password-file'];
  if (typeof passwordFile === 'string') {
    if (flagPassword !== undefined) throw new ConfigError('--password-env and --password-file are exclusive');
    try {
      flagPassword = (await readFile(passwordFile, 'utf8')).replace(/\r?\n$/, '');
    } catch (err) {
      throw new ConfigError(
        `cannot read --password-file ${JSON.stringify(passwordFile)}: ${(err as NodeJS.ErrnoException).code ?? errorMessage(err)}`,
      );
    }
  }
  const creds = resolveCredentials(address, {
    flagUsername: typeof values.username === 'string' ? values.username : undefined,
    flagPassword,
    envUsername: env[ENV_REDIS_USERNAME],
    envPassword: env[ENV_REDIS_PASSWORD],
  });
  if (creds.username !== undefined && creds.password === undefined) {
    warnings.push(`username ${JSON.stringify(creds.username)} given without a password: connecting without AUTH`);
  }

  const tls = address.tls || values.tls === true;
  const material: RedisTlsMaterial = {};
  const caCert = str('ca-cert', 'RAY_REDIS_CA_CERT');
  const caPath = str('ca-path', 'RAY_REDIS_CA_PATH');
  const clientCert = str('client-cert', 'RAY_REDIS_CLIENT_CERT');
  const clientKey = str('client-key', 'RAY_REDIS_CLIENT_KEY');
  const serverName = str('server-name', 'RAY_REDIS_SERVER_NAME');
  const anyTls = [caCert, caPath, clientCert, clientKey, serverName].some((v) => v !== undefined && v !== '');
  if (tls) {
    const ca: string[] = [];
    if (caCert) ca.push(await pemFrom(caCert, 'CA certificate'));
    if (caPath) ca.push(...(await caDirectory(caPath)));
    if (ca.length > 0) material.ca = ca;
    if (clientCert) material.cert = await pemFrom(clientCert, 'client certificate');
    if (clientKey) material.key = await pemFrom(clientKey, 'client key');
    if ((material.cert === undefined) !== (material.key === undefined))
      throw new ConfigError('a client certificate needs its key, and a key its certificate');
    if (serverName) material.servername = serverName;
  } else if (anyTls) {
    warnings.push('TLS settings are present but the address is not rediss://: TLS is off (use --tls to force it)');
  }

  const mode = (typeof values.mode === 'string' ? values.mode : 'auto') as ModeChoice;
  if (!MODE_CHOICES.includes(mode)) throw new ConfigError(`--mode must be one of ${MODE_CHOICES.join(', ')}`);
  const connection: RedisConnectionOptions = {
    host: address.host,
    port: address.port,
    tls,
    tlsMaterial: tls ? material : undefined,
    username: creds.username,
    password: creds.password,
    mode,
    sentinelMaster: typeof values['sentinel-master'] === 'string' ? values['sentinel-master'] : undefined,
  };

  const fromFlag = typeof values.namespace === 'string';
  const namespace = str('namespace', ENV_STORAGE_NAMESPACE);
  if (namespace !== undefined) {
    const bytes = fromFlag ? undefined : envBytes?.(ENV_STORAGE_NAMESPACE);
    const problem = namespaceEncodingProblem(namespace, bytes, fromFlag ? '--namespace' : ENV_STORAGE_NAMESPACE);
    if (problem) throw new ConfigError(problem);
  }
  return { connection, namespace, password: creds.password, warnings };
}

/** The storage namespace to delete, or why there is none usable (a ConfigError: exit 2). */
export function requireNamespace(settings: Settings): string {
  const ns = settings.namespace;
  if (ns === undefined) throw new ConfigError(`no storage namespace: set ${ENV_STORAGE_NAMESPACE} or --namespace`);
  const problem = storageNamespaceProblem(ns);
  if (problem) throw new ConfigError(problem);
  return ns;
}

/**
 * The cleanup as the Job would run it, from the Job's environment, without a process: the controller's
 * in-process cleanup (namespace terminating). A configuration problem rejects as a 'fatal'
 * RedisCleanupError, like any failure of the run; the password never appears in a message.
 */
export async function cleanupFromEnvironment(
  env: Record<string, string | undefined>,
  options: Omit<CleanupOptions, 'connection' | 'namespace'> = {},
): Promise<CleanupResult & { warnings: string[] }> {
  let settings: Settings;
  let namespace: string;
  try {
    settings = await resolveSettings({}, env);
    namespace = requireNamespace(settings);
  } catch (err) {
    if (err instanceof ConfigError) throw new RedisCleanupError(err.message, 'fatal', { cause: err });
    throw err;
  }
  const result = await runCleanup({ ...options, connection: settings.connection, namespace });
  return { ...result, warnings: [...settings.warnings, ...result.warnings] };
}
