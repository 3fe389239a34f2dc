/**
 * What a run shows while it goes: on a terminal one bar redrawn in place; otherwise (a pipe, CI)
 * a plain line every few seconds, so logs stay readable.
 */
import type { LiveCounts } from "./driver.js";
import type { ProgressSink } from "./runner.js";

/** Where progress goes: stderr by default, so stdout keeps only the result. */
export interface ProgressStream {
  isTTY?: boolean;
  columns?: number;
  write(text: string): unknown;
}

type Live = () => LiveCounts & { elapsedMs: number };

/** A bar on a TTY, plain lines otherwise. */
export function createProgress(stream: ProgressStream, profile: string): ProgressSink {
  return stream.isTTY === true ? new Bar(stream, profile) : new Lines(stream, profile);
}

/** The counts as words: `offered 1234, done 567, not done 600, open 300`. */
export function describeLive(c: LiveCounts): string {
  return `offered ${c.offered}, done ${c.completed}, refused/failed ${c.notCompleted}, open ${c.open}`;
}

class Bar implements ProgressSink {
  #timer: NodeJS.Timeout | null = null;
  #last = "";
  constructor(
    readonly stream: ProgressStream,
    readonly profile: string,
  ) {}

  start(label: string, offerMs: number, live: Live): void {
    const draw = () => {
      const c = live();
      const share = offerMs <= 0 ? 1 : Math.min(1, c.elapsedMs / offerMs);
      const phase = share >= 1 ? "draining" : `${Math.round(share * 100)}%`.padStart(4);
      const width = 20;
      const filled = Math.round(share * width);
      const line =
        `${this.profile} ${label} [${"#".repeat(filled)}${".".repeat(width - filled)}] ${phase} ` +
        `${(c.elapsedMs / 1000).toFixed(1)} s  ${describeLive(c)}`;
      const max = (this.stream.columns ?? 120) - 1;
      this.#last = line.length > max ? line.slice(0, max) : line;
      this.stream.write(`\r\x1b[2K${this.#last}`);
    };
    draw();
    this.#timer = setInterval(draw, 100);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    this.stream.write(`\r\x1b[2K${this.#last}\n`);
  }
}

class Lines implements ProgressSink {
  #timer: NodeJS.Timeout | null = null;
  #live: Live | null = null;
  #label = "";
  constructor(
    readonly stream: ProgressStream,
    readonly profile: string,
  ) {}

  start(label: string, offerMs: number, live: Live): void {
    this.#live = live;
    this.#label = label;
    this.stream.write(
      `${this.profile} ${label}: offering for ${(offerMs / 1000).toFixed(1)} s, then draining\n`,
    );
    this.#timer = setInterval(() => this.#line(), 5000);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    this.#line("done");
  }

  #line(state = ""): void {
    const c = this.#live?.();
    if (c === undefined) return;
    const at = `${(c.elapsedMs / 1000).toFixed(1)} s`;
    this.stream.write(
      `${this.profile} ${this.#label}: ${state ? `${state} at ` : ""}${at}, ${describeLive(c)}\n`,
    );
  }
}
