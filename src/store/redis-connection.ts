/**
 * Opens the fleet store's connections from its URL. One place decides what a URL means, so the
 * store itself does not care whether it talks to one server, a Sentinel group or a Cluster.
 */
import { Redis, type RedisOptions } from "ioredis";

/** What the fleet store needs of a connection (a single server's client; a Cluster's has the same). */
export type FleetConnection = Redis;

/** A connection to the Redis that `url` names, with `options` (lazy: call `connect()`). */
export function connectRedis(url: string, options: RedisOptions): FleetConnection {
  return new Redis(url, options);
}
