// RayCronJob schedules: the syntax KubeRay and batch/v1 CronJob accept (robfig/cron's ParseStandard),
// evaluated by the `croner` library.
//
// Why croner (npm `croner`): no dependencies, maintained, it evaluates in IANA time zones through the
// runtime's own Intl data (no time-zone database of its own to go stale), it has a strict 5-field mode,
// and it combines day-of-month and day-of-week with OR as Vixie cron and robfig/cron do. cron-parser pulls
// in luxon for the same job.
//
// croner accepts MORE than robfig/cron (seconds and year fields, L, W, #, `?` meaning "now"), so
// this module checks the syntax itself first, exactly robfig's (below), rewrites names to numbers and
// `?` to `*`, and hands croner only digits, `*`, `,`, `-` and `/`. What KubeRay refuses, we refuse:
// - optional prefix `TZ=<zone> ` or `CRON_TZ=<zone> ` (not together with spec.timeZone: CronJob's rule);
// - `@yearly` `@annually` `@monthly` `@weekly` `@daily` `@midnight` `@hourly`, or five fields: minute
//   0-59, hour 0-23, day of month 1-31, month 1-12 or JAN-DEC, day of week 0-6 or SUN-SAT; each a
//   comma list of `*`, `?`, `N` or `N-M`, with an optional `/step` (`N/step` runs from N to the maximum).
// - `@every <Go duration>` (robfig's constant-delay schedule, e.g. `@every 1h30m`): every that long,
//   whole seconds, at least 1 s, counted from the series' anchor (the last run, or the creation), which is
//   how CronJob's and KubeRay's repeated Next() calls place its ticks. croner has no such form: ours.
// Times are UTC unless a zone is given (KubeRay uses its process's local zone, UTC in its image).
import { Cron } from 'croner';

/**
 * A schedule's ticks. `anchorMs` is where the series starts (the last run, or the creation): cron
 * expressions ignore it, `@every` counts from it.
 */
export interface Schedule {
  /** The first tick strictly after `afterMs`, or undefined if there is none. */
  next(anchorMs: number, afterMs: number): number | undefined;
  /** The latest tick in (anchorMs, atMs], or undefined if there is none. */
  latest(anchorMs: number, atMs: number): number | undefined;
}

export type ParsedSchedule = { ok: true; schedule: Schedule; timeZone: string } | { ok: false; message: string };

const MACROS: Readonly<Record<string, string>> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

interface Field {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
  /** The value of names[0]. */
  firstName?: number;
}

const FIELDS: readonly Field[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTHS, firstName: 1 },
  { name: 'day of week', min: 0, max: 6, names: DAYS, firstName: 0 },
];

function value(token: string, field: Field): number | string {
  const lower = token.toLowerCase();
  const named = field.names?.indexOf(lower) ?? -1;
  if (named >= 0) return named + (field.firstName ?? 0);
  if (!/^\d+$/.test(token)) return `${field.name}: ${JSON.stringify(token)} is not a number${field.names ? ' or a name' : ''}`;
  const n = Number(token);
  if (n < field.min || n > field.max) return `${field.name}: ${n} is outside ${field.min}-${field.max}`;
  return n;
}

/** One field, robfig's grammar; returns croner's form (numbers only) or the problem. */
function normalizeField(text: string, field: Field): { ok: true; text: string } | { ok: false; message: string } {
  const parts: string[] = [];
  for (const item of text.split(',')) {
    const [range = '', step, extra] = item.split('/');
    if (extra !== undefined || range === '') return { ok: false, message: `${field.name}: ${JSON.stringify(item)} is not a valid range` };
    if (step !== undefined && (!/^\d+$/.test(step) || Number(step) === 0)) {
      return { ok: false, message: `${field.name}: the step of ${JSON.stringify(item)} must be a positive number` };
    }
    let out: string;
    if (range === '*' || range === '?') {
      out = '*';
    } else {
      const [first = '', last, more] = range.split('-');
      if (more !== undefined) return { ok: false, message: `${field.name}: ${JSON.stringify(item)} is not a valid range` };
      const a = value(first, field);
      if (typeof a === 'string') return { ok: false, message: a };
      if (last === undefined) {
        // robfig: `N/step` means N-max/step.
        out = step === undefined ? String(a) : `${a}-${field.max}`;
      } else {
        const b = value(last, field);
        if (typeof b === 'string') return { ok: false, message: b };
        if (a > b) return { ok: false, message: `${field.name}: ${JSON.stringify(item)} starts after it ends` };
        out = `${a}-${b}`;
      }
    }
    parts.push(step === undefined ? out : `${out}/${Number(step)}`);
  }
  return { ok: true, text: parts.join(',') };
}

