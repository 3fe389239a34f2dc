/**
 * The host a simulated server runs on, and its memory: seed 001's GB10, where two vLLM endpoints
 * (a generator and an embedder) shared 121 GB of unified memory. The running sequences of every
 * sim on the machine count together; the grant that takes them past `oomAt` is an OOM
 * (`NVRM: Out of memory` → the whole host unreachable): every sim on it stops listening, so new
 * connections are refused, and every request it holds is cut. After `downMs` the host is back.
 *
 * The machine only counts and decides; each sim does its own going down and coming back
 * ({@link MachineMember}), because only it owns its socket.
 */

/** What the machine asks of each sim on it. */
export interface MachineMember {
  /** The host is gone: stop listening (connections refused) and cut every connection. */
  goDown(): void;
  /** The host is back: listen again on the same port. */
  comeUp(): void;
}

/** Options of a {@link SimMachine}. */
export interface SimMachineOptions {
  /** Running sequences its memory holds; one more is an OOM. Integer ≥ 1 or `Infinity` (never). */
  oomAt: number;
  /** How long an OOM keeps the host unreachable, in real milliseconds (already time-scaled), ≥ 0. */
  downMs: number;
}

/** One machine's memory, shared by the sims on it. */
export class SimMachine {
  /** Running sequences it holds; the grant that takes `running` past this is an OOM. */
  oomAt: number;
  /** Real milliseconds an OOM keeps the host down. */
  downMs: number;
  /** Sequences running on it now, across its sims. */
  running = 0;
  /** Highest `running` since construction: exact, updated at every grant. */
  maxRunningSeen = 0;
  /** OOMs so far. Never reset: it is what the load runner reports. */
  oomEvents = 0;
  /** Requests cut because the host went down under them. */
  cut = 0;
  #down = false;
  #timer: NodeJS.Timeout | null = null;
  readonly #members = new Set<MachineMember>();

  constructor(options: SimMachineOptions) {
    this.oomAt = options.oomAt;
    this.downMs = options.downMs;
  }

  /** True while the host is unreachable after an OOM. */
  get down(): boolean {
    return this.#down;
  }

  /** Puts a sim on this machine. */
  join(member: MachineMember): void {
    this.#members.add(member);
  }

  /** Takes a sim off it (it closed); the last one leaving cancels a pending recovery. */
  leave(member: MachineMember): void {
    this.#members.delete(member);
    if (this.#members.size === 0 && this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
  }

  /** A sequence started running on one of its sims. */
  take(): void {
    if (++this.running > this.maxRunningSeen) this.maxRunningSeen = this.running;
    if (this.running > this.oomAt && !this.#down) this.#oom();
  }

  /** A running sequence ended (finished, failed or cut). */
  give(): void {
    this.running--;
  }

  #oom(): void {
    this.#down = true;
    this.oomEvents++;
    // Not synchronously: this runs inside a sim's grant, and going down cuts that very request.
    setImmediate(() => {
      for (const m of this.#members) m.goDown();
    });
    // Ref'd on purpose: while the host is down nothing else may keep a `sluice sim` process alive.
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#down = false;
      for (const m of this.#members) m.comeUp();
    }, this.downMs);
  }
}
