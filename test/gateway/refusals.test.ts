/**
 * DESIGN §3.2: every way sluice says no — its status, the headers a client sizes its window
 * from, an OpenAI-shaped body — and that a refused call never reaches a pod and leaves nothing
 * counted.
 */
import assert from "node:assert/strict";
import { networkInterfaces } from "node:os";
import { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { request } from "undici";
import {
  type Answer,
  assertBadInput,
  assertNothingLeft,
  assertRefusal,
  call,
  chat,
  chatBody,
  held,
  model,
  type Stack,
  SUITE,
  sha256hex,
  startStack,
  waitFor,
} from "./helpers.js";

/** Calls received by every sim together. */
function received(stack: Stack): number {
  return stack.sims.reduce((n, s) => n + s.stats().received, 0);
}

/** Runs `send`, then checks no sim received anything and nothing is left counted. */
async function untouched(stack: Stack, send: () => Promise<Answer>): Promise<Answer> {
  const before = received(stack);
  const answer = await send();
  await assertNothingLeft(stack);
  assert.equal(received(stack), before, "nothing reached the upstream");
  return answer;
}

/** `size` bytes sent with chunked transfer encoding (no Content-Length). */
function chunkedBody(size: number): Readable {
  const chunk = Buffer.alloc(1024, 0x61);
  let left = size;
  return new Readable({
    read() {
      if (left <= 0) return this.push(null);
      const n = Math.min(left, chunk.length);
      left -= n;
      this.push(chunk.subarray(0, n));
    },
  });
}

describe("capacity refusals", SUITE, () => {
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      sims: [
        { maxNumSeqs: 1, serviceMs: 60_000 },
        { maxNumSeqs: 1, serviceMs: 60_000 },
      ],
      config: ([full, slow]) => ({
        models: [
          // One slot, no queue: the second call is refused at once.
          model("full", [full!]),
          // One slot, one waiting place, a short timeout.
          model("slow", [slow!], { queue_limit: 1, queue_timeout_s: 0.2 }),
        ],
      }),
    });
  });
  after(() => stack.close());

  test("a full lane answers 429 queue_full with its numbers, and the pod never sees the call", async () => {
    const hold = new AbortController();
    const holding = held(stack.url, "full", hold.signal);
    await waitFor("the held call to run", () => stack.sims[0]!.stats().running === 1);
    const before = received(stack);
    const a = await chat(stack.url, "full");
    const e = assertRefusal(a, 429, "queue_full");
    assert.equal(e.lane, "full");
    assert.deepEqual([e.inflight, e.queued, e.queue_limit, e.width], [1, 0, 0, 1]);
    assert.equal(received(stack), before);
    hold.abort();
    await holding;
    await assertNothingLeft(stack);
  });

  test("a call that waits out queue_timeout_s answers 503 queue_timeout", async () => {
    const hold = new AbortController();
    const holding = held(stack.url, "slow", hold.signal);
    await waitFor("the held call to run", () => stack.sims[1]!.stats().running === 1);
    const before = received(stack);
    const a = await chat(stack.url, "slow");
    const e = assertRefusal(a, 503, "queue_timeout");
    assert.equal(e.lane, "slow");
    assert.deepEqual([e.inflight, e.queued, e.queue_limit, e.width], [1, 0, 1, 1]);
    assert.equal(received(stack), before, "the timed-out call never reached the pod");
    hold.abort();
    await holding;
    await assertNothingLeft(stack);
  });
});

