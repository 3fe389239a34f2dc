/**
 * Accounts' adaptive state across a fleet: what one replica learns of a provider account (a cut
 * of its in-flight cap, a quota pause) every replica applies, as pods' states travel
 * (`RedisStore.sharePod`). A quota pause is also written to Redis as a key with PX = the pause,
 * which the grant script checks: so the pause holds fleet-wide in Redis time even where the
 * message is lost, and a replica that starts later sees it at its first grant. What a replica
 * learns while Redis is away is shared when it answers again (`shareLearnedInOutage`), as it
 * stands then.
 */
import type { SharedAccountState } from "../../core/account.js";
import type { FleetLink, FleetRates } from "./rates.js";
import * as script from "./script-calls.js";

export class FleetAccounts {
  /** Accounts whose state changed while Redis was away: shared once it answers. */
  readonly #unshared = new Set<string>();

  constructor(
    readonly link: FleetLink,
    readonly rates: FleetRates,
    /** The pub/sub channel account states travel on. */
    readonly channel: string,
  ) {}

  /** This replica cut the cap of, or paused, the account stored under `key`: tell the fleet. */
  share(key: string, state: SharedAccountState): void {
    const link = this.link;
    if (!link.connected()) {
      this.#unshared.add(key);
      return;
    }
    if (state.quotaLeftMs > 0)
      script
        .pause(link.client, this.rates.pauseKey(key), Math.ceil(state.quotaLeftMs))
        .catch(() => link.failed());
    link.client
      .publish(this.channel, `${link.replica}\n${key}\n${JSON.stringify(state)}`)
      .catch(() => link.failed());
  }

  /**
   * Redis answers again: each account whose cap or pause changed meanwhile is shared as it stands
   * now (a pause that has run out is not written; a cut cap still travels).
   */
  shareLearnedInOutage(): void {
    for (const key of this.#unshared) {
      const account = this.rates.account(key);
      if (account !== undefined) this.share(key, account.shared(this.link.now()));
    }
    this.#unshared.clear();
  }

  /** Another replica's message: adopt its account state here. */
  receive(message: string): void {
    const [replica, key, json] = splitMessage(message);
    const account = key === undefined ? undefined : this.rates.account(key);
    if (replica === this.link.replica || account === undefined) return;
    try {
      account.adopt(JSON.parse(json!) as SharedAccountState, this.link.now());
    } catch {
      return; // a malformed message changes nothing: the next change is shared again
    }
    this.link.changed();
  }
}

/** A state message's three parts: replica, id, JSON (the id holds no newline; the JSON may). */
export function splitMessage(message: string): [string, string?, string?] {
  const first = message.indexOf("\n");
  const second = message.indexOf("\n", first + 1);
  if (first < 0 || second < 0) return [message];
  return [message.slice(0, first), message.slice(first + 1, second), message.slice(second + 1)];
}
