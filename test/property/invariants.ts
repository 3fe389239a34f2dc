/**
 * The DESIGN §1 invariants, checked after every step of a {@link Model} run:
 *
 * 1. no budget above its limit, and the snapshot agrees with what the callers hold (no phantom
 *    or lost slots) — lanes, the group, keys (in flight + queued), pods (width within
 *    [floor, ceiling], no grant above the width, at most half the pods' breakers open);
 * 2. no lost wake-up: a lane with waiters has no slot its best waiter could take;
 * 3. no residue once everything is aborted, released and timed out ({@link drainAndCheck});
 * 4. ending a lease twice changes nothing (checked inside the model's `again`);
 * 5. priority order within a lane: at each grant no waiter of a higher effective class, and
 *    none of the same class that arrived earlier, was passed over; the reserve only goes to
 *    calls whose own class is interactive (checked at the grant itself). Across the lanes
 *    sharing the group, the same holds for waiters whose own lane (and pod) had a slot for them;
 *    the group slot went to the best of those (DESIGN §1: "the scheduler grants the best waiter");
 * 6. an arrival that a pass would grant is granted at once (with `wait: false` too): one that
 *    finds its lane empty with a slot for it, or an interactive one that finds a slot (the
 *    reserve included) and no interactive call waiting; a `wait: false` call never waits;
 * 7. shedding (DESIGN §1.1): only a full queue refuses or sheds; an arrival sheds the newest
 *    waiter of the lowest own class below its own, and is refused only if there is none;
 * 8. timers and signals: a waiter times out at exactly its lane's queue timeout, never later;
 *    an abort removes a waiting call (a re-dispatch waiting again included) within the step and
 *    rejects it with the signal's reason, and changes nothing once the call holds its lease.
 */
import assert from "node:assert/strict";
import { isKeyLimitError, type Snapshot } from "../../src/index.js";
import { type Call, type Model, podFree, type Rank } from "./model.js";

/** DESIGN §1.1: one step up per `agingMs` waited, never above interactive. */
export function effective(rank: Rank, arrivedAt: number, nowMs: number, agingMs: number): number {
  if (rank === 0) return 0;
  return Math.max(0, rank - Math.floor((nowMs - arrivedAt) / agingMs));
}

const isQueued = (c: Call): boolean => c.status === "pending" || (c.status === "retrying" && c.retryPending);

/** Checks 1, 2, 6, 7 and 8 after a step; appends to `m.violations`. */
export function checkStep(m: Model): void {
  const s = m.snapshot();
  const v = m.violations;
  const held = m.calls.filter((c) => c.status === "held");
  const queued = m.calls.filter(isQueued);
  for (const c of queued)
    if (!c.retried && m.clock.now() - c.arrivedAt >= m.timeoutOf(c.lane))
      v.push(`call #${c.id} still waits ${m.clock.now() - c.arrivedAt} ms, past its queue timeout`);
  for (const c of held)
    if (c.exitEv === undefined && !c.retried)
      v.push(`call #${c.id} holds a lease never published as granted`);

  for (const l of s.lanes) {
    const h = held.filter((c) => c.lane === l.lane).length;
    const q = queued.filter((c) => c.lane === l.lane);
    if (l.inflight > l.limit) v.push(`lane ${l.lane}: ${l.inflight} in flight > limit ${l.limit}`);
    // Re-dispatches that wait again count too (test/regress/retry-requeue.test.ts).
    if (l.queued > l.queue_limit) v.push(`lane ${l.lane}: ${l.queued} queued > queue limit ${l.queue_limit}`);
    if (l.inflight !== h) v.push(`lane ${l.lane}: snapshot says ${l.inflight} in flight, callers hold ${h}`);
    if (l.queued !== q.length) v.push(`lane ${l.lane}: snapshot says ${l.queued} queued, ${q.length} wait`);
    const byRank = [0, 1, 2].map((r) => q.filter((c) => c.rank === r).length);
    const snap = l.queued_by_priority;
    if (snap.interactive !== byRank[0] || snap.default !== byRank[1] || snap.bulk !== byRank[2])
      v.push(`lane ${l.lane}: queued_by_priority ${JSON.stringify(snap)} but callers wait ${byRank}`);
  }

  for (const g of s.groups) {
    if (g.inflight > g.limit) v.push(`group ${g.group}: ${g.inflight} > limit ${g.limit}`);
    // Every lane of the setup is in group g.
    if (g.inflight !== held.length)
      v.push(`group ${g.group}: ${g.inflight} in flight, callers hold ${held.length}`);
  }

  for (const k of s.keys) {
    const h = held.filter((c) => c.key === k.key).length;
    const q = queued.filter((c) => c.key === k.key).length;
    if (k.inflight + k.queued > k.max_inflight)
      v.push(`key ${k.key}: ${k.inflight} in flight + ${k.queued} queued > ${k.max_inflight}`);
    if (k.inflight !== h || k.queued !== q)
      v.push(`key ${k.key}: snapshot ${k.inflight}+${k.queued}, callers hold ${h} and wait ${q}`);
  }

  checkPods(m, s);
  checkNoLostWakeUp(s, v);
  checkShedding(m);

  // STYLE G9: an abort removes a waiting call (a re-dispatch waiting again included) at once and
  // rejects it with the signal's reason; after the grant it changes nothing.
  if (m.aborted !== undefined) {
    const { call, status } = m.aborted;
    const expected = status === "held" ? "held" : "aborted";
    if (call.status !== expected)
      v.push(`abort of #${call.id} while ${status}: it is ${call.status}, expected ${expected}`);
  }

  for (const c of m.calls) {
    if (c.fromEv !== m.opEv) continue;
    if (c.noWait && c.status === "pending") v.push(`call #${c.id} with wait: false is waiting`);
    // A pass would grant it: nobody waits in its lane, or it is interactive and no interactive
    // call waits (the others may not take the free reserve) — test/regress/expected-wait-reserve.
    const first = c.arrival.queueEmpty || (c.rank === 0 && !c.arrival.interactiveQueued);
    if (c.arrival.room && first && c.status !== "held" && !isKeyLimitError(c.refusal))
      v.push(
        `call #${c.id} (class ${c.rank}${c.noWait ? ", wait: false" : ""}) found a slot it may take but ` +
          `is ${c.status}${c.refusal === undefined ? "" : `: ${(c.refusal as Error).message}`}`,
      );
  }
}

