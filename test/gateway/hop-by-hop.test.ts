/**
 * Issue 8 item 6: a header the `Connection` header names is hop-by-hop (RFC 9110 §7.6.1) and is
 * never forwarded, in either direction, like the fixed hop-by-hop set. The per-call id goes
 * upstream as `X-Sluice-Request-Id`.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  assertNothingLeft,
  chatBody,
  completeAnswer,
  model,
  parseRaw,
  rawConnect,
  type Stack,
  SUITE,
  startStack,
  waitFor,
} from "./helpers.js";
import { answerOk, type RawPod, startRawPod } from "./raw-pod.js";

describe("headers named in Connection", SUITE, () => {
  let pod: RawPod;
  let stack: Stack;

  before(async () => {
    pod = await startRawPod((req, res, call) => {
      // The pod names one of its own headers as hop-by-hop, as a proxy in front of it might.
      res.setHeader("connection", "keep-alive, X-Pod-Hop");
      res.setHeader("x-pod-hop", "meant for the gateway only");
      res.setHeader("x-pod-kept", "end to end");
      answerOk(req, res, call);
    });
    stack = await startStack({ sims: [], config: () => ({ models: [model("m", [pod.url])] }) });
  });
  after(async () => {
    await stack.close();
    await pod.close();
  });

  test("are dropped from the request and from the answer; the others cross", async () => {
    const body = chatBody("m", "hop");
    const raw = await rawConnect(
      stack.port,
      [
        "POST /v1/chat/completions HTTP/1.1",
        "Host: gateway",
        "Content-Type: application/json",
        `Content-Length: ${Buffer.byteLength(body)}`,
        "Connection: keep-alive, X-Client-Hop, x-other-hop",
        "X-Client-Hop: meant for the gateway only",
        "X-Other-Hop: also",
        "X-Client-Kept: end to end",
        "",
        body,
      ].join("\r\n"),
    );
    await raw.waitFor(/\r\n\r\n/);
    await waitFor("the whole answer", () => completeAnswer(raw.received()));
    raw.socket.destroy();
    const answer = parseRaw(raw.received());
    assert.equal(answer.status, 200, answer.body);

    const [received] = pod.calls;
    assert.ok(received, "the call reached the pod");
    assert.equal(received.headers["x-client-hop"], undefined);
    assert.equal(received.headers["x-other-hop"], undefined);
    assert.equal(received.headers["x-client-kept"], "end to end");
    assert.equal(received.id, answer.headers["x-sluice-request-id"], "the per-call id goes upstream");

    assert.equal(answer.headers["x-pod-hop"], undefined);
    assert.equal(answer.headers["x-pod-kept"], "end to end");
    assert.doesNotMatch(answer.headers.connection ?? "", /x-pod-hop/i);
    await assertNothingLeft(stack);
  });
});
