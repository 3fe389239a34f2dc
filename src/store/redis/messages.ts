/**
 * What the fleet store's subscriber hears, and who hears it: pod states, account states, other
 * replicas' waiters leaving and their releases. Its own messages are dropped before they are
 * parsed (each reader checks the sender).
 */
import type { Emitter } from "../../core/events.js";
import type { FleetAccounts } from "./accounts.js";
import type { FleetConnection } from "./connection.js";
import type { FleetMirror } from "./mirror.js";
import type { FleetPods } from "./pods.js";
import type { FleetWaiters } from "./waiters.js";

export interface MessageReaders {
  readonly pods: FleetPods;
  readonly accounts: FleetAccounts;
  readonly waiters: FleetWaiters;
  readonly mirror: FleetMirror;
  /** This replica's id. */
  readonly replica: string;
  /** Room may have grown: the store's `onChange`. */
  readonly changes: Emitter<void>;
  /** A settling replica's roll call (`redis/shares.ts`): heartbeat now. */
  readonly settle: { readonly channel: string; beat(): void };
}

/** Routes each message `subscriber` receives to its reader. */
export function routeMessages(subscriber: FleetConnection, r: MessageReaders): void {
  subscriber.on("message", (channel: string, message: string) => {
    if (channel === r.settle.channel) {
      if (message !== r.replica) r.settle.beat();
    } else if (channel === r.pods.channel) r.pods.receive(message);
    else if (channel === r.accounts.channel) r.accounts.receive(message);
    // Another replica's waiters left budgets this one held back for, or it released: look again.
    else if (
      channel === r.waiters.channel
        ? r.mirror.waitersLeft(message, r.replica)
        : r.mirror.releasedBy(message, r.replica)
    )
      r.changes.emit();
  });
}
