/**
 * `sluice serve` and the config: a missing upstream key refuses to start (naming the model and the
 * variable), and the config's warnings are printed at start. Run as the real command, in a child
 * process, because both are about what the operator sees.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

const MAIN = new URL("../../src/cli/main.ts", import.meta.url).pathname;
let dir: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "sluice-serve-"));
});
after(async () => {
  await rm(dir, { recursive: true });
});

async function serve(yaml: string, env: Record<string, string> = {}): Promise<ChildProcess> {
  const file = join(dir, `${Math.random().toString(36).slice(2)}.yaml`);
  await writeFile(file, yaml);
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  delete childEnv.SLUICE_TEST_UPSTREAM_KEY;
  Object.assign(childEnv, env);
  return spawn(process.execPath, ["--import", "tsx", MAIN, "serve", "--config", file, "--port", "0"], {
    env: childEnv,
    stdio: ["ignore", "ignore", "pipe"],
  });
}

/** Collects stderr until `done(text)` says enough, or the process exits. */
async function stderrUntil(child: ChildProcess, done: (text: string) => boolean): Promise<string> {
  let text = "";
  const exited = once(child, "exit");
  await new Promise<void>((resolve) => {
    child.stderr!.on("data", (chunk: Buffer) => {
      text += chunk.toString();
      if (done(text)) resolve();
    });
    void exited.then(() => resolve());
  });
  return text;
}

const MODEL = `models:
  - name: chat
    max_concurrent_requests: 32
    queue_limit: 128
    upstream_api_key_env: SLUICE_TEST_UPSTREAM_KEY
    pods: [ { url: "http://127.0.0.1:9" } ]
`;

describe("sluice serve --config", () => {
  test("refuses to start when a model's upstream_api_key_env is not set, naming the model and the variable", async () => {
    const child = await serve(MODEL);
    const [text, [code]] = await Promise.all([stderrUntil(child, () => false), once(child, "exit")]);
    assert.equal(code, 2);
    assert.match(
      text,
      /models\[0\]\.upstream_api_key_env: .*model chat sends its upstream key from SLUICE_TEST_UPSTREAM_KEY, which is not set/,
    );
  });

  test("prints the config's warnings at start", async () => {
    const child = await serve(MODEL, { SLUICE_TEST_UPSTREAM_KEY: "sk-test" });
    try {
      const text = await stderrUntil(child, (t) => /warning:.*\n/.test(t));
      assert.match(text, /warning:\s+models\[0\]\.queue_limit: a queue of 128 can never fill/);
    } finally {
      child.kill("SIGTERM");
      await once(child, "exit");
    }
  });
});
