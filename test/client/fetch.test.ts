/**
 * `createSluiceFetch` against a real gateway (DESIGN §6): what it sends again (only sluice's own
 * capacity refusals, recognised by `X-Sluice-Reason`) and what it never does (send twice a call
 * the gateway forwarded), the priority header, URLs, `AbortSignal`, and a streamed answer holding
 * its slot until it ends.
 */
import assert from "node:assert/strict";
import { afterEach, describe, test } from "node:test";
import { createSluiceFetch, retryDelayMs } from "../../src/client/index.js";
import { ConfigError } from "../../src/core/errors.js";
import {
  assertNothingLeft,
  held,
  model,
  type Stack,
  SUITE,
  startStack,
  waitFor,
} from "../gateway/helpers.js";
import { dropAfterRead, type RawPod, startRawPod } from "../gateway/raw-pod.js";
import { chatInit, recordArrivals } from "./helpers.js";

let stack: Stack | undefined;
let pods: RawPod[] = [];

afterEach(async () => {
  await stack?.close();
  stack = undefined;
  await Promise.all(pods.map((p) => p.close()));
  pods = [];
});

/** A gateway with one lane `m` of `slots` slots on a sim whose calls take `serviceMs`, no queue. */
async function simStack(
  slots: number,
  serviceMs: number,
  extra: Record<string, unknown> = {},
): Promise<Stack> {
  stack = await startStack({
    sims: [{ maxNumSeqs: slots, serviceMs, tokensPerSecond: 50, defaultOutputTokens: 10 }],
    config: ([pod]) => ({ models: [model("m", [pod!], extra, slots)] }),
  });
  return stack;
}

/** A gateway in front of one raw pod with `behave`, its breaker off so every call reaches it. */
async function rawStack(behave: Parameters<typeof startRawPod>[0]): Promise<{ s: Stack; pod: RawPod }> {
  const pod = await startRawPod(behave);
  pods = [pod];
  stack = await startStack({
    sims: [],
    config: () => ({ models: [model("m", [pod.url], { breaker: { enabled: false } })] }),
  });
  return { s: stack, pod };
}

describe("options", () => {
  test("are validated at construction, naming the option", () => {
    const bad: [Record<string, unknown>, string][] = [
      [{}, "baseUrl"],
      [{ baseUrl: "/v1" }, "baseUrl"],
      [{ baseUrl: "ftp://gw" }, "baseUrl"],
      [{ baseUrl: "http://gw", priority: "urgent" }, "priority"],
      [{ baseUrl: "http://gw", maxRetries: -1 }, "maxRetries"],
      [{ baseUrl: "http://gw", initialWindow: 0 }, "initialWindow"],
    ];
    for (const [options, path] of bad) {
      assert.throws(
        () => createSluiceFetch(options as never),
        (e: unknown) => e instanceof ConfigError && e.path === path,
        JSON.stringify(options),
      );
    }
  });

  test("the retry wait is the Retry-After plus full jitter over a span that doubles per refusal", () => {
    assert.equal(
      retryDelayMs(1000, 1, () => 0),
      1000,
    );
    assert.equal(
      retryDelayMs(1000, 1, () => 0.5),
      1500,
    );
    assert.equal(
      retryDelayMs(1000, 3, () => 0.5),
      1000 + 0.5 * 4000,
    );
    // The span stops doubling at a minute (or at the Retry-After, when that is longer).
    assert.equal(
      retryDelayMs(1000, 20, () => 1),
      61_000,
    );
    assert.equal(
      retryDelayMs(90_000, 5, () => 1),
      180_000,
    );
  });
});

