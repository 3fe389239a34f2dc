import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { withModelName } from "./model-name.js";

const rename = (text: string, name = "small") => withModelName(Buffer.from(text), name).toString("utf8");

describe("withModelName", () => {
  test("replaces the top-level model and keeps every other byte", () => {
    const body = '{ "seed": 12345678901234567890, "model" : "big", "messages": [{"role":"user"}] }';
    assert.equal(
      rename(body),
      '{ "seed": 12345678901234567890, "model" : "small", "messages": [{"role":"user"}] }',
    );
  });

  test("leaves nested model keys and model-looking values alone", () => {
    const body = '{"tools":[{"model":"x"}],"note":"model","model":"big","meta":{"model":"y"}}';
    assert.equal(
      rename(body),
      '{"tools":[{"model":"x"}],"note":"model","model":"small","meta":{"model":"y"}}',
    );
  });

  test("replaces every top-level model (JSON.parse reads the last)", () => {
    assert.deepEqual(JSON.parse(rename('{"model":"a","model":"b"}')), { model: "small" });
    assert.equal(rename('{"model":"a","model":"b"}'), '{"model":"small","model":"small"}');
  });

  test("handles escapes in strings before the key and in the new name", () => {
    const body = '{"prompt":"say \\"model\\": \\\\","model":"big"}';
    assert.equal(JSON.parse(rename(body, 'q"1')).model, 'q"1');
    assert.equal(JSON.parse(rename(body)).prompt, 'say "model": \\');
  });

  test("an escaped key is still found, by parsing", () => {
    assert.equal(JSON.parse(rename('{"mod\\u0065l":"big","n":1}')).model, "small");
  });

  test("a body that is not a JSON object (an upload buffered for its estimate) is forwarded as it is", () => {
    assert.equal(rename("plain text upload"), "plain text upload");
    assert.equal(rename("[1,2]"), "[1,2]");
  });
});
