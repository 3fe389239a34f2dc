import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ClientWindow, type Slot } from "./window.js";

/** Takes `n` slots that are granted at once. */
async function take(w: ClientWindow, n: number): Promise<Slot[]> {
  return Promise.all(Array.from({ length: n }, () => w.acquire()));
}

describe("ClientWindow", () => {
  test("is unbounded until the gateway advertises, then starts at width + queue limit", async () => {
    const w = new ClientWindow();
    const slots = await take(w, 100);
    assert.deepEqual(w.snapshot(), { size: null, ceiling: null, inflight: 100, queued: 0, cuts: 0 });
    w.advertise(4, 4);
    assert.equal(w.snapshot().size, 8);
    for (const s of slots) w.release(s, "neutral");
    assert.equal(w.snapshot().inflight, 0);
  });

  test("halves on a 429 once per congestion event: refusals of calls sent before the cut do not cut again", async () => {
    const w = new ClientWindow();
    const burst = await take(w, 30);
    w.advertise(4, 4); // the first refusal's headers: 8
    w.release(burst[0]!, "congestion");
    assert.deepEqual([w.snapshot().size, w.snapshot().cuts], [4, 1]);
    for (const s of burst.slice(1, 22)) w.release(s, "congestion");
    assert.deepEqual([w.snapshot().size, w.snapshot().cuts], [4, 1], "the same burst cut once");
    for (const s of burst.slice(22)) w.release(s, "success");
    // A call sent after the cut and refused is a new event.
    const late = await w.acquire();
    w.release(late, "congestion");
    assert.deepEqual([w.snapshot().size, w.snapshot().cuts], [2, 2]);
  });

  test("with nothing advertised, a 429 halves from what was outstanding", async () => {
    const w = new ClientWindow();
    const slots = await take(w, 10);
    w.release(slots[0]!, "congestion");
    assert.equal(w.snapshot().size, 5);
  });

  test("never halves below 1", async () => {
    const w = new ClientWindow(1);
    for (let i = 0; i < 3; i++) w.release(await w.acquire(), "congestion");
    assert.equal(w.snapshot().size, 1);
  });

  test("grows by one per window of successes, up to the advertised width + queue limit", async () => {
    const w = new ClientWindow();
    w.advertise(3, 1); // 4
    w.release(await w.acquire(), "congestion"); // 2
    const sizes: number[] = [];
    for (let i = 0; i < 12; i++) {
      w.release(await w.acquire(), "success");
      sizes.push(w.snapshot().size!);
    }
    // 2 successes → 3, 3 more → 4, then the ceiling holds it.
    assert.deepEqual(sizes, [2, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4]);
  });

  test("a lower advertisement brings a larger window down at once", () => {
    const w = new ClientWindow();
    w.advertise(8, 8);
    w.advertise(2, 1);
    assert.deepEqual([w.snapshot().size, w.snapshot().ceiling], [3, 3]);
  });

  test("waiters get room in order, calls sent again ahead of first attempts", async () => {
    const w = new ClientWindow(1);
    const first = await w.acquire();
    const order: string[] = [];
    const noted = (name: string) => (slot: Slot) => {
      order.push(name);
      return slot;
    };
    const fresh = w.acquire().then(noted("fresh"));
    const retry = w.acquire(undefined, true).then(noted("retry"));
    assert.equal(w.snapshot().queued, 2);
    w.release(first, "neutral");
    w.release(await retry, "neutral");
    w.release(await fresh, "neutral");
    assert.deepEqual(order, ["retry", "fresh"]);
    assert.deepEqual([w.snapshot().inflight, w.snapshot().queued], [0, 0]);
  });

  test("an abort while waiting rejects with the signal's reason and takes no slot", async () => {
    const w = new ClientWindow(1);
    const held = await w.acquire();
    const ac = new AbortController();
    const waiting = w.acquire(ac.signal);
    const after = w.acquire();
    ac.abort(new Error("caller gave up"));
    await assert.rejects(waiting, /caller gave up/);
    assert.equal(w.snapshot().queued, 1);
    w.release(held, "neutral");
    w.release(await after, "neutral"); // the aborted waiter was skipped, not granted
    assert.deepEqual([w.snapshot().inflight, w.snapshot().queued], [0, 0]);
    await assert.rejects(w.acquire(AbortSignal.abort(new Error("already"))), /already/);
  });
});
