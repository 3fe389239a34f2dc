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
  // while anything is open (no --test-force-exit yet): once every test of the file has ended, a
  // process still alive after a grace period exits with the code the runner set.
  nodeTest.after(() => {
    setTimeout(() => process.exit(), 30_000).unref();
  });
  nodeTest.test = withDeadline(nodeTest.test);
  nodeTest.it = withDeadline(nodeTest.it);
  syncBuiltinESMExports();
}
