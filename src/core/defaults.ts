/**
 * Every default sluice applies, in one table (STYLE G8: units in the names). The library
 * (`new Governor(options)`, through `options.ts`), the gateway config (`src/config`) and the
 * algorithms' own constructors (`AimdWidth`, `Breaker`) all read their defaults here and nowhere
 * else; `docs/config.md` lists the same values. Plain data with no imports, so the core keeps no
 * dependencies.
 */

const MiB = 2 ** 20;

export const DEFAULTS = {
  /** A lane: a library lane (`GovernorOptions.lanes`) or one model of the gateway config. */
  lane: {
    /** A lane created on first use without `defaults.limit`: 0 = pass-through (no waiting, no counting). */
    limit: 0,
    /** Slots only interactive callers may take (clamped to `limit − 1`). */
    reserve: 1,
    /** The queue holds this many waiters per slot of the lane's limit (`queueLimit = 4 × limit`). */
    queueLimitPerSlot: 4,
    /** Longest wait for a slot. */
    queueTimeoutMs: 30_000,
    /** A waiter's class rises one step per this long waited, so bulk work cannot starve. */
    agingMs: 60_000,
  },
  /** Adaptive pod width (AIMD, `aimd.ts`). */
  adaptive: {
    /** Lowest width a cut can reach (clamped to the pod's ceiling). */
    floor: 4,
    /**
     * Factor of a repeat cut. The first cut from the ceiling halves; later cuts happen near the
     * pod's real capacity, where halving would idle a quarter of it on average (docs/adaptive.md).
     */
    decrease: 0.8,
  },
  /** A pod's circuit breaker (`breaker.ts`). */
  breaker: {
    /** `false`: the breaker never opens (the width still adapts). */
    enabled: true,
    /** Consecutive overload signals that open it: react to the first sign. */
    failThreshold: 1,
    /** First cooldown. */
    baseCooldownMs: 500,
    /** Cooldown cap. */
    maxCooldownMs: 30_000,
    /** Cooldown growth per repeated trip. */
    backoffFactor: 2,
  },
  /** Provider quota signals (a 429 with `Retry-After` or a rate-limit reset). */
  quota: {
    /** Longest a quota signal pauses a pod: a `Retry-After: 99999999` must not park it for years. */
    maxPauseMs: 60_000,
  },
  /** Fleet mode: several processes sharing every budget through a Redis store. */
  fleet: {
    /** How long a replica's calls count after its last heartbeat (it heartbeats every third of it). */
    leaseTtlMs: 15_000,
    /**
     * Heartbeats per lease: a replica renews its lease every `leaseTtlMs ÷ 3`, so two heartbeats
     * can be lost (a slow round trip, a GC pause) before the fleet stops counting its calls.
     */
    heartbeatsPerLease: 3,
    /** The shortest lease: its heartbeat every 100 ms is as often as a fleet should write. */
    minLeaseTtlMs: 300,
    /** While Redis is unreachable: `local` divides each limit by `expectedReplicas`; `open`; `closed`. */
    onStoreError: "local",
    /** Replicas the fleet runs, for `local`'s static division. */
    expectedReplicas: 2,
    /** Prefix (and Cluster hash tag) of every key. */
    prefix: "sluice",
  },
  /** A library key (`GovernorOptions.keys`): the highest class it may claim, uncapped by default. */
  key: { maxPriority: "interactive" },
  /** The gateway (`sluice serve`) and the config keys only it reads. */
  gateway: {
    listen: { host: "127.0.0.1", port: 8080 },
    mode: "enforce",
    /** Calls in flight across the gateway. */
    maxConcurrency: 32,
    /** Calls waiting across the gateway; 0 = the same as `maxConcurrency`. */
    maxQueued: 0,
    maxBodyBytes: 20 * MiB,
    maxBufferedBytes: 256 * MiB,
    /**
     * `admission.max_json_depth` / `max_json_values`: the bounded parse of a JSON body (issue 21).
     * 64 levels hold any real request (a tool's schema nested 30 deep); 500 000 values hold
     * OpenAI's largest embeddings call (300 000 token ids in up to 2048 lists) while bounding
     * `JSON.parse` to ~80 ms and ~32 MB for the worst shape (`[{},{},…]`).
     */
    maxJsonDepth: 64,
    maxJsonValues: 500_000,
    headerTimeoutMs: 10_000,
    bodyTimeoutMs: 30_000,
    /** A model's `upstream_timeout_s`: a pod's answer must start (status and headers) within it. */
    upstreamTimeoutMs: 60_000,
    /** A model's `stream_idle_timeout_s`: the longest silence between two chunks of a pod's answer. */
    streamIdleTimeoutMs: 30_000,
    /** `admission.drain_timeout_s`: after SIGTERM, calls still running this long are cut. */
    drainTimeoutMs: 30_000,
    /**
     * A model's `default_max_tokens`: what a request that names no `max_tokens` /
     * `max_completion_tokens` reserves for its answer on the token budgets (`tpm`), so leaving it
     * out cannot dodge them.
     */
    defaultMaxTokens: 4096,
    /** A model's `image_tokens`: the most one image costs (OpenAI's tile formula, gpt-4o: 8 tiles). */
    imageTokens: 1445,
    /** A model's `max_concurrent_requests`, and a pod's `max_inflight`, when nothing says otherwise. */
    maxInflight: 32,
    /** A client key is capped at `default` unless the config lets it ask for `interactive`. */
    clientKeyMaxPriority: "default",
    /** `vllm:num_requests_waiting` above this is a congestion signal (`metrics_url` polling). */
    maxWaiting: 5,
    metricsPollMs: 1000,
    logLevel: "info",
  },
} as const;

/**
 * The longest wait a timer can hold: Node's setTimeout takes at most 2^31 - 1 ms (~24.8 days) and
 * fires after 1 ms past it, so a longer queue timeout would expire every waiter at once (and a
 * re-armed one would spin). Every duration is held to it, in the config and in the library options.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;
