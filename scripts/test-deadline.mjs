// Preloaded into every test file's process by run-tests.mjs: gives each test (`test`, `it`, in a
// suite or not) a deadline unless it sets its own `timeout`, so a hang (a lost wake-up, a promise
// nobody resolves) fails that test by name instead of stalling the run. Node 20's `--test-timeout`
// bounds each *file* only (its child processes ignore it), and node:test has no other default.
// Subtests (`t.test`) inherit their parent's deadline. Suites are not wrapped: a suite's timeout
// bounds all of its tests together. The wrapped functions replace node:test's exports through
// syncBuiltinESMExports (the test files import them as ES modules).
import { createRequire, syncBuiltinESMExports } from "node:module";

const timeout = Number(process.env.SLUICE_TEST_TIMEOUT_MS);
if (Number.isInteger(timeout) && timeout > 0) {
  const nodeTest = createRequire(import.meta.url)("node:test");
  const withDeadline = (original) => {
    const wrapped = (...args) => {
      // The forms: (fn), (name, fn), (options, fn), (name, options, fn), (name), (name, options).
      const at = typeof args[0] === "string" ? 1 : 0;
      const given = args[at];
      if (given !== null && typeof given === "object") {
        if (given.timeout === undefined) args[at] = { ...given, timeout };
      } else args.splice(at, 0, { timeout });
      return original(...args);
    };
    wrapped.skip = original.skip;
    wrapped.todo = original.todo;
    wrapped.only = (...args) => withDeadline(original.only)(...args);
    return wrapped;
  };
  // A test that timed out may leave a socket or a timer behind, and Node 20's child keeps running
  // while anything is open (no --test-force-exit yet). This hook runs once every test of the file
  // has ended (before the file's own root-level `after` hooks, registered later): a process still
  // alive a minute later — its clean-up hung, or a handle was left open — says so and exits with
  // the runner's code, or 1 (a file that never ends is a failure, never a pass).
  nodeTest.after(() => {
    setTimeout(() => {
      process.stderr.write(
        "test-deadline: still running 60 s after the file's tests ended (a hung clean-up or an open handle); exiting\n",
      );
      process.exit(process.exitCode || 1);
    }, 60_000).unref();
  });
  nodeTest.test = withDeadline(nodeTest.test);
  nodeTest.it = withDeadline(nodeTest.it);
  syncBuiltinESMExports();
}
