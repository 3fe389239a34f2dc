/**
 * Credentials cross the proxy one way only (DESIGN §3.4 `upstream_api_key_env`, §4): the
 * client's `Authorization` is never forwarded, the model's own key is injected from the
 * environment, and neither token — nor a key's digest — appears in the snapshot, the
 * telemetry routes, the metrics or a log line.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import {
  assertBadInput,
  assertNothingLeft,
  call,
  chat,
  LogCapture,
  model,
  type Stack,
  SUITE,
  sha256hex,
  startStack,
} from "./helpers.js";

const CLIENT_TOKEN = "sk-client-a1b2c3d4e5f6";
const WRONG_TOKEN = "sk-wrong-f6e5d4c3b2a1";
const UPSTREAM_TOKEN = "sk-upstream-9z8y7x6w";
const SECRETS = [CLIENT_TOKEN, WRONG_TOKEN, UPSTREAM_TOKEN, sha256hex(CLIENT_TOKEN)];

function assertNoSecret(where: string, text: string): void {
  for (const secret of SECRETS) assert.ok(!text.includes(secret), `${where} contains a credential`);
}

describe("credentials", SUITE, () => {
  let stack: Stack;
  const log = new LogCapture();

  before(async () => {
    stack = await startStack({
      sims: [
        { maxNumSeqs: 2, serviceMs: 1, tokensPerSecond: 0 },
        { maxNumSeqs: 2, serviceMs: 1, tokensPerSecond: 0 },
      ],
      config: ([keyed, bare]) => ({
        auth: { keys: [{ id: "tenant", sha256: sha256hex(CLIENT_TOKEN), max_inflight: 4 }] },
        models: [
          model("keyed", [keyed!], { upstream_api_key_env: "TEST_UPSTREAM_KEY" }),
          model("bare", [bare!]),
        ],
      }),
      env: { TEST_UPSTREAM_KEY: UPSTREAM_TOKEN },
      // The most verbose level: no line at any level may carry a credential.
      logger: pino({ level: "trace" }, log.stream),
    });
  });
  after(() => stack.close());

  const auth = { authorization: `Bearer ${CLIENT_TOKEN}` };

  test("the pod sees the model's upstream key, never the client's", async () => {
    const a = await chat(stack.url, "keyed", { headers: auth });
    assert.equal(a.status, 200);
    assert.deepEqual(stack.sims[0]!.stats().authHeadersSeen, [`Bearer ${UPSTREAM_TOKEN}`]);
    await assertNothingLeft(stack);
  });

  test("a model without an upstream key gets no Authorization at all", async () => {
    const a = await chat(stack.url, "bare", { headers: auth });
    assert.equal(a.status, 200);
    assert.equal(stack.sims[1]!.stats().received, 1);
    assert.deepEqual(stack.sims[1]!.stats().authHeadersSeen, []);
    await assertNothingLeft(stack);
  });

  test("the same holds for a call streamed through by X-Sluice-Model", async () => {
    const a = await chat(stack.url, "bare", { headers: { ...auth, "x-sluice-model": "bare" } });
    assert.equal(a.status, 200);
    assert.deepEqual(stack.sims[1]!.stats().authHeadersSeen, []);
    await assertNothingLeft(stack);
  });

  test("a refused token is not logged either", async () => {
    const a = await chat(stack.url, "keyed", { headers: { authorization: `Bearer ${WRONG_TOKEN}` } });
    assertBadInput(a, 401, "unauthorized");
    assertNoSecret("the 401 body", a.text);
  });

  test("no credential in the snapshot, telemetry, metrics or any log line", async () => {
    assertNoSecret("the snapshot", JSON.stringify(stack.gateway.governor.snapshot()));
    assertNoSecret("/api/telemetry/lanes", (await call(stack.url, "/api/telemetry/lanes")).text);
    assertNoSecret("/metrics", (await call(stack.url, "/metrics")).text);
    const records = log.records();
    assert.ok(records.length >= 4, "one line per request was logged");
    for (const line of log.lines) assertNoSecret("a log line", line);
    // The key is named by its id.
    assert.ok(records.some((r) => r.key === "tenant"));
  });
});

describe("credentials in open mode", SUITE, () => {
  let stack: Stack;

  before(async () => {
    stack = await startStack({
      sims: [{ maxNumSeqs: 1, serviceMs: 1, tokensPerSecond: 0 }],
      config: ([pod]) => ({ models: [model("m", [pod!])] }),
    });
  });
  after(() => stack.close());

  test("a client's Authorization is dropped even when sluice does not check it", async () => {
    const a = await chat(stack.url, "m", { headers: { authorization: `Bearer ${CLIENT_TOKEN}` } });
    assert.equal(a.status, 200);
    assert.deepEqual(stack.sims[0]!.stats().authHeadersSeen, []);
    await assertNothingLeft(stack);
  });
});
