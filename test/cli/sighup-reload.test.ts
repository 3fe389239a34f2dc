/**
 * `sluice serve --config FILE` on SIGHUP (issue 8 item 11): it reloads FILE in place. Before,
 * SIGHUP killed the gateway (Node's default: exit 129). A valid file's new models serve at once;
 * an invalid one, or one changing `listen`, keeps the running config and says why on stderr,
 * naming the key; the process keeps serving through all of it and drains on SIGTERM as before.
 * Run as the real command in a child process, since signals and stderr are what is under test.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { request } from "undici";
import { type SimServer, startSim } from "../../src/sim/server.js";
import { chatBody } from "../helpers/index.js";

const MAIN = new URL("../../src/cli/main.ts", import.meta.url).pathname;

/** A config with one model per name, each on `pod`. */
function yaml(pod: string, names: string[], extra = ""): string {
  const models = names
    .map(
      (n) =>
        `  - name: ${n}\n    max_concurrent_requests: 2\n    pods: [ { url: "${pod}", max_inflight: 2 } ]\n`,
    )
    .join("");
  return `${extra}models:\n${models}`;
}

describe("sluice serve: SIGHUP reloads the config file", { timeout: 30_000 }, () => {
  let dir: string;
  let file: string;
  let sim: SimServer;
  let child: ChildProcess;
  let stderr = "";
  let url: string;
  let exited: Promise<[number | null, NodeJS.Signals | null]>;

  /** Resolves once stderr (from `from` on) matches `pattern`; rejects if the process exits first. */
  async function stderrMatches(pattern: RegExp, from: number): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      const check = () => {
        const text = stderr.slice(from);
        if (pattern.test(text)) {
          child.stderr!.off("data", check);
          resolve(text);
        }
      };
      child.stderr!.on("data", check);
      void exited.then(([code, signal]) =>
        reject(
          new Error(`sluice exited (code ${code}, signal ${signal}) before ${pattern}; stderr:\n${stderr}`),
        ),
      );
      check();
    });
  }

  /** Rewrites the file, sends SIGHUP, and returns what stderr said about it. */
  async function hup(content: string, expect: RegExp): Promise<string> {
    await writeFile(file, content);
    const from = stderr.length;
    child.kill("SIGHUP");
    return stderrMatches(expect, from);
  }

  async function chat(model: string): Promise<number> {
    const res = await request(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: chatBody(model, "hi"),
    });
    await res.body.text();
    return res.statusCode;
  }

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "sluice-reload-"));
    file = join(dir, "sluice.yaml");
    sim = await startSim({ serviceMs: 1, jitterSigma: 0, tokensPerSecond: 0 });
    await writeFile(file, yaml(sim.url, ["first"]));
    child = spawn(process.execPath, ["--import", "tsx", MAIN, "serve", "--config", file, "--port", "0"], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    exited = once(child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (chunk: string) => {
      stderr += chunk;
    });
    const text = await stderrMatches(/listening on (http:\/\/\S+)/, 0);
    url = /listening on (http:\/\/\S+)/.exec(text)![1]!;
  });
  after(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await sim.close();
    await rm(dir, { recursive: true });
  });

  test("the banner names the gateway's own pid and the reload command (npx and npm start run it under npm's pid)", () => {
    assert.match(
      stderr,
      new RegExp(`^  pid: +${child.pid}  \\(reload the config: kill -HUP ${child.pid}\\)$`, "m"),
    );
  });

  test("an invalid file keeps the running config and says why, naming the key", async () => {
    assert.equal(await chat("first"), 200);
    const said = await hup(
      yaml(sim.url, ["first"]).replace("max_inflight: 2", "max_inflight: -1"),
      /not reloaded/,
    );
    assert.match(said, /models\[0\]\.pods\[0\]\.max_inflight: expected an integer ≥ 1, got -1/);
    assert.match(said, /the running config is unchanged/);
    assert.equal(await chat("first"), 200, "still serving the old config");
  });

  test("a valid file applies at once: a new model serves and /v1/models lists it", async () => {
    await hup(yaml(sim.url, ["first", "second"]), /reloaded .*\(models: first, second\)/);
    assert.equal(await chat("second"), 200);
    const res = await request(`${url}/v1/models`);
    const ids = ((await res.body.json()) as { data: { id: string }[] }).data.map((m) => m.id);
    assert.deepEqual(ids, ["first", "second"]);
  });

  test("a change of listen is refused as needing a restart", async () => {
    const said = await hup(yaml(sim.url, ["first"], 'listen: "127.0.0.1:1"\n'), /not reloaded/);
    assert.match(said, /listen: .*only with a restart/);
    assert.equal(await chat("second"), 200, "the last good config is still in force");
  });

  test("SIGTERM still drains and exits 0", async () => {
    child.kill("SIGTERM");
    const [code] = await exited;
    assert.equal(code, 0);
  });
});
