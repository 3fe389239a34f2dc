/**
 * Weighted fair queuing across replicas (issue 24) in the scripts themselves, called directly on
 * a real Redis with advertisements written by hand: each replica's share of the lane from the
 * flows the replicas advertise (`lane_part`), the spreads `advertise.lua` answers, and the
 * advertisement's encoding (flow-advert.ts).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Redis } from "ioredis";
import { ANONYMOUS, type Flow } from "../../src/core/fair-queue.js";
import type { Rank } from "../../src/core/priority.js";
import {
  flowJoined,
  LaneAdvert,
  MAX_ADVERTISED_FLOWS,
  parseSpreads,
} from "../../src/store/redis/flow-advert.js";
import { runScript } from "../../src/store/redis/scripts.js";
import { redisOrSkip, uniquePrefix } from "./redis-helpers.js";

const LIMIT = 20;

describe("weighted shares across replicas, in the scripts (real Redis)", () => {
  let redis: Redis | null = null;
  const P = `{${uniquePrefix()}}`;
  const replicas = `${P}:replicas`;
  const lane = `${P}:b:lane:chat`;
  const waiters = `${P}:w:lane:chat`;

  before(async (t) => {
    redis = await redisOrSkip(t as never);
    if (redis === null) return;
    for (const r of ["one", "two"]) await runScript(redis, "heartbeat", [replicas], [r, 60_000]);
  });
  after(async () => {
    if (redis === null) return;
    const keys = await redis.keys(`${P}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  /** `replica`'s share of the lane for a default call: the limit less the floor its grant answers. */
  const share = async (replica: string): Promise<number> => {
    const answer = (await runScript(
      redis!,
      "grant-path",
      [replicas, lane, waiters],
      [replica, 1, 0, LIMIT, 1],
    )) as number[];
    if (answer[0] === 1) await redis!.hincrby(lane, replica, -1); // only the answer is wanted
    return LIMIT - answer[answer.length - 1]!;
  };
  const advertise = async (fields: Record<string, string>) => {
    await redis!.del(waiters);
    await redis!.hset(waiters, fields);
  };

  test("A on both replicas, B on two: one's part is A's half, two's is A's other half and B", async (t) => {
    if (redis === null) return t.skip("no Redis");
    await advertise({ one: "0 8 0\n1 1 key%3AA", two: "0 16 0\n1 1 key%3AA\n1 1 key%3AB" });
    assert.deepEqual([await share("one"), await share("two")], [5, 15], "1:1: ¼ and ¾ of 20");
    await advertise({ one: "0 8 0\n1 3 key%3AA", two: "0 16 0\n1 3 key%3AA\n1 1 key%3AB" });
    assert.deepEqual([await share("one"), await share("two")], [8, 13], "3:1: ⌈7.5⌉ and ⌈12.5⌉");
  });

  test("without flows (an older advertisement) or with keyless calls on both, equal shares as before", async (t) => {
    if (redis === null) return t.skip("no Redis");
    await advertise({ one: "0 8 0", two: "0 16 0" });
    assert.deepEqual([await share("one"), await share("two")], [10, 10]);
    await advertise({ one: "0 8 0\n1 1 @anon", two: "0 16 0\n1 1 @anon" });
    assert.deepEqual([await share("one"), await share("two")], [10, 10]);
  });

  test("a key with no waiters elsewhere leaves the whole lane (work-conserving)", async (t) => {
    if (redis === null) return t.skip("no Redis");
    await advertise({ one: "0 8 0\n1 1 key%3AA" });
    assert.equal(await share("one"), LIMIT, "nobody else waits");
    // Another replica waits only with interactive calls: a default call's share is the lane's
    // for the rivals' count, and its part counts only flows of its class or better.
    await advertise({ one: "0 8 0\n1 1 key%3AA", two: "3 0 0\n0 1 key%3AB" });
    assert.equal(await share("one"), 10, "two's interactive flow is a rival for default calls");
  });

  test("advertise.lua answers on how many replicas each of this replica's flows waits", async (t) => {
    if (redis === null) return t.skip("no Redis");
    await advertise({ one: "0 8 0\n1 3 key%3AA" });
    const index = `${P}:waiting`;
    const answer = (await runScript(
      redis!,
      "advertise",
      [index, replicas, waiters],
      ["two", "", 60_000, "1", "0 16 0\n1 3 key%3AA\n1 1 key%3AB"],
    )) as [number, number, string[]];
    const spreads = parseSpreads(answer[2][0]!);
    // A waits on both in the default class (so also for bulk, which counts default or better); B only here.
    assert.deepEqual(spreads, [
      { rank: 1, spread: 2, token: "key%3AA" },
      { rank: 2, spread: 2, token: "key%3AA" },
    ]);
    const gone = (await runScript(
      redis!,
      "advertise",
      [index, replicas, waiters],
      ["two", "", 60_000, "0", ""],
    )) as [number, number, string[]];
    assert.deepEqual(gone[2], [""], "nothing to say for a field that went");
  });
});

describe("the advertisement's flows (flow-advert.ts)", () => {
  test("at most the cap per class, the flows with most waiters first, the rest one entry", () => {
    const advert = new LaneAdvert();
    const flows: Flow[] = Array.from({ length: MAX_ADVERTISED_FLOWS + 4 }, (_, i) => ({
      name: `key:k ${i}`,
      weight: 1 + (i % 3),
    }));
    const byFlow = new Map<Flow, number>(flows.map((f, i) => [f, 100 - i]));
    byFlow.set(ANONYMOUS, 1);
    const set: [Rank, Map<Flow, number>][] = [];
    advert.add({
      budget: {} as never,
      counts: [0, 5, 0],
      flows: [new Map(), byFlow, new Map()],
      queue: { setPortions: (rank, portions) => set.push([rank, new Map(portions)]) },
    });
    const lines = advert.encode().split("\n");
    assert.equal(lines[0], "0 5 0");
    assert.equal(lines.length, 1 + MAX_ADVERTISED_FLOWS + 1);
    assert.equal(lines[1], "1 1 key%3Ak%200", "names URI-encoded: no space or newline in a token");
    // Past the cap: k16..k19 and the anonymous flow, their weights added up.
    const rest = flows.slice(MAX_ADVERTISED_FLOWS).reduce((n, f) => n + f.weight, 0) + 1;
    assert.equal(lines.at(-1), `1 ${rest} @rest`);
    advert.applySpreads("1 2 key%3Ak%200\n2 3 key%3Ak%201\n1 2 unknown");
    const portions = new Map(set.map(([rank, p]) => [rank, p]));
    assert.deepEqual(
      [...portions.get(1)!].map(([f, p]) => [f.name, p]),
      [["key:k 0", 0.5]],
    );
    assert.deepEqual(
      [...portions.get(2)!].map(([f, p]) => [f.name, p]),
      [["key:k 1", 1 / 3]],
    );
    assert.equal(portions.get(0)!.size, 0);
  });

  test("a flow joined when the new value names a token the old one did not (the counts alone never)", () => {
    assert.equal(flowJoined(undefined, "0 1 0\n1 1 key%3AA"), true);
    assert.equal(flowJoined("0 1 0\n1 1 key%3AA", "0 7 0\n1 1 key%3AA"), false);
    assert.equal(flowJoined("0 1 0\n1 1 key%3AA", "0 2 0\n1 1 key%3AA\n1 1 key%3AB"), true);
    assert.equal(flowJoined("0 2 0\n1 1 key%3AA\n1 1 key%3AB", "0 1 0\n1 1 key%3AB"), false);
    assert.equal(flowJoined("0 1 0\n1 1 key%3AA", ""), false);
  });
});
