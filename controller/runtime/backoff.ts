// Moved to src/backoff.ts; kept only for controller/runtime/leader.ts and bench/controller.ts, whose
// owners' branches change them in parallel. Delete once both import src/backoff.ts.
export { Backoff, backoffDelay, sleep, type BackoffOptions } from '../../src/backoff.ts';
