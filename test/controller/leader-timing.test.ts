// Leader election timing, pure: which settings are safe, and when a leader renews and when it stops.
import t from 'tap';
import { DEFAULT_LEADER_TIMING, leaderTimingProblem, renewStep, type LeaderTiming } from '../../controller/runtime/leader.ts';

t.test('timing validation: renew deadline < lease duration, and > 1.2 x retry period', async (tt) => {
  const rows: Array<[string, LeaderTiming, RegExp | undefined]> = [
    ['defaults (client-go: 15 / 10 / 2 s)', DEFAULT_LEADER_TIMING, undefined],
    ['the tests\' short settings (3 / 2 / 0.4 s)', { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 400 }, undefined],
    ['renew deadline equal to the lease duration', { leaseDurationMs: 10_000, renewDeadlineMs: 10_000, retryPeriodMs: 2000 }, /renew deadline \(10000 ms\) must be shorter than the lease duration/],
    ['renew deadline longer than the lease duration', { leaseDurationMs: 5000, renewDeadlineMs: 8000, retryPeriodMs: 1000 }, /must be shorter than the lease duration/],
    ['retry period too close to the renew deadline', { leaseDurationMs: 15_000, renewDeadlineMs: 2400, retryPeriodMs: 2000 }, /must be longer than 1.2 x the retry period/],
    ['zero retry period', { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 0 }, /retry period must be positive/],
    ['negative lease duration', { leaseDurationMs: -1, renewDeadlineMs: 10_000, retryPeriodMs: 2000 }, /lease duration must be positive/],
    ['NaN renew deadline', { leaseDurationMs: 15_000, renewDeadlineMs: Number.NaN, retryPeriodMs: 2000 }, /renew deadline must be positive/],
  ];
  for (const [name, timing, problem] of rows) {
    const got = leaderTimingProblem(timing);
    if (problem) tt.match(got, problem, name);
    else tt.equal(got, undefined, name);
  }
});

t.test('renew step: renew every retry period until ONE deadline after the last successful renew', async (tt) => {
  const timing = { renewDeadlineMs: 10_000, retryPeriodMs: 2000 };
  const last = 1_000_000;
  const rows: Array<[string, number, ReturnType<typeof renewStep>]> = [
    ['just renewed: wait a retry period', last, { kind: 'renew', waitMs: 2000, deadline: last + 10_000 }],
    ['attempts failing for 7 s: same deadline', last + 7000, { kind: 'renew', waitMs: 2000, deadline: last + 10_000 }],
    ['1.5 s left: the last attempt comes at the deadline at the latest', last + 8500, { kind: 'renew', waitMs: 1500, deadline: last + 10_000 }],
    ['at the deadline: stop', last + 10_000, { kind: 'stop', deadline: last + 10_000 }],
    ['resumed long after the deadline (a paused process): stop, no request', last + 60_000, { kind: 'stop', deadline: last + 10_000 }],
  ];
  for (const [name, now, want] of rows) tt.same(renewStep(now, last, timing), want, name);
});

t.test('a leader whose every request hangs stops at its renew deadline, before the lease can expire', async (tt) => {
  // Requests hang until aborted at the deadline (the slow API server): play the loop on a clock.
  const rows: LeaderTiming[] = [DEFAULT_LEADER_TIMING, { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 400 }, { leaseDurationMs: 4000, renewDeadlineMs: 2000, retryPeriodMs: 1000 }];
  for (const timing of rows) {
    const last = 0;
    let now = last;
    let attempts = 0;
    for (;;) {
      const step = renewStep(now, last, timing);
      if (step.kind === 'stop') break;
      now += step.waitMs;
      if (now >= step.deadline) continue;
      attempts += 1;
      now = step.deadline; // the hanging GET is aborted at the deadline
    }
    tt.equal(now - last, timing.renewDeadlineMs, `${JSON.stringify(timing)}: leads ${now - last} ms after its last renew (${attempts} attempt(s))`);
    tt.ok(now - last < timing.leaseDurationMs, 'less than the lease duration the others wait');
  }
});
