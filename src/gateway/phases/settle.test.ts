import assert from "node:assert/strict";
import type { ServerResponse } from "node:http";
import { describe, test } from "node:test";
import { QueueTimeoutError } from "../../core/errors.js";
import type { DispatchResult } from "../context.js";
import { HttpError } from "../http-error.js";
import { outcomeOf } from "./settle.js";

/** What a dispatch that answered `status` leaves in the context. */
function answered(status: number, extra: Partial<DispatchResult> = {}): DispatchResult {
  return {
    status,
    bytes: 10,
    usage: undefined,
    overloadStatus: undefined,
    clientGone: false,
    clientStalled: false,
    error: undefined,
    ttfbMs: undefined,
    ...extra,
  };
}

type Ended = Parameters<typeof outcomeOf>[0];

function ended(status: number, fields: Partial<Omit<Ended, "res">> = {}): Ended {
  return {
    clientGone: false,
    refused: undefined,
    result: undefined,
    ...fields,
    res: { statusCode: status } as ServerResponse,
  };
}

describe("outcomeOf: one outcome per request, in the documented order", () => {
  const cases: [string, Ended, string][] = [
    ["the pod's 200", ended(200, { result: answered(200) }), "ok"],
    ["the pod's 404", ended(404, { result: answered(404) }), "client_error"],
    ["the pod's 429 passed on", ended(429, { result: answered(429) }), "upstream_error"],
    ["the pod's 503 passed on", ended(503, { result: answered(503) }), "upstream_error"],
    [
      "a 502 for a refused connection",
      ended(502, { result: answered(502, { error: "ECONNREFUSED" }) }),
      "upstream_error",
    ],
    [
      "an answer cut short after its 200 head",
      ended(200, { result: answered(200, { error: "other side closed" }) }),
      "upstream_error",
    ],
    ["a capacity refusal", ended(503, { refused: new QueueTimeoutError("m", 1000, 1) }), "refused"],
    ["draining", ended(503, { refused: new HttpError(503, "draining", "draining") }), "refused"],
    [
      "a body too large",
      ended(413, { refused: new HttpError(413, "body_too_large", "too large") }),
      "client_error",
    ],
    ["an unexpected gateway error", ended(500), "internal_error"],
    ["the client leaving while queued", ended(200, { clientGone: true }), "client_gone"],
    [
      "the client leaving mid-answer",
      ended(200, { result: answered(200, { clientGone: true }) }),
      "client_gone",
    ],
  ];
  for (const [name, ctx, outcome] of cases) {
    test(`${name} → ${outcome}`, () => assert.equal(outcomeOf(ctx), outcome));
  }
});
