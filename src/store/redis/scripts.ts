/**
 * Runs the fleet store's Lua scripts (src/store/redis/lua) with EVALSHA, falling back to EVAL when the
 * server does not know the script yet (a fresh or restarted Redis answers NOSCRIPT): one round
 * trip in the common case, and no operator step after a restart. Each script's SHA1 is computed
 * once.
 */
import { createHash } from "node:crypto";
import type { Redis } from "ioredis";
import { LUA, type ScriptName } from "./lua/scripts.generated.js";

/** The part of an ioredis client the scripts use (a `Cluster` has the same methods). */
export type ScriptClient = Pick<Redis, "evalsha" | "eval">;

type Arg = string | number;

const SHA = Object.fromEntries(
  Object.entries(LUA).map(([name, source]) => [name, createHash("sha1").update(source).digest("hex")]),
) as Record<ScriptName, string>;

/** True for a Redis error reply whose code (its first word) is `code`. */
export function isReplyCode(error: unknown, code: string): boolean {
  return error instanceof Error && error.message.split(" ", 1)[0] === code;
}

/**
 * Runs script `name` with `keys` and `args`; one round trip unless the server lacks the script.
 * `afterFallback` runs once a script the server lacked was sent again as `EVAL` and answered: the
 * re-sent script ran after whatever was written behind its `EVALSHA` (`FleetReleases` looks again).
 */
export async function runScript(
  client: ScriptClient,
  name: ScriptName,
  keys: readonly string[],
  args: readonly Arg[],
  afterFallback?: () => void,
): Promise<unknown> {
  try {
    return await client.evalsha(SHA[name], keys.length, ...keys, ...args);
  } catch (error) {
    if (!isReplyCode(error, "NOSCRIPT")) throw error;
    const answer = await client.eval(LUA[name], keys.length, ...keys, ...args);
    afterFallback?.();
    return answer;
  }
}