describe("bad input", SUITE, () => {
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      sims: [{ maxNumSeqs: 4, serviceMs: 1, tokensPerSecond: 0 }],
      config: ([pod]) => ({
        admission: { max_body_bytes: "4KiB", max_buffered_bytes: "1MiB" },
        models: [model("m", [pod!], {}, 4)],
      }),
    });
  });
  after(() => stack.close());

  test("broken JSON is 400 bad_request naming the body", async () => {
    const a = await untouched(stack, () => call(stack.url, "/v1/chat/completions", { body: "{not json" }));
    assert.equal(assertBadInput(a, 400, "bad_request").param, "body");
  });

  test("a body without a model is 400 bad_request naming body.model", async () => {
    const a = await untouched(stack, () =>
      call(stack.url, "/v1/chat/completions", { body: JSON.stringify({ messages: [] }) }),
    );
    assert.equal(assertBadInput(a, 400, "bad_request").param, "body.model");
  });

  test("a stream that is not a boolean is 400 bad_request naming body.stream", async () => {
    const a = await untouched(stack, () =>
      call(stack.url, "/v1/chat/completions", { body: chatBody("m", "x", { stream: "yes" }) }),
    );
    assert.equal(assertBadInput(a, 400, "bad_request").param, "body.stream");
  });

  test("a body that is not JSON by its Content-Type is 415", async () => {
    const a = await untouched(stack, () =>
      call(stack.url, "/v1/chat/completions", {
        body: chatBody("m"),
        headers: { "content-type": "text/plain" },
      }),
    );
    assert.equal(a.status, 415);
    assert.equal(assertBadInput(a, 415, "unsupported_media_type").param, "header:content-type");
  });

  test("an unknown model in the body is 404 unknown_model", async () => {
    const a = await untouched(stack, () => chat(stack.url, "nope"));
    assert.equal(assertBadInput(a, 404, "unknown_model").param, "body.model");
  });

  test("an unknown model in X-Sluice-Model is 404 unknown_model before the body", async () => {
    const a = await untouched(stack, () =>
      call(stack.url, "/v1/chat/completions", { body: chatBody("m"), headers: { "x-sluice-model": "nope" } }),
    );
    assert.equal(assertBadInput(a, 404, "unknown_model").param, "header:x-sluice-model");
  });

  test("a declared Content-Length over max_body_bytes is 413 body_too_large", async () => {
    const a = await untouched(stack, () =>
      call(stack.url, "/v1/chat/completions", { body: Buffer.alloc(8 * 1024, 0x20) }),
    );
    assert.equal(assertBadInput(a, 413, "body_too_large").param, "header:content-length");
  });

  test("a chunked body that grows past max_body_bytes is 413 body_too_large", async () => {
    const a = await untouched(stack, async () => {
      const res = await request(`${stack.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: chunkedBody(64 * 1024),
        dispatcher: stack.agent,
      });
      return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
    });
    assertBadInput(a, 413, "body_too_large");
  });

  test("a chunked body past max_body_bytes is 413 even when X-Sluice-Model lets it stream through", async () => {
    const a = await untouched(stack, async () => {
      const res = await request(`${stack.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-sluice-model": "m" },
        body: chunkedBody(64 * 1024),
        dispatcher: stack.agent,
      });
      return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
    });
    assertBadInput(a, 413, "body_too_large");
  });

  test("an invalid X-Sluice-Priority is 400 bad_request naming the header", async () => {
    const a = await untouched(stack, () =>
      chat(stack.url, "m", { headers: { "x-sluice-priority": "urgent" } }),
    );
    assert.equal(assertBadInput(a, 400, "bad_request").param, "header:x-sluice-priority");
  });

  test("the refusals are counted by reason in /metrics", async () => {
    const text = (await call(stack.url, "/metrics")).text;
    for (const reason of ["bad_request", "unknown_model", "body_too_large"]) {
      // Summed over lanes: a refusal before the lane is known is counted under lane "-".
      const lines = [
        ...text.matchAll(
          new RegExp(`^sluice_refusals_total\\{lane="[^"]*",reason="${reason}"\\} (\\d+)`, "gm"),
        ),
      ];
      const n = lines.reduce((sum, l) => sum + Number(l[1]), 0);
      assert.ok(n > 0, `sluice_refusals_total{reason="${reason}"} > 0`);
    }
  });
});

