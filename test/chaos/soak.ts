/**
 * `npm run soak -- --minutes N`: the chaos run for as long as asked, faults drawn at random from
 * the whole catalogue (with replacement), moderate traffic. Writes the receipt as JSON
 * (`receipts/soak-<seed>.json`, or --out FILE) and prints it as a table; exits 1 when a check
 * failed (a bound broken, a stuck waiter, a call run twice, a count left behind, RSS over its
 * limit), so it can gate a release. CHAOS_SEED (or --seed) replays a run's draws.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { parseArgs } from "node:util";
import { failures } from "./checks.js";
import { chaosSeed } from "./random.js";
import { receiptOf, receiptTable } from "./receipt.js";
import { runChaos } from "./session.js";

const USAGE = "usage: npm run soak -- [--minutes N] [--replicas 2|3] [--loops N] [--seed N] [--out FILE]";

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      minutes: { type: "string", default: "10" },
      replicas: { type: "string", default: "3" },
      loops: { type: "string", default: "10" },
      seed: { type: "string" },
      out: { type: "string" },
    },
    strict: true,
  });
  const minutes = Number(values.minutes);
  const replicas = Number(values.replicas);
  const loops = Number(values.loops);
  if (!(minutes > 0) || ![2, 3].includes(replicas) || !Number.isInteger(loops) || loops < 1) {
    process.stderr.write(`${USAGE}\n--minutes > 0, --replicas 2 or 3, --loops ≥ 1\n`);
    return 2;
  }
  if (values.seed !== undefined) process.env.CHAOS_SEED = values.seed;
  const seed = chaosSeed();
  const started = new Date();
  process.stderr.write(
    `soak: ${minutes} min, seed ${seed} (replay: CHAOS_SEED=${seed} npm run soak -- --minutes ${minutes})\n`,
  );
  const run = await runChaos({
    seed,
    replicas,
    schedule: "random",
    durationMs: minutes * 60_000,
    traffic: { loops, thinkMs: [50, 400], disconnectShare: 0.08, streamShare: 0.3 },
    gapMs: [1000, 6000],
    steadyMs: 15_000,
    rssEveryMs: 2000,
    log: (line) => process.stderr.write(`soak: ${line}\n`),
  });
  const receipt = receiptOf(run);
  const failed = failures(receipt);
  const out = values.out ?? `receipts/soak-${seed}.json`;
  await mkdir(dirname(out), { recursive: true });
  await writeFile(
    out,
    `${JSON.stringify({ command: `npm run soak -- ${process.argv.slice(2).join(" ")}`, started: started.toISOString(), ended: new Date().toISOString(), failed, ...receipt }, null, 2)}\n`,
  );
  process.stdout.write(`${receiptTable(receipt)}\n\nreceipt: ${out}\n`);
  process.stdout.write(
    failed.length === 0 ? "soak: every check held\n" : `soak: FAILED\n  ${failed.join("\n  ")}\n`,
  );
  return failed.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    process.stderr.write(`soak: ${(error as Error).stack ?? error}\n`);
    process.exit(1);
  },
);
