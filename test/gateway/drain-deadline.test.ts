/**
 * Issue 8 item 4: a drain has a deadline (`admission.drain_timeout_s`). A call still running when
 * it passes — here on a pod that never answers — is cut: its client's connection closes, its pod
 * call is aborted, nothing stays counted, and `sluice serve` exits.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { assertNothingLeft, call, chat, model, type Stack, SUITE, startStack, waitFor } from "./helpers.js";
import { neverAnswer, type RawPod, startRawPod } from "./raw-pod.js";

describe("Gateway.drain past drain_timeout_s", SUITE, () => {
  let pod: RawPod;
  let stack: Stack;

  before(async () => {
    pod = await startRawPod(neverAnswer);
    stack = await startStack({
      sims: [],
      config: () => ({
        admission: { drain_timeout_s: 0.3 },
        models: [model("m", [pod.url], { upstream_timeout_s: 60 })],
      }),
    });
  });
  after(async () => {
    await stack.close();
    await pod.close();
  });

  test("cuts the call still running, aborts its pod call, and resolves with the number cut", async () => {
    const hung = chat(stack.url, "m", { content: "hang" }).catch((e: unknown) => e);
    await waitFor("the call to reach the pod", () => pod.calls.length === 1);
    const cut = await stack.gateway.drain();
    assert.equal(cut, 1);
    assert.ok((await hung) instanceof Error, "the client's connection was closed");
    await waitFor("the pod's call to be aborted", () => pod.aborted() === 1);
    await assertNothingLeft(stack);
    await assert.rejects(call(stack.url, "/healthz"), "the listener is closed after the drain");
  });
});

const root = fileURLToPath(new URL("../../", import.meta.url));

describe("sluice serve on SIGTERM with a call that never ends", SUITE, () => {
  let pod: RawPod;
  let dir: string;
  let child: ChildProcess | undefined;

  before(async () => {
    pod = await startRawPod(neverAnswer);
    dir = await mkdtemp(join(tmpdir(), "sluice-drain-deadline-"));
  });
  after(async () => {
    if (child && child.exitCode === null) child.kill("SIGKILL");
    await pod.close();
    await rm(dir, { recursive: true, force: true });
  });

  test("exits 0 once drain_timeout_s has passed, having cut the call", async () => {
    const configPath = join(dir, "sluice.yaml");
    await writeFile(
      configPath,
      [
        "log: { level: silent }",
        "admission: { drain_timeout_s: 0.3 }",
        "models:",
        "  - name: m",
        "    upstream_timeout_s: 60",
        "    adaptive: false",
        `    pods: [ { url: "${pod.url}", max_inflight: 2 } ]`,
        "",
      ].join("\n"),
    );
    const spawned = spawn(
      process.execPath,
      ["--import", "tsx", "src/cli/main.ts", "serve", "--config", configPath, "--port", "0"],
      { cwd: root, stdio: ["ignore", "ignore", "pipe"] },
    );
    child = spawned;
    let stderr = "";
    spawned.stderr!.setEncoding("utf8");
    spawned.stderr!.on("data", (chunk: string) => {
      stderr += chunk;
    });
    const exited = once(spawned, "exit");
    await waitFor(
      "sluice serve to listen",
      () => /listening on http/.test(stderr) || spawned.exitCode !== null,
      15_000,
    );
    const url = /listening on (http:\/\/\S+)/.exec(stderr)?.[1];
    assert.ok(url, `sluice serve did not start: ${stderr}`);

    const hung = chat(url, "m", { content: "hang" }).catch((e: unknown) => e);
    await waitFor("the call to reach the pod", () => pod.calls.length === 1);
    spawned.kill("SIGTERM");
    const [code] = await exited;
    assert.equal(code, 0, stderr);
    assert.match(stderr, /drain_timeout_s passed: cut 1 request/);
    assert.ok((await hung) instanceof Error, "the client's connection was closed");
    await waitFor("the pod's call to be aborted", () => pod.aborted() === 1);
  });
});
