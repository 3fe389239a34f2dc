import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import { request } from "undici";
import { duration, formatStatus, main } from "../../src/cli/status.js";
import { parseConfig } from "../../src/config/schema.js";
import type { Snapshot } from "../../src/core/snapshot.js";
import { Gateway } from "../../src/gateway/gateway.js";
import { startSim } from "../../src/sim/server.js";
import { sha256hex, waitFor } from "../helpers/index.js";
import { REDIS_URL, redisOrSkip, uniquePrefix } from "../store/redis-helpers.js";

const SNAPSHOT: Snapshot = {
  enabled: true,
  generated_at: "2025-06-01T12:00:00.000Z",
  replica: "gw-1:4242",
  lanes: [
    {
      lane: "qwen3-27b",
      limit: 6,
      reserve: 1,
      width: 6,
      queue_limit: 24,
      inflight: 6,
      queued: 9,
      queued_by_priority: { interactive: 0, default: 2, bulk: 7 },
      oldest_wait_s: 212.4,
      wait_p50_s_5m: 38,
      wait_p90_s_5m: 171,
      queue_timeouts_5m: 2,
      saturated: true,
      state: "local_queue",
      paused_s: 0,
    },
    {
      lane: "ocr",
      limit: 16,
      reserve: 1,
      width: 12,
      queue_limit: 64,
      inflight: 3,
      queued: 0,
      queued_by_priority: { interactive: 0, default: 0, bulk: 0 },
      oldest_wait_s: 0,
      wait_p50_s_5m: 0.05,
      wait_p90_s_5m: 1.25,
      queue_timeouts_5m: 0,
      saturated: false,
      state: "gateway_degraded",
      paused_s: 0,
    },
  ],
  pods: [
    {
      id: "http://10.0.0.5:8000",
      lane: "qwen3-27b",
      lanes: ["qwen3-27b"],
      width: 29,
      ceiling: 64,
      floor: 4,
      inflight: 27,
      breaker: "closed",
      reopens_in_s: 0,
      trips: 0,
      paused_s: 0,
      quota_paused_s: 0,
    },
    {
      id: "http://10.0.0.6:8000",
      lane: "ocr",
      lanes: ["ocr"],
      width: 4,
      ceiling: 8,
      floor: 4,
      inflight: 0,
      breaker: "open",
      reopens_in_s: 1.5,
      trips: 3,
      paused_s: 0,
      quota_paused_s: 0,
    },
  ],
  groups: [{ group: "gb10", limit: 40, inflight: 30 }],
  keys: [{ key: "chat-ui", max_inflight: 16, inflight: 4, queued: 1 }],
  accounts: [],
};

const EXPECTED = `sluice gw-1:4242 at 2025-06-01T12:00:00.000Z

LANE       INFLIGHT/LIMIT  WIDTH  QUEUED/LIMIT (I/D/B)  OLDEST WAIT  WAIT P50/P90 5M  TIMEOUTS 5M  SATURATED  STATE
qwen3-27b  6/6             6      9/24 (0/2/7)          3m32s        38s/2m51s        2            yes        local_queue
ocr        3/16            12     0/64 (0/0/0)          0s           50ms/1.3s        0            no         gateway_degraded

POD                   LANE       WIDTH/CEILING  INFLIGHT  BREAKER
http://10.0.0.5:8000  qwen3-27b  29/64          27        closed
http://10.0.0.6:8000  ocr        4/8            0         open (reopens in 1.5s, trip 3)

GROUP  INFLIGHT/LIMIT
gb10   30/40

KEY      INFLIGHT  QUEUED  MAX INFLIGHT
chat-ui  4         1       16`;

/** Runs `main` capturing what it prints. */
async function run(argv: string[], env: Record<string, string | undefined> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (t) => out.push(t), err: (t) => err.push(t), env });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