function checkPods(m: Model, s: Snapshot): void {
  const v = m.violations;
  const held = m.calls.filter((c) => c.status === "held");
  for (const spec of m.setup.lanes) {
    const pods = s.pods.filter((p) => p.lane === spec.name);
    const open = pods.filter((p) => p.breaker !== "closed").length;
    if (pods.length > 0 && open > Math.max(1, Math.floor(pods.length / 2)))
      v.push(`lane ${spec.name}: ${open} of ${pods.length} breakers not closed (at most half may be)`);
  }
  for (const p of s.pods) {
    if (p.width > p.ceiling) v.push(`pod ${p.id}: width ${p.width} > ceiling ${p.ceiling}`);
    if (p.width < p.floor) v.push(`pod ${p.id}: width ${p.width} < floor ${p.floor}`);
    const h = held.filter((c) => c.lease!.pod === p.id).length;
    if (p.inflight !== h) v.push(`pod ${p.id}: snapshot says ${p.inflight} in flight, callers hold ${h}`);
    // A cut may leave more in flight than the new width (calls already sent keep running), but
    // then the pod must not take more until it is back under its width.
    const before = m.prevPodInflight.get(p.id) ?? 0;
    if (p.inflight > p.width && p.inflight > before)
      v.push(`pod ${p.id}: ${p.inflight} in flight > width ${p.width}, up from ${before}`);
    m.prevPodInflight.set(p.id, p.inflight);
  }
}

/**
 * Check 2. A lane with waiters must have no slot its best waiter could take: not (the lane has
 * room — counting the reserve unless an interactive call waits — and the group has room and,
 * for a lane with pods, some pod certainly has room). A half-open pod is never counted as
 * having room: whether its single probe is out is not in the snapshot, so the check is
 * one-sided there.
 */
export function checkNoLostWakeUp(s: Snapshot, v: string[]): void {
  const groupRoom = s.groups.every((g) => g.inflight < g.limit);
  for (const l of s.lanes) {
    if (l.queued === 0) continue;
    const reserve = l.queued_by_priority.interactive > 0 ? 0 : l.reserve;
    const laneRoom = l.inflight < l.limit - reserve;
    const pods = s.pods.filter((p) => p.lane === l.lane);
    const podRoom = pods.length === 0 || pods.some(podFree);
    if (laneRoom && groupRoom && podRoom)
      v.push(
        `lost wake-up: lane ${l.lane} has ${l.queued} waiting ${JSON.stringify(l.queued_by_priority)} ` +
          `with ${l.inflight}/${l.limit} in flight (reserve ${l.reserve}), group ${JSON.stringify(s.groups)}, ` +
          `pods ${JSON.stringify(pods.map((p) => [p.id, p.inflight, p.width, p.breaker, p.reopens_in_s]))}`,
      );
  }
}

