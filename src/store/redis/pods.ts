/**
 * Pods' adaptive state across a fleet (DESIGN §5): a cut, a breaker change or a provider's pause
 * seen by one replica is published to every replica running now, and the latest state of each
 * pod is kept in `{P}:pod:<id>` with the Redis time it was written, so a replica started later
 * (after a cut, during an open breaker) adopts it when it first meets the pod instead of starting
 * wide open. Times travel as ages and time left (`Pod.shared()`): each process has its own clock.
 */
import { Emitter, type Event } from "../../core/events.js";
import type { SharedPodState } from "../../core/pod.js";
import { splitMessage } from "./accounts.js";
import type { FleetLink } from "./rates.js";
import * as script from "./script-calls.js";

/** How long a pod's state is kept without a new write: long past any cooldown or pause. */
const KEEP_MS = 24 * 3600_000;

export class FleetPods {
  readonly #states = new Emitter<{ id: string; state: SharedPodState }>();
  /** Pods whose kept state this replica has read (or asked for) already. */
  readonly #loaded = new Set<string>();
  /** Pods this replica has shared a state of itself: newer than a kept state read meanwhile. */
  readonly #own = new Set<string>();
  /** The pods this replica's Governor serves (ids). */
  #source: (() => Iterable<string>) | null = null;

  /** Another replica changed a pod's width, breaker or quota pause (or one was read at start). */
  readonly onState: Event<{ id: string; state: SharedPodState }> = this.#states.event;

  constructor(
    readonly link: FleetLink,
    readonly tag: string,
    /** The pub/sub channel pod states travel on. */
    readonly channel: string,
  ) {}

  /** This replica changed a pod's adaptive state: keep it and tell the fleet (one script). */
  share(id: string, state: SharedPodState): void {
    const link = this.link;
    if (!link.connected()) return;
    this.#own.add(id); // this replica's own state is newer than anything kept
    const json = JSON.stringify(state);
    const message = `${link.replica}\n${id}\n${json}`;
    script
      .podShare(link.client, {
        key: this.#key(id),
        state: json,
        channel: this.channel,
        message,
        keepMs: KEEP_MS,
      })
      .catch(() => link.failed());
  }

  /** The pods this replica serves; `load` reads those not met yet (only new ones cost a round trip). */
  watch(source: () => Iterable<string>): void {
    this.#source = source;
  }

  /** A message on the pods channel. */
  receive(message: string): void {
    const [replica, id, json] = splitMessage(message);
    if (json === undefined || replica === this.link.replica) return;
    try {
      this.#states.emit({ id: id!, state: JSON.parse(json) });
    } catch {
      // A malformed message changes nothing: the next change of that pod is shared again.
    }
  }

  /**
   * Reads the kept state of each pod served and not read yet and hands it on (`onState`) with its
   * ages moved on by the time since it was written. A pod never shared has nothing kept.
   */
  async load(): Promise<void> {
    if (this.#source === null) return;
    const fresh = [...this.#source()].filter((id) => !this.#loaded.has(id) && !this.#own.has(id));
    if (fresh.length === 0 || !this.link.connected()) return;
    for (const id of fresh) this.#loaded.add(id);
    let kept: script.KeptPodState[];
    try {
      kept = await script.podStates(
        this.link.client,
        fresh.map((id) => this.#key(id)),
      );
    } catch {
      for (const id of fresh) this.#loaded.delete(id); // read again at the next call
      this.link.failed();
      return;
    }
    fresh.forEach((id, i) => {
      const { json, ageMs } = kept[i]!;
      if (json === null || this.#own.has(id)) return;
      try {
        this.#states.emit({ id, state: aged(JSON.parse(json) as SharedPodState, ageMs) });
      } catch {
        // A malformed kept state is ignored: the pod starts from its configuration.
      }
    });
  }

  #key(id: string): string {
    return `${this.tag}:pod:${id}`;
  }
}

/** `state` as it stands `ageMs` after it was shared: the breaker opened longer ago, less pause left. */
export function aged(state: SharedPodState, ageMs: number): SharedPodState {
  const breaker = { ...state.breaker };
  if (breaker.kind === "open") breaker.openedAt -= ageMs;
  return { ...state, breaker, quotaLeftMs: Math.max(0, state.quotaLeftMs - ageMs) };
}
