/**
 * The priority class travels with the async context (DESIGN §1.1): `withPriority("bulk", fn)`
 * tags everything `fn` starts, including sub-tasks, the way seed 002 used a ContextVar.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { type Priority, parsePriority } from "../core/priority.js";

const storage = new AsyncLocalStorage<Priority>();

/** Runs `fn` with `cls` as the default priority of every acquire it (transitively) makes. */
export function withPriority<R>(cls: Priority, fn: () => R): R {
  return storage.run(parsePriority(cls, "withPriority(cls)"), fn);
}

/** The class set by the nearest enclosing `withPriority`, or undefined. */
export function currentPriority(): Priority | undefined {
  return storage.getStore();
}