describe("what is sent again", SUITE, () => {
  test("a pod's own 429 is handed back, not sent again: the gateway forwarded it", async () => {
    const { s, pod } = await rawStack((_req, res) => {
      res.writeHead(429, { "content-type": "application/json", "retry-after": "1" });
      res.end('{"error":{"message":"slow down"}}');
    });
    const recorder = recordArrivals(s);
    const res = await createSluiceFetch({ baseUrl: s.url })("/v1/chat/completions", chatInit("m"));
    assert.equal(res.status, 429);
    assert.equal(res.headers.get("x-sluice-reason"), null);
    await res.text();
    assert.equal(pod.calls.length, 1);
    assert.equal(recorder.arrivals.length, 1);
  });

  test("a 502 upstream_error (the pod took the call and dropped it) is handed back, not sent again", async () => {
    const { s, pod } = await rawStack(dropAfterRead);
    const recorder = recordArrivals(s);
    const sluiceFetch = createSluiceFetch({ baseUrl: s.url });
    const res = await sluiceFetch("/v1/chat/completions", chatInit("m"));
    assert.equal(res.status, 502);
    assert.equal(res.headers.get("x-sluice-reason"), "upstream_error");
    await res.text();
    assert.equal(pod.calls.length, 1);
    assert.equal(recorder.arrivals.length, 1);
    assert.equal(sluiceFetch.windows()[0]!.inflight, 0);
  });

  test("sluice's queue_timeout is handed back, not sent again: the caller asked for that bound (seed 002 D4)", async () => {
    // One slot held, a queue of one and a short queue timeout: the call waits, then times out.
    const s = await simStack(1, 60_000, { queue_limit: 1, queue_timeout_s: 0.2 });
    const hold = new AbortController();
    const holding = held(s.url, "m", hold.signal);
    await waitFor("the slot to be taken", () => s.sims[0]!.stats().running === 1);
    const recorder = recordArrivals(s);
    // maxRetries bounds what a client that does resend it would do, so it fails by count, not by time.
    const sluiceFetch = createSluiceFetch({ baseUrl: s.url, maxRetries: 2 });
    const res = await sluiceFetch("/v1/chat/completions", chatInit("m"));
    assert.equal(res.status, 503);
    assert.equal(res.headers.get("x-sluice-reason"), "queue_timeout");
    await res.text();
    assert.deepEqual(
      recorder.arrivals.map((a) => a.status),
      [503],
      "the client sent a timed-out call again",
    );
    hold.abort();
    await holding;
    await assertNothingLeft(s);
  });

  test("sluice's queue_full is sent again after the Retry-After, and the caller sees only the answer", async () => {
    const s = await simStack(1, 60_000);
    const hold = new AbortController();
    const holding = held(s.url, "m", hold.signal);
    await waitFor("the slot to be taken", () => s.sims[0]!.stats().running === 1);
    const recorder = recordArrivals(s);
    // The first attempt is refused; free the slot once it has been, so the retry finds room.
    void waitFor("the refusal", () => recorder.arrivals.some((a) => a.status === 429)).then(() =>
      hold.abort(),
    );
    s.sims[0]!.setProfile({ serviceMs: 1 });
    const res = await createSluiceFetch({ baseUrl: s.url })("/v1/chat/completions", chatInit("m"));
    assert.equal(res.status, 200);
    await res.text();
    await holding;
    assert.deepEqual(
      recorder.arrivals.map((a) => a.status),
      [429, 200],
    );
    await assertNothingLeft(s);
  });

  test("a streamed upload refused by sluice is handed back: a stream cannot be sent twice", async () => {
    const s = await simStack(1, 60_000);
    const hold = new AbortController();
    const holding = held(s.url, "m", hold.signal);
    await waitFor("the slot to be taken", () => s.sims[0]!.stats().running === 1);
    const recorder = recordArrivals(s);
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode(JSON.stringify({ model: "m", messages: [] })));
        c.close();
      },
    });
    const res = await createSluiceFetch({ baseUrl: s.url })("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json", "x-sluice-model": "m" },
      body,
      duplex: "half",
    } as RequestInit);
    assert.equal(res.status, 429);
    assert.equal(res.headers.get("x-sluice-reason"), "queue_full");
    await res.text();
    assert.equal(recorder.arrivals.length, 1);
    hold.abort();
    await holding;
  });
});

