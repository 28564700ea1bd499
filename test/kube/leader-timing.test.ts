// Leader election timing: which settings are safe, and when a leader renews and when it stops. The
// loop cases run the real LeaderElector.run on a fake clock (its `now` and `timers`) against a Lease
// kept in memory, whose requests answer at once, late, with an error, or never (until aborted).
// Against the real kube-apiserver: test/kube/runtime-apiserver.test.ts (takeover, release,
// a taken Lease), write-fence.test.ts (mayWrite), test/controller/restart.test.ts.
import t from 'tap';
import { pino } from 'pino';
import {
  DEFAULT_LEADER_TIMING,
  LeaderElector,
  leaderTimingProblem,
  renewStep,
  type LeaderTiming,
  type LeaseClient,
} from '../../kube/leader.ts';
import { KubeApiError, resourcePath, type RequestOptionsLite, type ResourceRef } from '../../kube/client.ts';
import { FakeClock } from '../helpers/fake-clock.ts';

/** How the API server answers one request: after `afterMs` on the fake clock (with a 500 if `fail`), or never. */
type Answer = { afterMs: number; fail?: boolean } | 'hang';

/** A request the elector made, times relative to the start of the play. */
interface SentRequest {
  verb: 'GET' | 'POST' | 'PUT';
  at: number;
  timeoutMs: number | undefined;
  /** When its signal aborted it, if it did. */
  abortedAt?: number;
}

interface StoredLease {
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec?: Record<string, unknown>;
}

/**
 * One Lease in memory with the API server's rules (404, AlreadyExists, resourceVersion conflict).
 * While no Lease exists, requests answer at once (the campaign creates it); after that the requests
 * are answered as `renewals` says, in order, and the ones past the list never answer.
 */
class FakeLeaseApi implements LeaseClient {
  readonly requests: SentRequest[] = [];
  private lease: StoredLease | undefined;
  private version = 0;
  private readonly clock: FakeClock;
  private readonly start: number;
  private readonly renewals: Answer[];
  constructor(clock: FakeClock, renewals: Answer[]) {
    this.clock = clock;
    this.start = clock.now();
    this.renewals = [...renewals];
  }

  get<T = unknown>(ref: ResourceRef, options: RequestOptionsLite = {}): Promise<T> {
    return this.request('GET', ref, options, () => {
      if (!this.lease) throw new KubeApiError('GET', resourcePath(ref), 404, { reason: 'NotFound' }, '');
      return structuredClone(this.lease);
    });
  }

  create<T = unknown>(ref: ResourceRef, body: unknown, options: RequestOptionsLite = {}): Promise<T> {
    return this.request('POST', ref, options, () => {
      if (this.lease) throw new KubeApiError('POST', resourcePath(ref), 409, { reason: 'AlreadyExists' }, '');
      return this.store(body as StoredLease);
    });
  }

  replace<T = unknown>(ref: ResourceRef, body: unknown, options: RequestOptionsLite = {}): Promise<T> {
    return this.request('PUT', ref, options, () => {
      const lease = body as StoredLease;
      if (lease.metadata.resourceVersion !== this.lease?.metadata.resourceVersion)
        throw new KubeApiError('PUT', resourcePath(ref), 409, { reason: 'Conflict' }, '');
      return this.store(lease);
    });
  }

  private store(lease: StoredLease): StoredLease {
    this.lease = structuredClone({ ...lease, metadata: { ...lease.metadata, resourceVersion: String(++this.version) } });
    return structuredClone(this.lease);
  }

  private request<T>(verb: SentRequest['verb'], ref: ResourceRef, options: RequestOptionsLite, apply: () => StoredLease): Promise<T> {
    const sent: SentRequest = { verb, at: this.clock.now() - this.start, timeoutMs: options.timeoutMs };
    this.requests.push(sent);
    const answer: Answer = this.lease ? (this.renewals.shift() ?? 'hang') : { afterMs: 0 };
    return new Promise<T>((resolve, reject) => {
      const signal = options.signal;
      let timer: unknown;
      const onAbort = (): void => {
        this.clock.clearTimer(timer);
        sent.abortedAt = this.clock.now() - this.start;
        reject(signal?.reason);
      };
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      if (answer === 'hang') return;
      timer = this.clock.setTimer(() => {
        signal?.removeEventListener('abort', onAbort);
        try {
          if (answer.fail) throw new KubeApiError(verb, resourcePath(ref), 500, { reason: 'InternalError' }, '');
          resolve(apply() as T);
        } catch (err) {
          reject(err);
        }
      }, answer.afterMs);
    });
  }
}

