/**
 * Seed 000's out-of-memory events were "concurrent requests times upload size". The aggregate
 * bound `admission.max_buffered_bytes` is what stops that product in sluice (issue 25 item 2),
 * tested at the process: a real `sluice serve`, N uploads of `max_body_bytes` each held open at
 * once on raw sockets, so every byte the gateway buffers is buffered at the same moment. Past the
 * bound the uploads are refused 413 naming it; the gateway's RSS grows by no more than the bound
 * allows; the pod runs exactly the calls that were accepted, each once.
 */
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { type SimServer, startSim } from "../../src/sim/server.js";
import { startServe } from "../helpers/index.js";
import { delay, waitFor } from "./helpers.js";

const MIB = 1024 * 1024;
const BODY = 8 * MIB;
const BUFFERED = 32 * MIB;
const UPLOADS = 16;

/** Resident memory of a process, from /proc (bytes). */
function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(m![1]) * 1024;
}

/** A chat body of exactly `size` bytes (the padding is the message). */
function bodyOf(size: number, i: number): Buffer {
  const head = `{"model":"m","messages":[{"role":"user","content":"upload ${i} `;
  const tail = `"}]}`;
  return Buffer.concat([
    Buffer.from(head),
    Buffer.alloc(size - head.length - tail.length, "a"),
    Buffer.from(tail),
  ]);
}

interface Upload {
  socket: Socket;
  answer: string;
  closed: boolean;
}

/** Sends the head and all of the body but its last byte; the answer (if any) is collected. */
function startUpload(port: number, body: Buffer): Promise<Upload> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    const up: Upload = { socket, answer: "", closed: false };
    socket.on("data", (b: Buffer) => {
      up.answer += b.toString("latin1");
    });
    socket.on("close", () => {
      up.closed = true;
    });
    socket.on("error", () => {});
    socket.once("connect", () => {
      socket.write(
        `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`,
      );
      socket.write(body.subarray(0, body.length - 1), () => resolve(up));
    });
    socket.once("error", reject);
  });
}