describe("headers, URLs and signals", SUITE, () => {
  test("sets X-Sluice-Priority unless the call sets its own, and takes a path or a full URL", async () => {
    const s = await simStack(2, 1);
    const sluiceFetch = createSluiceFetch({ baseUrl: s.url, priority: "bulk" });
    const byPath = await sluiceFetch("/v1/chat/completions", chatInit("m"));
    const byUrl = await sluiceFetch(new URL("/v1/chat/completions", s.url), chatInit("m"));
    const own = await sluiceFetch(
      `${s.url}/v1/chat/completions`,
      chatInit("m", "mine", {
        headers: { "content-type": "application/json", "x-sluice-priority": "interactive" },
      }),
    );
    const priorities = [];
    for (const res of [byPath, byUrl, own]) {
      assert.equal(res.status, 200);
      priorities.push(res.headers.get("x-sluice-priority"));
      await res.text();
    }
    assert.deepEqual(priorities, ["bulk", "bulk", "interactive"]);
    await assertNothingLeft(s);
  });

  test("an abort while the call waits for room in the window rejects with the reason; nothing is sent", async () => {
    const s = await simStack(1, 60_000);
    const sluiceFetch = createSluiceFetch({ baseUrl: s.url, initialWindow: 1 });
    const hold = new AbortController();
    const first = sluiceFetch("/v1/chat/completions", chatInit("m", "first", { signal: hold.signal })).catch(
      (e: unknown) => e,
    );
    await waitFor("the first call to run", () => s.sims[0]!.stats().running === 1);
    const recorder = recordArrivals(s);
    const ac = new AbortController();
    const second = sluiceFetch("/v1/chat/completions", chatInit("m", "second", { signal: ac.signal }));
    assert.equal(sluiceFetch.windows()[0]!.queued, 1);
    ac.abort(new Error("caller gave up"));
    await assert.rejects(second, /caller gave up/);
    assert.deepEqual([recorder.arrivals.length, sluiceFetch.windows()[0]!.queued], [0, 0]);
    hold.abort();
    await first;
    await waitFor("the window to empty", () => sluiceFetch.windows()[0]!.inflight === 0);
  });

  test("an abort during the wait after a refusal rejects at once with the reason", async () => {
    const s = await simStack(1, 60_000);
    const hold = new AbortController();
    const holding = held(s.url, "m", hold.signal);
    await waitFor("the slot to be taken", () => s.sims[0]!.stats().running === 1);
    const recorder = recordArrivals(s);
    const ac = new AbortController();
    const call = createSluiceFetch({ baseUrl: s.url })(
      "/v1/chat/completions",
      chatInit("m", "x", { signal: ac.signal }),
    );
    await waitFor("the refusal", () => recorder.arrivals.some((a) => a.status === 429));
    ac.abort(new Error("stop waiting"));
    await assert.rejects(call, /stop waiting/);
    assert.equal(recorder.arrivals.length, 1, "not sent again");
    hold.abort();
    await holding;
  });

  test("a streamed answer holds its slot until its body ends", async () => {
    const s = await simStack(1, 1);
    const sluiceFetch = createSluiceFetch({ baseUrl: s.url });
    const init = chatInit("m");
    init.body = JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: "hi" }] });
    const res = await sluiceFetch("/v1/chat/completions", init);
    assert.equal(res.status, 200);
    assert.equal(res.url, `${s.url}/v1/chat/completions`);
    assert.equal(sluiceFetch.windows()[0]!.inflight, 1, "headers are in, the stream is not");
    const text = await res.text();
    assert.match(text, /data: \[DONE\]/);
    assert.equal(sluiceFetch.windows()[0]!.inflight, 0);
    await assertNothingLeft(s);
  });
});