/** What a played term of leadership showed, times relative to the start. */
interface Term {
  startedAt: number | undefined;
  stoppedAt: number | undefined;
  reason: string | undefined;
  /** The "stopped leading" log's leadingUntil: the renew deadline the elector kept. */
  leadingUntil: number | undefined;
  requests: SentRequest[];
  isLeaderAfter: boolean;
}

/**
 * Runs a fresh elector's `run` to its end on a fake clock: whenever nothing is left but waiting, the
 * clock moves to the next timer. `pauseMs`: once leading, the process is paused that long (time moves,
 * no timer fires) before its next timer. Fails when the elector waits with no timer pending.
 */
async function playTerm(timing: LeaderTiming, renewals: Answer[], pauseMs?: number): Promise<Term> {
  const clock = new FakeClock();
  const start = clock.now();
  const kube = new FakeLeaseApi(clock, renewals);
  const logs: Array<{ msg: string; leadingUntil?: string }> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line)) });
  const elector = new LeaderElector({
    kube,
    namespace: 'ns',
    name: 'lock',
    identity: 'me',
    logger,
    now: clock.now,
    timers: clock,
    ...timing,
  });
  const term: Term = {
    startedAt: undefined,
    stoppedAt: undefined,
    reason: undefined,
    leadingUntil: undefined,
    requests: kube.requests,
    isLeaderAfter: true,
  };
  let ended = false;
  const run = elector.run(new AbortController().signal, {
    onStartedLeading: () => (term.startedAt = clock.now() - start),
    onStoppedLeading: (reason) => {
      term.stoppedAt = clock.now() - start;
      term.reason = reason;
    },
  });
  void run.then(() => (ended = true));
  const settled = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
  for (let steps = 0; ; steps++) {
    await settled();
    if (ended) break;
    const due = clock.nextDue;
    if (due === undefined || steps > 10_000)
      throw new Error(`the elector waits for nothing at +${clock.now() - start} ms (no timer pending, run() not done)`);
    if (pauseMs !== undefined && term.startedAt !== undefined) {
      clock.pause(pauseMs);
      pauseMs = undefined;
    }
    clock.advance(Math.max(0, due - clock.now()));
  }
  await run;
  const stopped = logs.find((l) => l.msg === 'stopped leading');
  if (stopped?.leadingUntil) term.leadingUntil = Date.parse(stopped.leadingUntil) - start;
  term.isLeaderAfter = elector.isLeader();
  return term;
}

/** The requests made while leading, as [verb, at, timeoutMs] (the first two are the campaign's GET and POST). */
const renewRequests = (term: Term): Array<[string, number, number | undefined]> =>
  term.requests.slice(2).map((r) => [r.verb, r.at, r.timeoutMs]);

