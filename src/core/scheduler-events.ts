/** Payloads of the scheduler's typed events (STYLE G10). */
import type { SluiceError } from "./errors.js";
import type { Ticket } from "./lease.js";
import type { Outcome } from "./outcome.js";
import type { Rank } from "./priority.js";

/** How the shell hears about grants and refusals of queued tickets. */
export interface SchedulerHooks {
  granted(ticket: Ticket): void;
  rejected(ticket: Ticket, error: SluiceError): void;
}

/** Payload of `onGrant`. */
export interface GrantEvent {
  lane: string;
  pod: string | undefined;
  priority: Rank;
  waitedMs: number;
}
/** Payload of `onRelease`. */
export interface ReleaseEvent {
  lane: string;
  pod: string | undefined;
  heldMs: number;
  outcome: Outcome["kind"] | "none";
}
/** Payload of `onRefusal`: sluice said no (nothing was sent upstream). */
export interface RefusalEvent {
  lane: string;
  error: SluiceError;
}
/** Payload of `onWidthChange`. */
export interface WidthEvent {
  lane: string;
  pod: string;
  width: number;
  ceiling: number;
}
