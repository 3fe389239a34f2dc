/**
 * The fleet store's per-turn write (`turnPipelined`) against a real Redis: the scripts asked in one
 * turn leave in one socket write (a corked socket, not an ioredis `Pipeline`: see the module's
 * comment), each answered on its own and in order. The Cluster's path (a pipeline to one node) runs
 * in `cluster.test.ts`'s contract suite.
 */
import assert from "node:assert/strict";
import { after, type TestContext, test } from "node:test";
import type { Redis } from "ioredis";
import { turnPipelined } from "../../src/store/redis/batch.js";
import { fleetConnections } from "../../src/store/redis/connection.js";
import { flush } from "../helpers/index.js";
import { REDIS_URL, redisOrSkip } from "./redis-helpers.js";

const opened: Redis[] = [];
after(() => {
  for (const c of opened) c.disconnect();
});

/**
 * A connected fleet client, the per-turn client over it, and a count of the writes its socket
 * makes (`_write` or `_writev`); null after skipping `t` without Redis.
 */
async function setup(
  t: TestContext,
  beforeSend?: () => void,
): Promise<{ batched: ReturnType<typeof turnPipelined>; writes: () => number } | null> {
  const probe = await redisOrSkip(t);
  if (probe === null) return null;
  probe.disconnect();
  const [client, subscriber] = fleetConnections(REDIS_URL, 15_000) as [Redis, Redis];
  subscriber.disconnect();
  opened.push(client);
  await client.connect();
  let writes = 0;
  const stream = client.stream as unknown as {
    _write: (...a: unknown[]) => unknown;
    _writev?: (...a: unknown[]) => unknown;
  };
  const write = stream._write.bind(stream);
  const writev = stream._writev?.bind(stream);
  stream._write = (...a) => {
    writes++;
    return write(...a);
  };
  if (writev !== undefined)
    stream._writev = (...a) => {
      writes++;
      return writev(...a);
    };
  return { batched: turnPipelined(client, beforeSend), writes: () => writes };
}

const ECHO = "return ARGV[1]";
const FAIL = "return redis.error_reply('SLUICE_TEST refused')";

test("the scripts asked in one turn leave in one socket write, each answered in order", async (t) => {
  const s = await setup(t);
  if (s === null) return;
  const { batched, writes } = s;
  const before = writes();
  const answers = await Promise.all(["a", "b", "c", "d"].map((v) => batched.eval(ECHO, 0, v)));
  assert.deepEqual(answers, ["a", "b", "c", "d"]);
  assert.equal(writes() - before, 1, "four scripts of one turn, one write");
});

test("scripts asked in two turns leave in two writes (the count can tell)", async (t) => {
  const s = await setup(t);
  if (s === null) return;
  const { batched, writes } = s;
  const before = writes();
  const first = batched.eval(ECHO, 0, "1");
  await flush(); // the first turn's write has left
  const second = batched.eval(ECHO, 0, "2");
  assert.deepEqual(await Promise.all([first, second]), ["1", "2"]);
  assert.equal(writes() - before, 2);
});

test("an error reply rejects its own script only; the rest of the turn is answered", async (t) => {
  const s = await setup(t);
  if (s === null) return;
  const { batched } = s;
  const results = await Promise.allSettled([
    batched.eval(ECHO, 0, "x"),
    batched.eval(FAIL, 0),
    batched.eval(ECHO, 0, "y"),
  ]);
  assert.deepEqual(
    results.map((r) => r.status),
    ["fulfilled", "rejected", "fulfilled"],
  );
  assert.match(String((results[1] as PromiseRejectedResult).reason), /SLUICE_TEST refused/);
  assert.deepEqual(
    results.filter((r) => r.status === "fulfilled").map((r) => (r as PromiseFulfilledResult<unknown>).value),
    ["x", "y"],
  );
});

test("beforeSend's scripts join the turn's write, after the ones asked in it", async (t) => {
  const order: string[] = [];
  let added = false;
  const s = await setup(t, () => {
    if (added) return;
    added = true;
    void s!.batched.eval(ECHO, 0, "last").then((v) => order.push(v as string));
  });
  if (s === null) return;
  const { batched, writes } = s;
  const before = writes();
  await Promise.all(
    ["first", "second"].map((v) => batched.eval(ECHO, 0, v).then((a) => order.push(a as string))),
  );
  await flush();
  assert.deepEqual(order, ["first", "second", "last"]);
  assert.equal(writes() - before, 1);
});
