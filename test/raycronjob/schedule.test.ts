// RayCronJob schedules: robfig/cron's ParseStandard syntax (what KubeRay and CronJob accept) over croner,
// ticks in UTC or a time zone, and refusals in words.
import t from 'tap';
import { isValidTimeZone, parseGoDuration, parseSchedule } from '../../src/raycronjob/schedule.ts';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

function ticks(schedule: string, from: string, n: number, timeZone?: string): string[] {
  const parsed = parseSchedule(schedule, timeZone);
  if (!parsed.ok) throw new Error(parsed.message);
  const out: string[] = [];
  let cursor = at(from);
  for (let i = 0; i < n; i++) {
    const next = parsed.schedule.next(at(from), cursor);
    if (next === undefined) break;
    out.push(new Date(next).toISOString());
    cursor = next;
  }
  return out;
}

t.test('five fields, macros, names, steps: the next ticks in UTC', async (t) => {
  const from = '2026-12-04T13:30:20Z';
  const cases: Array<[string, string[]]> = [
    ['* * * * *', ['2026-12-04T13:31:00.000Z', '2026-12-04T13:32:00.000Z']],
    ['*/5 * * * *', ['2026-12-04T13:35:00.000Z', '2026-12-04T13:40:00.000Z']],
    ['5/15 * * * *', ['2026-12-04T13:35:00.000Z', '2026-12-04T13:50:00.000Z']],
    ['0 9-10 * * *', ['2026-12-05T09:00:00.000Z', '2026-12-05T10:00:00.000Z']],
    ['0 0 * * SUN', ['2026-12-06T00:00:00.000Z', '2026-12-13T00:00:00.000Z']],
    ['0 0 * jan,Feb *', ['2027-01-01T00:00:00.000Z', '2027-01-02T00:00:00.000Z']],
    // Day of month OR day of week (robfig, Vixie cron): the 1st, or any Monday.
    ['0 0 1 * MON', ['2026-12-07T00:00:00.000Z', '2026-12-14T00:00:00.000Z']],
    ['0 0 ? * *', ['2026-12-05T00:00:00.000Z', '2026-12-06T00:00:00.000Z']],
    ['@hourly', ['2026-12-04T14:00:00.000Z', '2026-12-04T15:00:00.000Z']],
    ['@daily', ['2026-12-05T00:00:00.000Z', '2026-12-06T00:00:00.000Z']],
    ['@midnight', ['2026-12-05T00:00:00.000Z', '2026-12-06T00:00:00.000Z']],
    ['@weekly', ['2026-12-06T00:00:00.000Z', '2026-12-13T00:00:00.000Z']],
    ['@monthly', ['2027-01-01T00:00:00.000Z', '2027-02-01T00:00:00.000Z']],
    ['@yearly', ['2027-01-01T00:00:00.000Z', '2028-01-01T00:00:00.000Z']],
    ['@annually', ['2027-01-01T00:00:00.000Z', '2028-01-01T00:00:00.000Z']],
  ];
  for (const [schedule, want] of cases) t.same(ticks(schedule, from, 2), want, schedule);
});

t.test('next is strictly after; latest is at or before', async (t) => {
  const parsed = parseSchedule('*/10 * * * *');
  if (!parsed.ok) throw new Error(parsed.message);
  t.equal(parsed.timeZone, 'UTC', 'UTC unless a zone is given');
  const { next, latest } = parsed.schedule;
  const anchor = at('2026-12-04T13:00:00Z');
  t.equal(iso(next(anchor, at('2026-12-04T13:30:00Z'))), '2026-12-04T13:40:00.000Z');
  t.equal(iso(latest(anchor, at('2026-12-04T13:30:00Z'))), '2026-12-04T13:30:00.000Z');
  t.equal(iso(latest(anchor, at('2026-12-04T13:30:00.500Z'))), '2026-12-04T13:30:00.000Z');
  t.equal(iso(latest(anchor, at('2026-12-04T13:29:59.999Z'))), '2026-12-04T13:20:00.000Z');
  t.equal(iso(latest(anchor, at('2026-12-04T13:49:59Z'))), '2026-12-04T13:40:00.000Z');
  t.equal(latest(at('2026-12-04T13:40:00Z'), at('2026-12-04T13:49:59Z')), undefined, 'nothing after the anchor yet');
  t.equal(iso(latest(at('2026-12-04T13:39:59Z'), at('2026-12-04T13:49:59Z'))), '2026-12-04T13:40:00.000Z');
});

