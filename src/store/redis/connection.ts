/**
 * Opens the fleet store's connections from its URL. One place decides what a URL means, so the
 * store itself does not care whether it talks to one server, a Sentinel group or a Cluster.
 *
 * The forms (docs/fleet-connections.md):
 *   redis://[[user]:password@]host:port[/db]        one server (rediss:// for TLS)
 *   redis+cluster://[[user]:password@]h1:p1[,h2:p2…]  a Redis Cluster: seed nodes, the rest is discovered
 *   redis+sentinel://[[user]:password@]s1:p1[,s2:p2…]/master[/db]
 *                                                    the master a Sentinel group names (failover followed)
 * The password is the data nodes' (`requirepass`); sentinels are asked without one. TLS to a
 * Cluster or through Sentinel is not built: those forms are refused, never half-honoured.
 *
 * Every key the store writes starts with one hash tag, `{prefix}`, so on a Cluster all of a
 * fleet's keys live in one slot and each script stays atomic (a fleet lives on one shard).
 */
import { createRequire } from "node:module";
import type { Cluster, Redis, RedisOptions } from "ioredis";
import { ConfigError, StoreUnavailableError } from "../../core/errors.js";
import { heartbeatMs } from "../../core/fleet-options.js";

/**
 * ioredis, loaded when the first fleet connection is made: a gateway on the memory store (the
 * default) never pays its import (~0.2 s of CPU per process).
 */
const ioredis = (): { Redis: typeof Redis; Cluster: typeof Cluster } =>
  createRequire(import.meta.url)("ioredis") as { Redis: typeof Redis; Cluster: typeof Cluster };

/** What the fleet store needs of a connection: one server's (or Sentinel's) client, or a Cluster's. */
export type FleetConnection = Redis | Cluster;

/** A host and port of a seed node or a sentinel. */
export interface HostPort {
  host: string;
  port: number;
}

/** What a store URL names. Credentials are kept apart so they never reach a message. */
export type StoreTarget =
  | { kind: "single"; url: string }
  | { kind: "cluster"; nodes: HostPort[]; username?: string; password?: string }
  | {
      kind: "sentinel";
      sentinels: HostPort[];
      master: string;
      db: number;
      username?: string;
      password?: string;
    };

/** The accepted forms, as a config error states them. */
export const STORE_URL_FORMS =
  "memory, or a Redis URL: redis://[:password@]host:port[/db], rediss://…, " +
  "redis+cluster://[:password@]h1:p1,h2:p2 or redis+sentinel://[:password@]s1:p1,s2:p2/master[/db]";

/**
 * A store URL that cannot be used. `received` is the URL with its password replaced by `***`;
 * `notBuilt` names the feature when the form is one sluice knows but does not build yet.
 */
export class StoreUrlError extends ConfigError {
  constructor(
    expected: string,
    received: string,
    readonly notBuilt?: string,
  ) {
    super("store", expected, received);
  }
}

const DEFAULT_PORT = { cluster: 6379, sentinel: 26379 } as const;

