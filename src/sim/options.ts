/**
 * Options of the simulated model server, their defaults, and the one validator that both
 * `startSim()` and `setProfile()` run, so a running sim never holds an invalid value (STYLE G7).
 */
import { ConfigError } from "../core/errors.js";

import type { SimMachine } from "./machine.js";

/** What a pod does with a request that arrives past `maxNumSeqs + maxWaiting`. */
export type SimOverflow = "queue" | "503" | "429" | "refuse";

/** The options that can change while the sim runs (`setProfile`). Every field is optional. */
export interface SimProfile {
  /**
   * Model name reported by `GET /v1/models` and in the `model_name` metric label. Responses
   * carry the model named in the request instead, falling back to this one.
   * **Default:** `"sim-model"`.
   */
  model?: string;
  /** Requests served concurrently, like vLLM's `--max-num-seqs`; integer ≥ 1. **Default:** `8`. */
  maxNumSeqs?: number;
  /**
   * Requests that may wait behind the running ones before `overflow` applies; integer ≥ 0 or
   * `Infinity`. **Default:** `Infinity` (vLLM's behaviour: the waiting queue has no bound).
   */
  maxWaiting?: number;
  /**
   * Past `maxNumSeqs + maxWaiting`: `"queue"` keeps queueing (ignores `maxWaiting`); `"503"`
   * answers HTTP 503 with an OpenAI-shaped error; `"429"` the same with status 429 and
   * `retry-after: 1` (a provider's account limit); `"refuse"` destroys the socket before any
   * response byte (a pod refusing connections). **Default:** `"queue"`.
   */
  overflow?: SimOverflow;
  /**
   * Mean base service time in milliseconds (time to first token), ≥ 0; each request draws
   * `serviceMs · exp(σz − σ²/2)` from the seeded generator. `0` answers at once with no timer.
   * **Default:** `50`.
   */
  serviceMs?: number;
  /** σ of the lognormal jitter on `serviceMs`, ≥ 0; `0` makes every service time exact. **Default:** `0.25`. */
  jitterSigma?: number;
  /** Seed of the service-time generator (mulberry32); any integer. **Default:** `1`. */
  seed?: number;
  /** Added service time per output token, in milliseconds, ≥ 0. **Default:** `0`. */
  msPerOutputToken?: number;
  /**
   * Output tokens when the request asks for more (or names no `max_tokens` /
   * `max_completion_tokens`); integer ≥ 1. **Default:** `16`.
   */
  defaultOutputTokens?: number;
  /**
   * Pace of streamed tokens after the first, in tokens per second, ≥ 0; `0` writes them all at
   * once. Non-streaming answers are not paced. **Default:** `200`.
   */
  tokensPerSecond?: number;
  /**
   * Path prefix whose requests (any method) are read, counted and answered
   * `{"pages":1,"bytes":N}` while holding a slot: an OCR pod. `null` disables it.
   * **Default:** `"/ocr/"`.
   */
  echoPrefix?: string | null;
  /** Length of each vector `POST /v1/embeddings` returns; integer ≥ 1. **Default:** `8`. */
  embeddingDims?: number;
  /**
   * Multiplies every duration the sim waits out: service time, per-token time, the streaming
   * pace and the OOM downtime, so a 19 s OCR page runs as 190 ms with `0.01`. > 0.
   * **Default:** `1`.
   */
  timeScale?: number;
  /**
   * Running sequences the machine's memory holds (seed 001's GB10): the grant that takes the
   * count past it is an OOM — the host goes unreachable (it stops listening, so connections are
   * refused, and every request on it is cut) for `oomDownMs`, then comes back. Integer ≥ 1 or
   * `Infinity`. Sims sharing a {@link SimMachine} count their sequences together and use the
   * machine's own point instead. **Default:** `Infinity` (never).
   */
  oomAt?: number;
  /** How long an OOM keeps the host unreachable, in ms (scaled by `timeScale`), ≥ 0. **Default:** `10000`. */
  oomDownMs?: number;
}

