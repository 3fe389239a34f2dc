/**
 * Re-dispatch (DESIGN §1.3): a call a pod refused before starting it goes to another pod, keeping
 * its arrival time, at most 3 attempts per call, paid for by a budget that successes earn
 * (0.1 each, at most 3 banked), so upstream attempts stay within 1.1 × calls.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { flush } from "../helpers/index.js";
import { acquireNow, LANE, pods, rig, watch } from "./helpers.js";

/** Grants `n` calls that succeed: each success earns a tenth of a re-dispatch. */
async function earn(r: ReturnType<typeof rig>, n: number): Promise<void> {
  for (const lease of await acquireNow(r.gov, n)) lease.succeeded();
}

/** Awaits `p`, moving the clock 50 ms at a time while it waits (rests, cooldowns). */
async function advancing<T>(r: ReturnType<typeof rig>, p: Promise<T>): Promise<T> {
  let done = false;
  const settled = p.finally(() => {
    done = true;
  });
  await flush();
  while (!done) {
    r.clock.advance(50);
    await flush();
  }
  return settled;
}

describe("re-dispatch", () => {
  test("await lease.retry({ refused: true }) moves the call to another pod", async () => {
    const r = rig({ limit: 32, pods: pods(2, 16) });
    await earn(r, 10);
    const [lease] = await acquireNow(r.gov, 1);
    const first = lease!.pod;
    assert.equal(await lease!.retry({ refused: true }), true);
    assert.notEqual(lease!.pod, first);
    assert.equal(lease!.attempts, 2);
    assert.equal(r.gov.snapshot().lanes[0]!.inflight, 1, "still one lane slot: the call never left");
    lease!.succeeded();
    assert.equal(r.gov.snapshot().lanes[0]!.inflight, 0);
  });

  test("a re-dispatch that has to wait keeps its arrival time and goes ahead of later arrivals", async () => {
    const r = rig({
      limit: 16,
      reserve: 0,
      pods: [
        { id: "a", maxInflight: 8 },
        { id: "b", maxInflight: 8 },
      ],
    });
    await earn(r, 10); // one re-dispatch earned
    r.clock.advance(1_000);
    const leases = await acquireNow(r.gov, 16); // arrived at 1 000 ms; 8 on each pod
    const onA = leases.filter((l) => l.pod === "a");
    const onB = leases.filter((l) => l.pod === "b");
    r.clock.advance(1_000);
    const later = watch(r.gov.acquire(LANE)); // arrives at 2 000 ms, waits
    await flush();
    r.clock.advance(1_000);
    let moved: boolean | undefined;
    void onA[0]!.retry({ refused: true }).then((ok) => {
      moved = ok;
    });
    await flush();
    assert.equal(r.pod("a").width, 4, "a's refusal at 8 in flight cut it to 4: no room there");
    assert.equal(moved, undefined, "b is full: the call waits again");
    onB[0]!.succeeded();
    await flush();
    assert.equal(moved, true, "the re-dispatched call (arrived 1 000 ms) takes b's free slot first");
    assert.equal(onA[0]!.pod, "b");
    assert.equal(later.lease, undefined, "the later arrival still waits");
    assert.equal(onA[0]!.queuedMs, 0, "queue wait is measured from the re-queue, not the arrival");
  });

  test("a call gets at most 3 attempts; the third refusal ends it", async () => {
    const r = rig({ limit: 48, pods: pods(3, 16) });
    await earn(r, 40);
    const [lease] = await acquireNow(r.gov, 1);
    const seen = [lease!.pod];
    assert.equal(await lease!.retry({ refused: true }), true);
    seen.push(lease!.pod);
    assert.equal(await lease!.retry({ refused: true }), true);
    seen.push(lease!.pod);
    assert.equal(lease!.attempts, 3);
    assert.notEqual(seen[1], seen[0], "each re-dispatch leaves the pod that refused");
    assert.notEqual(seen[2], seen[1]);
    assert.equal(await lease!.retry({ refused: true }), false);
    assert.equal(r.gov.snapshot().lanes[0]!.inflight, 0, "the lease was released");
    lease!.succeeded(); // a no-op after the end
    assert.equal(r.gov.snapshot().lanes[0]!.inflight, 0);
  });

  test("re-dispatch is paid for by successes: once the bank is spent, refusals end calls", async () => {
    const r = rig({ limit: 15, pods: pods(2, 8) }); // bank: max(3, 20 % of 15) = 3 re-dispatches
    for (let i = 0; i < 3; i++) {
      const [spend] = await acquireNow(r.gov, 1);
      assert.equal(await spend!.retry({ refused: true }), true, "a new lane starts with 3 banked");
      spend!.succeeded(); // earns back a tenth
      r.clock.advance(1000);
    }
    await earn(r, 7); // 3 + 7 successes = 1.0 re-dispatch
    const [drained] = await acquireNow(r.gov, 1);
    assert.equal(await drained!.retry({ refused: true }), true);
    drained!.succeeded();
    r.clock.advance(1000);
    const [lease] = await acquireNow(r.gov, 1);
    assert.equal(await lease!.retry({ refused: true }), false, "budget spent: the refusal ends the call");
    await earn(r, 5); // ten successes = one re-dispatch (two rounds: the refusals cut the pods)
    await earn(r, 5);
    const [next] = await acquireNow(r.gov, 1);
    assert.equal(await next!.retry({ refused: true }), true);
  });

  test("when every pod refuses, upstream attempts stay within 1.1 × calls", async () => {
    const r = rig({ limit: 64, reserve: 0, pods: pods(4, 16) });
    let calls = 0;
    let attempts = 0;
    await earn(r, 30); // a full bank of 3 re-dispatches before the outage
    for (let i = 0; i < 500; i++) {
      const lease = await advancing(r, r.gov.acquire("ocr"));
      calls++;
      attempts++;
      while (await advancing(r, lease.retry({ refused: true }))) attempts++;
    }
    assert.ok(attempts <= 1.1 * calls, `${attempts} attempts for ${calls} calls`);
  });

  test("a re-dispatch prefers a pod that has not refused this call yet", async () => {
    const r = rig({ limit: 48, pods: pods(3, 16) });
    await earn(r, 40);
    const [lease] = await acquireNow(r.gov, 1);
    const seen = [lease!.pod];
    await lease!.retry({ refused: true });
    seen.push(lease!.pod);
    await lease!.retry({ refused: true });
    seen.push(lease!.pod);
    assert.equal(new Set(seen).size, 3, `three different pods: ${seen.join(", ")}`);
  });
});
