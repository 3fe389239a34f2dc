/**
 * Issue 21 defect 6: behind an ingress, a 504 or 502 can come after the pod took the call (the
 * proxy's own upstream timeout, a reset between proxy and pod), so an answered status proves
 * nothing about whether the call ran. sluice re-dispatches only a call whose connection failed
 * before the request was written — unless the pod's config lists the status as "not started"
 * (`pods[].redispatch_statuses`, for bare servers that refuse without running).
 *
 * A tiny real HTTP proxy forwards to a real fake pod and answers 504/502 once the pod has the call;
 * the fake pods count calls by the per-call id the gateway sends upstream: each exactly once.
 */
import assert from "node:assert/strict";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, test } from "node:test";
import { ConfigErrors } from "../../src/config/issues.js";
import { parseConfig } from "../../src/config/schema.js";
import { assertNothingLeft, chat, model, type Stack, SUITE, startStack, waitFor } from "./helpers.js";
import { answer503, answerOk, neverAnswer, type RawPod, startRawPod } from "./raw-pod.js";

/** An ingress in front of `pod`: forwards each call, then answers `status` once the pod has it. */
async function startIngress(
  pod: RawPod,
  statusOf: (n: number) => number,
): Promise<{ url: string; close(): Promise<void> }> {
  let n = 0;
  const server: Server = createServer((req, res) => {
    const status = statusOf(n++);
    const id = String(req.headers["x-sluice-request-id"]);
    const target = new URL(pod.url);
    const upstream = httpRequest({
      host: target.hostname,
      port: target.port,
      method: req.method,
      path: req.url,
      headers: req.headers,
    });
    upstream.on("error", () => {});
    req.pipe(upstream);
    // The pod has the whole call: the ingress gives up on it (its own timeout) and says so.
    void waitFor(`the pod to receive ${id}`, () => pod.ids().includes(id)).then(() => {
      upstream.destroy();
      const body = JSON.stringify({
        error: { message: status === 504 ? "upstream timed out" : "bad gateway" },
      });
      res.writeHead(status, {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(body),
      });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const NO_BREAKER = { breaker: { enabled: false } };
let closers: (() => Promise<void>)[] = [];
let pods: RawPod[] = [];

afterEach(async () => {
  for (const close of closers.reverse()) await close();
  closers = [];
  pods = [];
});

async function pod(behave: Parameters<typeof startRawPod>[0]): Promise<RawPod> {
  const p = await startRawPod(behave);
  pods.push(p);
  closers.push(() => p.close());
  return p;
}

async function stack(urls: string[], podExtra: Record<string, unknown>[] = []): Promise<Stack> {
  const s = await startStack({
    sims: [],
    config: () => {
      const m = model("m", urls, NO_BREAKER, 2) as { pods: Record<string, unknown>[] };
      m.pods = m.pods.map((p, i) => ({ ...p, ...podExtra[i] }));
      return { models: [m] };
    },
  });
  closers.push(() => s.close());
  return s;
}

/** How many times each per-call id reached any pod. */
function reached(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const p of pods) for (const id of p.ids()) counts.set(id, (counts.get(id) ?? 0) + 1);
  return counts;
}

describe("a call answered by an ingress after the pod took it is never sent again", SUITE, () => {
  test("504 and 502 from the ingress: the client gets the answer, every call ran exactly once", async () => {
    const behind = await pod(neverAnswer);
    const healthy = await pod(answerOk);
    const ingress = await startIngress(behind, (n) => (n % 2 === 0 ? 504 : 502));
    closers.push(() => ingress.close()); // closed after the gateway, before the pods
    const s = await stack([ingress.url, healthy.url]);
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await chat(s.url, "m", { content: `call ${i}` })).status);
    assert.ok(behind.calls.length >= 1, "some calls went through the ingress");
    for (const [id, n] of reached()) assert.equal(n, 1, `call ${id} reached the pods ${n} times`);
    assert.equal(reached().size, 10);
    assert.equal(statuses.filter((st) => st === 504 || st === 502).length, behind.calls.length);
    await assertNothingLeft(s);
  });

  test("a status not listed in redispatch_statuses is passed on, even the pod's own 503", async () => {
    const refusing = await pod(answer503);
    await pod(answerOk);
    const s = await stack(
      pods.map((p) => p.url),
      [{ redispatch_statuses: [502] }],
    );
    const a = await chat(s.url, "m", { content: "first" });
    assert.equal(a.status, 503, a.text);
    assert.deepEqual(refusing.ids(), [String(a.headers["x-sluice-request-id"])]);
    assert.equal(pods[1]!.calls.length, 0, "not re-sent");
    await assertNothingLeft(s);
  });
});

describe("redispatch_statuses: a bare server's refusal goes to another pod", SUITE, () => {
  test("the pod's 503, listed: re-sent to the other pod, which is the only one to run it", async () => {
    const refusing = await pod(answer503);
    const healthy = await pod(answerOk);
    const s = await stack([refusing.url, healthy.url], [{ redispatch_statuses: [503, 503, 529] }]);
    for (let i = 0; i < 3; i++) {
      const a = await chat(s.url, "m", { content: `call ${i}` });
      assert.equal(a.status, 200, a.text);
      const id = String(a.headers["x-sluice-request-id"]);
      assert.ok(healthy.ids().includes(id));
    }
    assert.ok(refusing.calls.length >= 1, "the refusing pod was tried");
    assert.equal(healthy.calls.length, 3, "each call ran once, on the healthy pod");
    await assertNothingLeft(s);
  });

  test("only 429 or 5xx may be listed: anything else is refused naming the key and the entry", () => {
    for (const bad of [[200], [404], ["503"], [503.5], 503]) {
      let error: unknown;
      try {
        parseConfig({ models: [{ name: "m", pods: [{ url: "http://a:1", redispatch_statuses: bad }] }] });
      } catch (e) {
        error = e;
      }
      assert.ok(error instanceof ConfigErrors, `refused: ${JSON.stringify(bad)}`);
      assert.match(error.message, /models\[0\]\.pods\[0\]\.redispatch_statuses/);
      assert.match(error.message, /429 or 500–599/);
    }
    const c = parseConfig({
      models: [{ name: "m", pods: [{ url: "http://a:1", redispatch_statuses: [503, 429, 503] }] }],
    });
    assert.deepEqual(c.models[0]!.pods[0]!.redispatchStatuses, [503, 429]);
  });
});