/** Reads a store URL; throws {@link StoreUrlError} (password redacted) when it is not one of the forms. */
export function parseStoreUrl(url: string): StoreTarget {
  const shown = redactStoreUrl(url);
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url)?.[1]?.toLowerCase();
  if (scheme === "redis" || scheme === "rediss") {
    if (/\s/.test(url) || !URL.canParse(url)) throw new StoreUrlError(STORE_URL_FORMS, shown);
    return { kind: "single", url };
  }
  if (scheme === "rediss+cluster" || scheme === "rediss+sentinel") {
    const feature = `TLS to a Redis ${scheme === "rediss+cluster" ? "Cluster" : "Sentinel group"} (${scheme}://)`;
    throw new StoreUrlError(`no value: ${feature} is not built yet`, shown, feature);
  }
  if (scheme !== "redis+cluster" && scheme !== "redis+sentinel")
    throw new StoreUrlError(STORE_URL_FORMS, shown);
  const kind = scheme === "redis+cluster" ? "cluster" : "sentinel";
  const rest = url.slice(scheme.length + 3);
  // The userinfo ends at the last "@": hosts and master names never hold one, a raw password may.
  const at = rest.lastIndexOf("@");
  const credentials = at < 0 ? {} : userinfo(rest.slice(0, at), shown);
  const afterAt = rest.slice(at + 1);
  if (/[\s?#]/.test(afterAt))
    throw new StoreUrlError(`${STORE_URL_FORMS} (no spaces, query or fragment)`, shown);
  const slash = afterAt.indexOf("/");
  const hosts = slash < 0 ? afterAt : afterAt.slice(0, slash);
  const path = slash < 0 ? "" : afterAt.slice(slash + 1);
  const nodes = hosts.split(",").map((h) => hostPort(h, DEFAULT_PORT[kind], shown));
  if (kind === "cluster") {
    // A Cluster has database 0 only; a path would be silently ignored, so anything else is refused.
    if (path !== "" && path !== "0")
      throw new StoreUrlError(
        "redis+cluster://[:password@]h1:p1,h2:p2 with no path (a Cluster has db 0 only)",
        shown,
      );
    return { kind, nodes, ...credentials };
  }
  const match = /^([\w.-]+)(?:\/(\d{1,2}))?\/?$/.exec(path);
  if (match === null)
    throw new StoreUrlError(
      "redis+sentinel://[:password@]s1:p1,s2:p2/master[/db]: the master's name after the hosts",
      shown,
    );
  return { kind, sentinels: nodes, master: match[1]!, db: Number(match[2] ?? 0), ...credentials };
}

function userinfo(text: string, shown: string): { username?: string; password?: string } {
  const colon = text.indexOf(":");
  try {
    const username = decodeURIComponent(colon < 0 ? text : text.slice(0, colon));
    const password = colon < 0 ? undefined : decodeURIComponent(text.slice(colon + 1));
    return {
      ...(username === "" ? {} : { username }),
      ...(password === undefined || password === "" ? {} : { password }),
    };
  } catch {
    throw new StoreUrlError(`${STORE_URL_FORMS} (the password percent-encoded)`, shown);
  }
}

function hostPort(text: string, defaultPort: number, shown: string): HostPort {
  const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+)(?::(\d{1,5}))?$/.exec(text);
  const port = match?.[2] === undefined ? defaultPort : Number(match[2]);
  if (match === null || port < 1 || port > 65_535)
    throw new StoreUrlError(`${STORE_URL_FORMS} (each host as host:port, [v6]:port or host)`, shown);
  return { host: match[1]!.replace(/^\[(.*)\]$/, "$1"), port };
}

/**
 * The URL with any password replaced by `***`, for logs, snapshots and errors. Works on any text,
 * parsable or not: everything between `//` and the last `@` but a user name is hidden.
 */
export function redactStoreUrl(url: string): string {
  const start = url.indexOf("//");
  const at = url.lastIndexOf("@");
  if (start < 0 || at < start) return url;
  const info = url.slice(start + 2, at);
  const colon = info.indexOf(":");
  const hidden = colon < 0 ? "***" : `${info.slice(0, colon)}:***`;
  return `${url.slice(0, start + 2)}${hidden}${url.slice(at)}`;
}

/**
 * The shortest wait for a script's answer before Redis counts as unreachable: a busy 2-core machine
 * can take a second or more to answer a healthy Redis, and a false alarm starts the outage policy.
 */
export const MIN_COMMAND_TIMEOUT_MS = 5000;

/**
 * How long a store's start (connect both connections, subscribe, register) may take before it
 * fails: two script timeouts for a ttl's interval (10 s at the defaults). A Redis that refuses
 * the connection fails at once; one that accepts and never answers, or a host that drops the
 * packets, fails here instead of holding the process's start for ever.
 */
export function startTimeoutMs(leaseTtlMs: number): number {
  return 2 * Math.max(MIN_COMMAND_TIMEOUT_MS, heartbeatMs(leaseTtlMs));
}

/**
 * Runs a store's `start` on its two `connections` within {@link startTimeoutMs}. On failure both
 * connections are closed — ioredis would otherwise reconnect for ever and keep the process alive
 * after a start that failed — and it rejects with `StoreUnavailableError` naming the store
 * (`shown`: its URL with the password hidden) and the connection's own error: ioredis's
 * `connect()` rejects with a bare "Connection is closed.", the cause (ECONNREFUSED, …) is an event.
 */