/** Check 7, for the arrival of this step (if any). */
function checkShedding(m: Model): void {
  const arrival = m.calls.find((c) => c.fromEv === m.opEv);
  if (arrival === undefined) return;
  const shed = m.calls.filter((c) => c.status === "shed" && c.exitEv === m.opEv);
  // Who waited in the arrival's lane just before it arrived (retried calls count toward the size).
  const before = m.calls.filter(
    (y) =>
      y !== arrival &&
      y.lane === arrival.lane &&
      (y.retried
        ? y.retryPending || shed.includes(y)
        : waitingAt(y, m.opEv, m.clock.now()) || shed.includes(y)),
  );
  const full = before.length >= m.setup.queueLimit;
  const lower = before.filter((y) => y.rank > arrival.rank);
  const reason = (arrival.refusal as { reason?: string } | undefined)?.reason;
  if (reason === "full" && (!full || lower.length > 0))
    m.violations.push(
      `#${arrival.id} refused as full with ${before.length}/${m.setup.queueLimit} waiting, ${lower.length} of a lower class`,
    );
  if (shed.length > 1) m.violations.push(`one arrival shed ${shed.length} waiters`);
  const victim = shed[0];
  if (victim === undefined) return;
  if (!full) m.violations.push(`#${victim.id} shed from a queue that was not full (${before.length})`);
  const lowest = Math.max(...lower.map((y) => y.rank));
  const newest = lower
    .filter((y) => y.rank === lowest && !y.retried)
    .sort((a, b) => a.arrivedAt - b.arrivedAt || a.id - b.id);
  // Of waiters that arrived in the same ms in different flows (keys), which was pushed last is
  // only tracked per flow (class-queue.ts): any of them is the newest.
  const expected = newest.at(-1);
  const tie =
    expected !== undefined && victim.arrivedAt === expected.arrivedAt && flowOf(victim) !== flowOf(expected);
  if (victim.rank !== lowest || (!victim.retried && expected !== victim && !tie))
    m.violations.push(
      `#${victim.id} (class ${victim.rank}) shed by #${arrival.id} (class ${arrival.rank}); expected the newest of class ${lowest}: #${newest.at(-1)?.id}`,
    );
}

/** Whether `y` was in its lane's queue at the instant of grant event `ev` at clock `time`. */
function waitingAt(y: Call, ev: number, time: number): boolean {
  if (y.fromEv >= ev || y.status === "refused") return false;
  if (y.exitEv !== undefined) return y.exitEv > ev;
  // A queue timeout removes the waiter before the pass that runs at the same instant.
  if (y.exitTime !== undefined) return time < y.exitTime;
  return true;
}

/** A call's flow: its key when configured (every key of the model is), else the anonymous one. */
const flowOf = (c: Call): string => c.key ?? "";

/**
 * Check 5 over this step's grants. Re-dispatched calls are left out on both sides: they wait
 * again at their first arrival's place, which the model does not track.
 */
