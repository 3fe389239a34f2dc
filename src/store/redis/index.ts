/**
 * `sluice/redis`: the fleet store for library users. Several processes that each run a Governor
 * on a `RedisStore` with the same URL and prefix share every budget, as gateway replicas with
 * `store: redis://…` do (docs/fleet.md). Kept apart from `sluice` so that a process on the
 * memory store never loads ioredis.
 *
 * ```ts
 * import { Governor } from "sluice";
 * import { RedisStore } from "sluice/redis";
 *
 * const store = new RedisStore({ url: "redis://:PASSWORD@redis.internal:6379/0" });
 * await store.start(); // connects and registers this replica; rejects if Redis cannot be reached
 * const gov = new Governor({ store, lanes: { chat: { limit: 32 } } });
 * ```
 */
export type { FleetOptions } from "../../core/fleet-options.js";
export type { FleetStore } from "../../core/store.js";
export { redactStoreUrl } from "./connection.js";
export type { FleetStatus, OnStoreError, RedisStoreOptions } from "./options.js";
export { RedisStore } from "./redis-store.js";
export { ScriptReplyError } from "./script-calls.js";
