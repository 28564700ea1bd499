// Redis's own timing of commands: the `INFO commandstats` counters, parsed, and the server time spent
// between two snapshots (controller/redis-cleanup/meter.ts measures the cleanup's pipelines with them).

export interface CommandStat {
  calls: number;
  usec: number;
}

/** The `cmdstat_<name>:calls=N,usec=N,...` lines of `INFO commandstats`, by lower-case command name. */
export function parseCommandStats(info: string): Map<string, CommandStat> {
  const out = new Map<string, CommandStat>();
  for (const line of info.split(/\r?\n/)) {
    const m = /^cmdstat_([^:]+):(.*)$/.exec(line);
    if (!m) continue;
    const fields = new Map(m[2]!.split(',').map((kv) => kv.split('=') as [string, string]));
    const calls = Number(fields.get('calls'));
    const usec = Number(fields.get('usec'));
    if (Number.isFinite(calls) && Number.isFinite(usec)) out.set(m[1]!.toLowerCase(), { calls, usec });
  }
  return out;
}

/**
 * Microseconds spent on the commands `names` between two snapshots; undefined when a counter went back
 * (CONFIG RESETSTAT, a restarted server) or did not move at all (the commands were not counted).
 */
export function spentUs(before: Map<string, CommandStat>, after: Map<string, CommandStat>, names: readonly string[]): number | undefined {
  let usec = 0;
  let calls = 0;
  for (const name of names) {
    const a = after.get(name);
    if (!a) return undefined;
    const b = before.get(name) ?? { calls: 0, usec: 0 };
    if (a.calls < b.calls || a.usec < b.usec) return undefined;
    usec += a.usec - b.usec;
    calls += a.calls - b.calls;
  }
  return calls > 0 ? usec : undefined;
}