export function checkOrder(m: Model): void {
  const agingMs = m.setup.agingMs;
  for (const g of m.grants) {
    const x = m.byLease.get(g.lease);
    if (x === undefined || x.retried) continue;
    const effX = effective(x.rank, x.arrivedAt, g.time, agingMs);
    // Flows (configured keys) share a class by weight (fair-queue.ts): inside x's lane and class
    // only x's own flow is FIFO, and the lane competed with the class's oldest waiter.
    let oldest = x;
    for (const y of m.calls)
      if (y.lane === x.lane && y.rank === x.rank && !y.retried && waitingAt(y, g.ev, g.time))
        if (y.arrivedAt < oldest.arrivedAt) oldest = y;
    const effO = effective(oldest.rank, oldest.arrivedAt, g.time, agingMs);
    // A re-dispatched call waiting again in x's lane and class ("retrying") waits at its first
    // arrival's place, which the model does not track: the lane may have competed with that place
    // (its class's oldest), so what x's lane passed in other lanes is not known here (seed
    // 1297239571: P took the group slot on such a waiter's arrival at 0 and served its fair choice).
    const bidUnknown = m.calls.some(
      (y) => y !== x && y.lane === x.lane && y.rank === x.rank && y.status === "retrying",
    );
    // The last `reserve` slots: only an own-class interactive call may take them, so it may pass
    // an aged call of the same effective class that arrived earlier.
    const reserveSlot = g.laneLimit - (g.laneInflight - 1) <= g.reserve;
    for (const y of m.calls) {
      if (y === x || y.retried || !waitingAt(y, g.ev, g.time)) continue;
      if (y.lane === x.lane && y.rank === x.rank) {
        if (flowOf(y) === flowOf(x) && y.arrivedAt < x.arrivedAt)
          m.violations.push(
            `fifo: at ${g.time} #${x.id} (key ${x.key}, arrived ${x.arrivedAt}) was granted before waiting ` +
              `#${y.id} (same flow and class, arrived ${y.arrivedAt}) in ${x.lane}`,
          );
        continue;
      }
      if (y.lane !== x.lane) {
        if (bidUnknown) continue;
        // Another lane's waiter competed for the group slot only if its own lane had room for it.
        const room = g.roomFor.get(y.lane)!;
        if (!(y.rank === 0 ? room.interactive : room.other)) continue;
      }
      const effY = effective(y.rank, y.arrivedAt, g.time, agingMs);
      // Against another lane x's lane competed with its class's oldest; in its own lane x itself.
      const [effZ, arrivedZ] = y.lane === x.lane ? [effX, x.arrivedAt] : [effO, oldest.arrivedAt];
      const passed =
        effY < effZ ||
        (effY === effZ &&
          y.arrivedAt < arrivedZ &&
          !(y.lane === x.lane && x.rank === 0 && y.rank !== 0 && reserveSlot));
      if (passed)
        m.violations.push(
          `priority: at ${g.time} #${x.id} (class ${x.rank}, effective ${effX}, arrived ${x.arrivedAt}) was ` +
            `granted before waiting #${y.id} (class ${y.rank}, effective ${effY}, arrived ${y.arrivedAt}) in ${x.lane}/${y.lane}`,
        );
    }
  }
}

/** Throws with everything found so far, naming the step. */
export function assertClean(m: Model, where: string): void {
  if (m.violations.length > 0) assert.fail(`${where}:\n  ${m.violations.join("\n  ")}`);
}

/**
 * Check 3: abort every abortable waiter, release every lease, let the rest time out, repeat
 * until nothing is held or waiting; then every count is 0, every promise settled, and no timer
 * is left armed.
 */
export async function drainAndCheck(m: Model): Promise<void> {
  const { maxCooldownMs } = m.setup;
  const queueTimeoutMs = Math.max(...m.setup.lanes.map((l) => m.timeoutOf(l.name)));
  const check = (where: string) => {
    checkStep(m);
    checkOrder(m);
    assertClean(m, where);
  };
  for (let round = 0; round < 50; round++) {
    for (;;) {
      const i = m.abortable().findIndex(isQueued);
      if (i < 0) break;
      await m.step({ t: "abort", pick: i });
      check(`drain: abort`);
    }
    while (m.calls.some((c) => c.status === "held")) {
      await m.step({ t: "end", pick: 0, how: "release", twice: undefined });
      check(`drain: release`);
    }
    if (!m.calls.some((c) => isQueued(c) || c.status === "held")) break;
    await m.step({ t: "advance", ms: queueTimeoutMs + 1 });
    check(`drain: advance`);
  }
  // Past every deadline and cooldown a stale timer would have fired and found nothing to re-arm.
  await m.step({ t: "advance", ms: queueTimeoutMs + 2 * maxCooldownMs + 1 });
  check("drain: final advance");

  const s = m.snapshot();
  for (const l of s.lanes) assert.deepEqual([l.lane, l.inflight, l.queued], [l.lane, 0, 0], "lane residue");
  for (const g of s.groups) assert.equal(g.inflight, 0, `group ${g.group} residue`);
  for (const k of s.keys) assert.deepEqual([k.key, k.inflight, k.queued], [k.key, 0, 0], "key residue");
  for (const p of s.pods) assert.equal(p.inflight, 0, `pod ${p.id} residue`);
  const unsettled = m.calls.filter((c) => !c.settled || c.retryPending).map((c) => c.id);
  assert.deepEqual(unsettled, [], "every acquire (and retry) settles");
  assert.equal(m.clock.pendingTimers, 0, "no timer left armed");
}
