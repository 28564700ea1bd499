// RAY_REDIS_ADDRESS as KubeRay's cleanup Job reads it: the first entry of a comma-separated list,
// `host:port`, `host`, `[ipv6]:port`, `redis://` or `rediss://` URLs with optional user and password
// (an entry without a scheme but with `user:pass@` is a redis:// URL, as KubeRay prefixes it).
// Pure: no I/O. Nothing here ever puts a password into an error message: the user information is
// split off first (at the LAST '@', so an unencoded '#', '?', '/' or '@' in a password stays in it),
// and when an address holds an '@' at all, errors name the faulty part without quoting any text.
// redactAddress() is the ONE way an address is printed (events, logs, commands, errors, metrics).
import { isIP, isIPv6 } from 'node:net';

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

/** Quotes a piece of the address for an error, or nothing when the address may hold a secret. */
type Echo = (text: string) => string;
const quoted: Echo = (text) => ` ${JSON.stringify(text)}`;
const silent: Echo = () => '';

function parsePort(raw: string, what: string, echo: Echo): number {
  if (!/^\d{1,5}$/.test(raw)) throw new AddressError(`${what}: port${echo(raw)} is not a number`);
  const port = Number(raw);
  if (port < 1 || port > 65535) throw new AddressError(`${what}: port ${port} is out of range 1-65535`);
  return port;
}