t.test('time zones: spec.timeZone (KubeRay v1.7) or a TZ= / CRON_TZ= prefix', async (t) => {
  t.same(ticks('0 9 * * *', '2026-12-04T00:00:00Z', 1, 'America/New_York'), ['2026-12-04T14:00:00.000Z'], 'EST is UTC-5');
  t.same(ticks('0 9 * * *', '2026-07-04T00:00:00Z', 1, 'America/New_York'), ['2026-07-04T13:00:00.000Z'], 'EDT is UTC-4');
  t.same(ticks('TZ=Asia/Tokyo 0 9 * * *', '2026-12-04T00:00:00Z', 1), ['2026-12-05T00:00:00.000Z']);
  t.same(ticks('CRON_TZ=Europe/Berlin 0 9 * * *', '2026-12-04T00:00:00Z', 1), ['2026-12-04T08:00:00.000Z']);
  // 02:30 on the night Berlin springs forward does not exist: the run is not lost.
  t.same(ticks('30 2 * * *', '2026-03-28T12:00:00Z', 1, 'Europe/Berlin'), ['2026-03-29T01:00:00.000Z']);
  const both = parseSchedule('TZ=UTC 0 9 * * *', 'Europe/Berlin');
  t.same(both, { ok: false, message: 'cannot use both spec.timeZone and TZ or CRON_TZ in spec.schedule' });
  t.ok(isValidTimeZone('Europe/Berlin'));
  t.notOk(isValidTimeZone('Mars/Olympus'));
  t.notOk(isValidTimeZone('+01:00'), 'offsets are not zone names (Go refuses them too)');
  t.notOk(isValidTimeZone(''));
});

t.test('refused, as robfig/cron refuses them (croner alone would accept several)', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['', /expected exactly 5 fields, found 1/],
    ['* * * *', /expected exactly 5 fields, found 4/],
    ['0 * * * * *', /expected exactly 5 fields, found 6/],
    ['60 * * * *', /minute: 60 is outside 0-59/],
    ['* 24 * * *', /hour: 24 is outside 0-23/],
    ['* * 0 * *', /day of month: 0 is outside 1-31/],
    ['* * * 13 *', /month: 13 is outside 1-12/],
    ['* * * * 7', /day of week: 7 is outside 0-6/],
    ['0 0 L * *', /day of month: "L" is not a number/],
    ['0 0 * * 1#2', /day of week: "1#2" is not a number or a name/],
    ['0 0 15W * *', /day of month: "15W" is not a number/],
    ['*/0 * * * *', /minute: the step of "\*\/0" must be a positive number/],
    ['5-1 * * * *', /minute: "5-1" starts after it ends/],
    ['1-2-3 * * * *', /minute: "1-2-3" is not a valid range/],
    ['@fortnightly', /unrecognized descriptor "@fortnightly"/],
    ['@DAILY', /unrecognized descriptor "@DAILY"/],
    ['@every 1x', /invalid duration in "@every 1x" \(a Go duration such as 90s or 1h30m\)/],
    ['@every -1h', /invalid duration/],
    ['@every', /unrecognized descriptor "@every"/],
    ['TZ=Mars/Olympus * * * * *', /unknown time zone "Mars\/Olympus"/],
  ];
  for (const [schedule, want] of cases) {
    const parsed = parseSchedule(schedule);
    t.equal(parsed.ok, false, `${JSON.stringify(schedule)} refused`);
    if (!parsed.ok) t.match(parsed.message, want, schedule);
  }
  const zone = parseSchedule('* * * * *', 'Mars/Olympus');
  t.same(zone, { ok: false, message: 'unknown time zone "Mars/Olympus"' });
});

t.test("@every <Go duration>: robfig's constant delay, counted from the anchor (last run or creation)", async (t) => {
  const durations: Array<[string, number | undefined]> = [
    ['90s', 90_000],
    ['1h30m', 5_400_000],
    ['1.5h', 5_400_000],
    ['.5m', 30_000],
    ['1m30s500ms', 90_500],
    ['2us', 0.002],
    ['0', 0],
    ['1', undefined],
    ['1d', undefined],
    ['h', undefined],
    ['', undefined],
  ];
  for (const [text, ms] of durations) t.equal(parseGoDuration(text), ms, JSON.stringify(text));
  const parsed = parseSchedule('@every 1h30m');
  if (!parsed.ok) throw new Error(parsed.message);
  const { next, latest } = parsed.schedule;
  const created = at('2026-12-04T10:00:30.700Z');
  t.equal(iso(next(created, created)), '2026-12-04T11:30:30.000Z', 'first tick: anchor (to the second) + 1h30m');
  t.equal(latest(created, at('2026-12-04T11:30:29Z')), undefined);
  t.equal(iso(latest(created, at('2026-12-04T11:30:30Z'))), '2026-12-04T11:30:30.000Z');
  t.equal(iso(latest(created, at('2026-12-04T16:00:00Z'))), '2026-12-04T14:30:30.000Z', 'downtime: the latest of the series');
  t.equal(iso(next(created, at('2026-12-04T16:00:00Z'))), '2026-12-04T16:00:30.000Z');
  const subsecond = parseSchedule('@every 10ms');
  t.equal(subsecond.ok && iso(subsecond.schedule.next(created, created)), '2026-12-04T10:00:31.000Z', 'at least one second');
  t.match(parseSchedule('TZ=Europe/Berlin @every 5m'), { ok: true, timeZone: 'Europe/Berlin' }, 'a zone changes nothing for it');
});