/** Options of `startSim()`: the profile plus what is fixed once the socket listens. */
export interface SimOptions extends SimProfile {
  /** TCP port; `0` picks a free one. **Default:** `0`. */
  port?: number;
  /** Address to listen on. **Default:** `"127.0.0.1"`. */
  host?: string;
  /** `backlog` passed to `server.listen()` (pending connections); integer ≥ 0. **Default:** Node's `511`. */
  listenBacklog?: number;
  /**
   * A machine shared with other sims (two endpoints on one GPU box): their running sequences
   * count together against its OOM point, and an OOM takes all of them down. **Default:** a
   * machine of this sim's own, from `oomAt` and `oomDownMs`.
   */
  machine?: SimMachine;
}

/** Every option with its default filled in. */
export type ResolvedSimOptions = Required<SimProfile> & {
  port: number;
  host: string;
  listenBacklog: number | undefined;
  machine: SimMachine | undefined;
};

/** The defaults, in one place so docs/sim.md and the CLI's `--help` can quote them. */
export const SIM_DEFAULTS: Readonly<ResolvedSimOptions> = Object.freeze({
  port: 0,
  host: "127.0.0.1",
  listenBacklog: undefined,
  machine: undefined,
  model: "sim-model",
  maxNumSeqs: 8,
  maxWaiting: Number.POSITIVE_INFINITY,
  overflow: "queue",
  serviceMs: 50,
  jitterSigma: 0.25,
  seed: 1,
  msPerOutputToken: 0,
  defaultOutputTokens: 16,
  tokensPerSecond: 200,
  echoPrefix: "/ocr/",
  embeddingDims: 8,
  timeScale: 1,
  oomAt: Number.POSITIVE_INFINITY,
  oomDownMs: 10_000,
});

const OVERFLOWS: readonly string[] = ["queue", "503", "429", "refuse"];

/** Merges `patch` over `base` and validates the result; throws `ConfigError` naming the option. */
export function resolveSimOptions(
  patch: SimOptions,
  base: Readonly<ResolvedSimOptions> = SIM_DEFAULTS,
): ResolvedSimOptions {
  const o: ResolvedSimOptions = { ...base };
  // Copy only keys that are present and not undefined, so `{ serviceMs: undefined }` keeps the base.
  for (const [key, value] of Object.entries(patch)) {
    if (value !== undefined) (o as Record<string, unknown>)[key] = value;
  }
  integer(o, "port", 0, 65535);
  integer(o, "maxNumSeqs", 1);
  integer(o, "defaultOutputTokens", 1);
  integer(o, "embeddingDims", 1);
  integer(o, "seed", Number.MIN_SAFE_INTEGER);
  if (o.maxWaiting !== Number.POSITIVE_INFINITY)
    integer(o, "maxWaiting", 0, Number.MAX_SAFE_INTEGER, "or Infinity");
  if (o.listenBacklog !== undefined) integer(o, "listenBacklog", 0);
  if (o.oomAt !== Number.POSITIVE_INFINITY) integer(o, "oomAt", 1, Number.MAX_SAFE_INTEGER, "or Infinity");
  if (typeof o.timeScale !== "number" || !Number.isFinite(o.timeScale) || o.timeScale <= 0)
    fail("timeScale", "a finite number > 0", o.timeScale);
  for (const key of [
    "serviceMs",
    "jitterSigma",
    "msPerOutputToken",
    "tokensPerSecond",
    "oomDownMs",
  ] as const) {
    const v = o[key];
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0) fail(key, "a finite number ≥ 0", v);
  }
  if (!OVERFLOWS.includes(o.overflow)) fail("overflow", `one of ${OVERFLOWS.join(", ")}`, o.overflow);
  if (typeof o.model !== "string" || o.model === "") fail("model", "a non-empty string", o.model);
  if (typeof o.host !== "string" || o.host === "") fail("host", "a non-empty string", o.host);
  if (o.echoPrefix !== null && (typeof o.echoPrefix !== "string" || !o.echoPrefix.startsWith("/"))) {
    fail("echoPrefix", 'a path prefix starting with "/", or null', o.echoPrefix);
  }
  return o;
}

function integer(
  o: ResolvedSimOptions,
  key: keyof ResolvedSimOptions,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
  extra = "",
): void {
  const v = o[key];
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `≥ ${min}` : `from ${min} to ${max}`;
    fail(
      key,
      `an integer ${min === Number.MIN_SAFE_INTEGER ? "" : range}${extra ? ` ${extra}` : ""}`.trim(),
      v,
    );
  }
}

function fail(key: string, expected: string, received: unknown): never {
  throw new ConfigError(`sim.${key}`, expected, received);
}
