/**
 * Releases to the fleet, batched per event-loop turn: every `give` of one turn becomes one
 * `release.lua` call with a count per budget key, sent on `process.nextTick` (after the turn's
 * promise continuations, so a burst of callers releasing at once is one command and one script
 * run). The script publishes the freed budgets only when another replica waits (`{P}:waiting`).
 *
 * Order matters where room is tight: a grant sent while this replica's own release of the same
 * budget still waits for the turn's end would reach Redis first and be refused for room this
 * replica has already given back. So a grant whose budget has no spare room beyond the pending
 * releases sends them first (`flushFor`); anywhere else the two travel in the same pipeline.
 */
import type { FleetLink } from "./rates.js";
import * as script from "./script-calls.js";

export class FleetReleases {
  /** Slots given back locally and not yet sent, per budget key. */
  readonly #pending = new Map<string, number>();
  #scheduled = false;
  /** Releases ever given to `add`: a grant refused while one was given may have been refused for it. */
  given = 0;

  constructor(
    readonly link: FleetLink,
    /** The waiting index the script reads (`{P}:waiting`). */
    readonly indexKey: string,
    /** The channel freed budgets are published on. */
    readonly channel: string,
  ) {}

  /** `n` slots (default one) given back on each of `keys`: sent with the rest of this turn's releases. */
  add(keys: readonly string[], n = 1): void {
    this.given++;
    for (const key of keys) this.#pending.set(key, (this.#pending.get(key) ?? 0) + n);
    if (this.#scheduled) return;
    this.#scheduled = true;
    process.nextTick(() => {
      this.#scheduled = false;
      void this.flush();
    });
  }

  /** Whether a release of one of `keys` is still unsent. */
  holds(keys: readonly string[]): boolean {
    return this.#pending.size > 0 && keys.some((k) => this.#pending.has(k));
  }

  /**
   * Before a grant on `keys`: sends the pending releases now when one of them is needed for the
   * grant to fit — more slots pending on a key than the grant's `spare` there (its limit less
   * what the fleet holds, this replica's confirmed calls and the grant's own slot).
   */
  flushFor(keys: readonly string[], spare: readonly number[]): void {
    if (this.#pending.size === 0) return;
    if (keys.some((k, i) => (this.#pending.get(k) ?? 0) > spare[i]!)) void this.flush();
  }

  /** Sends every pending release in one script; resolves once Redis has them (or could not). */
  flush(): Promise<void> {
    if (this.#pending.size === 0) return Promise.resolve();
    const keys = [...this.#pending.keys()];
    const counts = [...this.#pending.values()];
    this.#pending.clear();
    // Not sent while Redis is away (as `RedisStore.give` does): once it answers, the store rewrites
    // this replica's fields to what it holds (`redis/resync.ts`), these releases included. A
    // release that fails on the way makes that rewrite due too (`link.failed`).
    if (!this.link.connected()) return Promise.resolve();
    // A release Redis answered NOSCRIPT is re-sent after the grants written behind it: one of them
    // may have been refused for this very room, and nothing else would wake its waiter. Look again.
    const { indexKey, channel } = this;
    const release = { indexKey, replica: this.link.replica, channel, keys, counts };
    return script
      .release(this.link.client, release, () => this.link.changed())
      .then(
        () => {},
        () => this.link.failed(),
      );
  }
}

/**
 * A release message's budgets and how many slots each gained, or null for this replica's own
 * message (tested before any parsing: Redis sends a publisher its own messages too).
 */
export function freedBy(message: string, replica: string): Array<[string, number]> | null {
  if (message.startsWith(`${replica}\n`)) return null;
  const lines = message.split("\n");
  const freed: Array<[string, number]> = [];
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const space = line.indexOf(" ");
    freed.push([line.slice(space + 1), Number(line.slice(0, space))]);
  }
  return freed;
}
