/**
 * `npm run bench:gateway`: sluice's gateway against HAProxy and a bare undici proxy (the Node
 * floor), with the simulator direct as the baseline. Loopback only, bounded in time (~3 min);
 * stops by itself. See docs/bench-gateway.md for what is measured and the last results.
 *
 * Processes (the machine may have few cores; they all share it):
 *   this one      the simulated pods (src/sim) and the meters of their stats
 *   loadgen.ts    the closed-loop Node load generator (undici), one process for every run
 *   wrk           the load generator of (a) when installed (a Node client would be the bottleneck)
 *   sluice        the built CLI (`sluice serve --config FILE`), log level warn; serve.ts with --src
 *   haproxy       when installed
 *   bare-proxy.ts node:http + one undici Pool per pod, round-robin
 *
 * sluice runs as the built CLI: src/ is compiled by tsc (as `npm run build` does) into
 * .bench/gateway-dist (gitignored; the shared dist/ is not touched) and started as
 * `node .bench/gateway-dist/cli/main.js serve --config FILE`. `--src` runs src through tsx
 * (serve.ts) instead.
 *
 *   (d) the retry storm: its own sluice (log level info, its lines to a file), HAProxy (one
 *                 thread, a 429 rule past the queue) and bare proxy (a counter bound), and
 *                 two more pods that hold every call (the "refusals alone" run); then the
 *                 same storm sent by wrk (wrk-storm.ts: its own pods, sluice and HAProxy)
 *
 * Flags: --quick (short runs), --only=a,b,c,d,e, --targets=direct,sluice,haproxy,bare,lean,
 * --loads=2,10 ((c) multiples), --storm-loads=8,16 ((d) multiples), --storm-log=info (sluice's
 * log level in (d)), --lean (add the bare proxy on undici's handler API, see
 * bare-proxy.ts), --profile (sluice under --cpu-prof; summary printed), --node-loadgen (never
 * wrk), --no-doc (do not rewrite docs/bench-gateway.md; only a full default run rewrites it).
 */
import { type ChildProcess, execFileSync, execSync, fork, spawn } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { availableParallelism, cpus, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type SimServer, startSim } from "../../src/sim/server.js";
import { type Haproxy, runWrk, startHaproxy, which } from "./external.js";
import { PodMeter } from "./pod-meter.js";
import { cliReady, cpuSeconds, stopChild } from "./processes.js";
import { isSluiceProfile, summarizeProfile } from "./profile.js";
import type {
  BareListener,
  LoadgenMessage,
  ReadyMessage,
  RunResult,
  RunSpec,
  StormMessage,
  StormResult,
  StormSpec,
} from "./protocol.js";
import { rateCpuSection } from "./rate-cpu.js";
import { type Row, renderReport, writeDoc } from "./report.js";
import { renderStorm, type StormRow } from "./report-storm.js";
import { tpmCpuSection } from "./tpm-cpu.js";
import { wrkStormSection } from "./wrk-storm.js";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const args = new Set(process.argv.slice(2));
if (args.has("--help") || args.has("-h")) {
  console.log(`npm run bench:gateway -- [flags]   (docs/bench-gateway.md)

  --only=a,b,c,d,e      scenarios: (a) zero service time, (b) streamed, (c) overload, (d) retry storm,
                        (e) a tpm lane's CPU per answer vs without, and the tokenizer per KB
  --targets=LIST        direct,sluice,unpaced,haproxy,bare,lean (default: all that apply)
  --loads=2,10          (c) load multiples of capacity
  --storm-loads=8,16    (d) storm connections as multiples of the 16 slots
  --storm-log=LEVEL     sluice's log level in (d) (default info)
  --quick               2 s runs; the doc is not rewritten
  --profile             sluice under node --cpu-prof, a summary printed
  --lean                add the bare proxy on undici's handler API
  --node-loadgen        never wrk (and no wrk-driven (d) row)
  --no-wrk              no wrk-driven (d) row
  --src                 sluice from src through tsx instead of the built CLI
  --no-doc              do not rewrite docs/bench-gateway.md (only a full default run does)`);
  process.exit(0);
}
const only = [...args]
  .find((a) => a.startsWith("--only="))
  ?.slice(7)
  .split(",") ?? ["a", "b", "c", "d", "e"];
const QUICK = args.has("--quick");
const onlyTargets = [...args]
  .find((a) => a.startsWith("--targets="))
  ?.slice(10)
  .split(",");
