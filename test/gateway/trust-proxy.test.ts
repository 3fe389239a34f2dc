/**
 * Issue 21 defect 7: a reverse proxy on the same host must not lend its loopback address to the
 * callers it forwards. HAProxy with `option forwardfor` in front of a gateway with `admin.keys`
 * and no `auth.keys` let remote callers read `/metrics`, the telemetry and make keyless calls.
 *
 * The proxy here is a real HAProxy (installed by .ci/run; skipped with a message elsewhere).
 * A "remote" caller on one machine: HAProxy's `http-request set-src` takes the source address
 * from a test header, so `option forwardfor` appends that address exactly as it appends a
 * remote peer's. What the gateway answers is what is judged; the calls that get through are
 * counted at the pod.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { parseConfig } from "../../src/config/schema.js";
import { ProxyTrust } from "../../src/gateway/client-address.js";
import { freePort, which } from "../helpers/index.js";
import { call, chatBody, delay, model, type Stack, SUITE, sha256hex, startStack } from "./helpers.js";

const ADMIN_TOKEN = "sk-admin-trust-proxy";
const REMOTE = "203.0.113.9";

/** HAProxy in front of `target`: `option forwardfor`, the source address taken from `x-test-src` when sent. */
async function startForwardingProxy(bin: string, target: string): Promise<{ url: string; close(): void }> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "sluice-trust-proxy-"));
  const file = join(dir, "haproxy.cfg");
  writeFileSync(
    file,
    [
      "defaults",
      "  mode http",
      "  timeout connect 2s",
      "  timeout client 10s",
      "  timeout server 10s",
      "frontend fe",
      `  bind 127.0.0.1:${port}`,
      "  http-request set-src hdr(x-test-src) if { req.hdr(x-test-src) -m found }",
      "  option forwardfor",
      "  default_backend be",
      "backend be",
      `  server gw ${new URL(target).host}`,
      "",
    ].join("\n"),
  );
  const child: ChildProcess = spawn(bin, ["-db", "-f", file], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (b: Buffer) => {
    stderr += b.toString();
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      const a = await call(url, "/healthz");
      if (a.status === 200) break;
    } catch (error) {
      if (i > 200 || child.exitCode !== null) throw new Error(`haproxy did not start: ${stderr || error}`);
    }
    await delay(25);
  }
  return { url, close: () => child.kill("SIGKILL") };
}

const HAPROXY = which("haproxy");
const skip = HAPROXY === undefined && process.env.CI !== "true" ? "haproxy is not installed here" : false;