describe("formatStatus", () => {
  test("prints lanes, pods, groups and keys as padded columns", () => {
    assert.equal(formatStatus(SNAPSHOT), EXPECTED);
  });

  test("says so when there are no lanes", () => {
    const text = formatStatus({ ...SNAPSHOT, enabled: false, lanes: [], pods: [], groups: [], keys: [] });
    assert.match(text, /no lanes/);
    assert.doesNotMatch(text, /LANE/);
  });

  test("keys' tenants and budgets: used over the last minute against their rate, and the tenants' table", () => {
    const bucket = (perMinute: number, used: number) => ({
      per_minute: perMinute,
      available: 0,
      used_1m: used,
      reserve: 0,
    });
    const text = formatStatus({
      ...SNAPSHOT,
      pods: [],
      groups: [],
      keys: [
        {
          key: "chat-ui",
          max_inflight: 16,
          inflight: 4,
          queued: 1,
          tenant: "web",
          tokens: bucket(20_000, 12_345),
          requests: null,
        },
        { key: "batch", max_inflight: 8, inflight: 0, queued: 0 },
      ],
      tenants: [
        {
          tenant: "web",
          keys: ["chat-ui"],
          inflight: 4,
          queued: 1,
          tokens: bucket(50_000, 12_345),
          requests: bucket(600, 42),
        },
      ],
    });
    const tail = text.slice(text.indexOf("KEY"));
    assert.equal(
      tail,
      `KEY      INFLIGHT  QUEUED  MAX INFLIGHT  TENANT  TOKENS/MIN USED/TPM  REQUESTS/MIN USED/RPM
chat-ui  4         1       16            web     12345/20000          -
batch    0         0       8             -       -                    -

TENANT  KEYS     INFLIGHT  QUEUED  TOKENS/MIN USED/TPM  REQUESTS/MIN USED/RPM
web     chat-ui  4         1       12345/50000          42/600`,
    );
  });

  test("each key's (tenant's) part of a lane: in flight, queued, weight, configured share and the part it holds", () => {
    const flow = (
      name: string,
      inflight: number,
      queued: number,
      weight: number,
      share: number,
      used: number,
    ) => ({
      flow: name,
      inflight,
      queued,
      weight,
      share,
      used,
    });
    const text = formatStatus({
      ...SNAPSHOT,
      lanes: [
        // team-a floods and holds 7 of 9 slots; team-b offers less than its half.
        {
          ...SNAPSHOT.lanes[0]!,
          inflight: 9,
          flows: [flow("tenant:team-a", 7, 9, 1, 0.5, 0.778), flow("tenant:team-b", 2, 0, 1, 0.5, 0.222)],
        },
        SNAPSHOT.lanes[1]!,
      ],
      pods: [],
      groups: [],
      keys: [],
    });
    const lines = text.split("\n");
    const at = lines.indexOf("LANE       FLOW           INFLIGHT  QUEUED  WEIGHT  SHARE  USED");
    assert.ok(at > 0, text);
    assert.deepEqual(lines.slice(at + 1, at + 3), [
      "qwen3-27b  tenant:team-a  7         9       1       50%    78%",
      "qwen3-27b  tenant:team-b  2         0       1       50%    22%",
    ]);
    assert.equal(lines[at + 3], undefined, "a lane without flows (ocr) has no rows");
    assert.doesNotMatch(formatStatus({ ...SNAPSHOT, pods: [], groups: [], keys: [] }), /FLOW/);
  });

  test("leaves out empty sections", () => {
    const text = formatStatus({ ...SNAPSHOT, pods: [], groups: [], keys: [] });
    assert.doesNotMatch(text, /POD|GROUP|KEY/);
  });

  // Replica gw-1 holds 2 of the lane's 5 calls in flight across the fleet.
  const FLEET: Snapshot = {
    ...SNAPSHOT,
    lanes: [{ ...SNAPSHOT.lanes[1]!, inflight: 2, fleet_inflight: 5 }],
    pods: [{ ...SNAPSHOT.pods[0]!, inflight: 2, fleet_inflight: 5 }],
    // The admission bound, listed among the groups too: shown once, in its own table.
    groups: [
      { group: "gateway", limit: 32, inflight: 2 },
      { group: "gb10", limit: 40, inflight: 2, fleet_inflight: 5 },
    ],
    keys: [],
    admission: { inflight: 2, fleet_inflight: 5, max_inflight: 32, admitted: 3, max_queued: 32 },
    store: { description: "redis+cluster://r1:7000,r2:7000", mode: "connected", replica: "gw-1:4242" },
  };

  test("with a fleet store: the store, its mode and replica, and each budget's fleet count with this replica's share", () => {
    assert.equal(
      formatStatus(FLEET),
      `sluice gw-1:4242 at 2025-06-01T12:00:00.000Z
store redis+cluster://r1:7000,r2:7000 (replica gw-1:4242): connected, counts are the fleet's, with this replica's share

LANE  FLEET INFLIGHT/LIMIT  THIS REPLICA  WIDTH  QUEUED/LIMIT (I/D/B)  OLDEST WAIT  WAIT P50/P90 5M  TIMEOUTS 5M  SATURATED  STATE
ocr   5/16                  2             12     0/64 (0/0/0)          0s           50ms/1.3s        0            no         gateway_degraded

POD                   LANE       WIDTH/CEILING  FLEET INFLIGHT  THIS REPLICA  BREAKER
http://10.0.0.5:8000  qwen3-27b  29/64          5               2             closed

GROUP  FLEET INFLIGHT/LIMIT  THIS REPLICA
gb10   5/40                  2

ADMISSION  FLEET INFLIGHT/MAX  THIS REPLICA  ADMITTED/MAX
gateway    5/32                2             3/64`,
    );
  });

  test("while Redis is unreachable the fleet's count is unknown (?) and the policy in force is named", () => {
    for (const mode of ["local", "open", "closed"] as const) {
      const text = formatStatus({ ...FLEET, store: { ...FLEET.store!, mode } });
      assert.match(
        text,
        new RegExp(
          `^store \\S+ \\(replica gw-1:4242\\): ${mode}, Redis unreachable: .*fleet counts unknown$`,
          "m",
        ),
      );
      assert.match(text, /^ocr +\?\/16 +2 +12 /m);
    }
    const memory = formatStatus({ ...SNAPSHOT, store: { description: "memory", mode: "memory" } });
    assert.match(memory, /^store memory: this process only$/m);
    assert.match(memory, /^LANE +INFLIGHT\/LIMIT +WIDTH/m, "one in-flight column with the memory store");
  });

  test("writes durations short", () => {
    assert.deepEqual([0, 0.0504, 4.25, 38, 59.7, 212.4, 3900].map(duration), [
      "0s",
      "50ms",
      "4.3s",
      "38s",
      "1m00s",
      "3m32s",
      "1h05m",
    ]);
  });
});