const PROFILE = args.has("--profile");
const LEAN = args.has("--lean");
const loadsArg = [...args].find((a) => a.startsWith("--loads="))?.slice(8);
const stormLoadsArg = [...args].find((a) => a.startsWith("--storm-loads="))?.slice(14);
const STORM_LOG = [...args].find((a) => a.startsWith("--storm-log="))?.slice(12) ?? "info";

// ---- the fleet and the limits every proxy enforces -------------------------------------------
/** (a)/(b) pods: wide enough that no proxy queues at 64 connections. */
const AB_SLOTS = 32;
/** (c) pods: 2 × 8 = 16 slots; capacity = 16 / service time. */
const C_SLOTS = 8;
const SERVICE_MS = 50;
/**
 * σ of the pods' lognormal service-time jitter in (b) and (c): small, so a p99 difference is the
 * proxy's and not the draw's, but enough to keep closed-loop clients from locking into waves.
 */
const JITTER = 0.05;
const QUEUE_TIMEOUT_MS = 2000;
const C_QUEUE_LIMIT = 16;
const BACKOFF_MS = 50;
const WARM_MS = QUICK ? 500 : 1000;
const A_MS = QUICK ? 2000 : 5000;
const B_MS = QUICK ? 2000 : 4000;
const C_MS = QUICK ? 2000 : 5000;
const A_CONNS = [1, 16];
const B_CONNS = [8, 32, 64];
const C_LOADS = loadsArg ? loadsArg.split(",").map(Number) : [2, 10];
const PATH = "/v1/chat/completions";
/** (d) the retry storm: the same 16 slots, a queue of 128, refusals re-sent at once. */
const D_QUEUE_LIMIT = 128;
const D_LOADS = stormLoadsArg ? stormLoadsArg.split(",").map(Number) : [8, 16];
/** Connections that honour Retry-After, beside the storm: whose refusals must still come at once. */
const D_POLITE = 16;
/** What a polite connection waits when a refusal has no Retry-After (HAProxy, the bare proxy). */
const D_POLITE_DEFAULT_MS = 1000;
const D_MS = QUICK ? 2000 : 5000;
/** "Refusals alone": pods whose calls outlast the run, so every slot and the queue stay full. */
const HOLD_SERVICE_MS = 60_000;
const HOLD_CONNS = 256;

const body = (model: string, stream: boolean) =>
  JSON.stringify({
    model,
    messages: [{ role: "user", content: "Say hello to the benchmark." }],
    max_tokens: 4,
    ...(stream ? { stream: true } : {}),
  });

function sluiceConfig(ab: SimServer[], c: SimServer[]): string {
  const pods = (list: SimServer[], n: number) =>
    list.map((p) => `      - { url: "${p.url}", max_inflight: ${n} }`).join("\n");
  return `# generated by bench/gateway/main.ts
listen: 127.0.0.1:0
log: { level: warn }
admission: { max_concurrency: 96, max_queued: 96, queue_timeout_s: 2 }
models:
  - name: bench
    max_concurrent_requests: ${AB_SLOTS * ab.length}
    reserve: 0
    queue_limit: ${AB_SLOTS * ab.length}
    queue_timeout_s: 2
    pods:
${pods(ab, AB_SLOTS)}
  - name: bench-c
    max_concurrent_requests: ${C_SLOTS * c.length}
    reserve: 0
    queue_limit: ${C_QUEUE_LIMIT}
    queue_timeout_s: 2
    pods:
${pods(c, C_SLOTS)}
`;
}

/**
 * sluice for the retry storm, in its own process: lane `bench-d` on the (c) pods (16 slots,
 * queue 128) and lane `bench-hold` on pods that never finish a call in time. Log level info (the
 * default; `--storm-log` changes it): what an operator runs.
 */
function stormConfig(c: SimServer[], hold: SimServer[]): string {
  const pods = (list: SimServer[]) =>
    list.map((p) => `      - { url: "${p.url}", max_inflight: ${C_SLOTS} }`).join("\n");
  const lane = (name: string, list: SimServer[]) => `  - name: ${name}
    max_concurrent_requests: ${C_SLOTS * list.length}
    reserve: 0
    queue_limit: ${D_QUEUE_LIMIT}
    queue_timeout_s: ${QUEUE_TIMEOUT_MS / 1000}
    pods:
${pods(list)}`;
  return `# generated by bench/gateway/main.ts (retry storm)
listen: 127.0.0.1:0
log: { level: ${STORM_LOG} }
admission: { max_concurrency: 512, max_queued: 512, queue_timeout_s: ${QUEUE_TIMEOUT_MS / 1000} }
models:
${lane("bench-d", c)}
${lane("bench-hold", hold)}
`;
}

