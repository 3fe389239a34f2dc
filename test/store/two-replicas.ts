/**
 * Two real `sluice serve` replicas on the machine's Redis in front of one simulated pod, for the
 * tests that pause one of them (`fleet-pause*.test.ts`): the config both read (one model `m` of a
 * given limit, a 1 s lease, two expected replicas), the two processes, a chat call, and a wait on
 * the pod's running count. Everything is stopped by `close()`, a paused replica resumed first.
 */
import type { ChildProcess } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import type { SimServer } from "../../src/sim/server.js";
import { chatBody, startServe, waitFor } from "../helpers/index.js";
import { REDIS_URL, uniquePrefix } from "./redis-helpers.js";

export interface Replica {
  child: ChildProcess;
  url: string;
}

export interface TwoReplicas {
  a: Replica;
  b: Replica;
  /** Waits until `ok()` (test/helpers's `waitFor`); fails naming `what` and the pod's running count. */
  until(what: string, ok: () => boolean, ms?: number): Promise<void>;
  close(): Promise<void>;
}

/** Starts the two replicas in front of `sim`; `modelLines` are the model's keys beyond its name and limit. */
export async function twoReplicas(sim: SimServer, limit: number, modelLines: string[]): Promise<TwoReplicas> {
  const dir = await mkdtemp(join(tmpdir(), "sluice-pause-"));
  const file = join(dir, "sluice.yaml");
  await writeFile(
    file,
    [
      `store: ${REDIS_URL}`,
      `fleet: { prefix: "${uniquePrefix()}", lease_ttl_s: 1, expected_replicas: 2 }`,
      "admission: { max_concurrency: 64 }",
      "models:",
      "  - name: m",
      `    max_concurrent_requests: ${limit}`,
      "    reserve: 0",
      "    queue_limit: 64",
      "    queue_timeout_s: 60",
      ...modelLines.map((line) => `    ${line}`),
      "",
    ].join("\n"),
  );
  const [a, b] = await Promise.all([startServe(file, "--port", "0"), startServe(file, "--port", "0")]);
  const running = () => sim.stats().running;
  return {
    a,
    b,
    async until(what, ok, ms = 20_000) {
      await waitFor(what, ok, ms).catch((e: Error) => {
        throw new Error(`${e.message} (pod running ${running()})`);
      });
    },
    async close() {
      a.child.kill("SIGCONT");
      for (const r of [a, b]) r.child.kill("SIGKILL");
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** One chat call to `url` (`max_tokens` sets its length on a sim with `msPerOutputToken`); its status. */
export async function chat(url: string, i: number, maxTokens?: number): Promise<number> {
  const res = await request(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: chatBody("m", `call ${i}`, maxTokens === undefined ? {} : { max_tokens: maxTokens }),
  });
  await res.body.text();
  return res.statusCode;
}
