import assert from "node:assert/strict";
import { test } from "node:test";
import { flush } from "../../test/helpers/index.js";
import { SHARED_READS, systemClock } from "./clock.js";

/** Spins until `ms` of real time have passed (the turn does not end). */
function spin(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {}
}

test("systemClock reads the clock once per turn of the event loop: later reads in the turn get that reading", () => {
  const first = systemClock.now();
  spin(3);
  assert.equal(systemClock.now(), first, "3 ms later, the same turn: the same reading");
  assert.equal(Number.isInteger(first), true, "whole milliseconds");
});

test("systemClock shares one reading across a microtask drain that made it (an await loop)", async () => {
  await null; // from here on, inside a microtask drain
  const first = systemClock.now();
  spin(3);
  await null; // a continuation of the same drain
  assert.equal(systemClock.now(), first, "the same drain: the same reading");
});

test("systemClock reads the clock again after SHARED_READS reads, even inside one microtask drain", async () => {
  await null; // inside a microtask drain that could go on for as long as its code awaits
  const first = systemClock.now();
  spin(3);
  let last = first;
  for (let i = 0; i < SHARED_READS; i++) {
    await null;
    last = systemClock.now();
  }
  assert.ok(last >= first + 3, `the 3 ms spent are seen within ${SHARED_READS} reads: ${first} → ${last}`);
});

test("systemClock reads the clock again in the next turn", async () => {
  const first = systemClock.now();
  spin(3);
  await flush();
  const next = systemClock.now();
  assert.ok(next >= first + 3, `the 3 ms spent in the last turn are seen: ${first} → ${next}`);
});

test("systemClock's timer fires no earlier than its due time on the real clock", async () => {
  const due = systemClock.now() + 5;
  const firedAt = await new Promise<number>((resolve) => {
    systemClock.setTimer(due, () => resolve(performance.now()));
  });
  assert.ok(firedAt >= due, `fired at ${firedAt}, due ${due}`);
  assert.ok(systemClock.now() >= due, "and the timer's turn reads a time at or past it");
});
