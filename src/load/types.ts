/**
 * What a load profile is made of (issue 11): the pods it simulates, the gateway config in front
 * of them, the clients that drive them, and the checks that say whether the seed's incident
 * shows without sluice and is absent with it. Every duration in a profile is in **seed time**
 * (the incident's own seconds); the runner multiplies by the time scale (`--scale`).
 */
import type { Priority } from "../core/priority.js";
import type { SimOptions } from "../sim/options.js";
import type { ProviderAnswerOptions } from "../sim/provider-answer.js";
import type { RunStats } from "./stats.js";

/** One simulated pod of a profile: a `sluice sim` server, or a provider's account. */
export type PodSpec = SimPodSpec | ProviderPodSpec;

/** A `sluice sim` pod (src/sim/server.ts). */
export interface SimPodSpec {
  kind?: "sim";
  model: string;
  /** Sim options, durations in seed ms (`timeScale` is set by the runner). */
  options: SimOptions;
  /** A key of `LoadProfile.machines`: pods naming the same machine share its memory (OOM point). */
  machine?: string;
}

/**
 * A hosted provider's account (src/sim/provider.ts): token and request buckets per minute, 429
 * with reset headers past them. Its limits are per real minute: a profile with a metered account
 * runs at scale 1 (time-scale.ts says why); its service times are in seed ms like a sim's.
 */
export interface ProviderPodSpec {
  kind: "provider";
  model: string;
  account: {
    /** Tokens per minute. */
    tpm?: number;
    /** Requests per minute. */
    rpm?: number;
    /** Seed ms before an answer. **Default:** `0`. */
    serviceMs?: number;
    /** Seed ms added per output token. **Default:** `0`. */
    msPerOutputToken?: number;
  } & Omit<ProviderAnswerOptions, "model">;
}

/** A machine several pods run on (seed 001's GB10). */
export interface MachineSpec {
  /** Running sequences its memory holds; one more is an OOM. */
  oomAt: number;
  /** How long an OOM keeps it unreachable, seed ms. */
  downMs: number;
}

/** What one request of a client group looks like. */
export interface RequestShape {
  /** `chat` → `/v1/chat/completions`, `embedding` → `/v1/embeddings`, `echo` → `path` + a page name (an upload). */
  kind: "chat" | "embedding" | "echo";
  model: string;
  stream?: boolean;
  maxTokens?: number;
  /** `echo`: the upload's size in bytes. */
  bodyBytes?: number;
  /** `echo`: the path prefix the gateway routes to `model` (`/ocr/`). */
  path?: string;
  /**
   * `chat`: words in the message, past the request's own label: a document to summarise (seed
   * 004's large calls) rather than a one-line question. Distinct per request. **Default:** none.
   */
  promptWords?: number;
}

/** What a client does with an attempt that did not succeed. */
export interface RetryPolicy {
  /** Attempts per request at most, the first included (1 = never retry). */
  maxAttempts: number;
  /** Retry sluice's own refusals (429/503 with `X-Sluice-Reason`) after their `Retry-After`. */
  sluiceRefusals: boolean;
  /** Retry what the pod did: a refused or reset connection, its 429/5xx, the client's own timeout. */
  upstreamFailures: boolean;
  /** Wait before a retry the answer gives no `Retry-After` for: full jitter over `min(maxMs, baseMs · 2^n)`, seed ms. */
  backoff: { baseMs: number; maxMs: number };
}

/** How a group's requests arrive. */
export type Arrival =
  /** `clients` loops: send, wait for the answer (retries included), think, send the next. */
  | { kind: "closed"; clients: number; thinkMs?: number }
  /** Poisson arrivals at `perSecond` (seed seconds), each an independent request. */
  | { kind: "open"; perSecond: number }
  /** `count` requests at once, at the group's start. */
  | { kind: "burst"; count: number }
  /**
   * `callers` loops, each sending `width` requests at once and waiting for all of them (retries
   * included) before it thinks and sends the next wave: a workflow's fan-out (seed 002: three
   * review panels, each running its finders five at a time).
   */
  | { kind: "fanout"; callers: number; width: number; thinkMs?: number };

/** A population of clients that behave alike. */
export interface ClientGroup {
  name: string;
  request: RequestShape;
  /** Sent as `X-Sluice-Priority` through sluice; the pods never see it. **Default:** none (`default`). */
  priority?: Priority;
  arrival: Arrival;
  /** When the group starts offering, seed ms from the run's start. **Default:** `0`. */
  startMs?: number;
  /** When it stops offering, seed ms from the run's start. **Default:** the profile's `durationMs`. */
  stopMs?: number;
  /** The client's own bound on one attempt, seed ms. **Default:** none. */
  timeoutMs?: number;
  /** Retries through sluice and straight to the pods. **Default:** none (one attempt). */
  retry?: { sluice?: RetryPolicy; direct?: RetryPolicy };
  /**
   * The tenant it sends as: `token` goes as `Authorization: Bearer` (the gateway's `auth.keys`
   * know its SHA-256; a pod ignores it) and `id` as `x-sim-tenant`, which the gateway forwards and
   * the sims count by (`PodStats.tenants`), on both sides. **Default:** none (no key, not counted).
   */
  tenant?: { id: string; token: string };
  /**
   * Each call carries `Idempotency-Key: <group>-<index>` (its retries the same one), as clients
   * that name their calls do: the gateway's retry pacing (src/gateway/pacing.ts) then never takes
   * a new call on a connection for a retry of the refused one before it — which it may when two
   * calls' prompts have the same length and the next follows a refusal within 20 ms, as a
   * tenant's flood of one-line calls does. **Default:** `false`.
   */
  idempotencyKeys?: boolean;
  /**
   * Through several gateway replicas, the one (0-based) every call of the group takes, as a
   * client pinned to one region or one balancer does; straight to the pods it is ignored.
   * **Default:** none (the replicas in turn).
   */
  replica?: number;
}

