/**
 * Backpressure from the client to the pod, with a bound (issue 21, DESIGN §3.1 "a client that
 * stops reading"). While the client's connection takes nothing more (`res.write` returned false),
 * the pod's answer is not read (undici's `pause`) — but a client that never reads again must not
 * hold its slot forever: after `stream_idle_timeout_s` without a `'drain'` the call is given up
 * ({@link ClientFlow}'s `onStalled`). A client that reads slowly but reads drains within the bound
 * each time, and loses nothing.
 *
 * The timer exists only while the client is behind: a call whose client keeps up pays nothing.
 */
import type { ServerResponse } from "node:http";
import type { Dispatcher } from "undici";

export class ClientFlow {
  #timer: NodeJS.Timeout | undefined = undefined;
  #paused: Dispatcher.DispatchController | null = null;

  constructor(
    readonly res: ServerResponse,
    /** Called once the client has accepted nothing for the bound. */
    readonly onStalled: () => void,
  ) {}

  /**
   * Sends `chunk` to the client; when its connection is full, pauses `controller` until it drains,
   * for at most `idleMs`.
   */
  write(chunk: Buffer, controller: Dispatcher.DispatchController, idleMs: number): void {
    if (this.res.write(chunk) || this.#paused !== null) return;
    this.#paused = controller;
    controller.pause();
    this.res.once("drain", this.#onDrain);
    this.#timer = setTimeout(this.#onTimeout, idleMs);
  }

  /** Stops watching (the answer ended, or failed). */
  stop(): void {
    if (this.#timer === undefined) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#paused = null;
    this.res.off("drain", this.#onDrain);
  }

  readonly #onDrain = (): void => {
    const controller = this.#paused;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#paused = null;
    controller?.resume();
  };

  readonly #onTimeout = (): void => {
    this.#timer = undefined;
    this.#paused = null;
    this.res.off("drain", this.#onDrain);
    this.onStalled();
  };
}