describe("sluice status", () => {
  let server: Server;
  let url: string;
  let seenAuth: string | undefined;

  before(async () => {
    server = createServer((req, res) => {
      seenAuth = req.headers.authorization;
      if (seenAuth === "Bearer wrong") res.writeHead(401).end("admin key required");
      else if (req.url === "/api/telemetry/lanes") {
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(SNAPSHOT));
      } else res.writeHead(404).end("not here");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  test("prints the table of the gateway at --url", async () => {
    const r = await run(["--url", url]);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, EXPECTED);
  });

  test("prints the snapshot as JSON with --json, sending the admin key from the environment", async () => {
    const r = await run(["--url", url, "--json"], { SLUICE_ADMIN_KEY: "s3cret" });
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(JSON.parse(r.out), SNAPSHOT);
    assert.equal(seenAuth, "Bearer s3cret");
  });

  test("reads the URL from SLUICE_URL", async () => {
    const r = await run([], { SLUICE_URL: url });
    assert.equal(r.code, 0, r.err);
  });

  test("exits 1 with a clear message when nothing answers", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const r = await run(["--url", `http://127.0.0.1:${port}`]);
    assert.equal(r.code, 1);
    assert.match(r.err, new RegExp(`no gateway answering at http://127\\.0\\.0\\.1:${port}`));
  });

  test("exits 1 naming the status when the gateway says no", async () => {
    const r = await run(["--url", url], { SLUICE_ADMIN_KEY: "wrong" });
    assert.equal(r.code, 1);
    assert.match(r.err, /answered 401: admin key required/);
  });

  test("exits 2 with the usage on an unknown flag or a bad URL", async () => {
    const r = await run(["--watch"]);
    assert.equal(r.code, 2);
    assert.match(r.err, /--watch/);
    assert.match(r.err, /usage: sluice status/);
    assert.equal((await run(["--url", "not a url"])).code, 2);
    assert.equal((await run(["--url", "ftp://x"])).code, 2);
  });
});

describe("sluice status against two gateways sharing one Redis", { timeout: 30_000 }, () => {
  test("each replica's status shows the fleet's in flight, its own share, the store's mode and its replica id", async (t) => {
    const probe = await redisOrSkip(t);
    if (probe === null) return;
    probe.disconnect();
    const sim = await startSim({ serviceMs: 60_000, jitterSigma: 0, maxNumSeqs: 16 });
    const config = parseConfig({
      store: REDIS_URL,
      fleet: { prefix: uniquePrefix(), lease_ttl_s: 1 },
      admission: { max_concurrency: 16 },
      gpu_groups: { g: { max_inflight: 8 } },
      models: [
        {
          name: "m",
          max_concurrent_requests: 4,
          reserve: 0,
          queue_limit: 8,
          adaptive: false,
          pods: [{ url: sim.url, max_inflight: 4, gpu_group: "g" }],
        },
      ],
    });
    const gateways = [0, 1].map(() => new Gateway({ config, logger: pino({ level: "silent" }) }));
    const abort = new AbortController();
    try {
      const [a, b] = await Promise.all(gateways.map((g) => g.listen(0, "127.0.0.1")));
      // Calls the sim holds for a minute: two through a, one through b (aborted at the end).
      const hold = (url: string, i: number) =>
        request(`${url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "m", messages: [{ role: "user", content: `hold ${i}` }] }),
          signal: abort.signal,
        }).catch(() => undefined);
      const calls = [hold(a!, 1), hold(a!, 2), hold(b!, 3)];
      const lane = (g: Gateway) => g.governor.snapshot().lanes[0]!;
      await waitFor("both replicas hear the fleet's 3 calls", () =>
        gateways.every((g) => lane(g).fleet_inflight === 3),
      );
      const out: string[] = [];
      const status = async (url: string) => {
        out.length = 0;
        assert.equal(
          await main(["--url", url], { out: (x) => out.push(x), err: (x) => out.push(x), env: {} }),
          0,
        );
        return out.join("\n");
      };
      for (const [url, gateway, mine] of [
        [a!, gateways[0]!, 2],
        [b!, gateways[1]!, 1],
      ] as const) {
        const text = await status(url);
        const replica = gateway.governor.snapshot().store!.replica!;
        assert.ok(text.includes(`store redis://127.0.0.1:6379 (replica ${replica}): connected,`), text);
        assert.match(
          text,
          new RegExp(`^m +3/4 +${mine} +4 `, "m"),
          "lane: fleet 3 of 4, this replica's share",
        );
        assert.match(
          text,
          new RegExp(`^http://127\\.0\\.0\\.1:\\d+ +m +4/4 +3 +${mine} +closed$`, "m"),
          "pod",
        );
        assert.match(text, new RegExp(`^gpu:g +3/8 +${mine}$`, "m"), "GPU group");
        assert.doesNotMatch(
          text,
          /^gateway +\d+\/16 +\d+$/m,
          "the admission bound is not shown as a group too",
        );
        assert.match(text, new RegExp(`^gateway +3/16 +${mine} +${mine}/\\d+$`, "m"), "admission");
      }
      abort.abort();
      await Promise.all(calls);
    } finally {
      abort.abort();
      await Promise.all(gateways.map((g) => g.close()));
      await sim.close();
    }
  });
});

describe("sluice status against a gateway with weighted keys", { timeout: 30_000 }, () => {
  test("prints each key's part of the lane: alpha holds 4 of 4 for a share of 25 %, beta's 2 calls wait", async () => {
    const sim = await startSim({ serviceMs: 60_000, jitterSigma: 0, maxNumSeqs: 16 });
    const config = parseConfig({
      auth: {
        keys: [
          { id: "alpha", sha256: sha256hex("token-alpha"), weight: 1 },
          { id: "beta", sha256: sha256hex("token-beta"), weight: 3 },
        ],
      },
      models: [
        {
          name: "m",
          max_concurrent_requests: 4,
          reserve: 0,
          queue_limit: 8,
          queue_timeout_s: 60,
          adaptive: false,
          pods: [{ url: sim.url, max_inflight: 4 }],
        },
      ],
    });
    const gateway = new Gateway({ config, logger: pino({ level: "silent" }) });
    const abort = new AbortController();
    try {
      const url = await gateway.listen(0, "127.0.0.1");
      // Calls the sim holds for a minute (aborted at the end): alpha's four first, then beta's two.
      const hold = (token: string, i: number) =>
        request(`${url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
          body: JSON.stringify({ model: "m", messages: [{ role: "user", content: `hold ${i}` }] }),
          signal: abort.signal,
        }).catch(() => undefined);
      const lane = () => gateway.governor.snapshot().lanes[0]!;
      const calls = [1, 2, 3, 4].map((i) => hold("token-alpha", i));
      await waitFor("alpha's 4 calls in flight", () => lane().inflight === 4);
      calls.push(hold("token-beta", 5), hold("token-beta", 6));
      await waitFor("beta's 2 calls queued", () => lane().queued === 2);
      const out: string[] = [];
      const code = await main(["--url", url], { out: (x) => out.push(x), err: (x) => out.push(x), env: {} });
      assert.equal(code, 0, out.join("\n"));
      const lines = out.join("\n").split("\n");
      const at = lines.indexOf("LANE  FLOW       INFLIGHT  QUEUED  WEIGHT  SHARE  USED");
      assert.ok(at > 0, lines.join("\n"));
      assert.deepEqual(lines.slice(at + 1, at + 3), [
        "m     key:alpha  4         0       1       25%    100%",
        "m     key:beta   0         2       3       75%    0%",
      ]);
      abort.abort();
      await Promise.all(calls);
    } finally {
      abort.abort();
      await gateway.close();
      await sim.close();
    }
  });
});
