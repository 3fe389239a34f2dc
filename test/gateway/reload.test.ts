/**
 * Issue 8 item 11: `Gateway.reload(config)` (what `sluice serve` runs on SIGHUP) applies new
 * limits, keys, pods, models and routes to the live gateway without dropping a call: calls in
 * flight finish and get their answer, waiters are granted into the new limits, and the pod then
 * sees the new limit (its pool resized too: a pool left at the old size would hold calls inside
 * undici). A config that changes what only a restart can is refused, and nothing changes.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { parseConfig } from "../../src/config/schema.js";
import { isConfigError } from "../../src/core/errors.js";
import {
  type Answer,
  assertBadInput,
  assertNothingLeft,
  call,
  chat,
  flush,
  model,
  type Stack,
  SUITE,
  sha256hex,
  startStack,
  waitFor,
} from "./helpers.js";

/**
 * A pod that holds every call until its gate opens, counting the calls it runs at once (and the
 * most it ever ran) and the request ids it saw.
 */
interface GatePod {
  url: string;
  running: number;
  maxRunning: number;
  seen: number;
  /** Answers every held call, and every later one at once. */
  open(): void;
  /** Holds later calls again. */
  shut(): void;
  close(): Promise<void>;
}

async function gatePod(): Promise<GatePod> {
  let gateOpen = false;
  const held: ServerResponse[] = [];
  const answer = (res: ServerResponse) => {
    pod.running--;
    const body = JSON.stringify({ object: "chat.completion", choices: [] });
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    res.end(body);
  };
  const server = createServer((req, res) => {
    pod.seen++;
    pod.running++;
    pod.maxRunning = Math.max(pod.maxRunning, pod.running);
    req.resume();
    req.on("end", () => (gateOpen ? answer(res) : held.push(res)));
  });
  const pod: GatePod = {
    url: "",
    running: 0,
    maxRunning: 0,
    seen: 0,
    open() {
      gateOpen = true;
      for (const res of held.splice(0)) answer(res);
    },
    shut() {
      gateOpen = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  pod.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return pod;
}

const KEY_A = "sk-reload-a";
const KEY_B = "sk-reload-b";
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/** The raw config: model `m` on pod `p` at `inflight`, plus whatever `extra` adds. */
function raw(
  p: GatePod,
  inflight: number,
  extra: { keys?: string[]; models?: unknown[]; routes?: unknown[] } = {},
) {
  return {
    auth: { keys: (extra.keys ?? [KEY_A]).map((k) => ({ id: k.slice(-1), sha256: sha256hex(k) })) },
    models: [
      model("m", [p.url], { queue_limit: 50, queue_timeout_s: 60 }, inflight),
      ...(extra.models ?? []),
    ],
    routes: extra.routes ?? [],
  };
}

const lane = (stack: Stack, name: string) =>
  stack.gateway.governor.snapshot().lanes.find((l) => l.lane === name);

describe("Gateway.reload", SUITE, () => {
  let stack: Stack;
  let p: GatePod;
  let q: GatePod;

  before(async () => {
    [p, q] = await Promise.all([gatePod(), gatePod()]);
    stack = await startStack({ sims: [], config: () => raw(p, 2) });
  });
  after(async () => {
    p.open();
    q.open();
    await stack.close();
    await Promise.all([p.close(), q.close()]);
  });

  test("a wider limit applies to live calls: waiters are granted into it, and every call is answered", async () => {
    const calls = Array.from({ length: 10 }, (_, i) =>
      chat(stack.url, "m", { content: `c${i}`, headers: bearer(KEY_A) }),
    );
    await waitFor("2 calls at the pod and 8 queued", () => p.running === 2 && lane(stack, "m")?.queued === 8);

    stack.gateway.reload(parseConfig(raw(p, 4)));
    await waitFor("4 calls at the pod", () => p.running === 4);
    assert.equal(lane(stack, "m")?.queued, 6);
    assert.equal(p.maxRunning, 4, "the pod never saw more than the new limit");

    p.open();
    const answers = await Promise.all(calls);
    assert.deepEqual(
      answers.map((a) => a.status),
      Array(10).fill(200),
    );
    assert.equal(p.seen, 10);
    assert.equal(p.maxRunning, 4);
    await assertNothingLeft(stack);
  });

  test("calls sent while the config is reloaded again and again all get their answer", async () => {
    p.open();
    const answers: Promise<Answer>[] = [];
    for (let round = 0; round < 6; round++) {
      for (let i = 0; i < 8; i++) answers.push(chat(stack.url, "m", { headers: bearer(KEY_A) }));
      stack.gateway.reload(parseConfig(raw(p, round % 2 === 0 ? 3 : 2)));
      await flush();
    }
    const statuses = (await Promise.all(answers)).map((a) => a.status);
    assert.deepEqual(statuses, Array(48).fill(200));
    assert.ok(p.maxRunning <= 4, `the pod saw at most the widest limit, got ${p.maxRunning}`);
    await assertNothingLeft(stack);
  });

  test("keys: a call in flight under a removed key finishes; later it is 401 and the new key works", async () => {
    p.shut();
    const before = p.seen;
    const inFlight = chat(stack.url, "m", { headers: bearer(KEY_A) });
    await waitFor("the call to reach the pod", () => p.seen === before + 1);

    stack.gateway.reload(parseConfig(raw(p, 2, { keys: [KEY_B] })));
    assertBadInput(await chat(stack.url, "m", { headers: bearer(KEY_A) }), 401, "unauthorized");
    p.open();
    assert.equal((await inFlight).status, 200, "the call admitted under the old key got its answer");
    assert.equal((await chat(stack.url, "m", { headers: bearer(KEY_B) })).status, 200);
    await assertNothingLeft(stack);
  });

  test("new pods, models and routes serve at once; /v1/models lists the new models", async () => {
    q.open();
    stack.gateway.reload(
      parseConfig(
        raw(p, 2, {
          keys: [KEY_B],
          models: [model("n", [q.url], {}, 2)],
          routes: [{ match: "/ocr/", model: "n" }],
        }),
      ),
    );
    assert.equal((await chat(stack.url, "n", { headers: bearer(KEY_B) })).status, 200);
    const routed = await call(stack.url, "/ocr/page", { body: "{}", headers: bearer(KEY_B) });
    assert.equal(routed.status, 200, routed.text);
    assert.equal(q.seen, 2);
    const metrics = (await call(stack.url, "/metrics")).text;
    assert.match(
      metrics,
      /^sluice_refusals_total\{[^}]*lane="n"[^}]*\} 0$/m,
      "the new lane's series start at 0",
    );
    assert.ok(metrics.includes(`pod="${q.url}"`), "the new pod's failure series start at 0");
    const list = JSON.parse((await call(stack.url, "/v1/models", { headers: bearer(KEY_B) })).text);
    assert.deepEqual(
      list.data.map((m: { id: string }) => m.id),
      ["m", "n"],
    );

    // Pod q moves from model n to model m: m's calls now reach it, and n is gone (404).
    stack.gateway.reload(
      parseConfig({
        auth: { keys: [{ id: "b", sha256: sha256hex(KEY_B) }] },
        models: [model("m", [q.url], { queue_limit: 50 }, 2)],
      }),
    );
    const pBefore = p.seen;
    for (let i = 0; i < 4; i++)
      assert.equal((await chat(stack.url, "m", { headers: bearer(KEY_B) })).status, 200);
    assert.equal(q.seen, 6, "the new pod took m's calls");
    assert.equal(p.seen, pBefore, "the pod no longer listed took none");
    assertBadInput(await chat(stack.url, "n", { headers: bearer(KEY_B) }), 404, "unknown_model");
    await assertNothingLeft(stack);
  });

  test("a model and pod no longer listed: the call running there and the one waiting both get their answer", async () => {
    const r = await gatePod();
    try {
      const withGone = (keep: boolean) =>
        parseConfig({
          auth: { keys: [{ id: "b", sha256: sha256hex(KEY_B) }] },
          models: [
            model("m", [q.url], { queue_limit: 50 }, 2),
            ...(keep ? [model("gone", [r.url], { queue_limit: 5, queue_timeout_s: 60 }, 1)] : []),
          ],
        });
      stack.gateway.reload(withGone(true));
      const running = chat(stack.url, "gone", { headers: bearer(KEY_B) });
      await waitFor("the call to reach the pod", () => r.running === 1);
      const waiting = chat(stack.url, "gone", { headers: bearer(KEY_B) });
      await waitFor("the second call to queue", () => lane(stack, "gone")?.queued === 1);

      stack.gateway.reload(withGone(false));
      assertBadInput(await chat(stack.url, "gone", { headers: bearer(KEY_B) }), 404, "unknown_model");
      r.open();
      const answers = await Promise.all([running, waiting]);
      assert.deepEqual(
        answers.map((a) => a.status),
        [200, 200],
        answers.map((a) => a.text).join("\n"),
      );
      assert.equal(r.seen, 2);
    } finally {
      r.open();
      await r.close();
    }
  });

  test("a change only a restart can make (listen, store) is refused, and nothing changes", async () => {
    const before = stack.gateway.governor.snapshot().lanes.map((l) => [l.lane, l.limit]);
    const next = parseConfig({
      listen: "0.0.0.0:9999",
      auth: { keys: [{ id: "b", sha256: sha256hex(KEY_B) }] },
      models: [model("m", [q.url], { queue_limit: 50 }, 5)],
    });
    assert.throws(
      () => stack.gateway.reload(next),
      (e: unknown) => isConfigError(e) && e.path === "listen" && /only with a restart/.test(e.message),
    );
    const toRedis = parseConfig({
      store: "redis://:s3cret@r:6379",
      auth: { keys: [{ id: "b", sha256: sha256hex(KEY_B) }] },
      models: [model("m", [q.url], { queue_limit: 50 }, 5)],
    });
    assert.throws(
      () => stack.gateway.reload(toRedis),
      (e: unknown) =>
        isConfigError(e) &&
        e.path === "store" &&
        /only with a restart/.test(e.message) &&
        e.message.includes("redis://:***@r:6379") &&
        !e.message.includes("s3cret"),
    );
    assert.deepEqual(
      stack.gateway.governor.snapshot().lanes.map((l) => [l.lane, l.limit]),
      before,
    );
    assert.equal((await chat(stack.url, "m", { headers: bearer(KEY_B) })).status, 200);
  });
});
