// Time that moves only when the test says, for code that takes `now` and `timers` (kube/backoff.ts).
import type { Timers } from '../../kube/backoff.ts';

export class FakeClock implements Timers {
  private at: number;
  private readonly timers = new Map<number, { due: number; fn: () => void }>();
  private nextId = 0;
  constructor(start = 1_000_000) {
    this.at = start;
  }
  readonly now = (): number => this.at;
  setTimer(fn: () => void, ms: number): number {
    this.timers.set(++this.nextId, { due: this.at + ms, fn });
    return this.nextId;
  }
  clearTimer(timer: unknown): void {
    this.timers.delete(timer as number);
  }
  /** When the earliest pending timer is due, or undefined when none is pending. */
  get nextDue(): number | undefined {
    let due: number | undefined;
    for (const t of this.timers.values()) if (due === undefined || t.due < due) due = t.due;
    return due;
  }
  /** Moves time on by `ms`, firing the timers that fall due, in order, each at its due time. */
  advance(ms: number): void {
    const until = this.at + ms;
    for (;;) {
      const due = [...this.timers].filter(([, t]) => t.due <= until).sort((a, b) => a[1].due - b[1].due || a[0] - b[0])[0];
      if (!due) break;
      this.timers.delete(due[0]);
      this.at = Math.max(this.at, due[1].due);
      due[1].fn();
    }
    this.at = until;
  }
  /** Moves time on by `ms` without firing anything (a paused process); the next `advance` fires what is overdue. */
  pause(ms: number): void {
    this.at += ms;
  }
}