// ---- processes -------------------------------------------------------------------------------
interface Target {
  name: Row["target"];
  /** Origins for the (a)/(b) lane and for the (c) lane. */
  ab: string[];
  c: string[];
  /** The proxy's pid, for its CPU time; undefined for direct. */
  pid: number | undefined;
}

function forkTs(file: string, argv: string[], execArgv: string[] = []): ChildProcess {
  return fork(join(here, file), argv, {
    execArgv: ["--import", "tsx", ...execArgv],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
    cwd: root,
  });
}

function ready(child: ChildProcess, what: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${what} did not start in 20 s`)), 20_000);
    child.once("message", (m: ReadyMessage) => {
      clearTimeout(t);
      resolve(m.urls);
    });
    child.once("exit", (code) => reject(new Error(`${what} exited (${code}) before it was ready`)));
  });
}

/** Where the bench compiles src/ (gitignored; the shared dist/ is left alone). */
const BUILD_DIR = join(root, ".bench", "gateway-dist");
const CLI = join(BUILD_DIR, "cli", "main.js");

/**
 * Compiles src/ as `npm run build` does, into BUILD_DIR, so sluice runs as the built CLI of the
 * current source. tsc emits even with type errors; false only when the CLI was not produced.
 */
function buildCli(): boolean {
  rmSync(BUILD_DIR, { recursive: true, force: true });
  try {
    execFileSync(
      process.execPath,
      [
        join(root, "node_modules", "typescript", "bin", "tsc"),
        "-p",
        "tsconfig.build.json",
        "--outDir",
        BUILD_DIR,
        "--declaration",
        "false",
        "--sourceMap",
        "false",
      ],
      { cwd: root, stdio: "pipe" },
    );
  } catch {
    // type errors still emit; the check below decides
  }
  return existsSync(CLI);
}

/** One Node-loadgen run against `target`, with the proxy's and client's CPU and the pods metered in its window. */
function loadgenRun(
  loadgen: ChildProcess,
  spec: RunSpec,
  pid: number | undefined,
  meter: PodMeter,
): Promise<{ result: RunResult; cpu: number; clientCpu: number; pods: ReturnType<PodMeter["stop"]> }> {
  return new Promise((resolve, reject) => {
    let cpu0 = Number.NaN;
    let cpu = Number.NaN;
    let client0 = Number.NaN;
    let clientCpu = Number.NaN;
    let pods: ReturnType<PodMeter["stop"]> | undefined;
    const onMessage = (m: LoadgenMessage) => {
      if (m.type === "window" && m.phase === "start") {
        cpu0 = cpuSeconds(pid);
        client0 = cpuSeconds(loadgen.pid);
        meter.start();
      } else if (m.type === "window" && m.phase === "end") {
        cpu = cpuSeconds(pid) - cpu0;
        clientCpu = cpuSeconds(loadgen.pid) - client0;
        pods = meter.stop();
      } else if (m.type === "result") {
        loadgen.off("message", onMessage);
        pods ??= meter.stop();
        resolve({ result: m.result, cpu, clientCpu, pods });
      } else if (m.type === "error") {
        loadgen.off("message", onMessage);
        meter.stop();
        reject(new Error(m.message));
      }
    };
    loadgen.on("message", onMessage);
    loadgen.send({ type: "run", spec });
  });
}

/** One retry-storm run (storm.ts in the load generator), metered like {@link loadgenRun}. */
function stormRun(
  loadgen: ChildProcess,
  spec: StormSpec,
  pid: number | undefined,
  meter: PodMeter,
  logFile: string | undefined,
): Promise<{
  result: StormResult;
  cpu: number;
  clientCpu: number;
  pods: ReturnType<PodMeter["stop"]>;
  logLines: number;
  pacedAfterMs: number | undefined;
}> {
  const sentAt = Date.now();
  const logStart = logFile === undefined ? 0 : statSync(logFile).size;
  return new Promise((resolve, reject) => {
    let cpu0 = Number.NaN;
    let cpu = Number.NaN;
    let client0 = Number.NaN;
    let clientCpu = Number.NaN;
    let log0 = 0;
    let logLines = Number.NaN;
    let pods: ReturnType<PodMeter["stop"]> | undefined;
    const onMessage = (m: LoadgenMessage | StormMessage) => {
      if (m.type === "window" && m.phase === "start") {
        cpu0 = cpuSeconds(pid);
        client0 = cpuSeconds(loadgen.pid);
        if (logFile !== undefined) log0 = statSync(logFile).size;
        meter.start();
      } else if (m.type === "window" && m.phase === "end") {
        cpu = cpuSeconds(pid) - cpu0;
        clientCpu = cpuSeconds(loadgen.pid) - client0;
        pods = meter.stop();
        if (logFile !== undefined) logLines = linesSince(logFile, log0);
      } else if (m.type === "storm-result") {
        loadgen.off("message", onMessage);
        pods ??= meter.stop();
        const pacedAfterMs = logFile === undefined ? Number.NaN : pacedAfter(logFile, logStart, sentAt);
        resolve({ result: m.result, cpu, clientCpu, pods, logLines, pacedAfterMs });
      } else if (m.type === "error") {
        loadgen.off("message", onMessage);
        meter.stop();
        reject(new Error(m.message));
      }
    };
    loadgen.on("message", onMessage);
    loadgen.send({ type: "storm", storm: spec });
  });
}

/**
 * ms from `sentAt` (epoch ms) to the first "retry storm … paced" line sluice wrote to `file` after
 * byte `from` (src/gateway/pacing.ts; pino's `time` is epoch ms), or undefined when there is none.
 */
function pacedAfter(file: string, from: number, sentAt: number): number | undefined {
  const text = readFileSync(file, "utf8").slice(from);
  for (const line of text.split("\n")) {
    if (!line.includes("retry storm")) continue;
    const time = (JSON.parse(line) as { time?: number }).time;
    return time === undefined ? undefined : time - sentAt;
  }
  return undefined;
}

/** Newlines written to `file` after byte `from` (sluice's log lines in a window). */
function linesSince(file: string, from: number): number {
  const size = statSync(file).size;
  if (size <= from) return 0;
  const fd = openSync(file, "r");
  try {
    const buf = Buffer.alloc(size - from);
    readSync(fd, buf, 0, buf.length, from);
    let n = 0;
    for (let i = buf.indexOf(10); i !== -1; i = buf.indexOf(10, i + 1)) n++;
    return n;
  } finally {
    closeSync(fd);
  }
}

/** The commit measured, and whether src/ had uncommitted changes (the bench builds what is there). */
function gitState(): string {
  try {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], {
      cwd: root,
      encoding: "utf8",
    }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "src"], {
      cwd: root,
      encoding: "utf8",
    }).trim();
    return dirty === "" ? head : `${head} + uncommitted changes in src/`;
  } catch {
    return "unknown";
  }
}

const pause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ---- main ------------------------------------------------------------------------------------
async function main(): Promise<void> {
  const started = Date.now();
  const uptime = execSync("uptime", { encoding: "utf8" }).trim();
  const dir = mkdtempSync(join(tmpdir(), "sluice-bench-gw-"));
  const haproxyBin = which("haproxy");
  const wrkBin = args.has("--node-loadgen") ? undefined : which("wrk");
  const notes: string[] = [];
  const log = (line: string) => process.stderr.write(`${line}\n`);

  const simBase = { jitterSigma: 0, echoPrefix: null, overflow: "queue" as const };
  const ab = await Promise.all(
    [1, 2].map(() => startSim({ ...simBase, maxNumSeqs: AB_SLOTS, serviceMs: 0, tokensPerSecond: 0 })),
  );
  const cPods = await Promise.all(
    [1, 2].map(() =>
      startSim({
        ...simBase,
        maxNumSeqs: C_SLOTS,
        serviceMs: SERVICE_MS,
        tokensPerSecond: 0,
        jitterSigma: JITTER,
      }),
    ),
  );
  const STORM = only.includes("d");
  const holdPods = STORM
    ? await Promise.all(
        [1, 2].map(() =>
          startSim({ ...simBase, maxNumSeqs: C_SLOTS, serviceMs: HOLD_SERVICE_MS, tokensPerSecond: 0 }),
        ),
      )
    : [];
  const children: ChildProcess[] = [];
  let haproxy: Haproxy | undefined;
  let haproxyPid: number | undefined;
  let haproxyD: Haproxy | undefined;
  let haproxyDPid: number | undefined;
  const cleanup = async () => {
    await Promise.all(children.map(stopChild));
    await haproxy?.close();
    await haproxyD?.close();
    haproxyPid = undefined;
    haproxyDPid = undefined;
    await Promise.all([...ab, ...cPods, ...holdPods].map((s) => s.close()));
  };
  process.once("SIGINT", () => void cleanup().then(() => process.exit(130)));
  // Whatever happens to this process, nothing it started outlives it.
  process.once("exit", () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
    for (const pid of [haproxyPid, haproxyDPid]) {
      if (pid === undefined) continue;
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
  });

  try {
    const configFile = join(dir, "sluice.yaml");
    writeFileSync(configFile, sluiceConfig(ab, cPods));
    const profDir = join(dir, "prof");
    const profArgs = PROFILE ? ["--cpu-prof", `--cpu-prof-dir=${profDir}`] : [];
    const built = !args.has("--src") && buildCli();
    const sluice = built
      ? spawn(process.execPath, [...profArgs, CLI, "serve", "--config", configFile, "--port", "0"], {
          cwd: root,
          stdio: ["ignore", "inherit", "pipe"],
        })
      : forkTs("serve.ts", [configFile], profArgs);
    children.push(sluice);
    const sluices = [sluice];
    notes.push(
      built
        ? "sluice ran as the built CLI (src compiled by tsc into .bench/gateway-dist): `node cli/main.js serve --config FILE`."
        : "sluice ran from src through tsx (bench/gateway/serve.ts), not the built CLI.",
    );
    const bareSpec: BareListener[] = [
      { pods: ab.map((p) => p.url), perPod: AB_SLOTS },
      { pods: cPods.map((p) => p.url), perPod: C_SLOTS },
    ];
    const bare = forkTs("bare-proxy.ts", [JSON.stringify(bareSpec)]);
    children.push(bare);
    const lean = LEAN ? forkTs("bare-proxy.ts", [JSON.stringify(bareSpec), "lean"]) : undefined;
    if (lean !== undefined) children.push(lean);
    const loadgen = forkTs("loadgen.ts", []);
    children.push(loadgen);
    const [sluiceUrls, bareUrls] = await Promise.all([
      built ? cliReady(sluice) : ready(sluice, "sluice"),
      ready(bare, "bare proxy"),
    ]);

    const targets: Target[] = [
      { name: "direct", ab: ab.map((p) => p.url), c: cPods.map((p) => p.url), pid: undefined },
      { name: "sluice", ab: sluiceUrls, c: sluiceUrls, pid: sluice.pid },
    ];
    if (haproxyBin !== undefined) {
      haproxy = await startHaproxy(
        haproxyBin,
        dir,
        [
          { name: "ab", pods: ab.map((p) => p.url), perPod: AB_SLOTS },
          { name: "c", pods: cPods.map((p) => p.url), perPod: C_SLOTS },
        ],
        QUEUE_TIMEOUT_MS,
      );
      haproxyPid = haproxy.pid;
      targets.push({ name: "haproxy", ab: [haproxy.urls[0]!], c: [haproxy.urls[1]!], pid: haproxy.pid });
    } else {
      notes.push("HAProxy is not installed (`apt-get install -y haproxy`): its column is skipped.");
      log("note: haproxy not found; skipping it");
    }
    targets.push({ name: "bare", ab: [bareUrls[0]!], c: [bareUrls[1]!], pid: bare.pid });
    if (lean !== undefined) {
      const leanUrls = await ready(lean, "lean bare proxy");
      targets.push({ name: "lean", ab: [leanUrls[0]!], c: [leanUrls[1]!], pid: lean.pid });
    }
    if (onlyTargets !== undefined) {
      for (let i = targets.length - 1; i >= 0; i--)
        if (!onlyTargets.includes(targets[i]!.name)) targets.splice(i, 1);
    }
    if (wrkBin === undefined)
      notes.push("(a) used the Node load generator (wrk not installed or --node-loadgen).");

    // (d)'s own proxies: sluice at log level info, HAProxy on one thread with the 429 rule, the
    // bare proxy with a counter bound; each serves the storm lane and the hold lane.
    const stormTargets: (Target & { hold: string[]; logFile?: string })[] = [];
    if (STORM) {
      const stormFile = join(dir, "sluice-storm.yaml");
      writeFileSync(stormFile, stormConfig(cPods, holdPods));
      const logFile = join(dir, "sluice-storm.log");
      const logFd = openSync(logFile, "w");
      const sluiceD = built
        ? spawn(process.execPath, [...profArgs, CLI, "serve", "--config", stormFile, "--port", "0"], {
            cwd: root,
            stdio: ["ignore", logFd, "pipe"],
          })
        : forkTs("serve.ts", [stormFile], profArgs);
      closeSync(logFd);
      children.push(sluiceD);
      sluices.push(sluiceD);
      const listeners = (queueLimit: number): BareListener[] => [
        { pods: cPods.map((p) => p.url), perPod: C_SLOTS, queueLimit },
        { pods: holdPods.map((p) => p.url), perPod: C_SLOTS, queueLimit },
      ];
      const bareD = forkTs("bare-proxy.ts", [JSON.stringify(listeners(D_QUEUE_LIMIT))]);
      children.push(bareD);
      const [sluiceDUrls, bareDUrls] = await Promise.all([
        built ? cliReady(sluiceD) : ready(sluiceD, "sluice (storm)"),
        ready(bareD, "bare proxy (storm)"),
      ]);
      stormTargets.push({
        name: "sluice",
        ab: [],
        c: sluiceDUrls,
        hold: sluiceDUrls,
        pid: sluiceD.pid,
        logFile: built ? logFile : undefined,
      });
      // The same sluice with pacing off: what the refusal path costs when every retry is answered.
      const pacingBuilt = existsSync(join(BUILD_DIR, "gateway", "pacing.js"));
      if (built && pacingBuilt && (onlyTargets === undefined || onlyTargets.includes("unpaced"))) {
        const unpacedLog = join(dir, "sluice-unpaced.log");
        const fd = openSync(unpacedLog, "w");
        const unpaced = spawn(
          process.execPath,
          [...profArgs, join(here, "unpaced.mjs"), BUILD_DIR, "serve", "--config", stormFile, "--port", "0"],
          { cwd: root, stdio: ["ignore", fd, "pipe"] },
        );
        closeSync(fd);
        children.push(unpaced);
        sluices.push(unpaced);
        const urls = await cliReady(unpaced);
        stormTargets.push({
          name: "unpaced",
          ab: [],
          c: urls,
          hold: urls,
          pid: unpaced.pid,
          logFile: unpacedLog,
        });
      }
      if (haproxyBin !== undefined) {
        haproxyD = await startHaproxy(
          haproxyBin,
          dir,
          [
            { name: "d", pods: cPods.map((p) => p.url), perPod: C_SLOTS, queueLimit: D_QUEUE_LIMIT },
            { name: "hold", pods: holdPods.map((p) => p.url), perPod: C_SLOTS, queueLimit: D_QUEUE_LIMIT },
          ],
          QUEUE_TIMEOUT_MS,
          1,
        );
        haproxyDPid = haproxyD.pid;
        stormTargets.push({
          name: "haproxy",
          ab: [],
          c: [haproxyD.urls[0]!],
          hold: [haproxyD.urls[1]!],
          pid: haproxyD.pid,
        });
      }
      stormTargets.push({ name: "bare", ab: [], c: [bareDUrls[0]!], hold: [bareDUrls[1]!], pid: bareD.pid });
      if (onlyTargets !== undefined) {
        for (let i = stormTargets.length - 1; i >= 0; i--)
          if (!onlyTargets.includes(stormTargets[i]!.name)) stormTargets.splice(i, 1);
      }
    }

    const idle = new PodMeter([]);
    // Prime the JIT of every proxy on both lanes, so the first measured run is not its warm-up.
    for (const t of targets.filter((x) => x.pid !== undefined)) {
      for (const [urls, model] of [
        [t.ab, "bench"],
        [t.c, "bench-c"],
      ] as const) {
        const spec = { urls: [...urls], path: PATH, body: body(model, true), connections: 16 };
        const run = { ...spec, warmupMs: 0, durationMs: 1000, backoffMs: 0, staggerMs: 0 };
        await loadgenRun(loadgen, run, undefined, idle);
      }
    }

    for (const t of stormTargets) {
      const spec = { urls: t.c, path: PATH, body: body("bench-d", true), connections: 16 };
      const run = { ...spec, warmupMs: 0, durationMs: 1000, backoffMs: 0, staggerMs: 0 };
      await loadgenRun(loadgen, run, undefined, idle);
    }

    const rows: Row[] = [];
    const stormRows: StormRow[] = [];
    const abMeter = new PodMeter(ab);
    const cMeter = new PodMeter(cPods);

    // (a) zero service time: throughput and added latency.
    if (only.includes("a")) {
      for (const conns of A_CONNS) {
        for (const t of targets) {
          log(`(a) ${conns} conn → ${t.name}`);
          if (wrkBin !== undefined) {
            const url = `${t.ab[0]}${PATH}`;
            await runWrk(wrkBin, dir, url, body("bench", false), conns, WARM_MS / 1000);
            const cpu0 = cpuSeconds(t.pid);
            abMeter.start();
            const w = await runWrk(wrkBin, dir, url, body("bench", false), conns, A_MS / 1000);
            const cpu = cpuSeconds(t.pid) - cpu0;
            const pods = abMeter.stop();
            rows.push({
              scenario: "a",
              conns,
              target: t.name,
              seconds: w.seconds,
              ok: w.requests - w.non2xx,
              refused: 0,
              other: w.non2xx,
              errors: w.errors,
              p50: w.p50Ms,
              p99: w.p99Ms,
              refusedP99: Number.NaN,
              cpu,
              clientCpu: Number.NaN,
              ...pods,
            });
          } else {
            rows.push(await nodeRow(loadgen, abMeter, "a", conns, t, t.ab, body("bench", false), A_MS));
          }
          await pause(200);
        }
      }
    }

    // (b) 50 ms service, streamed answers: goodput and added p99.
    if (only.includes("b")) {
      for (const p of ab) p.setProfile({ serviceMs: SERVICE_MS, tokensPerSecond: 1000, jitterSigma: JITTER });
      for (const conns of B_CONNS) {
        for (const t of targets) {
          log(`(b) ${conns} conns → ${t.name}`);
          rows.push(await nodeRow(loadgen, abMeter, "b", conns, t, t.ab, body("bench", true), B_MS));
          await pause(200);
        }
      }
    }

    // (c) 2× and 10× the fleet's capacity: goodput, admitted p99, refusal latency, pod busyness.
    if (only.includes("c")) {
      const slots = C_SLOTS * cPods.length;
      for (const load of C_LOADS) {
        for (const t of targets) {
          const conns = slots * load;
          log(`(c) ${load}× (${conns} conns) → ${t.name}`);
          const row = await nodeRow(loadgen, cMeter, "c", conns, t, t.c, body("bench-c", true), C_MS);
          row.load = load;
          rows.push(row);
          await pause(500);
        }
      }
    }

    // (d) the retry storm: refused clients re-send at once; 16 polite ones honour Retry-After.
    if (STORM) {
      const slots = C_SLOTS * cPods.length;
      const storm = (urls: string[], model: string, connections: number, polite: number): StormSpec => ({
        urls,
        path: PATH,
        body: body(model, true),
        connections,
        polite,
        politeDefaultMs: D_POLITE_DEFAULT_MS,
        warmupMs: WARM_MS,
        durationMs: D_MS,
        staggerMs: SERVICE_MS,
      });
      for (const load of D_LOADS) {
        for (const t of stormTargets) {
          const conns = slots * load;
          log(`(d) storm ${load}× (${conns} + ${D_POLITE} polite conns) → ${t.name}`);
          const r = await stormRun(loadgen, storm(t.c, "bench-d", conns, D_POLITE), t.pid, cMeter, t.logFile);
          stormRows.push({ kind: "storm", load, conns, polite: D_POLITE, target: t.name, ...r });
          await pause(500);
        }
      }
      // Refusals alone: the hold pods keep every slot and the queue full, so the proxy's CPU in
      // the window is the refusals' (the queue's timeouts, 64/s, are 503s among them).
      const idleHold = new PodMeter([]);
      for (const t of stormTargets) {
        log(`(d) refusals alone (${HOLD_CONNS} conns) → ${t.name}`);
        const r = await stormRun(
          loadgen,
          storm(t.hold, "bench-hold", HOLD_CONNS, 0),
          t.pid,
          idleHold,
          t.logFile,
        );
        stormRows.push({ kind: "alone", load: 0, conns: HOLD_CONNS, polite: 0, target: t.name, ...r });
        await pause(500);
      }
    }

    const meta = {
      uptime,
      cores: availableParallelism(),
      cpu: cpus()[0]?.model ?? "?",
      node: process.version,
      haproxy: haproxyBin
        ? execSync(`${haproxyBin} -v`, { encoding: "utf8" }).split("\n")[0]!
        : "not installed",
      loadgenA: wrkBin ? "wrk (1 thread)" : "Node undici",
      date: new Date().toISOString(),
      seconds: Math.round((Date.now() - started) / 1000),
      loadavg: loadavg()
        .map((v) => v.toFixed(2))
        .join(" "),
      capacity: (C_SLOTS * cPods.length * 1000) / SERVICE_MS,
      quick: QUICK,
      commit: gitState(),
    };
    const report = renderReport(rows, meta, notes, {
      abSlots: AB_SLOTS,
      cSlots: C_SLOTS,
      pods: 2,
      serviceMs: SERVICE_MS,
      jitter: JITTER,
      queueLimit: C_QUEUE_LIMIT,
      queueTimeoutMs: QUEUE_TIMEOUT_MS,
      backoffMs: BACKOFF_MS,
      warmMs: WARM_MS,
      aMs: A_MS,
      bMs: B_MS,
      cMs: C_MS,
    });
    const stormReport =
      stormRows.length === 0
        ? ""
        : renderStorm(stormRows, {
            capacity: meta.capacity,
            slots: C_SLOTS * cPods.length,
            queueLimit: D_QUEUE_LIMIT,
            queueTimeoutMs: QUEUE_TIMEOUT_MS,
            serviceMs: SERVICE_MS,
            polite: D_POLITE,
            politeDefaultMs: D_POLITE_DEFAULT_MS,
            warmMs: WARM_MS,
            dMs: D_MS,
            log: STORM_LOG,
            holdServiceMs: HOLD_SERVICE_MS,
          });
    // (d) by wrk: its own pods, sluice and HAProxy, cold and warm (wrk-storm.ts).
    const wrkReport =
      STORM &&
      !args.has("--node-loadgen") &&
      !args.has("--no-wrk") &&
      (onlyTargets === undefined || onlyTargets.includes("sluice"))
        ? [
            await wrkStormSection({ cli: built ? CLI : undefined, quick: QUICK, log }),
            await rateCpuSection({ cli: built ? CLI : undefined, quick: QUICK, log }),
          ].join("\n")
        : "";
    // (e) runs its own sluice, pods and load generator (tpm-cpu.ts).
    const tpmReport = only.includes("e")
      ? await tpmCpuSection({ cli: built ? CLI : undefined, quick: QUICK, log })
      : "";
    const full = [report, stormReport, wrkReport, tpmReport].filter((part) => part !== "").join("\n");
    process.stdout.write(`${full}\n`);
    const whole = only.length === 5 && onlyTargets === undefined && !loadsArg && !stormLoadsArg;
    if (!args.has("--no-doc") && !QUICK && whole) writeDoc(join(root, "docs", "bench-gateway.md"), full);

    // Each sluice writes its CPU profile as it exits.
    await Promise.all(sluices.map(stopChild));
    if (PROFILE) {
      const files = readdirSync(profDir).filter(
        (f) => f.endsWith(".cpuprofile") && isSluiceProfile(join(profDir, f)),
      );
      for (const f of files) {
        const path = join(profDir, f);
        const keep = join(tmpdir(), `sluice-gateway-${Date.now()}.cpuprofile`);
        writeFileSync(keep, readFileSync(path));
        process.stdout.write(`\n### sluice CPU profile (${keep})\n\n${summarizeProfile(keep)}\n`);
      }
    }
  } finally {
    await cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function nodeRow(
  loadgen: ChildProcess,
  meter: PodMeter,
  scenario: Row["scenario"],
  conns: number,
  target: Target,
  urls: string[],
  requestBody: string,
  durationMs: number,
): Promise<Row> {
  const spec: RunSpec = {
    urls,
    path: PATH,
    body: requestBody,
    connections: conns,
    warmupMs: WARM_MS,
    durationMs,
    backoffMs: BACKOFF_MS,
    // (a) has no service time to stagger over.
    staggerMs: scenario === "a" ? 0 : SERVICE_MS,
  };
  const { result: r, cpu, clientCpu, pods } = await loadgenRun(loadgen, spec, target.pid, meter);
  return {
    scenario,
    conns,
    target: target.name,
    seconds: r.seconds,
    ok: r.ok,
    refused: r.refused,
    other: r.other,
    errors: r.errors,
    p50: r.okP50Ms,
    p99: r.okP99Ms,
    refusedP99: r.refusedP99Ms,
    cpu,
    clientCpu,
    ...pods,
  };
}

await main();