describe("max_buffered_bytes at the process", { timeout: 90_000 }, () => {
  let dir: string;
  let sim: SimServer;
  let gateway: ChildProcess;
  let port: number;

  before(async () => {
    sim = await startSim({ maxNumSeqs: UPLOADS, serviceMs: 1, tokensPerSecond: 0, jitterSigma: 0 });
    dir = await mkdtemp(join(tmpdir(), "sluice-buffered-"));
    const file = join(dir, "sluice.yaml");
    await writeFile(
      file,
      [
        "listen: 127.0.0.1:0",
        `admission: { max_concurrency: ${UPLOADS}, max_queued: ${UPLOADS}, max_body_bytes: ${BODY}, max_buffered_bytes: ${BUFFERED}, body_timeout_s: 60 }`,
        "log: { level: warn }",
        "models:",
        `  - { name: m, max_concurrent_requests: ${UPLOADS}, queue_limit: ${UPLOADS}, adaptive: false, pods: [ { url: "${sim.url}", max_inflight: ${UPLOADS} } ] }`,
        "",
      ].join("\n"),
    );
    const serve = await startServe(file);
    gateway = serve.child;
    const url = serve.url;
    port = Number(new URL(url).port);
  });

  after(async () => {
    gateway?.kill("SIGKILL");
    await sim?.close();
    await rm(dir, { recursive: true, force: true });
  });

  test(`${UPLOADS} uploads of ${BODY / MIB} MiB at once: past ${BUFFERED / MIB} MiB buffered they are refused 413, and RSS stays bounded`, async (t) => {
    // Warm the process (tokenizer-free lane, but the first request pays for lazy module loads).
    const warm = await startUpload(port, bodyOf(1024, -1));
    warm.socket.write(bodyOf(1024, -1).subarray(1023));
    await waitFor(
      "the warm-up answer",
      () => warm.answer.includes("\r\n\r\n") && warm.answer.includes("}"),
      20_000,
    );
    warm.socket.destroy();
    await delay(200);
    const before = rssOf(gateway.pid!);

    const bodies = Array.from({ length: UPLOADS }, (_, i) => bodyOf(BODY, i));
    // One at a time, each all but its last byte: the gateway holds every accepted one at once,
    // and a refused one's bytes are dropped as they arrive.
    const uploads: Upload[] = [];
    for (const body of bodies) uploads.push(await startUpload(port, body));
    // The most the gateway's memory reached while all ten were being sent (sampled, it has the bytes).
    let peak = rssOf(gateway.pid!);
    for (let i = 0; i < 10; i++) {
      await delay(50);
      peak = Math.max(peak, rssOf(gateway.pid!));
    }
    // Each finishes its upload: the accepted ones are answered by the pod, the refused 413.
    for (const [i, u] of uploads.entries()) u.socket.write(bodies[i]!.subarray(BODY - 1));
    await waitFor(
      "every upload answered",
      () => uploads.every((u) => /^HTTP\/1\.1 \d{3}[\s\S]*\}$/.test(u.answer)),
      30_000,
    ).catch((error: Error) => {
      const seen = uploads.map((u) => `${u.answer.slice(0, 12) || "-"}${u.closed ? " closed" : ""}`);
      throw new Error(`${error.message}: ${seen.join(" | ")}`);
    });
    const refused = uploads.filter((u) => u.answer.startsWith("HTTP/1.1 413"));
    const accepted = uploads.filter((u) => u.answer.startsWith("HTTP/1.1 200"));
    assert.equal(accepted.length + refused.length, UPLOADS, "each upload answered 200 or 413");
    assert.equal(
      accepted.length,
      BUFFERED / BODY,
      `${accepted.length} uploads held at once within ${BUFFERED} bytes`,
    );
    for (const r of refused) {
      assert.match(r.answer, /"code":"body_too_large"/);
      assert.match(r.answer, new RegExp(`buffering its maximum of ${BUFFERED} bytes`));
    }
    // The bodies held (32 MiB), the chunks being dropped and the process's own churn (a loaded
    // machine's GC runs late: 20-71 MiB seen with both cores busy); without the bound it would be sixteen bodies, 128 MiB
    // and more.
    const grown = peak - before;
    t.diagnostic(
      `RSS ${(before / MIB).toFixed(1)} -> ${(peak / MIB).toFixed(1)} MiB with ${accepted.length} bodies held`,
    );
    assert.ok(
      grown < 3 * BUFFERED,
      `RSS grew ${(grown / MIB).toFixed(1)} MiB holding ${BUFFERED / MIB} MiB of bodies`,
    );
    assert.equal(
      sim.stats().completed,
      1 + accepted.length,
      "the pod ran the warm-up and each accepted upload once",
    );
    for (const u of uploads) u.socket.destroy();
  });

  test("an upload is charged its declared length from its first byte: four slow uploads of 8 MiB that sent 1 byte fill the bound", async () => {
    // The gateway holds a declared body in one buffer of its length from the start (read-body.ts),
    // so the bound must count it from the start: else slow uploads could hold any number of them.
    const slow: Upload[] = [];
    for (let i = 0; i < BUFFERED / BODY; i++) {
      const body = bodyOf(BODY, 100 + i);
      const socket = connect(port, "127.0.0.1");
      await new Promise<void>((resolve) => socket.once("connect", resolve));
      socket.on("error", () => {});
      socket.write(
        `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n{`,
      );
      slow.push({ socket, answer: "", closed: false });
    }
    await delay(300); // the gateway has read each head and its first byte
    const small = bodyOf(1024, 200);
    const refused = await startUpload(port, small);
    refused.socket.write(small.subarray(1023));
    await waitFor("the small upload's answer", () => refused.answer.endsWith("}"), 20_000);
    assert.match(refused.answer, /^HTTP\/1\.1 413/);
    assert.match(refused.answer, new RegExp(`buffering its maximum of ${BUFFERED} bytes`));
    refused.socket.destroy();
    const served = sim.stats().completed;
    // The slow uploads go away: their charge is given back, and the same small upload passes.
    for (const u of slow) u.socket.destroy();
    await delay(300);
    const passed = await startUpload(port, small);
    passed.socket.write(small.subarray(1023));
    await waitFor("the second small upload's answer", () => passed.answer.endsWith("}"), 20_000);
    assert.match(passed.answer, /^HTTP\/1\.1 200/);
    passed.socket.destroy();
    assert.equal(sim.stats().completed, served + 1, "the pod ran only the upload that passed");
  });
});