describe("behind a reverse proxy on the same host", { ...SUITE, skip }, () => {
  const stacks: Stack[] = [];
  const proxies: { url: string; close(): void }[] = [];

  /** A gateway with admin keys and no client keys, `trust_proxy` as given, and HAProxy in front. */
  async function gatewayBehindProxy(trustProxy: string[] | undefined) {
    const stack = await startStack({
      sims: [{ maxNumSeqs: 4, serviceMs: 1, tokensPerSecond: 0 }],
      config: ([pod]) => ({
        admin: { keys: [{ id: "ops", sha256: sha256hex(ADMIN_TOKEN) }] },
        ...(trustProxy === undefined ? {} : { trust_proxy: trustProxy }),
        models: [model("m", [pod!])],
      }),
    });
    stacks.push(stack);
    const proxy = await startForwardingProxy(HAPROXY!, stack.url);
    proxies.push(proxy);
    return { stack, proxy };
  }

  const chatThrough = (url: string, headers: Record<string, string>) =>
    call(url, "/v1/chat/completions", { headers, body: chatBody("m") });

  /** Calls the pod ran: every chat that got through is counted there. */
  const podCalls = (stack: Stack) => stack.sims[0]!.stats().completed;

  after(async () => {
    for (const p of proxies) p.close();
    await Promise.all(stacks.map((s) => s.close()));
  });

  let untrusted: Awaited<ReturnType<typeof gatewayBehindProxy>>;
  let trusted: Awaited<ReturnType<typeof gatewayBehindProxy>>;
  before(async () => {
    untrusted = await gatewayBehindProxy(undefined);
    trusted = await gatewayBehindProxy(["127.0.0.1/32", "::1"]);
  });

  test("without trust_proxy, nothing forwarded is local: admin routes and keyless calls refused", async () => {
    const { stack, proxy } = untrusted;
    for (const src of [REMOTE, undefined]) {
      const headers: Record<string, string> = src === undefined ? {} : { "x-test-src": src };
      for (const path of ["/metrics", "/api/telemetry/lanes", "/"]) {
        const a = await call(proxy.url, path, { headers });
        assert.equal(
          a.status,
          401,
          `${path} through the proxy (src ${src ?? "loopback"}) answered ${a.status}`,
        );
      }
      const chat = await chatThrough(proxy.url, headers);
      assert.equal(chat.status, 401, `a keyless call through the proxy answered ${chat.status}`);
    }
    assert.equal(podCalls(stack), 0, "the pod ran a call no one was allowed to make");
    // The admin key still opens the admin routes through the proxy.
    const keyed = await call(proxy.url, "/metrics", {
      headers: { "x-test-src": REMOTE, authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(keyed.status, 200);
    // A direct loopback caller, with no forwarding header, is local as before.
    assert.equal((await call(stack.url, "/metrics")).status, 200);
    assert.equal((await chatThrough(stack.url, {})).status, 200);
    assert.equal(podCalls(stack), 1);
  });

  test("a loopback connection that forges a forwarding header is not local", async () => {
    const { stack } = untrusted;
    const forgeries: Record<string, string>[] = [
      { "x-forwarded-for": "127.0.0.1" },
      { forwarded: "for=127.0.0.1" },
      { "x-real-ip": "127.0.0.1" },
    ];
    for (const forged of forgeries) {
      const a = await call(stack.url, "/api/telemetry/lanes", { headers: forged });
      assert.equal(a.status, 401, `${JSON.stringify(forged)} answered ${a.status}`);
    }
  });

  test("with trust_proxy, a remote caller is remote and a local one local", async () => {
    const { stack, proxy } = trusted;
    const before = podCalls(stack);
    const remote = await call(proxy.url, "/metrics", { headers: { "x-test-src": REMOTE } });
    assert.equal(remote.status, 401);
    assert.equal((await chatThrough(proxy.url, { "x-test-src": REMOTE })).status, 401);
    // A client that writes 127.0.0.1 itself: HAProxy appends its real address after it.
    const forgedXff = await call(proxy.url, "/metrics", {
      headers: { "x-test-src": REMOTE, "x-forwarded-for": "127.0.0.1" },
    });
    assert.equal(forgedXff.status, 401, "a forged X-Forwarded-For made a remote caller local");
    // …or forges the header the proxy does not manage.
    const forgedForwarded = await call(proxy.url, "/metrics", {
      headers: { "x-test-src": REMOTE, forwarded: "for=127.0.0.1" },
    });
    assert.equal(forgedForwarded.status, 401, "a forged Forwarded made a remote caller local");
    assert.equal(podCalls(stack), before, "the pod ran a remote keyless call");
    // A caller on this host through the trusted proxy is local.
    assert.equal((await call(proxy.url, "/metrics")).status, 200);
    assert.equal((await chatThrough(proxy.url, {})).status, 200);
    assert.equal(podCalls(stack), before + 1);
  });
});

describe("ProxyTrust", () => {
  const req = (remoteAddress: string, headers: Record<string, string> = {}) =>
    ({ socket: { remoteAddress }, headers }) as never;

  test("the client address is the right-most hop no trusted proxy vouches for", () => {
    const trust = new ProxyTrust(
      parseConfig({ trust_proxy: ["10.0.0.0/8", "127.0.0.1"], models: [m] }).trustProxy,
    );
    assert.equal(
      trust.clientAddress(req("127.0.0.1", { "x-forwarded-for": "1.2.3.4, 10.1.1.1" })),
      "1.2.3.4",
    );
    assert.equal(trust.clientAddress(req("127.0.0.1", { "x-forwarded-for": "6.6.6.6, 1.2.3.4" })), "1.2.3.4");
    assert.equal(
      trust.clientAddress(req("::ffff:10.2.3.4", { forwarded: 'for="[2001:db8::1]:4711"' })),
      "2001:db8::1",
    );
    assert.equal(trust.clientAddress(req("5.5.5.5", { "x-forwarded-for": "1.2.3.4" })), "5.5.5.5");
  });

  test("IPv4-mapped peers match IPv4 blocks; forwarded hops must all be loopback to be local", () => {
    const trust = new ProxyTrust(parseConfig({ trust_proxy: ["127.0.0.0/8"], models: [m] }).trustProxy);
    assert.ok(trust.isLocal(req("::ffff:127.0.0.1", { "x-forwarded-for": "127.0.0.1" })));
    assert.ok(!trust.isLocal(req("::ffff:127.0.0.1", { "x-forwarded-for": "127.0.0.1, 8.8.8.8" })));
    assert.ok(!trust.isLocal(req("::1", { "x-forwarded-for": "127.0.0.1" })), "::1 is not in 127.0.0.0/8");
    assert.ok(!trust.isLocal(req("127.0.0.1", { forwarded: "for=unknown" })));
    assert.ok(trust.isLocal(req("::1")));
  });

  test("bad entries are refused naming the entry", () => {
    for (const bad of ["proxy.internal", "10.0.0.0/33", "10.0.0.0/8/1", "::1/129", 42]) {
      assert.throws(
        () => parseConfig({ trust_proxy: ["127.0.0.1", bad], models: [m] }),
        (e: Error) => /trust_proxy\[1\]/.test(e.message) && /CIDR/.test(e.message),
        `trust_proxy entry ${String(bad)} was accepted`,
      );
    }
  });
});

const m = { name: "x", pods: [{ url: "http://127.0.0.1:1" }] };
