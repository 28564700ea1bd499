// Which Redis server an address names, as far as its text tells: "the same Redis" of the storage-namespace
// ownership rule (src/gcsft/claims.ts), and the name a pod of the cluster's namespace resolves (the
// controller's in-process cleanup, src/gcsft/inprocess.ts). Pure: no DNS, no connection.
//
// A pod resolves a name through its resolv.conf search list (`<ns>.svc.<domain> svc.<domain> <domain>`),
// so one Service has several spellings. The rule (serviceHost), for a name WITHOUT a trailing dot:
//   `x`            -> `x.<cluster namespace>.svc`   (Service x in the cluster's own namespace)
//   `x.y`          -> `x.y.svc`                    (Service x in namespace y)
//   `x.y.svc`      -> `x.y.svc`
//   `x.y.svc.<d>`  -> `x.y.svc` for the identity    (any cluster domain: one cluster has one)
//   anything else  -> itself (an external name, `localhost`, an IP)
// The identity (redisIdentity) is then `host:port` with: the first entry of a comma list (what KubeRay's Job and
// Ray use); the scheme (redis / rediss: TLS changes the transport, not the server), user, password and database
// index dropped; port 6379 by default; the host lower-cased, without a trailing dot, IPs in canonical form,
// the loopback spellings (`localhost`, 127.0.0.0/8, ::1) as `localhost`.
//
// What is NOT caught (two spellings of one server that compare different, so admission lets the second
// cluster in and the cleanup guard does not see it): two DNS names of one server (a CNAME, an ExternalName
// Service, a Service and its headless twin, `x.y` meaning pod x of headless Service y in the cluster's own
// namespace rather than Service x in namespace y); an IP and a name (a ClusterIP, a pod IP); different
// Sentinels of one Sentinel group, or a Sentinel and the master it monitors (Ray asks the Sentinel at the
// address for its only master: the master is not in the text); different seed nodes of one Redis Cluster; a
// second entry of a comma list. Loopback in two pods is counted as ONE server (a per-pod Redis sidecar looks
// shared: the safe way to be wrong, and the default storage namespaces are UIDs anyway). A
// scheme Ray refuses (`redis-sentinel://`, ...) has no identity: such a head never writes. The forms KubeRay's
// cleanup reads but Ray 2.60's head refuses (a database path `/0`, user information in the URL, no port: its
// parse_address fails and the head exits, seen under `raykeeper dev`) still get one: a cluster that cannot
// start then still counts as a claim, the safe way to be wrong.
import { isIP } from 'node:net';
import { AddressError, formatHostPort, mapAddressHost, parseRedisAddress } from './address.ts';

/** Whether a host is a name to qualify (not an IP literal, not absolute). */
function isRelativeName(host: string): boolean {
  return isIP(host) === 0 && !host.endsWith('.') && host !== '' && host.toLowerCase() !== 'localhost';
}

/**
 * The name a pod in `clusterNamespace` resolves `host` to, written so that any resolver with `svc.<domain>`
 * or `<domain>` in its search list (every pod's) reaches the same Service: see the rule above. Names it
 * does not qualify are returned as they are.
 */
export function serviceHost(host: string, clusterNamespace: string): string {
  if (!isRelativeName(host)) return host;
  const labels = host.split('.');
  if (labels.length === 1) return `${host}.${clusterNamespace}.svc`;
  if (labels.length === 2) return `${host}.svc`;
  return host;
}

/**
 * The name to dial for `host` from a pod of ANOTHER namespace so that it reaches what a pod of
 * `clusterNamespace` reaches: only a one-label name changes (`redis` -> `redis.<ns>`, which every pod's
 * `svc.<domain>` search entry completes). Longer names resolve the same from every namespace and are kept
 * as written: `redis.corp` may be an external name, and `redis.corp.svc` would not resolve.
 */
export function asSeenFromNamespace(host: string, clusterNamespace: string): string {
  return isRelativeName(host) && !host.includes('.') ? `${host}.${clusterNamespace}` : host;
}

/** A whole Redis address with its host as seen from `clusterNamespace` (asSeenFromNamespace); unparsable: as written. */
export function addressAsSeenFromNamespace(address: string, clusterNamespace: string): string {
  if (clusterNamespace === '') return address;
  try {
    return mapAddressHost(address, (host) => asSeenFromNamespace(host, clusterNamespace));
  } catch (err) {
    if (err instanceof AddressError) return address;
    throw err;
  }
}

/** An IPv6 literal in its shortest form; one WHATWG URL does not take (a zone id: `fe80::1%eth0`) lower-cased as it is. */
function canonicalIpv6(host: string): string {
  try {
    return new URL(`http://[${host}]`).hostname.slice(1, -1);
  } catch {
    return host.toLowerCase();
  }
}

/**
 * `host` as an identity: lower case, no trailing dot, in-cluster names without their cluster domain, IPs
 * canonical, every loopback spelling (`localhost`, 127.0.0.0/8, ::1) one: `localhost`.
 */
function canonicalHost(host: string, clusterNamespace: string): string {
  const ip = isIP(host);
  if (ip === 4) return host.startsWith('127.') ? 'localhost' : host;
  if (ip === 6) {
    const canonical = canonicalIpv6(host);
    const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
    if (mapped) {
      const n = (Number.parseInt(mapped[1]!, 16) << 16) | Number.parseInt(mapped[2]!, 16);
      return canonicalHost([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.'), clusterNamespace);
    }
    return canonical === '::1' ? 'localhost' : canonical;
  }
  if (host.toLowerCase().replace(/\.$/, '') === 'localhost') return 'localhost';
  const name = serviceHost(host.toLowerCase().replace(/\.$/, ''), clusterNamespace.toLowerCase());
  const labels = name.split('.');
  // `x.y.svc.cluster.local` and `x.y.svc` name one Service.
  if (labels.length > 3 && labels[2] === 'svc') return labels.slice(0, 3).join('.');
  return name;
}

/**
 * The identity of the Redis server `address` names for a pod in `clusterNamespace`, e.g.
 * `redis.team-a.svc:6379`; undefined when the address does not parse (such a head cannot write).
 */
export function redisIdentity(address: string, clusterNamespace: string): string | undefined {
  try {
    const a = parseRedisAddress(address);
    return formatHostPort(canonicalHost(a.host, clusterNamespace), a.port);
  } catch (err) {
    if (err instanceof AddressError) return undefined;
    throw err;
  }
}
