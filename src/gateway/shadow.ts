/**
 * Shadow mode (`admission.mode: shadow`): how an operator rolls sluice out in front of a live
 * fleet. A call enforce mode would have queued or refused is let through at once on a lease that
 * holds no budget; the gateway counts `sluice_would_refuse_total` instead. The pod is picked
 * round-robin, since the governor's choice needs a budget this call does not hold.
 */
import type { ModelConfig } from "../config/schema.js";
import type { SluiceError } from "../core/errors.js";
import type { Lease } from "../core/lease.js";

/** A shadow-mode model: how many calls run beyond what enforce mode would have let through. */
export class ShadowLane {
  /** Calls let through on a {@link ShadowLease} and not yet ended. */
  #over = 0;

  constructor(
    readonly model: ModelConfig,
    /** Counts `sluice_would_refuse_total{reason}`. */
    readonly wouldRefuse: (code: string) => void,
  ) {}

  /**
   * The call the Governor refused, let through anyway. Counted as would-refuse unless enforce
   * mode would only have queued it (a `queue_full` refusal while fewer than `queue_limit` extra
   * calls run: enforce mode's queue would have held it).
   */
  letThrough(refusal: SluiceError): Lease {
    this.#over++;
    if (refusal.code !== "queue_full" || this.#over > this.model.queueLimit) this.wouldRefuse(refusal.code);
    return new ShadowLease(this.model, this.#end);
  }

  readonly #end = (): void => {
    this.#over--;
  };
}

const next = new WeakMap<ModelConfig, number>();

export class ShadowLease implements Lease {
  readonly pod: string;
  readonly priority = "default" as const;
  readonly queuedMs = 0;
  readonly attempts = 1;
  #done = false;

  constructor(
    readonly model: ModelConfig,
    readonly onEnd: () => void,
  ) {
    const i = next.get(model) ?? 0;
    next.set(model, i + 1);
    this.pod = model.pods[i % model.pods.length]!.url;
  }

  get lane(): string {
    return this.model.name;
  }

  succeeded(): void {
    this.release();
  }

  failed(): void {
    this.release();
  }

  release(): void {
    if (this.#done) return;
    this.#done = true;
    this.onEnd();
  }

  retry(): Promise<boolean> {
    return Promise.resolve(false);
  }

  [Symbol.dispose](): void {
    this.release();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.release();
  }
}
