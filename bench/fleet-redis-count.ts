/**
 * Commands per grant, counted with Redis `MONITOR` (not `INFO commandstats`: the Redis at
 * 127.0.0.1:6379 is shared with other processes, and commandstats counts theirs too, while a
 * MONITOR line names the keys and so can be told apart by the contender's unique marker).
 *
 * A separate short run from the timed ones (MONITOR slows Redis down): `grants` grant + release
 * pairs by one caller, each finished before the next starts. Two counts per grant:
 *
 * - commands sent by the client (MONITOR lines from a client address): with one caller that waits
 *   for each, the round trips per grant + release when the release is awaited; a release sent
 *   without waiting overlaps the next grant (ioredis auto-pipelining can put both in one write);
 * - commands run inside Lua scripts (lines from `lua`): the work Redis does per grant.
 *
 * A client line counts when one of its arguments holds the contender's marker (its keys do; a
 * heartbeat's too, a SUBSCRIBE or PING not), a script's line when its EVALSHA counted.
 */
import type { Contender } from "./fleet-redis-contenders.js";
import { client } from "./fleet-redis-contenders.js";

export interface CommandCount {
  /** Commands the client sent, per grant + release. */
  clientPerGrant: number;
  /** Of those, the ones sent before the caller held its slot (the grant's own round trips). */
  beforeGrantPerGrant: number;
  /** Commands Redis ran inside scripts, per grant + release. */
  scriptedPerGrant: number;
  /** The client commands seen, by name (e.g. `evalsha: 2.00`), per grant + release. */
  byName: Record<string, number>;
}

interface MonitorLike {
  on(event: "monitor", listener: (time: string, args: string[], source: string) => void): void;
  disconnect(): void;
}

/** Runs `grants` sequential grant + release pairs of `c` while MONITOR counts its commands. */
export async function countCommands(
  url: string,
  marker: string,
  c: Contender,
  grants: number,
): Promise<CommandCount> {
  const admin = client(url);
  const monitor = (await admin.monitor()) as unknown as MonitorLike;
  const fence = new Fence(admin, `${marker}:fence`);
  let counting = false;
  let beforeGrant = false;
  let sent = 0;
  let sentBeforeGrant = 0;
  let scripted = 0;
  const byName: Record<string, number> = {};
  // A script's own commands follow its EVALSHA line at once (a script runs alone), so a `lua`
  // line belongs to the last client line: counted when that one was the contender's.
  let ours = false;
  monitor.on("monitor", (_time, args, source) => {
    if (source === "lua") {
      if (counting && ours) scripted++;
      return;
    }
    ours = false;
    if (fence.seen(args)) return;
    if (!counting || !args.some((a) => a.includes(marker))) return;
    ours = true;
    sent++;
    if (beforeGrant) sentBeforeGrant++;
    const name = args[0]!.toLowerCase();
    byName[name] = (byName[name] ?? 0) + 1;
  });
  // A few pairs first so one-time work (script loads, first registration) is not counted.
  for (let i = 0; i < 20; i++) await settle((await c.acquire())());
  await fence.pass();
  counting = true;
  for (let i = 0; i < grants; i++) {
    beforeGrant = true;
    const release = await c.acquire();
    // A MONITOR line arrives after its command ran: wait for this grant's lines before the flag moves.
    await fence.pass();
    beforeGrant = false;
    await settle(release());
    // A release sent without waiting goes out on a later tick: let it reach Redis before the
    // fence, so it is not taken for the next grant's.
    await new Promise((resolve) => setTimeout(resolve, 1));
    await fence.pass();
  }
  await fence.pass();
  counting = false;
  monitor.disconnect();
  await admin.quit();
  const per = (n: number) => n / grants;
  return {
    clientPerGrant: per(sent),
    beforeGrantPerGrant: per(sentBeforeGrant),
    scriptedPerGrant: per(scripted),
    byName: Object.fromEntries(Object.entries(byName).map(([k, v]) => [k, per(v)])),
  };
}

async function settle(r: unknown): Promise<void> {
  if (r instanceof Promise) await r.catch(() => {});
}

/**
 * `ECHO token`, awaited until MONITOR has shown it: every command Redis ran before it has been
 * shown too (MONITOR shows commands in the order Redis runs them). A release sent without
 * waiting may still be on its way on another connection; the next fence catches it. The fences'
 * own lines are not counted.
 */
class Fence {
  #n = 0;
  #waiting: { token: string; resolve: () => void } | null = null;

  constructor(
    readonly admin: ReturnType<typeof client>,
    readonly prefix: string,
  ) {}

  /** True for a fence's own line (and wakes whoever waits for it). */
  seen(args: readonly string[]): boolean {
    if (args[0]?.toLowerCase() !== "echo" || !args[1]?.startsWith(this.prefix)) return false;
    if (this.#waiting?.token === args[1]) {
      this.#waiting.resolve();
      this.#waiting = null;
    }
    return true;
  }

  async pass(): Promise<void> {
    const token = `${this.prefix}:${this.#n++}`;
    const shown = new Promise<void>((resolve) => {
      this.#waiting = { token, resolve };
    });
    await this.admin.echo(token);
    await shown;
  }
}