describe("keys: authentication, key_limit and priority allowance", SUITE, () => {
  const TENANT = "sk-tenant-0123456789";
  const BATCH = "sk-batch-0123456789";
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      sims: [{ maxNumSeqs: 4, serviceMs: 60_000 }],
      config: ([pod]) => ({
        auth: {
          keys: [
            { id: "tenant", sha256: sha256hex(TENANT), max_inflight: 1, max_priority: "interactive" },
            { id: "batch", sha256: sha256hex(BATCH), max_priority: "bulk" },
          ],
        },
        models: [model("m", [pod!], {}, 4)],
      }),
    });
  });
  after(() => stack.close());

  const auth = (token: string) => ({ authorization: `Bearer ${token}` });

  test("a missing key is 401 unauthorized with WWW-Authenticate", async () => {
    const a = await untouched(stack, () => chat(stack.url, "m"));
    const e = assertBadInput(a, 401, "unauthorized");
    assert.equal(e.type, "authentication_error");
    assert.equal(e.param, "header:authorization");
    assert.match(String(a.headers["www-authenticate"]), /^Bearer/);
  });

  test("an unknown key is 401 unauthorized", async () => {
    const a = await untouched(stack, () => chat(stack.url, "m", { headers: auth("sk-wrong") }));
    assertBadInput(a, 401, "unauthorized");
  });

  test("a malformed Authorization header is 401 unauthorized", async () => {
    const a = await untouched(stack, () =>
      chat(stack.url, "m", { headers: { authorization: `Basic ${TENANT}` } }),
    );
    assertBadInput(a, 401, "unauthorized");
  });

  test("a key at its max_inflight answers 429 key_limit, before and after the body", async () => {
    stack.sims[0]!.setProfile({ serviceMs: 60_000 });
    const hold = new AbortController();
    const holding = chat(stack.url, "m", { headers: auth(TENANT), signal: hold.signal }).catch(
      (e: unknown) => e,
    );
    await waitFor("the key's call to run", () => stack.sims[0]!.stats().running === 1);
    const before = received(stack);
    // Lane unknown until the body is read: the key bound is checked before it.
    const byBody = await chat(stack.url, "m", { headers: auth(TENANT) });
    assertRefusal(byBody, 429, "key_limit");
    // Lane named in the header: the same bound, with the lane's numbers.
    const byHeader = await chat(stack.url, "m", { headers: { ...auth(TENANT), "x-sluice-model": "m" } });
    assertRefusal(byHeader, 429, "key_limit");
    assert.equal(byHeader.headers["x-sluice-inflight"], "1");
    // Another key is not affected.
    stack.sims[0]!.setProfile({ serviceMs: 1 });
    const other = await chat(stack.url, "m", { headers: auth(BATCH) });
    assert.equal(other.status, 200);
    assert.equal(received(stack), before + 1, "only the other key's call reached the pod");
    hold.abort();
    await holding;
    await assertNothingLeft(stack);
  });

  test("an invalid X-Sluice-Priority is 400 naming the header and the classes, before the key or lane is counted", async () => {
    stack.sims[0]!.setProfile({ serviceMs: 60_000 });
    const hold = new AbortController();
    const holding = chat(stack.url, "m", { headers: auth(TENANT), signal: hold.signal }).catch(
      (e: unknown) => e,
    );
    await waitFor("the key's call to run", () => stack.sims[0]!.stats().running === 1);
    const refusals = async () => {
      const text = (await call(stack.url, "/metrics")).text;
      const n = (reason: string) =>
        [
          ...text.matchAll(
            new RegExp(`^sluice_refusals_total\\{lane="[^"]*",reason="${reason}"\\} (\\d+)`, "gm"),
          ),
        ]
          .map((l) => Number(l[1]))
          .reduce((sum, v) => sum + v, 0);
      return { bad: n("bad_request"), keyLimit: n("key_limit"), full: n("queue_full") };
    };
    const before = await refusals();
    const running = received(stack);
    // The key is at its max_inflight: were it checked first, these would be 429 key_limit.
    for (const headers of [
      { ...auth(TENANT), "x-sluice-priority": "urgent" },
      { ...auth(TENANT), "x-sluice-priority": "Interactive", "x-sluice-model": "m" },
    ]) {
      const a = await chat(stack.url, "m", { headers });
      const e = assertBadInput(a, 400, "bad_request");
      assert.equal(e.param, "header:x-sluice-priority");
      assert.match(String(e.message), /X-Sluice-Priority must be interactive, default or bulk; got "/);
    }
    assert.deepEqual(await refusals(), { ...before, bad: before.bad + 2 });
    assert.equal(received(stack), running, "nothing reached the pod");
    const s = stack.gateway.governor.snapshot();
    assert.deepEqual(
      s.keys.map((k) => [k.key, k.inflight, k.queued]),
      [
        ["tenant", 1, 0],
        ["batch", 0, 0],
      ],
      "only the held call is counted",
    );
    assert.deepEqual([s.lanes[0]!.inflight, s.lanes[0]!.queued], [1, 0]);
    hold.abort();
    await holding;
    await assertNothingLeft(stack);
  });

  test("a priority above the key's allowance is lowered to it, and the answer says so", async () => {
    stack.sims[0]!.setProfile({ serviceMs: 1, tokensPerSecond: 0 });
    const a = await chat(stack.url, "m", { headers: { ...auth(BATCH), "x-sluice-priority": "interactive" } });
    assert.equal(a.status, 200);
    assert.equal(a.headers["x-sluice-priority"], "bulk");
    // A key may always ask for less than its allowance.
    const b = await chat(stack.url, "m", { headers: { ...auth(TENANT), "x-sluice-priority": "bulk" } });
    assert.equal(b.headers["x-sluice-priority"], "bulk");
    const c = await chat(stack.url, "m", {
      headers: { ...auth(TENANT), "x-sluice-priority": "interactive" },
    });
    assert.equal(c.headers["x-sluice-priority"], "interactive");
    await assertNothingLeft(stack);
  });
});

/** A non-loopback IPv4 address of this machine, to reach the gateway from off loopback. */
function externalAddress(): string | undefined {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  }
  return undefined;
}

const external = externalAddress();

describe("open mode off loopback", SUITE, () => {
  let stack: Stack | undefined;

  before(async () => {
    if (external === undefined) return;
    stack = await startStack({
      sims: [{ maxNumSeqs: 1, serviceMs: 1 }],
      config: ([pod]) => ({ models: [model("m", [pod!])] }),
      host: external,
    });
  });
  after(() => stack?.close());

  // Needs a non-loopback interface: a client connecting to the machine's own address is not on
  // loopback. A sandbox with only `lo` cannot make a call from elsewhere.
  test("with no keys configured a call from off loopback is 401 unauthorized", {
    skip: external === undefined ? "no non-loopback IPv4 interface on this machine" : false,
  }, async () => {
    const s = stack!;
    assert.equal(new URL(s.url).hostname, external);
    const a = await untouched(s, () => chat(s.url, "m"));
    const e = assertBadInput(a, 401, "unauthorized");
    assert.match(String(e.message), /loopback/);
  });
});
