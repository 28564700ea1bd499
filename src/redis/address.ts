// RAY_REDIS_ADDRESS as KubeRay's cleanup Job reads it: the first entry of a comma-separated list,
// `host:port`, `host`, `[ipv6]:port`, `redis://` or `rediss://` URLs with optional user and password.
// Pure: no I/O. Nothing here ever puts a password into an error message.
import { isIPv6 } from 'node:net';

export const DEFAULT_REDIS_PORT = 6379;

export interface RedisAddress {
  host: string;
  port: number;
  /** `rediss://` (KubeRay and Ray turn TLS on from the scheme alone). */
  tls: boolean;
  /** From the URL's userinfo, percent-decoded. Environment and flags take precedence (see resolveCredentials). */
  username?: string;
  password?: string;
  /** Non-fatal remarks, e.g. a database index that Ray ignores. Never contain the password. */
  warnings: string[];
}

export class AddressError extends Error {
  override name = 'AddressError';
}

function parsePort(raw: string, what: string): number {
  if (!/^\d{1,5}$/.test(raw)) throw new AddressError(`${what}: port ${JSON.stringify(raw)} is not a number`);
  const port = Number(raw);
  if (port < 1 || port > 65535) throw new AddressError(`${what}: port ${port} is out of range 1-65535`);
  return port;
}

function checkHost(host: string, what: string): string {
  if (host === '') throw new AddressError(`${what}: host is empty`);
  if (/[\s/@?#]/.test(host)) throw new AddressError(`${what}: host ${JSON.stringify(host)} is not valid`);
  return host;
}

/** `host`, `host:port`, `[v6]`, `[v6]:port`, or an unbracketed IPv6 literal (port then needs brackets). */
function parseHostPort(entry: string, what: string): { host: string; port: number } {
  if (entry.startsWith('[')) {
    const close = entry.indexOf(']');
    if (close < 0) throw new AddressError(`${what}: missing ']' after IPv6 address`);
    const host = entry.slice(1, close);
    if (!isIPv6(host)) throw new AddressError(`${what}: ${JSON.stringify(host)} is not an IPv6 address`);
    const rest = entry.slice(close + 1);
    if (rest === '') return { host, port: DEFAULT_REDIS_PORT };
    if (!rest.startsWith(':')) throw new AddressError(`${what}: unexpected text after ']'`);
    return { host, port: parsePort(rest.slice(1), what) };
  }
  const colons = entry.split(':').length - 1;
  if (colons === 0) return { host: checkHost(entry, what), port: DEFAULT_REDIS_PORT };
  if (colons === 1) {
    const [host, port] = entry.split(':') as [string, string];
    return { host: checkHost(host, what), port: parsePort(port, what) };
  }
  // Several colons: an IPv6 literal. `fe80::1:6379` is ambiguous, so a port requires brackets.
  if (isIPv6(entry)) return { host: entry, port: DEFAULT_REDIS_PORT };
  throw new AddressError(`${what}: IPv6 addresses with a port must be written [addr]:port`);
}

function decode(part: string, what: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new AddressError(`${what}: bad percent-encoding in the user information`);
  }
}

/** Parses a URL without the WHATWG parser so that a malformed one can never echo its password. */
function parseUrl(entry: string, scheme: 'redis' | 'rediss'): RedisAddress {
  const what = `${scheme}:// address`;
  const warnings: string[] = [];
  let rest = entry.slice(scheme.length + 3);
  // Authority ends at the first '/', '?' or '#'.
  const end = rest.search(/[/?#]/);
  const tail = end < 0 ? '' : rest.slice(end);
  rest = end < 0 ? rest : rest.slice(0, end);
  let username: string | undefined;
  let password: string | undefined;
  const at = rest.lastIndexOf('@');
  if (at >= 0) {
    const userinfo = rest.slice(0, at);
    rest = rest.slice(at + 1);
    const colon = userinfo.indexOf(':');
    const user = colon < 0 ? userinfo : userinfo.slice(0, colon);
    if (user !== '') username = decode(user, what);
    if (colon >= 0) {
      const pass = userinfo.slice(colon + 1);
      if (pass !== '') password = decode(pass, what);
    }
  }
  const { host, port } = parseHostPort(rest, what);
  const path = tail.split(/[?#]/)[0] ?? '';
  if (path !== '' && path !== '/' && path !== '/0') {
    warnings.push(`ignoring database ${JSON.stringify(path.slice(1))} in the address: Ray's GCS always uses database 0`);
  }
  if (/[?]/.test(tail)) warnings.push('ignoring query parameters in the address');
  const out: RedisAddress = { host, port, tls: scheme === 'rediss', warnings };
  if (username !== undefined) out.username = username;
  if (password !== undefined) out.password = password;
  return out;
}

/** Parses RAY_REDIS_ADDRESS (or a flag value). Throws AddressError with a one-line, password-free reason. */
export function parseRedisAddress(raw: string): RedisAddress {
  const first = raw.split(',')[0]?.trim() ?? '';
  if (first === '') throw new AddressError('Redis address is empty');
  const lower = first.toLowerCase();
  if (lower.startsWith('rediss://')) return parseUrl(first, 'rediss');
  if (lower.startsWith('redis://')) return parseUrl(first, 'redis');
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(first);
  if (scheme) throw new AddressError(`unsupported scheme ${JSON.stringify(scheme[1])}: use redis:// or rediss://`);
  return { ...parseHostPort(first, 'Redis address'), tls: false, warnings: [] };
}

/** host:port for messages; IPv6 bracketed. Never includes credentials. */
export function formatHostPort(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

export interface CredentialSources {
  /** Explicit flag values (win over everything). */
  flagUsername?: string | undefined;
  flagPassword?: string | undefined;
  /** REDIS_USERNAME / REDIS_PASSWORD as found in the environment. */
  envUsername?: string | undefined;
  envPassword?: string | undefined;
}

/**
 * Credentials in KubeRay's order: REDIS_USERNAME / REDIS_PASSWORD win over the URL's user and password
 * (KubeRay's Job: `os.getenv('REDIS_PASSWORD', parsed.password)`); flags win over both. An empty
 * value counts as unset, so an empty REDIS_PASSWORD does not erase a password given in the URL.
 */
export function resolveCredentials(address: RedisAddress, src: CredentialSources): { username?: string; password?: string } {
  const pick = (...values: (string | undefined)[]) => values.find((v) => v !== undefined && v !== '');
  const username = pick(src.flagUsername, src.envUsername, address.username);
  const password = pick(src.flagPassword, src.envPassword, address.password);
  const out: { username?: string; password?: string } = {};
  if (username !== undefined) out.username = username;
  if (password !== undefined) out.password = password;
  return out;
}
