/**
 * The pod circuit breaker (DESIGN §1.4, seed 001 validation (b)) and how it composes with the
 * adaptive width: the width cut answers first, a refusal that persists after the cut opens the
 * breaker; quota 429s pause instead; at most half of a lane's pods are open at once.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { FLOOR_REST_MS } from "../../src/core/pod.js";
import { flush } from "../helpers/index.js";
import { acquireNow, LANE, pods, rig, type Watched, watch } from "./helpers.js";

/** One endpoint, breaker defaults (0.5 s → ×2 → 30 s), no jitter, every signal counts. */
const oneEndpoint = (extra: Parameters<typeof rig>[0] = {}) =>
  rig({ limit: 16, reserve: 0, pods: pods(1, 16), adaptive: false, ...extra });

const granted = (ws: Watched[]) => ws.filter((w) => w.lease !== undefined).length;

describe("circuit breaker (seed 001)", () => {
  test("a 503 opens a single-endpoint lane's breaker for the base cooldown of 500 ms", async () => {
    const r = oneEndpoint();
    const [lease] = await acquireNow(r.gov, 1);
    lease!.failed({ status: 503 });
    assert.equal(r.gov.isTripped("p0"), true);
    assert.equal(r.pod("p0").breaker, "open");
    assert.equal(r.pod("p0").reopens_in_s, 0.5);
    r.clock.advance(499);
    assert.equal(r.gov.isTripped("p0"), true, "still cooling down at 499 ms");
    r.clock.advance(1);
    assert.equal(r.gov.isTripped("p0"), false, "cooled down at 500 ms");
  });

  test("a 429 without a quota reset is an overload signal and trips the breaker too", async () => {
    const r = oneEndpoint();
    const [lease] = await acquireNow(r.gov, 1);
    lease!.failed({ status: 429 });
    assert.equal(r.gov.isTripped("p0"), true);
  });

  test("while open no call is dispatched; after the cooldown exactly one probe goes and the rest wait for it", async () => {
    const r = oneEndpoint();
    const [first] = await acquireNow(r.gov, 1);
    first!.failed({ status: 503 });
    const waiters = Array.from({ length: 5 }, () => watch(r.gov.acquire(LANE)));
    await flush();
    assert.equal(granted(waiters), 0, "nothing dispatched to an open breaker");
    r.clock.advance(499);
    await flush();
    assert.equal(granted(waiters), 0);
    r.clock.advance(1);
    await flush();
    assert.equal(granted(waiters), 1, "exactly one half-open probe");
    assert.ok(waiters[0]!.lease !== undefined, "the probe is the first waiter");
    assert.equal(r.pod("p0").breaker, "half_open");
    r.clock.advance(10_000);
    await flush();
    assert.equal(granted(waiters), 1, "the others keep waiting while the probe is out");
    waiters[0]!.lease!.succeeded();
    await flush();
    assert.equal(r.pod("p0").breaker, "closed", "a success on the probe closes it");
    assert.equal(granted(waiters), 5, "the waiters go once it closes");
  });

  test("isTripped is a pure read: it never takes the half-open probe", async () => {
    const r = oneEndpoint();
    const [lease] = await acquireNow(r.gov, 1);
    lease!.failed({ status: 503 });
    r.clock.advance(600);
    for (let i = 0; i < 10; i++) assert.equal(r.gov.isTripped("p0"), false);
    assert.equal(r.pod("p0").breaker, "open", "reading did not move it to half-open");
    const [probe] = await acquireNow(r.gov, 1);
    assert.equal(r.pod("p0").breaker, "half_open");
    probe!.succeeded();
    assert.equal(r.pod("p0").breaker, "closed");
  });

  test("the cooldown doubles on every failed probe (0.5, 1, 2, 4 s) up to maxCooldownMs", async () => {
    const r = oneEndpoint({ breaker: { maxCooldownMs: 6_000 } });
    const [lease] = await acquireNow(r.gov, 1);
    lease!.failed({ status: 503 });
    const cooldowns = [r.pod("p0").reopens_in_s];
    for (let trip = 2; trip <= 6; trip++) {
      r.clock.advance(cooldowns.at(-1)! * 1000);
      const [probe] = await acquireNow(r.gov, 1);
      probe!.failed({ status: 503 });
      assert.equal(r.pod("p0").trips, trip);
      cooldowns.push(r.pod("p0").reopens_in_s);
    }
    assert.deepEqual(cooldowns, [0.5, 1, 2, 4, 6, 6]);
  });

  test("a success on the probe resets the backoff: the next trip cools down for 500 ms again", async () => {
    const r = oneEndpoint();
    const [a] = await acquireNow(r.gov, 1);
    a!.failed({ status: 503 });
    r.clock.advance(500);
    const [b] = await acquireNow(r.gov, 1);
    b!.failed({ status: 503 });
    assert.equal(r.pod("p0").reopens_in_s, 1);
    r.clock.advance(1_000);
    const [probe] = await acquireNow(r.gov, 1);
    probe!.succeeded();
    const [c] = await acquireNow(r.gov, 1);
    c!.failed({ status: 503 });
    assert.equal(r.pod("p0").reopens_in_s, 0.5);
    assert.equal(r.pod("p0").trips, 1);
  });

  test("the cooldown carries ±20 % jitter from the injected random source", async () => {
    for (const [random, expected] of [
      [() => 0, 0.4],
      [() => 0.5, 0.5],
      [() => 0.999_999, 0.6],
    ] as const) {
      const r = rig({ limit: 16, pods: pods(1, 16), adaptive: false }, random);
      const [lease] = await acquireNow(r.gov, 1);
      lease!.failed({ status: 503 });
      assert.equal(r.pod("p0").reopens_in_s, expected);
    }
  });

  test("a timeout (no status) counts toward the breaker even with adaptive width on", async () => {
    const r = rig({ limit: 16, pods: pods(1, 16) });
    const [lease] = await acquireNow(r.gov, 1);
    lease!.failed(Object.assign(new Error("timed out"), { code: "ETIMEDOUT" }));
    assert.equal(r.pod("p0").breaker, "open");
    assert.equal(r.pod("p0").width, 16, "a timeout is not a congestion signal: no cut");
  });

  test("sluice's own refusals and client aborts never trip a breaker or cut a width", async () => {
    const r = rig({ limit: 16, pods: pods(1, 16) });
    const leases = await acquireNow(r.gov, 3);
    leases[0]!.failed(Object.assign(new Error("aborted"), { name: "AbortError" }));
    const full = await r.gov.acquire("other-lane").catch((e: unknown) => e); // pass-through lane
    assert.ok(full !== undefined);
    assert.equal(r.pod("p0").width, 16);
    assert.equal(r.pod("p0").breaker, "closed");
  });
});

