import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { JsonGuard, JsonLimitError, type TopModel } from "./json-guard.js";

const LIMITS = { maxDepth: 64, maxValues: 500_000 };

/** Feeds `body` in chunks of `size` bytes; returns the guard, or the error it threw. */
function scan(body: string | Buffer, size = 1 << 16, limits = LIMITS): JsonGuard | JsonLimitError {
  const bytes = typeof body === "string" ? Buffer.from(body) : body;
  const guard = new JsonGuard(limits);
  try {
    for (let i = 0; i < bytes.length; i += size) guard.feed(bytes.subarray(i, i + size));
  } catch (error) {
    if (error instanceof JsonLimitError) return error;
    throw error;
  }
  return guard;
}

function model(body: string, size?: number): TopModel {
  const g = scan(body, size);
  assert.ok(g instanceof JsonGuard, `no refusal for ${body}`);
  return g.topModel;
}

describe("the bounded parse (json-guard.ts)", () => {
  test("nesting past max_json_depth is refused at the byte that crosses it, named with the limit", () => {
    const e = scan("[".repeat(20 << 20));
    assert.ok(e instanceof JsonLimitError);
    assert.equal(e.status, 400);
    assert.equal(e.param, "body");
    assert.equal(e.offset, 64);
    assert.match(e.message, /deeper than 64 levels \(admission\.max_json_depth\) at byte 64/);
    assert.ok(scan(`${"[".repeat(64)}${"]".repeat(64)}`) instanceof JsonGuard, "64 levels pass");
    // Brackets inside strings are text, not nesting.
    assert.ok(scan(JSON.stringify({ s: "[".repeat(10_000) })) instanceof JsonGuard);
  });

  test("more than max_json_values values are refused; numbers, strings, literals and containers count, keys do not", () => {
    const limits = { maxDepth: 64, maxValues: 10 };
    assert.ok(scan('{"a":1,"b":"x","c":true,"d":null,"e":[1,2,{},3]}', 3, limits) instanceof JsonGuard); // 10
    const e = scan('{"a":1,"b":"x","c":true,"d":null,"e":[1,2,{},3,4]}', 3, limits);
    assert.ok(e instanceof JsonLimitError);
    assert.match(e.message, /more than 10 values \(admission\.max_json_values\)/);
    const bomb = scan(`[${"{},".repeat(3_000_000)}{}]`);
    assert.ok(bomb instanceof JsonLimitError && bomb.offset < 1_600_000, "refused after 500 000 values");
  });

  test("a 20 MiB base64 image is one string: it passes, and its escapes and quotes are read across chunks", () => {
    const b64 = Buffer.alloc(15 << 20, 7).toString("base64");
    const body = JSON.stringify({
      model: "m",
      messages: [{ role: "user", content: [{ image_url: { url: b64 } }] }],
    });
    assert.ok(body.length > 20 << 20);
    assert.deepEqual(model(body), { kind: "string", value: "m" });
    const escapes = JSON.stringify({ a: 'x\\"]]]]\\\\"'.repeat(100), model: "after" });
    for (const size of [1, 2, 3, 7, 64])
      assert.deepEqual(model(escapes, size), { kind: "string", value: "after" });
  });

  test("the top-level model: read plainly, the last one wins, anything it cannot read is unsure", () => {
    assert.deepEqual(model('{"model":"a","x":{"model":"b"}}', 2), { kind: "string", value: "a" });
    assert.deepEqual(model('{"x":1,"model":"a","model":"c"}'), { kind: "string", value: "c" });
    assert.deepEqual(model('{"models":"x","mode":"y"}'), { kind: "absent" });
    assert.deepEqual(model('[{"model":"a"}]'), { kind: "absent" });
    for (const unsure of ['{"mod\\u0065l":"a"}', '{"model":"a\\"b"}', '{"model":5}', '{"model":{"a":1}}']) {
      assert.deepEqual(model(unsure, 1), { kind: "unsure" }, unsure);
      assert.deepEqual(model(unsure), { kind: "unsure" }, unsure);
    }
    assert.deepEqual(model(`{"model":"${"x".repeat(300)}"}`), { kind: "unsure" }, "too long to be a name");
  });
});