export async function startOrClose(
  connections: readonly [FleetConnection, FleetConnection],
  leaseTtlMs: number,
  shown: string,
  start: () => Promise<void>,
): Promise<void> {
  const [client] = connections;
  let cause: Error | undefined;
  const remember = (error: Error) => {
    cause = error;
  };
  client.on("error", remember);
  const deadline = startTimeoutMs(leaseTtlMs);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${deadline} ms`)), deadline);
  });
  try {
    await Promise.race([start(), late]);
  } catch (error) {
    for (const c of connections) c.disconnect();
    const { message } = error as Error;
    const why = cause !== undefined && cause.message !== message ? ` (${cause.message})` : "";
    throw new StoreUnavailableError(`${shown} unreachable at start: ${message}${why}`);
  } finally {
    clearTimeout(timer);
    client.off("error", remember);
  }
}

/**
 * A connection to the Redis that `url` names, with `options` (lazy: call `connect()`). For a
 * Cluster, `options` apply to each node's connection, except the queueing, laziness and
 * pipelining options, which a Cluster takes for itself.
 */
export function connectRedis(url: string, options: RedisOptions): FleetConnection {
  const target = parseStoreUrl(url);
  const { Redis, Cluster } = ioredis();
  if (target.kind === "single") return new Redis(url, options);
  const auth = {
    ...(target.username === undefined ? {} : { username: target.username }),
    ...(target.password === undefined ? {} : { password: target.password }),
  };
  if (target.kind === "sentinel")
    return new Redis({
      ...options,
      ...auth,
      sentinels: target.sentinels,
      name: target.master,
      db: target.db,
    });
  // A Cluster keeps ioredis's own resubscription (its nodes never get `autoResubscribe`).
  const { enableOfflineQueue, lazyConnect, enableAutoPipelining, autoResubscribe: _, ...node } = options;
  return new Cluster(target.nodes, {
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    ...(lazyConnect === undefined ? {} : { lazyConnect }),
    ...(enableAutoPipelining === undefined ? {} : { enableAutoPipelining }),
    redisOptions: { ...node, ...auth },
  });
}

/**
 * The fleet store's two connections to `url`: one for its scripts (pipelined per event-loop turn
 * by `turnPipelined`, so not by ioredis, whose batches wait for `setImmediate`) and one
 * subscribed to the fleet's channels. RESP2 explicitly (ioredis 6 defaults to RESP3); commands
 * fail fast so an outage is seen within a heartbeat instead of queueing without end.
 *
 * A script unanswered for one heartbeat's interval (`leaseTtlMs ÷ 3`, at least
 * {@link MIN_COMMAND_TIMEOUT_MS}) fails as if Redis were down: a Redis that stops answering without
 * closing the connection (a stalled server, a partition that drops packets instead of resetting)
 * would otherwise hold every grant forever and never start the outage policy.
 */
export function fleetConnections(
  url: string,
  leaseTtlMs: number,
): [client: FleetConnection, subscriber: FleetConnection] {
  const commandTimeout = Math.max(MIN_COMMAND_TIMEOUT_MS, heartbeatMs(leaseTtlMs));
  const common = {
    protocol: 2 as const,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    lazyConnect: true,
  };
  return [
    connectRedis(url, { ...common, enableAutoPipelining: false, commandTimeout }),
    connectRedis(url, { ...common, enableOfflineQueue: true, autoResubscribe: false }),
  ];
}

/**
 * Subscribes the fleet's `subscriber` to `channels`, and again each time it is ready after a
 * reconnect. Not ioredis's `autoResubscribe` (off for this connection): the SUBSCRIBE it sends as
 * the connection comes back has no handler, so a store closed before Redis answered it left an
 * unhandled "Connection is closed." rejection — fatal under Node's default
 * `--unhandled-rejections=throw`. A SUBSCRIBE lost here is sent again at the next reconnect.
 */
export async function subscribeKept(subscriber: FleetConnection, channels: readonly string[]): Promise<void> {
  await subscriber.subscribe(...channels);
  subscriber.on("ready", () => void subscriber.subscribe(...channels).catch(() => {}));
}