describe("breaker and adaptive width together (DESIGN §1.4)", () => {
  /** One pod, ceiling 16, floor 4, adaptive on. */
  const adaptive = () => rig({ limit: 16, reserve: 0, pods: pods(1, 16), adaptive: { floor: 4 } });

  test("the first refusal of a congestion event only cuts the width", async () => {
    const r = adaptive();
    const leases = await acquireNow(r.gov, 10);
    leases[0]!.failed({ status: 503 });
    assert.equal(r.pod("p0").width, 5);
    assert.equal(r.pod("p0").breaker, "closed");
    assert.equal(r.gov.isTripped("p0"), false);
  });

  test("a refusal of a call granted after the cut, before any success at the reduced width, opens the breaker", async () => {
    const r = adaptive();
    const leases = await acquireNow(r.gov, 10);
    leases[0]!.failed({ status: 503 });
    for (const lease of leases) lease.release();
    const [afterCut] = await acquireNow(r.gov, 1);
    afterCut!.failed({ status: 503 });
    assert.equal(r.pod("p0").breaker, "open");
    assert.equal(r.gov.isTripped("p0"), true);
    assert.equal(r.pod("p0").width, 5, "the second refusal does not cut again");
  });

  test("a success of a call granted before the cut is not a success at the reduced width", async () => {
    const r = adaptive();
    const leases = await acquireNow(r.gov, 10);
    leases[0]!.failed({ status: 503 });
    leases[1]!.succeeded(); // granted in the old epoch
    for (const lease of leases) lease.release();
    const [afterCut] = await acquireNow(r.gov, 1);
    afterCut!.failed({ status: 503 });
    assert.equal(r.pod("p0").breaker, "open");
    assert.equal(r.pod("p0").width, 5);
  });

  test("after a success at the reduced width, a new refusal is a new event: it cuts and does not trip", async () => {
    const r = adaptive();
    const leases = await acquireNow(r.gov, 10);
    leases[0]!.failed({ status: 503 });
    for (const lease of leases) lease.release();
    const atReduced = await acquireNow(r.gov, 5);
    atReduced[0]!.succeeded();
    atReduced[1]!.failed({ status: 503 }); // 4 in flight at the refusal → max(4, 2) = 4
    assert.equal(r.pod("p0").width, 4);
    assert.equal(r.pod("p0").breaker, "closed");
  });

  test("a refusal at the floor counts toward the breaker", async () => {
    const r = rig({ limit: 16, reserve: 0, pods: pods(1, 8), adaptive: { floor: 4 } });
    const leases = await acquireNow(r.gov, 8);
    leases[0]!.failed({ refused: true });
    assert.equal(r.pod("p0").width, 4);
    for (const lease of leases) lease.release();
    const [ok] = await acquireNow(r.gov, 1);
    ok!.succeeded();
    const [atFloor] = await acquireNow(r.gov, 1);
    atFloor!.failed({ refused: true });
    assert.equal(r.pod("p0").breaker, "open");
  });

  test("with adaptive: false the first refusal opens the breaker", async () => {
    const r = rig({ limit: 16, pods: pods(1, 16), adaptive: false });
    const leases = await acquireNow(r.gov, 10);
    leases[0]!.failed({ refused: true });
    assert.equal(r.pod("p0").breaker, "open");
    assert.equal(r.pod("p0").width, 16, "no adaptive width: nothing to cut");
  });

  test("after the breaker closes the pod restarts at the floor and slow-starts back to its last cut value", async () => {
    const r = rig({ limit: 64, reserve: 0, pods: pods(1, 64), adaptive: { floor: 4 } });
    const leases = await acquireNow(r.gov, 58);
    leases[0]!.failed({ status: 503 });
    for (const lease of leases) lease.release();
    const [again] = await acquireNow(r.gov, 1);
    again!.failed({ status: 503 });
    assert.equal(r.pod("p0").breaker, "open");
    r.clock.advance(500);
    const [probe] = await acquireNow(r.gov, 1);
    probe!.succeeded();
    assert.equal(r.pod("p0").breaker, "closed");
    assert.equal(r.pod("p0").width, 4);
    // Keep the pod full; count round trips (a round trip = `width` successes) back to 29.
    const held = await acquireNow(r.gov, 4);
    let successes = 0;
    while (r.pod("p0").width < 29) {
      held.shift()!.succeeded();
      successes++;
      while (r.pod("p0").inflight < r.pod("p0").width) held.push(...(await acquireNow(r.gov, 1)));
    }
    assert.ok(successes <= 40, `slow start: ${successes} successes from 4 to 29`);
    const before = successes;
    while (r.pod("p0").width < 30) {
      held.shift()!.succeeded();
      successes++;
      while (r.pod("p0").inflight < r.pod("p0").width) held.push(...(await acquireNow(r.gov, 1)));
    }
    assert.ok(successes - before >= 25, "linear again above the last cut value");
  });
});

