/**
 * Optimized code thrown away by a full collection while nothing is in flight (issue 13):
 *
 *   node --import tsx bench/idle-deopt.ts
 *
 * One governor, warmed up with 200,000 calls (uncontended pairs, or tasks that queue at limit 64),
 * then idle — no lease alive — through a full `gc()`, then 10,000 more calls. A child process
 * runs that under `--trace-deopt` and this counts the functions V8 marks for deoptimization
 * because an object their code checks died ("weak objects"): each must be compiled again while
 * the next calls run slower. Prints one line per workload. Not part of `npm test` (it reads V8's
 * trace output, which is a diagnostic, not an interface).
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const CHILD = "--child";

if (process.argv[2] === CHILD) {
  const { Governor } = await import("../src/index.js");
  const gc = (globalThis as { gc?: () => void }).gc!;
  const queued = process.argv[3] === "queued";
  const gov = new Governor({ lanes: { l: { limit: 64, queueLimit: 200_000, queueTimeoutMs: 3_600_000 } } });
  const round = async (n: number): Promise<void> => {
    if (!queued) {
      for (let i = 0; i < n; i++) (await gov.acquire("l")).release();
      return;
    }
    let left = n;
    let done!: () => void;
    const all = new Promise<void>((resolve) => {
      done = resolve;
    });
    const task = async (): Promise<void> => {
      const lease = await gov.acquire("l");
      await null;
      lease.release();
      if (--left === 0) done();
    };
    for (let i = 0; i < n; i++) void task();
    await all;
  };
  for (let i = 0; i < 20; i++) await round(10_000);
  console.log("--- idle gc ---");
  gc();
  await round(10_000);
  gov.close();
} else {
  const script = fileURLToPath(import.meta.url);
  for (const workload of ["uncontended", "queued"]) {
    const out = execFileSync(
      process.execPath,
      ["--expose-gc", "--trace-deopt", "--import", "tsx", script, CHILD, workload],
      { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
    );
    const after = out.slice(out.indexOf("--- idle gc ---"));
    const marked = after.split("\n").filter((l) => l.includes("reason: weak objects")).length;
    console.log(`${workload}: ${marked} optimized functions thrown away after an idle full GC`);
  }
}
