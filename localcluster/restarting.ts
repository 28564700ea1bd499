// A component kept running the way a kubelet keeps a static pod: when it exits on its own it is started
// again, after a pause, with arguments made afresh (so a port taken meanwhile is chosen anew), at most
// `limit` times in a row (a start that ran `stableAfterMs` resets the count: a long session is not doomed
// by three exits hours apart); after that, or once stopped, `exited` resolves with the last exit.
//
// Why: kube-controller-manager exits by design when the API server is not healthy within 10 s of its
// start (CreateControllerContext: "failed to wait for apiserver being healthy"). Right after a node
// imports the Ray image, a loaded machine can be that slow: one CI run lost its node to it.
import { sleep } from '../kube/backoff.ts';
import type { Supervised } from './process.ts';

export type Exit = Awaited<Supervised['exited']>;

export interface Restarting {
  /** The process running now (the latest start). */
  current(): Supervised;
  /** How many times it was started again in all. */
  restarts(): number;
  /** Resolves once it is down for good: stopped, or exited after its last allowed restart. */
  exited: Promise<Exit>;
  /** Stops it (a restart under way included); no restart follows. */
  stop(graceMs?: number): Promise<void>;
}

export interface RestartOptions {
  /** Starts it again; a throw ends the restarts. */
  start: () => Promise<Supervised>;
  /** Restarts in a row before it is left down. */
  limit: number;
  pauseMs: number;
  /** A start that ran this long ends a row of failures (default 60 s). */
  stableAfterMs?: number;
  /** Told before each restart (attempt: its place in the current row, from 1), to say why. */
  onRestart?: (exit: Exit, attempt: number) => void;
}

export function keepRunning(first: Supervised, options: RestartOptions): Restarting {
  const stableAfterMs = options.stableAfterMs ?? 60_000;
  let current = first;
  let startedAt = Date.now();
  let restarts = 0;
  let inARow = 0;
  let stopped = false;
  let restarting: Promise<void> = Promise.resolve();
  let giveUp!: (exit: Exit) => void;
  const exited = new Promise<Exit>((resolve) => (giveUp = resolve));

  const watch = (proc: Supervised): void => {
    void proc.exited.then((exit) => {
      if (Date.now() - startedAt >= stableAfterMs) inARow = 0;
      if (stopped || inARow >= options.limit) return giveUp(exit);
      inARow++;
      restarts++;
      options.onRestart?.(exit, inARow);
      restarting = (async () => {
        await sleep(options.pauseMs);
        if (stopped) return giveUp(exit);
        try {
          current = await options.start();
          startedAt = Date.now();
        } catch {
          return giveUp(exit);
        }
        watch(current);
      })();
    });
  };
  watch(first);

  return {
    current: () => current,
    restarts: () => restarts,
    exited,
    stop: async (graceMs?: number) => {
      stopped = true;
      await restarting;
      await current.stop(graceMs);
      await exited;
    },
  };
}