/** Whether the runtime knows the IANA zone (Go's time.LoadLocation names; not "+01:00"). */
export function isValidTimeZone(zone: string): boolean {
  if (zone === '' || /^[+-]/.test(zone)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/**
 * Parses spec.schedule (with spec.timeZone, KubeRay v1.7's field) into a Schedule, or says what is wrong
 * in words a user can act on.
 */
export function parseSchedule(schedule: string, timeZone?: string | null): ParsedSchedule {
  let text = schedule.trim();
  let zone = timeZone ?? undefined;
  const prefix = /^(?:CRON_TZ|TZ)=(\S*)\s+/.exec(text);
  if (prefix) {
    if (zone !== undefined) return { ok: false, message: 'cannot use both spec.timeZone and TZ or CRON_TZ in spec.schedule' };
    zone = prefix[1] ?? '';
    text = text.slice(prefix[0].length).trim();
  }
  zone = zone ?? 'UTC';
  if (!isValidTimeZone(zone)) return { ok: false, message: `unknown time zone ${JSON.stringify(zone)}` };
  if (text.startsWith('@every ')) {
    const ms = parseGoDuration(text.slice('@every '.length).trim());
    if (ms === undefined) return { ok: false, message: `invalid duration in ${JSON.stringify(text)} (a Go duration such as 90s or 1h30m)` };
    return { ok: true, timeZone: zone, schedule: everySchedule(ms) };
  }
  if (text.startsWith('@')) {
    // Case-sensitive, as robfig's parseDescriptor: `@DAILY` is refused by KubeRay and CronJob alike.
    const macro = MACROS[text];
    if (macro === undefined) return { ok: false, message: `unrecognized descriptor ${JSON.stringify(text)}` };
    text = macro;
  }
  const fields = text.split(/\s+/);
  if (fields.length !== 5) return { ok: false, message: `expected exactly 5 fields, found ${fields.length}: ${JSON.stringify(schedule)}` };
  const normalized: string[] = [];
  for (const [i, field] of FIELDS.entries()) {
    const r = normalizeField(fields[i] ?? '', field);
    if (!r.ok) return { ok: false, message: `invalid cron schedule ${JSON.stringify(schedule)}: ${r.message}` };
    normalized.push(r.text);
  }
  let cron: Cron;
  try {
    // domAndDow false: day of month OR day of week when both are restricted (robfig, Vixie cron).
    cron = new Cron(normalized.join(' '), { mode: '5-part', timezone: zone, domAndDow: false, sloppyRanges: true, paused: true });
  } catch (err) {
    return { ok: false, message: `invalid cron schedule ${JSON.stringify(schedule)}: ${err instanceof Error ? err.message : String(err)}` };
  }
  return {
    ok: true,
    timeZone: zone,
    schedule: {
      next: (_anchorMs, afterMs) => cron.nextRun(new Date(afterMs))?.getTime(),
      latest: (anchorMs, atMs) => {
        // croner's previousRuns is strictly before the reference second; ticks fall on whole minutes.
        const tick = cron.previousRuns(1, new Date(Math.floor(atMs / 1000) * 1000 + 1000))[0]?.getTime();
        return tick !== undefined && tick > anchorMs ? tick : undefined;
      },
    },
  };
}

const GO_DURATION_UNITS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** Go's time.ParseDuration, unsigned (e.g. "1h30m", "1.5h", "90s"), in ms; undefined when it is not one. */
export function parseGoDuration(text: string): number | undefined {
  if (text === '0') return 0;
  if (!/^(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$/.test(text)) return undefined;
  let total = 0;
  for (const [, number = '', unit = ''] of text.matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g)) {
    total += Number(number) * (GO_DURATION_UNITS[unit] ?? 0);
  }
  return total;
}

/** robfig's ConstantDelaySchedule: whole seconds, at least one; ticks at anchor + k * delay (anchor to the second). */
function everySchedule(durationMs: number): Schedule {
  const delay = Math.max(1000, Math.floor(durationMs / 1000) * 1000);
  const base = (anchorMs: number) => Math.floor(anchorMs / 1000) * 1000;
  return {
    next: (anchorMs, afterMs) => base(anchorMs) + Math.max(1, Math.floor((afterMs - base(anchorMs)) / delay) + 1) * delay,
    latest: (anchorMs, atMs) => {
      const k = Math.floor((atMs - base(anchorMs)) / delay);
      return k >= 1 ? base(anchorMs) + k * delay : undefined;
    },
  };
}