t.test('timing validation: renew deadline < lease duration, and > 1.2 x retry period', async (tt) => {
  const rows: Array<[string, LeaderTiming, RegExp | undefined]> = [
    ['defaults (client-go: 15 / 10 / 2 s)', DEFAULT_LEADER_TIMING, undefined],
    ["the tests' short settings (3 / 2 / 0.4 s)", { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 400 }, undefined],
    [
      'renew deadline equal to the lease duration',
      { leaseDurationMs: 10_000, renewDeadlineMs: 10_000, retryPeriodMs: 2000 },
      /renew deadline \(10000 ms\) must be shorter than the lease duration/,
    ],
    [
      'renew deadline longer than the lease duration',
      { leaseDurationMs: 5000, renewDeadlineMs: 8000, retryPeriodMs: 1000 },
      /must be shorter than the lease duration/,
    ],
    [
      'retry period too close to the renew deadline',
      { leaseDurationMs: 15_000, renewDeadlineMs: 2400, retryPeriodMs: 2000 },
      /must be longer than 1.2 x the retry period/,
    ],
    ['zero retry period', { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 0 }, /retry period must be positive/],
    ['negative lease duration', { leaseDurationMs: -1, renewDeadlineMs: 10_000, retryPeriodMs: 2000 }, /lease duration must be positive/],
    [
      'NaN renew deadline',
      { leaseDurationMs: 15_000, renewDeadlineMs: Number.NaN, retryPeriodMs: 2000 },
      /renew deadline must be positive/,
    ],
  ];
  const kube = new FakeLeaseApi(new FakeClock(), []);
  for (const [name, timing, problem] of rows) {
    const got = leaderTimingProblem(timing);
    if (problem) tt.match(got, problem, name);
    else tt.equal(got, undefined, name);
    // The elector refuses the same settings when constructed (the CLI exits 2 on it).
    const make = (): LeaderElector => new LeaderElector({ kube, namespace: 'ns', name: 'lock', identity: 'me', ...timing });
    if (problem) tt.throws(make, problem, `${name}: the elector refuses it`);
    else tt.doesNotThrow(make, `${name}: the elector accepts it`);
  }
});

t.test('renew step: renew every retry period until ONE deadline after the last successful renew', async (tt) => {
  const timing = { renewDeadlineMs: 10_000, retryPeriodMs: 2000 };
  const last = 1_000_000;
  const rows: Array<[string, number, ReturnType<typeof renewStep>]> = [
    ['just renewed: wait a retry period', last, { kind: 'renew', waitMs: 2000, deadline: last + 10_000 }],
    ['attempts failing for 7 s: same deadline', last + 7000, { kind: 'renew', waitMs: 2000, deadline: last + 10_000 }],
    [
      '1.5 s left: the last attempt comes at the deadline at the latest',
      last + 8500,
      { kind: 'renew', waitMs: 1500, deadline: last + 10_000 },
    ],
    ['at the deadline: stop', last + 10_000, { kind: 'stop', deadline: last + 10_000 }],
    ['resumed long after the deadline (a paused process): stop, no request', last + 60_000, { kind: 'stop', deadline: last + 10_000 }],
  ];
  for (const [name, now, want] of rows) tt.same(renewStep(now, last, timing), want, name);
});

t.test('the same renew steps, played through LeaderElector.run (15 / 10 / 2 s; it acquires the Lease at 0)', async (tt) => {
  const timing = DEFAULT_LEADER_TIMING;
  interface Row {
    name: string;
    /** How the requests after the acquisition are answered (past the list: never). */
    renewals: Answer[];
    pauseMs?: number;
    /** [verb, at, timeoutMs] of each request while leading: timeoutMs = the deadline - at. */
    requests: Array<[string, number, number]>;
    stoppedAt: number;
    leadingUntil: number;
  }
  const rows: Row[] = [
    {
      // The renew at 2000 takes 1 s; the next attempt comes a retry period after it ended, and the
      // deadline moves to the renew attempt's START + 10 s.
      name: 'just renewed: wait a retry period',
      renewals: [{ afterMs: 500 }, { afterMs: 500 }],
      requests: [
        ['GET', 2000, 8000],
        ['PUT', 2500, 7500],
        ['GET', 5000, 7000],
      ],
      stoppedAt: 12_000,
      leadingUntil: 12_000,
    },
    {
      name: 'attempts failing for 7 s: same deadline',
      renewals: [{ afterMs: 5000, fail: true }],
      requests: [
        ['GET', 2000, 8000],
        ['GET', 9000, 1000],
      ],
      stoppedAt: 10_000,
      leadingUntil: 10_000,
    },
    {
      name: '1.5 s left: the last attempt comes at the deadline at the latest',
      renewals: [{ afterMs: 6500, fail: true }],
      requests: [['GET', 2000, 8000]],
      stoppedAt: 10_000,
      leadingUntil: 10_000,
    },
    {
      name: 'at the deadline: stop',
      renewals: ['hang'],
      requests: [['GET', 2000, 8000]],
      stoppedAt: 10_000,
      leadingUntil: 10_000,
    },
    {
      name: 'resumed long after the deadline (a paused process): stop, no request',
      renewals: [],
      pauseMs: 60_000,
      requests: [],
      stoppedAt: 60_000,
      leadingUntil: 10_000,
    },
  ];
  for (const row of rows) {
    const term = await playTerm(timing, row.renewals, row.pauseMs);
    tt.equal(term.startedAt, 0, `${row.name}: leads from 0`);
    tt.same(renewRequests(term), row.requests, `${row.name}: the requests while leading (verb, at, time left to the deadline)`);
    tt.ok(
      term.requests.every((r) => r.at < row.leadingUntil),
      `${row.name}: no request at or after the deadline`,
    );
    tt.equal(term.stoppedAt, row.stoppedAt, `${row.name}: stops at ${row.stoppedAt}`);
    tt.match(term.reason, /renew deadline/, `${row.name}: because of the renew deadline`);
    tt.equal(term.leadingUntil, row.leadingUntil, `${row.name}: led until ${row.leadingUntil}`);
    tt.equal(term.isLeaderAfter, false, `${row.name}: isLeader() false afterwards`);
  }
});

