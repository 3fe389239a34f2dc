/**
 * The misbehaviours `sluice load` replays (issue 11): an OOM point that takes the host away and
 * brings it back (seed 001), an OCR pod that refuses connections past its backlog (seed 000), a
 * time scale, and what every sim reports it saw on /metrics and in its report line.
 */
import assert from "node:assert/strict";
import { connect } from "node:net";
import { describe, test } from "node:test";
import { SimMachine } from "../../src/sim/machine.js";
import { SIM_PROFILES } from "../../src/sim/profiles.js";
import { startSim } from "../../src/sim/server.js";
import { chatBody, waitFor } from "../helpers/index.js";
import { get, held, post } from "./helpers.js";

const HOLD_MS = 60_000;

/** Resolves with the error code of a TCP connect to `url` (or "connected"). */
function connectOutcome(url: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    socket.once("connect", () => {
      socket.destroy();
      resolve("connected");
    });
    socket.once("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
  });
}

describe("sim: OOM point", () => {
  test("the grant past oom_at takes the host down: requests cut, connections refused", async () => {
    const sim = await startSim({ maxNumSeqs: 8, oomAt: 3, oomDownMs: HOLD_MS, serviceMs: HOLD_MS });
    const ac = new AbortController();
    try {
      const pending = [1, 2, 3].map((i) => held(sim.url, ac.signal, `h${i}`));
      await waitFor("3 running", () => sim.stats().running === 3);
      assert.equal(sim.stats().oomEvents, 0, "at the OOM point itself the host holds");
      const fourth = post(sim.url, "/v1/chat/completions", chatBody("m", "one too many")).catch((e) => e);
      await waitFor("the host down", () => sim.stats().down);
      assert.equal(sim.stats().oomEvents, 1);
      assert.ok((await fourth) instanceof Error, "the request that ran the host out of memory is cut too");
      const cut = await Promise.all(pending);
      assert.ok(
        cut.every((c) => c instanceof Error),
        "every request held was cut",
      );
      await waitFor("every request cut", () => sim.stats().running === 0);
      assert.equal(sim.stats().cutByOom, 4);
      assert.equal(await connectOutcome(sim.url), "ECONNREFUSED");
      assert.equal(sim.machine.maxRunningSeen, 4);
    } finally {
      ac.abort();
      await sim.close();
    }
  });

  test("comes back after its downtime and serves again, OOM events counted", async () => {
    // The burst's calls never end by themselves, so the second is granted while the first runs
    // however far apart they arrive (with a 5 ms service a loaded machine let the first finish
    // first: no OOM, one answered); the call after the downtime is served at once.
    const sim = await startSim({
      maxNumSeqs: 8,
      oomAt: 1,
      oomDownMs: 100,
      serviceMs: HOLD_MS,
      jitterSigma: 0,
    });
    try {
      const burst = await Promise.allSettled(
        [1, 2].map((i) => post(sim.url, "/v1/chat/completions", chatBody("m", `b${i}`))),
      );
      assert.ok(burst.every((b) => b.status === "rejected"));
      await waitFor("the host back", () => !sim.stats().down && sim.stats().oomEvents === 1, 5000);
      sim.setProfile({ serviceMs: 5 });
      const res = await post(sim.url, "/v1/chat/completions", chatBody("m", "after"));
      assert.equal(res.status, 200);
      assert.equal(sim.stats().oomEvents, 1);
      const { text } = await get(sim.url, "/metrics");
      assert.match(text, /^sluice_sim_oom_events_total\{model_name="sim-model"\} 1$/m);
      assert.match(sim.report(), /OOM events 1 \(oom_at 1, 2 requests cut\)/);
    } finally {
      await sim.close();
    }
  });

  test("sims on one machine count their sequences together and go down together", async () => {
    const machine = new SimMachine({ oomAt: 3, downMs: HOLD_MS });
    const qwen = await startSim({ model: "qwen", machine, serviceMs: HOLD_MS });
    const embed = await startSim({ model: "bge-m3", machine, serviceMs: HOLD_MS });
    const ac = new AbortController();
    try {
      const pending = [
        held(qwen.url, ac.signal, "q1"),
        held(qwen.url, ac.signal, "q2"),
        held(embed.url, ac.signal, "e1"),
      ];
      await waitFor("3 running on the machine", () => machine.running === 3);
      assert.equal(machine.oomEvents, 0);
      const more = post(embed.url, "/v1/chat/completions", chatBody("m", "e2")).catch((e) => e);
      await waitFor("both down", () => qwen.stats().down && embed.stats().down);
      assert.equal(machine.oomEvents, 1);
      assert.equal(qwen.stats().oomEvents, 1, "each sim reports its machine's OOMs");
      assert.equal(await connectOutcome(qwen.url), "ECONNREFUSED");
      assert.equal(await connectOutcome(embed.url), "ECONNREFUSED");
      await more;
      await Promise.all(pending);
    } finally {
      ac.abort();
      await Promise.all([qwen.close(), embed.close()]);
    }
  });

  test("without an OOM point the host never goes down", async () => {
    const sim = await startSim({ maxNumSeqs: 64, serviceMs: 1 });
    try {
      await Promise.all(
        Array.from({ length: 40 }, (_, i) => post(sim.url, "/v1/chat/completions", chatBody("m", `x${i}`))),
      );
      assert.deepEqual([sim.stats().oomEvents, sim.stats().down], [0, false]);
    } finally {
      await sim.close();
    }
  });
});

