// Preloaded into every test file's process by run-tests.mjs: gives each test (`test`, `it`, in a
// suite or not) a deadline unless it sets its own `timeout`, so a hang (a lost wake-up, a promise
// nobody resolves) fails that test by name instead of stalling the run. Node 20's `--test-timeout`
// bounds each *file* only (its child processes ignore it), and node:test has no other default.
// Subtests (`t.test`) inherit their parent's deadline. Suites are not wrapped: a suite's timeout
// bounds all of its tests together. The wrapped functions replace node:test's exports through
// syncBuiltinESMExports (the test files import them as ES modules).
import { createRequire, syncBuiltinESMExports } from "node:module";
import { fileURLToPath } from "node:url";
import { compileFunction } from "node:vm";

/** Per place in a test file: a function whose one call site is at that place (`fromCaller`). */
const callSites = new Map();

/**
 * Calls `fn(...args)` from a frame that claims the test file's own line and column. node:test
 * records where a test is written from its caller's frame, which would otherwise be the wrapper
 * below for every test ("test at scripts/test-deadline.mjs"): a failure must name its file. The
 * place is read from the stack (`depth` frames up: tsx maps it back to the .ts source).
 */
function fromCaller(fn, args, depth) {
  const frame = new Error().stack?.split("\n")[depth + 1]?.trim() ?? "";
  const m = /\(?((?:file:\/\/)?[^()\s]+?):(\d+):(\d+)\)?$/.exec(frame);
  if (m === null) return fn(...args);
  const file = m[1].startsWith("file://") ? fileURLToPath(m[1]) : m[1];
  const [line, column] = [Number(m[2]), Number(m[3])];
  const key = `${file}:${line}:${column}`;
  let call = callSites.get(key);
  if (call === undefined) {
    // The call below starts 7 characters into its line ("return "): moved back so it lands on the column.
    const columnOffset = Math.max(0, column - 1 - 7);
    call = compileFunction("return fn(...args)", ["fn", "args"], {
      filename: file,
      lineOffset: line - 1,
      columnOffset,
    });
    callSites.set(key, call);
  }
  return call(fn, args);
}

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
      return fromCaller(original, args, 2); // 0 fromCaller, 1 wrapped, 2 the test file
    };
    wrapped.skip = original.skip;
    wrapped.todo = original.todo;
    wrapped.only = (...args) => {
      const at = typeof args[0] === "string" ? 1 : 0;
      const given = args[at];
      if (given !== null && typeof given === "object") {
        if (given.timeout === undefined) args[at] = { ...given, timeout };
      } else args.splice(at, 0, { timeout });
      return fromCaller(original.only, args, 2);
    };
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
