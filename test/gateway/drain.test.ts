/**
 * DESIGN §3.3: draining (SIGTERM) stops admitting — new calls get 503 `draining` — lets what
 * is in flight finish, and only then closes.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import {
  assertBadInput,
  assertNothingLeft,
  call,
  chat,
  model,
  type Stack,
  SUITE,
  startStack,
  waitFor,
} from "./helpers.js";
import { answerOk, type RawPod, startRawPod } from "./raw-pod.js";

/**
 * A pod that holds each call until `release()`, then answers it 200: the call in flight stays in
 * flight while the test checks what the drain refuses, however slow the machine (with a 300 ms
 * service, the late call and /readyz had to be answered within 300 ms of the slow call's start).
 */
async function heldPod(): Promise<{ pod: RawPod; answered(): number; release(): void }> {
  let released = false;
  let answered = 0;
  const held: (() => void)[] = [];
  const pod = await startRawPod((req, res, call) => {
    const answer = () => {
      answerOk(req, res, call);
      answered++;
    };
    if (released) answer();
    else held.push(answer);
  });
  return {
    pod,
    answered: () => answered,
    release() {
      released = true;
      for (const answer of held.splice(0)) answer();
    },
  };
}

describe("drain", SUITE, () => {
  let stack: Stack;
  let held: Awaited<ReturnType<typeof heldPod>>;

  before(async () => {
    held = await heldPod();
    stack = await startStack({
      sims: [],
      config: () => ({ models: [model("m", [held.pod.url], {}, 2)] }),
    });
  });
  after(async () => {
    held.release();
    await stack.close();
    await held.pod.close();
  });

  test("refuses new calls with 503 draining, finishes the one in flight, then resolves", async () => {
    const order: string[] = [];
    const slow = chat(stack.url, "m", { content: "slow" });
    await waitFor("the slow call to reach the pod", () => held.pod.calls.length === 1);
    // When the drain resolves, the call in flight has finished upstream and been released.
    // (Whether our client has read its last byte by then is the client's scheduling, not sluice's.)
    const drained = stack.gateway.drain().then(() => {
      const lane = stack.gateway.governor.snapshot().lanes[0]!;
      order.push(`drained: ${held.answered()} answered, ${lane.inflight} in flight`);
    });

    const refused = await chat(stack.url, "m", { content: "late" });
    assertBadInput(refused, 503, "draining");
    assert.ok(Number(refused.headers["retry-after"]) >= 1);
    const ready = await call(stack.url, "/readyz");
    assert.equal(ready.status, 503);
    assert.equal(JSON.parse(ready.text).draining, true);
    order.push("late refused");

    held.release();
    const answer = await slow;
    assert.equal(answer.status, 200);
    assert.equal(JSON.parse(answer.text).object, "chat.completion");
    await drained;
    assert.deepEqual(order, ["late refused", "drained: 1 answered, 0 in flight"]);
    assert.equal(held.pod.calls.length, 1, "the refused call never reached the pod");
    await assertNothingLeft(stack);
    await assert.rejects(call(stack.url, "/healthz"), "the listener is closed after the drain");
  });
});

const root = fileURLToPath(new URL("../../", import.meta.url));

/** Spawns `sluice serve` through tsx and resolves with its URL once it listens. */
async function serve(
  configPath: string,
): Promise<{ child: ChildProcess; url: string; stderr: () => string }> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "src/cli/main.ts", "serve", "--config", configPath, "--port", "0"],
    { cwd: root, stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (chunk: string) => {
    stderr += chunk;
  });
  await waitFor(
    "sluice serve to listen",
    () => /listening on (http:\/\/\S+)/.test(stderr) || child.exitCode !== null,
    15_000,
  );
  const url = /listening on (http:\/\/\S+)/.exec(stderr)?.[1];
  assert.ok(url, `sluice serve did not start: ${stderr}`);
  return { child, url, stderr: () => stderr };
}

describe("sluice serve on SIGTERM", SUITE, () => {
  let held: Awaited<ReturnType<typeof heldPod>>;
  let dir: string;
  let child: ChildProcess | undefined;

  before(async () => {
    // Held until the late call is refused: with a 400 ms service, the child had to log the drain
    // and answer the late call within 400 ms of the slow call's start.
    held = await heldPod();
    dir = await mkdtemp(join(tmpdir(), "sluice-drain-"));
  });
  after(async () => {
    if (child && child.exitCode === null) child.kill("SIGKILL");
    held.release();
    await held.pod.close();
    await rm(dir, { recursive: true, force: true });
  });

  test("drains: refuses the next call, finishes the running one, exits 0", async () => {
    const configPath = join(dir, "sluice.yaml");
    await writeFile(
      configPath,
      [
        "log: { level: silent }",
        "models:",
        "  - name: m",
        "    max_concurrent_requests: 2",
        "    reserve: 0",
        "    adaptive: false",
        `    pods: [ { url: "${held.pod.url}", max_inflight: 2 } ]`,
        "",
      ].join("\n"),
    );
    const served = await serve(configPath);
    child = served.child;
    const exited = once(child, "exit");

    const slow = chat(served.url, "m", { content: "slow" });
    await waitFor("the slow call to reach the pod", () => held.pod.calls.length === 1);
    child.kill("SIGTERM");
    await waitFor("the drain to start", () => served.stderr().includes("SIGTERM: draining"));
    const late = await chat(served.url, "m", { content: "late" });
    assertBadInput(late, 503, "draining");
    held.release();
    assert.equal((await slow).status, 200);
    const [code] = await exited;
    assert.equal(code, 0, served.stderr());
    assert.deepEqual([held.pod.calls.length, held.answered(), held.pod.aborted()], [1, 1, 0]);
  });
});
