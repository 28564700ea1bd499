// What one run of one KubeRay e2e test says, from its `go test -json` stream (cmd/test2json events):
// the result and the first line that says why it failed. Pure: the runner hands in the text.
//
// Result, in this order:
//   - the test's own pass / fail / skip event;
//   - no event of its own and a failing parent or package: fail (the parent's set-up failed before the
//     subtest ran: namespace, cluster, a timeout panic or a crash);
//   - no event of its own and nothing failed: missing (the binary has no such test: a selection error).
// The failure line: the first failure message of the stream (a gomega / testify failure, a panic, a
// timeout), squashed onto one line with its continuation lines; a subtest's own "subtest may have
// called FailNow on a parent test" (KubeRay's subtests fail through the parent's gomega) only when
// there is nothing better. LogWithTimestamp lines ("file.go:NN: [<RFC 3339 time>] ...") are progress.

export interface GoTestEvent {
  Time?: string;
  Action: string;
  Package?: string;
  Test?: string;
  Elapsed?: number;
  Output?: string;
}

export type Result = 'pass' | 'fail' | 'skip' | 'missing';

export interface Outcome {
  result: Result;
  /** The test's own elapsed seconds (go test), when it reported them. */
  elapsed?: number;
  /** One line: why it failed (or was skipped). */
  reason?: string;
}

/** Parses a test2json stream; lines that are not JSON events (a crash's stderr) become output events. */
export function parseEvents(text: string): GoTestEvent[] {
  const out: GoTestEvent[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const e = JSON.parse(line) as GoTestEvent;
      if (typeof e.Action === 'string') {
        out.push(e);
        continue;
      }
    } catch {
      // not an event
    }
    out.push({ Action: 'output', Output: `${line}\n` });
  }
  return out;
}

const ENDS = new Set(['pass', 'fail', 'skip']);
/** "    rayjob_test.go:56: message" (t.Log / t.Fatal from a file:line). */
const LOCATED = /^\s*([\w.-]+\.go:\d+): ?(.*)$/;
const TIMESTAMPED = /^\[\d{4}-\d\d-\d\dT/;
const FAILNOW_ON_PARENT = /subtest may have called FailNow on a parent test/;
/** Lines that start a failure report without a file:line. */
const UNLOCATED = /^(panic: |fatal error: |\s*\[FAILED\]|\s*test timed out)/;
const MAX_REASON = 300;

function squash(lines: string[]): string {
  const text = lines
    .map((l) => l.trim())
    // testify's report: the trace (paths) and the test's name say nothing the table does not
    .filter((l) => !/^(Error Trace|Test|Messages):/.test(l) && !/^\S+\.go:\d+$/.test(l))
    .filter((l) => l !== '')
    .join(' ')
    .replace(/\s+/g, ' ');
  return text.length > MAX_REASON ? `${text.slice(0, MAX_REASON - 1)}…` : text;
}

/**
 * The first failure message in the output: a located line that is not progress, with the more-indented
 * lines that continue it; else the first unlocated failure line (panic, timeout).
 */
export function firstFailure(events: GoTestEvent[]): string | undefined {
  const lines = events
    .filter((e) => e.Action === 'output' && e.Output !== undefined)
    .flatMap((e) => e.Output!.replace(/\n$/, '').split('\n'));
  const candidates: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const m = LOCATED.exec(line);
    if (m) {
      if (TIMESTAMPED.test(m[2]!)) continue;
      const indent = /^\s*/.exec(line)![0].length;
      const body = [`${m[1]}: ${m[2]}`];
      for (let j = i + 1; j < lines.length && j < i + 40; j++) {
        const next = lines[j]!;
        if (/^\s*$/.test(next)) continue;
        if (/^\s*/.exec(next)![0].length <= indent) break;
        body.push(next);
      }
      candidates.push(squash(body));
    } else if (UNLOCATED.test(line)) {
      candidates.push(squash(lines.slice(i, i + 3)));
    }
  }
  return candidates.find((c) => !FAILNOW_ON_PARENT.test(c)) ?? candidates[0];
}

/** The outcome of `test` (a full name, "TestX/Sub") in one run's events. */
export function outcome(events: GoTestEvent[], test: string): Outcome {
  const own = events.find((e) => e.Test === test && ENDS.has(e.Action));
  const levels = test.split('/');
  const ancestors = new Set(levels.slice(0, -1).map((_, i) => levels.slice(0, i + 1).join('/')));
  if (own) {
    const result = own.Action as Result;
    if (result === 'pass') return { result, elapsed: own.Elapsed };
    const reason =
      result === 'skip'
        ? squash(events.filter((e) => e.Test === test && e.Action === 'output').map((e) => e.Output ?? ''))
        : (firstFailure(events) ?? 'failed without a message');
    return { result, elapsed: own.Elapsed, reason };
  }
  const failed = events.some((e) => e.Action === 'fail' && (e.Test === undefined || ancestors.has(e.Test)));
  if (failed) return { result: 'fail', reason: firstFailure(events) ?? 'its parent test or the binary failed before it ran' };
  return { result: 'missing', reason: 'the binary ran no test of this name' };
}