describe("sim: ocr-pod", () => {
  test("serves its pages at a time, holds a backlog, and refuses the connection past it", async () => {
    const profile = SIM_PROFILES["ocr-pod"];
    const sim = await startSim({ ...profile, serviceMs: HOLD_MS, timeScale: 1 });
    const ac = new AbortController();
    const n = profile.maxNumSeqs! + profile.maxWaiting!;
    try {
      const pending = Array.from({ length: n }, (_, i) =>
        post(sim.url, `/ocr/page-${i}`, "p".repeat(4096), { signal: ac.signal }).catch((e) => e),
      );
      await waitFor("full: running and backlog", () => sim.stats().running + sim.stats().waiting === n);
      const err = await post(sim.url, "/ocr/one-more", "p".repeat(4096)).then(
        (res) => assert.fail(`expected a refused connection, got HTTP ${res.status}`),
        (e: { code?: string }) => e,
      );
      assert.ok(["UND_ERR_SOCKET", "ECONNRESET", "EPIPE"].includes(err.code ?? ""), `got ${err.code}`);
      const s = sim.stats();
      assert.deepEqual(
        [s.maxRunningSeen, s.maxInflightSeen, s.refusedConnections, s.throttled, s.overloaded],
        [profile.maxNumSeqs, n, 1, 0, 0],
      );
      const { text } = await get(sim.url, "/metrics");
      assert.match(text, /^sluice_sim_refusals_total\{kind="connection",model_name="ocr"\} 1$/m);
      assert.match(text, new RegExp(`^sluice_sim_max_inflight\\{model_name="ocr"\\} ${n}$`, "m"));
      ac.abort();
      await Promise.all(pending);
    } finally {
      ac.abort();
      await sim.close();
    }
  });

  test("a page of 19 s runs in 190 ms at time scale 0.01 (the drawn service time is scaled)", async () => {
    // Asserted on the busy-slot integral with a 10× margin each way (timers may fire a fraction
    // of a millisecond early, and a loaded machine late): scaled, the page is nowhere near 19 s.
    const sim = await startSim({ ...SIM_PROFILES["ocr-pod"], jitterSigma: 0 });
    try {
      const res = await post(sim.url, "/ocr/page", "p".repeat(100));
      assert.equal(res.status, 200);
      const busy = sim.stats().busySlotMs;
      assert.ok(busy > 19 && busy < 1900, `busy ${busy} ms`);
    } finally {
      await sim.close();
    }
  });
});

describe("sim: what it saw", () => {
  test("counts 429 throttles and 503s apart, on /metrics and in its report", async () => {
    const sim = await startSim({ maxNumSeqs: 1, maxWaiting: 0, overflow: "429", serviceMs: HOLD_MS });
    const ac = new AbortController();
    try {
      const pending = held(sim.url, ac.signal);
      await waitFor("1 running", () => sim.stats().running === 1);
      assert.equal((await post(sim.url, "/v1/chat/completions", chatBody("m", "a"))).status, 429);
      sim.setProfile({ overflow: "503" });
      assert.equal((await post(sim.url, "/v1/chat/completions", chatBody("m", "b"))).status, 503);
      const s = sim.stats();
      assert.deepEqual([s.refused, s.throttled, s.overloaded, s.refusedConnections], [2, 1, 1, 0]);
      const { text } = await get(sim.url, "/metrics");
      assert.match(text, /^sluice_sim_refusals_total\{kind="429",model_name="sim-model"\} 1$/m);
      assert.match(text, /^sluice_sim_refusals_total\{kind="503",model_name="sim-model"\} 1$/m);
      assert.match(text, /^sluice_sim_max_running\{model_name="sim-model"\} 1$/m);
      assert.match(
        sim.report(),
        /max concurrency 1 .*refusals 2 \(connections 0, 503 1\), throttles \(429\) 1, OOM events 0/,
      );
      ac.abort();
      await pending;
    } finally {
      ac.abort();
      await sim.close();
    }
  });

  test("rejects an invalid time scale or OOM point naming the option", async () => {
    await assert.rejects(startSim({ timeScale: 0 }), /sim\.timeScale: expected a finite number > 0/);
    await assert.rejects(startSim({ oomAt: 0 }), /sim\.oomAt: expected an integer ≥ 1 or Infinity/);
  });
});