describe("at most half of a lane's pods open at once", () => {
  test("with four pods refusing everything, two open and two stay closed", async () => {
    const r = rig({
      limit: 64,
      pods: pods(4, 16),
      adaptive: false,
      breaker: { baseCooldownMs: 60_000, maxCooldownMs: 60_000 },
    });
    for (let round = 0; round < 3; round++) {
      const leases = await acquireNow(r.gov, round === 0 ? 4 : 2);
      for (const lease of leases) lease.failed({ status: 503 });
      r.clock.advance(FLOOR_REST_MS); // the two held closed rest after each refusal
    }
    const snap = r.gov.snapshot().pods;
    assert.equal(snap.filter((p) => p.breaker === "open").length, 2);
    assert.equal(snap.filter((p) => p.breaker === "closed").length, 2);
    assert.equal(["p0", "p1", "p2", "p3"].filter((id) => r.gov.isTripped(id)).length, 2);
  });

  test("a lane of three pods opens at most one; a lane of one pod may open it", async () => {
    const three = rig({
      limit: 48,
      pods: pods(3, 16),
      adaptive: false,
      breaker: { baseCooldownMs: 60_000, maxCooldownMs: 60_000 },
    });
    for (let round = 0; round < 3; round++) {
      for (const lease of await acquireNow(three.gov, round === 0 ? 3 : 2)) lease.failed({ status: 503 });
      three.clock.advance(FLOOR_REST_MS);
    }
    assert.equal(three.gov.snapshot().pods.filter((p) => p.breaker === "open").length, 1);
    const one = rig({ limit: 16, pods: pods(1, 16), adaptive: false });
    (await acquireNow(one.gov, 1))[0]!.failed({ status: 503 });
    assert.equal(one.pod("p0").breaker, "open");
  });

  test("pods held closed by the half rule stay at their floor width", async () => {
    const r = rig({
      limit: 128,
      reserve: 0,
      pods: pods(4, 32),
      adaptive: { floor: 4 },
      breaker: { baseCooldownMs: 60_000, maxCooldownMs: 60_000 },
    });
    // 64 calls spread 16 per pod; every pod refuses everything from now on.
    const leases = await acquireNow(r.gov, 64);
    for (const lease of leases) lease.failed({ status: 503 }); // each pod: one cut to 8
    for (let round = 0; round < 4; round++) {
      for (const lease of await acquireNow(r.gov, round < 2 ? 4 : 2)) lease.failed({ status: 503 });
      r.clock.advance(FLOOR_REST_MS);
    }
    const snap = r.gov.snapshot().pods;
    assert.equal(snap.filter((p) => p.breaker === "open").length, 2);
    for (const p of snap.filter((x) => x.breaker === "closed")) assert.equal(p.width, p.floor, p.id);
  });
});
