/**
 * The helpers shared by tests in more than one folder, from one import path (test/helpers/index.js):
 * waiting without asserting on time (turns.ts), what goes over HTTP (bodies.ts), sluice or
 * another program run as a process (process.ts), and the repository's files (tree.ts). A helper used by one folder's tests only sits in
 * that folder (test/gateway/helpers.ts: the gateway stack; test/store/redis-helpers.ts: Redis;
 * test/pods/helpers.ts: a Governor rig on a ManualClock), and takes what it shares from here.
 * docs/architecture.md § Tests has the rule.
 */
export * from "./bodies.js";
export * from "./process.js";
export * from "./tree.js";
export * from "./turns.js";
