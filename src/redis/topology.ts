// Reading what kind of Redis an address points at, as Ray does (redis_context.cc): a Sentinel answers
// INFO with redis_mode:sentinel and lists its masters; a cluster node says redis_mode:cluster. Pure.

export type RedisMode = 'standalone' | 'sentinel' | 'cluster';
export type ModeChoice = RedisMode | 'auto';

export const MODE_CHOICES: readonly ModeChoice[] = ['auto', 'standalone', 'sentinel', 'cluster'];

/** `field:value` lines of an INFO reply. */
export function parseInfo(info: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of info.split(/\r?\n/)) {
    if (line === '' || line.startsWith('#')) continue;
    const colon = line.indexOf(':');
    if (colon > 0) out.set(line.slice(0, colon), line.slice(colon + 1).trim());
  }
  return out;
}

/** The server's mode from `INFO server`; older servers without redis_mode are standalone. */
export function modeFromInfo(info: string): RedisMode {
  const mode = parseInfo(info).get('redis_mode');
  return mode === 'sentinel' || mode === 'cluster' ? mode : 'standalone';
}

export interface SentinelMaster {
  name: string;
  ip?: string | undefined;
  port?: number | undefined;
  flags?: string | undefined;
}

/** SENTINEL MASTERS in RESP2: an array of flat [field, value, ...] arrays (RESP3 maps accepted too). */
export function parseSentinelMasters(reply: unknown): SentinelMaster[] {
  if (!Array.isArray(reply)) return [];
  const out: SentinelMaster[] = [];
  for (const entry of reply) {
    const fields = new Map<string, string>();
    if (Array.isArray(entry)) {
      for (let i = 0; i + 1 < entry.length; i += 2) fields.set(String(entry[i]), String(entry[i + 1]));
    } else if (entry && typeof entry === 'object') {
      for (const [k, v] of Object.entries(entry as Record<string, unknown>)) fields.set(k, String(v));
    }
    const name = fields.get('name');
    if (name === undefined) continue;
    const port = fields.get('port');
    out.push({ name, ip: fields.get('ip'), port: port === undefined ? undefined : Number(port), flags: fields.get('flags') });
  }
  return out;
}

/**
 * Which master to clean behind a Sentinel: the one asked for, else the only one (Ray requires exactly one,
 * redis_context.cc ConnectRedisSentinel). Returns an error text otherwise.
 */
export function chooseSentinelMaster(masters: SentinelMaster[], wanted: string | undefined): { name: string } | { error: string } {
  if (wanted !== undefined && wanted !== '') {
    return masters.some((m) => m.name === wanted)
      ? { name: wanted }
      : {
          error: `the Sentinel does not monitor a master named ${JSON.stringify(wanted)} (it monitors: ${masters.map((m) => m.name).join(', ') || 'none'})`,
        };
  }
  if (masters.length === 1) return { name: masters[0]!.name };
  if (masters.length === 0) return { error: 'the Sentinel monitors no master' };
  return {
    error: `the Sentinel monitors ${masters.length} masters (${masters.map((m) => m.name).join(', ')}): choose one with --sentinel-master`,
  };
}
