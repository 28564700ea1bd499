// A part the suite needs (Ray, helm, KubeRay's operator, the images' tools) that is missing FAILS the
// tests that need it, naming the command that installs it; it never skips them. README's test command
// (`bash tools/setup.sh --node && npm test && npm run test:cluster`) installs every part, so a skip
// would only hide that a run proved less than it says.

/** The set-up command of README's test line. */
export const SETUP_COMMAND = 'bash tools/setup.sh --node';

/** The failure message for a missing part: what is missing, and what installs it. */
export function missingPart(reason: string): string {
  return `${reason} (a missing part fails, it does not skip: run ${SETUP_COMMAND}, as README's test command does)`;
}
