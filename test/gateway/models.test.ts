/**
 * Issue 8 item 6: `GET /v1/models` answered 415 (it went down the model-call path, which wants a
 * JSON body), so both official SDKs' `models.list()` failed. Sluice answers it with the configured
 * models in the OpenAI list shape, behind the same auth as model calls; no pod is asked.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";
import { assertBadInput, call, model, type Stack, SUITE, sha256hex, startStack } from "./helpers.js";

const KEY = "sk-models-test";

describe("GET /v1/models", SUITE, () => {
  let stack: Stack;
  let client: OpenAI;

  before(async () => {
    stack = await startStack({
      sims: [
        { maxNumSeqs: 1, serviceMs: 1 },
        { maxNumSeqs: 1, serviceMs: 1 },
      ],
      config: ([a, b]) => ({
        auth: { keys: [{ id: "team", sha256: sha256hex(KEY) }] },
        models: [model("qwen3-8b", [a!]), model("embed", [b!], { mode: "shadow" })],
      }),
    });
    client = new OpenAI({ baseURL: `${stack.url}/v1`, apiKey: KEY, maxRetries: 0 });
  });
  after(() => stack.close());

  test("models.list() returns every configured model, owned by sluice", async () => {
    const page = await client.models.list();
    assert.deepEqual(
      page.data.map((m) => [m.id, m.object, m.owned_by]),
      [
        ["qwen3-8b", "model", "sluice"],
        ["embed", "model", "sluice"],
      ],
    );
    for (const m of page.data)
      assert.ok(Number.isInteger(m.created) && m.created > 1_700_000_000, `${m.created}`);
    const sims = stack.sims.map((s) => s.stats().received);
    assert.deepEqual(sims, [0, 0], "no pod was asked");
  });

  test("the raw answer is the OpenAI list shape", async () => {
    const a = await call(stack.url, "/v1/models", { headers: { authorization: `Bearer ${KEY}` } });
    assert.equal(a.status, 200, a.text);
    assert.match(String(a.headers["content-type"]), /^application\/json/);
    const body = JSON.parse(a.text);
    assert.equal(body.object, "list");
    assert.deepEqual(Object.keys(body.data[0]).sort(), ["created", "id", "object", "owned_by"]);
  });

  test("models.retrieve(id) returns one model; an unknown id is a NotFoundError", async () => {
    const m = await client.models.retrieve("qwen3-8b");
    assert.deepEqual([m.id, m.object, m.owned_by], ["qwen3-8b", "model", "sluice"]);
    const error = await client.models.retrieve("gpt-nope").then(
      () => assert.fail("expected a 404"),
      (e: unknown) => e,
    );
    assert.ok(error instanceof OpenAI.NotFoundError, `got ${String(error)}`);
    assert.equal(error.code, "unknown_model");
  });

  test("it needs the same key as model calls", async () => {
    const anonymous = await call(stack.url, "/v1/models");
    assertBadInput(anonymous, 401, "unauthorized");
    const wrong = new OpenAI({ baseURL: `${stack.url}/v1`, apiKey: "sk-wrong", maxRetries: 0 });
    const error = await wrong.models.list().then(
      () => assert.fail("expected a 401"),
      (e: unknown) => e,
    );
    assert.ok(error instanceof OpenAI.AuthenticationError, `got ${String(error)}`);
  });

  test("a POST to /v1/models is 405", async () => {
    const a = await call(stack.url, "/v1/models", {
      body: "{}",
      headers: { authorization: `Bearer ${KEY}` },
    });
    assertBadInput(a, 405, "method_not_allowed");
  });
});