function checkHost(host: string, what: string, echo: Echo): string {
  if (host === '') throw new AddressError(`${what}: host is empty`);
  if (/[\s/@?#]/.test(host)) throw new AddressError(`${what}: host${echo(host)} is not valid`);
  return host;
}

/** `host`, `host:port`, `[v6]`, `[v6]:port`, or an unbracketed IPv6 literal (port then needs brackets). */
function parseHostPort(entry: string, what: string, echo: Echo): { host: string; port: number } {
  if (entry.startsWith('[')) {
    const close = entry.indexOf(']');
    if (close < 0) throw new AddressError(`${what}: missing ']' after IPv6 address`);
    const host = entry.slice(1, close);
    if (!isIPv6(host)) throw new AddressError(`${what}:${echo(host) || ' the bracketed host'} is not an IPv6 address`);
    const rest = entry.slice(close + 1);
    if (rest === '') return { host, port: DEFAULT_REDIS_PORT };
    if (!rest.startsWith(':')) throw new AddressError(`${what}: unexpected text after ']'`);
    return { host, port: parsePort(rest.slice(1), what, echo) };
  }
  const colons = entry.split(':').length - 1;
  if (colons === 0) return { host: checkHost(entry, what, echo), port: DEFAULT_REDIS_PORT };
  if (colons === 1) {
    const [host, port] = entry.split(':') as [string, string];
    return { host: checkHost(host, what, echo), port: parsePort(port, what, echo) };
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

/**
 * Parses a URL without the WHATWG parser so that a malformed one can never echo its password. The user
 * information goes first, up to the LAST '@' of the entry: a password may hold unencoded '#', '?', '/'
 * or '@' (`redis://default:S3cr3t#1@host:6379`), a host never holds '@'.
 */
function parseUrl(entry: string, scheme: 'redis' | 'rediss', prefixLength: number, echo: Echo): RedisAddress {
  const what = `${scheme}:// address`;
  const warnings: string[] = [];
  let rest = entry.slice(prefixLength);
  let username: string | undefined;
  let password: string | undefined;
  const at = rest.lastIndexOf('@');
  let userinfo: string | undefined;
  if (at >= 0) {
    userinfo = rest.slice(0, at);
    rest = rest.slice(at + 1);
  }
  // The host part ends at the first '/', '?' or '#'.
  const end = rest.search(/[/?#]/);
  const tail = end < 0 ? '' : rest.slice(end);
  rest = end < 0 ? rest : rest.slice(0, end);
  if (userinfo !== undefined) {
    const colon = userinfo.indexOf(':');
    const user = colon < 0 ? userinfo : userinfo.slice(0, colon);
    if (user !== '') username = decode(user, what);
    if (colon >= 0) {
      const pass = userinfo.slice(colon + 1);
      if (pass !== '') password = decode(pass, what);
    }
  }
  const { host, port } = parseHostPort(rest, what, echo);
  const path = tail.split(/[?#]/)[0] ?? '';
  if (path !== '' && path !== '/' && path !== '/0') {
    warnings.push(`ignoring database${echo(path.slice(1)) || ' index'} in the address: Ray's GCS always uses database 0`);
  }
  if (/[?]/.test(tail)) warnings.push('ignoring query parameters in the address');
  const out: RedisAddress = { host, port, tls: scheme === 'rediss', warnings };
  if (username !== undefined) out.username = username;
  if (password !== undefined) out.password = password;
  return out;
}

/** Parses RAY_REDIS_ADDRESS (or a flag value). Throws AddressError with a one-line, password-free reason. */
export function parseRedisAddress(raw: string): RedisAddress {
  // KubeRay's Job takes `split(",")[0]`; a ',' inside a password is cut there too, so errors stay silent.
  const echo = raw.includes('@') ? silent : quoted;
  const first = raw.split(',')[0]?.trim() ?? '';
  if (first === '') throw new AddressError('Redis address is empty');
  const lower = first.toLowerCase();
  if (lower.startsWith('rediss://')) return parseUrl(first, 'rediss', 'rediss://'.length, echo);
  if (lower.startsWith('redis://')) return parseUrl(first, 'redis', 'redis://'.length, echo);
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(first);
  if (scheme) throw new AddressError(`unsupported scheme${echo(scheme[1] ?? '')}: use redis:// or rediss://`);
  // `user:pass@host:port` without a scheme: KubeRay prefixes redis://, so it is a URL.
  if (first.includes('@')) return parseUrl(first, 'redis', 0, echo);
  return { ...parseHostPort(first, 'Redis address', echo), tls: false, warnings: [] };
}

/**
 * An address as it may be printed anywhere (events, logs, the "run by hand" command, errors, --list,
 * metrics labels): everything up to the last '@' after the scheme becomes `***`, so no user name or
 * password can show, whatever characters they hold (`redis://u:p,w#d@h:1` -> `redis://***@h:1`).
 * Addresses without '@' are returned unchanged. `{ drop: true }` removes the user information instead
 * (`redis://h:1`), for a command a person runs: the credentials then go in REDIS_USERNAME / REDIS_PASSWORD.
 */
export function redactAddress(raw: string, options: { drop?: boolean } = {}): string {
  const at = raw.lastIndexOf('@');
  if (at < 0) return raw;
  const scheme = /^\s*[a-z][a-z0-9+.-]*:\/\//i.exec(raw)?.[0]?.trim() ?? '';
  return options.drop ? `${scheme || 'redis://'}${raw.slice(at + 1)}` : `${scheme}***${raw.slice(at)}`;
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

/**
 * The address's first entry (the one KubeRay's Job and our cleanup use) with its host name replaced by
 * `rename(host)`; scheme, user information, port and path are kept as written (so a password is never
 * decoded and re-encoded). IP literals are never passed to `rename`. Throws AddressError as parseRedisAddress.
 */
export function mapAddressHost(raw: string, rename: (host: string) => string): string {
  const parsed = parseRedisAddress(raw);
  if (isIP(parsed.host) !== 0) return raw.split(',')[0]?.trim() ?? '';
  const first = raw.split(',')[0]?.trim() ?? '';
  const scheme = /^rediss?:\/\//i.exec(first)?.[0] ?? '';
  const body = first.slice(scheme.length);
  const url = scheme !== '' || body.includes('@');
  const at = url ? body.lastIndexOf('@') : -1;
  const userinfo = body.slice(0, at + 1);
  const rest = body.slice(at + 1);
  const end = url ? rest.search(/[/?#]/) : -1;
  const hostPort = end < 0 ? rest : rest.slice(0, end);
  const tail = end < 0 ? '' : rest.slice(end);
  const colon = hostPort.indexOf(':');
  const port = colon < 0 ? '' : hostPort.slice(colon);
  return `${scheme}${userinfo}${rename(parsed.host)}${port}${tail}`;
}