/** One check of a run against the targets. */
export interface Check {
  /** What is checked, as a sentence. */
  name: string;
  /** The target as written (`≤ 760 ms`). */
  target: string;
  /** What was measured, formatted. */
  value: string;
  met: boolean;
}

/** A load profile: one seed's incident, replayed. */
export interface LoadProfile {
  name: string;
  /** The seed it replays (`000`). */
  seed: string;
  /** One line: the incident and what sluice should show. */
  title: string;
  /** Lines printed before the run: the setup in the seed's numbers. */
  story: string[];
  /** Real ms per seed ms when `--scale` is not given. */
  defaultScale: number;
  pods: PodSpec[];
  machines?: Record<string, MachineSpec>;
  /**
   * The gateway config (YAML-shaped, as `parseConfig` takes it) for these pod URLs by model;
   * `s(seconds)` turns seed seconds into the scaled seconds a duration key takes.
   */
  config(
    urls: Readonly<Record<string, string[]>>,
    s: (seedSeconds: number) => number,
  ): Record<string, unknown>;
  /**
   * Gateways each gateway run starts, every one with its own config and store, the clients
   * taking them in turn (seed 004's replicas). **Default:** `1`.
   */
  replicas?: number;
  /**
   * The other run's gateways (`replicas` of them) instead of straight to the pods: seed 004's
   * contrast is per-process limits against a shared store, both through gateways.
   */
  directConfig?(
    urls: Readonly<Record<string, string[]>>,
    s: (seedSeconds: number) => number,
  ): Record<string, unknown>;
  /**
   * Seed 004's autoscaler: each gateway run starts `from` replicas and adds one at a time while
   * the clients' latency is above a target, up to `replicas`. **Default:** none (every replica
   * runs from the start).
   */
  autoscale?: AutoscaleSpec;
  /**
   * A third run through sluice, the same clients honouring sluice's `Retry-After` with this
   * policy (seed 000: a client told "not now, and when"); shown beside the other two.
   * **Default:** none.
   */
  honouring?: { label: string; retry: RetryPolicy };
  /**
   * One more run through sluice with only these groups offering (issue 24's tenant B with A
   * absent: the reference its waits under A's flood are held to), and `aloneChecks` over it.
   * Run first; shown as the first column. **Default:** none.
   */
  alone?: { label: string; groups: readonly string[] };
  /** The two runs' names in the report. **Default:** `["through sluice", "straight to the pods"]`. */
  labels?: [string, string];
  /** Before any run: throws what the profile needs and does not find (Redis), as a usage error. */
  preflight?(): Promise<void>;
  groups: ClientGroup[];
  /** When offering stops, seed ms; then the run drains. */
  durationMs: number;
  /** Start of the measurement window (after the widths converge), seed ms. **Default:** `0`. */
  warmupMs?: number;
  /**
   * Longest the run waits, once offering stops, for requests still going (retries included),
   * seed ms; what is still going then is cut and counted `cut_at_drain`. **Default:**
   * `2 × durationMs`.
   */
  drainMs?: number;
  /** The headline checks of the run through sluice; `scale` is real ms per seed ms. */
  checks(sluice: RunStats, scale: number): Check[];
  /** The checks that the run straight to the pods shows the incident. */
  directChecks(direct: RunStats, scale: number): Check[];
  /** The checks of the `honouring` run, when there is one. **Default:** none. */
  honouringChecks?(honouring: RunStats, scale: number): Check[];
  /** The checks of the `alone` run, against the run through sluice with every group when there is one. **Default:** none. */
  aloneChecks?(alone: RunStats, sluice: RunStats | null, scale: number): Check[];
}

/**
 * An autoscaler that reacts to downstream latency (seed 004's feedback loop): every `everyMs` it
 * looks at the requests that ended since its last look and adds one replica when their mean time
 * from first attempt to end (retries and their waits included, failed requests too) is above
 * `latencyMs` — or when none ended while some are open, the slowest there is.
 */
export interface AutoscaleSpec {
  /** Replicas at the start. */
  from: number;
  /** Seed ms between two looks. */
  everyMs: number;
  /** The latency target, seed ms. */
  latencyMs: number;
}

/** A profile registered before what it needs exists: asking for it exits 2 with `reason`. */
export interface NotBuiltProfile {
  name: string;
  seed: string;
  title: string;
  notBuilt: true;
  /** Why, and what must exist first. */
  reason: string;
}