t.test('a leader whose every request hangs stops at its renew deadline, before the lease can expire', async (tt) => {
  // Every renew request hangs until the elector aborts it at the deadline (the slow API server).
  const rows: LeaderTiming[] = [
    DEFAULT_LEADER_TIMING,
    { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 400 },
    { leaseDurationMs: 4000, renewDeadlineMs: 2000, retryPeriodMs: 1000 },
  ];
  for (const timing of rows) {
    const term = await playTerm(timing, []);
    const attempts = term.requests.slice(2);
    const led = (term.stoppedAt ?? Number.NaN) - (term.startedAt ?? Number.NaN);
    tt.equal(
      led,
      timing.renewDeadlineMs,
      `${JSON.stringify(timing)}: leads ${led} ms after its last renew (${attempts.length} attempt(s))`,
    );
    tt.ok(led < timing.leaseDurationMs, 'less than the lease duration the others wait');
    tt.ok(attempts.length > 0, 'it tried to renew');
    tt.same(
      attempts.map((r) => r.abortedAt),
      attempts.map(() => timing.renewDeadlineMs),
      'each hanging request aborted at the deadline',
    );
  }
});

t.test('mayAcquire: a candidate told no only observes a free Lease; told yes, it takes it', async (tt) => {
  const sent: string[] = [];
  const kube: LeaseClient = {
    get: async (ref) => {
      sent.push('GET');
      throw new KubeApiError('GET', resourcePath(ref), 404, { reason: 'NotFound' }, '');
    },
    create: async <T>(_ref: ResourceRef, body: unknown) => {
      sent.push('POST');
      return { ...(body as object), metadata: { ...(body as StoredLease).metadata, resourceVersion: '1' } } as T;
    },
    replace: async () => {
      throw new Error('not expected');
    },
  };
  let allowed = false;
  const elector = new LeaderElector({
    kube,
    namespace: 'ns',
    name: 'shard-0',
    identity: 'me',
    leaseDurationMs: 300,
    renewDeadlineMs: 200,
    retryPeriodMs: 50,
    mayAcquire: () => allowed,
  });
  const stop = new AbortController();
  let started = false;
  const run = elector.run(stop.signal, { onStartedLeading: () => (started = true), onStoppedLeading: () => undefined });
  while (sent.filter((v) => v === 'GET').length < 3) await new Promise((r) => setTimeout(r, 10));
  tt.notOk(sent.includes('POST'), 'no create while told no');
  tt.notOk(started || elector.isLeader(), 'not leading');
  allowed = true;
  while (!started) await new Promise((r) => setTimeout(r, 10));
  tt.ok(sent.includes('POST'), 'created once told yes');
  stop.abort();
  await run;
});
