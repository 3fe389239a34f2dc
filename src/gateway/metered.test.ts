import assert from "node:assert/strict";
import { test } from "node:test";
import { parseConfig } from "../config/schema.js";
import { mayGrantNow } from "./lane.js";
import { meteredModels } from "./metered.js";

const model = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  max_concurrent_requests: 4,
  pods: [{ url: `http://127.0.0.1:9/${name}`, max_inflight: 4 }],
  ...extra,
});

test("a token estimate is needed only where a tpm is on the model's path: its own, its account's, or its fallback's", () => {
  const config = parseConfig({
    models: [
      model("own", { tpm: 10_000 }),
      model("in-account"),
      model("rpm-only", { rpm: 60 }),
      model("plain"),
      model("falls-back", { fallback: "own" }),
      model("capped-account"),
    ],
    accounts: {
      tokens: { tpm: 50_000, models: ["in-account"] },
      calls: { max_inflight: 4, rpm: 100, models: ["capped-account"] },
    },
  });
  assert.deepEqual([...meteredModels(config)].sort(), ["falls-back", "in-account", "own"]);
});

test("a lane at its width, or with waiters ahead of a non-interactive call, is asked for its refusal first", () => {
  const lane = (inflight: number, queued: number) => ({
    inflight,
    queued,
    queueLimit: 8,
    width: 4,
    state: undefined,
  });
  assert.equal(mayGrantNow(undefined, "default"), true, "a pass-through lane always grants");
  assert.equal(mayGrantNow(lane(3, 0), "default"), true);
  assert.equal(mayGrantNow(lane(4, 0), "interactive"), false, "at its width nobody is granted");
  assert.equal(mayGrantNow(lane(2, 1), "bulk"), false, "waiters go first");
  assert.equal(mayGrantNow(lane(2, 1), "interactive"), true, "an interactive call may take the reserve");
});
