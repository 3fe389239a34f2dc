/**
 * A replica that takes slots and holds them until it is killed: the child process of
 * `fleet-liveness.test.ts` (a real process, so SIGKILL leaves its calls counted in Redis under a
 * lease nobody renews). Arguments: a JSON object { url, prefix, replica, leaseTtlMs, lanes, take }
 * — a Governor's `lanes`, and how many leases to take on lane "chat". Prints "held" once it holds
 * them.
 */
import type { GovernorOptions } from "../../src/core/options.js";
import { Governor } from "../../src/governor/governor.js";
import { RedisStore } from "../../src/store/redis/redis-store.js";

interface HolderArgs {
  url: string;
  prefix: string;
  replica: string;
  leaseTtlMs: number;
  lanes: GovernorOptions["lanes"];
  take: number;
}

const args = JSON.parse(process.argv[2] ?? "{}") as HolderArgs;
const store = new RedisStore({
  url: args.url,
  prefix: args.prefix,
  replica: args.replica,
  leaseTtlMs: args.leaseTtlMs,
});
await store.start();
const gov = new Governor({ lanes: args.lanes, store });
await Promise.all(Array.from({ length: args.take }, () => gov.acquire("chat")));
process.stdout.write("held\n");
setInterval(() => {}, 60_000); // holds them, and its lease, until killed
