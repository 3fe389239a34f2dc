/**
 * What a token budget costs the gateway (issue 21, "Speed"): sluice's CPU per answer on a lane
 * with `tpm` — the body parsed, the prompt counted by the tokenizer, the answer's usage read and
 * reconciled — against the same lane without `tpm`, for 1 KB and 100 KB prompts, as a ratio
 * (target ≤ 1.5×); and what the tokenizer (gpt-tokenizer's o200k_base `countTokens`, the
 * gateway's) costs per KB of English and of CJK text, measured directly in this process.
 *
 * Its own sluice process (the built CLI when given, else src through tsx: serve.ts), two sim pods
 * answering at once (JSON with `usage`), and the closed-loop load generator (loadgen.ts), each in
 * its own process; CPU from /proc as main.ts measures it. The `tpm` is 10⁹, so the bucket never
 * refuses or queues: the difference between the two lanes is the work, not waiting.
 *
 *   npm run bench:gateway -- --only=e         (inside the gateway benchmark)
 *   node --import tsx bench/gateway/tpm-cpu.ts [--quick] [--built]   (alone: src through tsx, or
 *                                                                    the last bench build)
 */
import { type ChildProcess, fork, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startSim } from "../../src/sim/server.js";
import type { LoadgenMessage, ReadyMessage, RunResult, RunSpec } from "./protocol.js";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const PATH = "/v1/chat/completions";
const CONNECTIONS = 8;
const SIZES_KB = [1, 100];

export interface TpmCpuOptions {
  /** The built CLI (`.bench/gateway-dist/cli/main.js`); undefined runs src through tsx. */
  cli: string | undefined;
  /** Short runs. */
  quick: boolean;
  log?: (line: string) => void;
}

/** One lane × prompt size, measured. */
interface TpmRow {
  lane: "tpm" | "no tpm";
  kb: number;
  ok: number;
  /** sluice's CPU per answer, µs: the lowest of the rounds (the least disturbed by other work). */
  cpuUs: number;
  rounds: number[];
}

// ---- text --------------------------------------------------------------------------------------

const EN =
  "the of and to in is that for it as was with be by on not he this are or his from at which but have an they you were her she there been one all we their has would when if so no will more can said who about what time up out them into just some could other than then now only its over also new two may first any these like how well our way even back because good most very where after year know get through should people make made much great day see work request model budget token gateway provider answer stream window minute bucket refill estimate reconcile".split(
    " ",
  );
const HAN =
  "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带安场身车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石记需段研界拉林律叫且究观越织装影算低持音众书布复容儿须际商非验连断深难近矿千周委素技备半办青省列习响约支般史感劳便团往酸历市克何除消构府称太准精值号率族维划选标写存候毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识适属圆包火住调满县局照参红细引听该铁价严";

/** `bytes` of UTF-8 text for `seed`: English words with full stops, or CJK with a comma or full stop every few characters. */
export function sampleText(lang: "en" | "cjk", bytes: number, seed: number): string {
  let state = seed >>> 0 || 1;
  const next = (n: number) => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return (state >>> 8) % n;
  };
  let out = "";
  let size = 0;
  while (size < bytes) {
    const piece =
      lang === "en"
        ? `${EN[next(EN.length)]}${next(12) === 0 ? ". " : " "}`
        : `${HAN[next(HAN.length)]}${next(14) === 0 ? (next(2) === 0 ? "，" : "。") : ""}`;
    out += piece;
    size += Buffer.byteLength(piece);
  }
  return out;
}

// ---- the tokenizer alone -------------------------------------------------------------------------

/** The tokenizer's cost per KB (µs) and tokens per KB, over `texts` distinct texts of `kb` KB each. */
export function tokenizerCost(
  lang: "en" | "cjk",
  kb: number,
  texts: number,
): { usPerKb: number; tokensPerKb: number } {
  const { countTokens } = createRequire(import.meta.url)("gpt-tokenizer/encoding/o200k_base") as {
    countTokens: (text: string) => number;
  };
  // Warm the JIT (and the tokenizer's load) on other text first.
  for (let i = 0; i < 8; i++) countTokens(sampleText(lang, kb * 1024, 10_000 + i));
  const samples = Array.from({ length: texts }, (_, i) => sampleText(lang, kb * 1024, i + 1));
  let tokens = 0;
  const t0 = process.cpuUsage();
  for (const s of samples) tokens += countTokens(s);
  const used = process.cpuUsage(t0);
  const totalKb = samples.reduce((a, s) => a + Buffer.byteLength(s), 0) / 1024;
  return { usPerKb: (used.user + used.system) / totalKb, tokensPerKb: tokens / totalKb };
}

/**
 * One run of `chars` CJK characters with no punctuation or space: a single pre-token, which the
 * BPE merges in time that grows with the square of its length (ms for one call, and its KB).
 */
export function unpunctuatedCjk(chars: number): { ms: number; kb: number } {
  const { countTokens } = createRequire(import.meta.url)("gpt-tokenizer/encoding/o200k_base") as {
    countTokens: (text: string) => number;
  };
  const text = sampleText("cjk", chars * 3, chars).replace(/[，。]/g, "");
  const t0 = process.cpuUsage();
  countTokens(text);
  const used = process.cpuUsage(t0);
  return { ms: (used.user + used.system) / 1000, kb: Buffer.byteLength(text) / 1024 };
}

// ---- the gateway, per answer ----------------------------------------------------------------------

function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

function config(pods: string[]): string {
  const lane = (name: string, tpm: boolean) => `  - name: ${name}
    max_concurrent_requests: ${32 * pods.length}
    reserve: 0
    queue_limit: 64
    queue_timeout_s: 2${tpm ? "\n    tpm: 1000000000\n    default_max_tokens: 16" : ""}
    pods:
${pods.map((p) => `      - { url: "${p}", max_inflight: 32 }`).join("\n")}`;
  return `# generated by bench/gateway/tpm-cpu.ts
listen: 127.0.0.1:0
log: { level: warn }
admission: { max_concurrency: 96, max_queued: 96, queue_timeout_s: 2 }
models:
${lane("with-tpm", true)}
${lane("without-tpm", false)}
`;
}

function startSluice(cli: string | undefined, file: string): Promise<{ child: ChildProcess; url: string }> {
  const child =
    cli !== undefined
      ? spawn(process.execPath, [cli, "serve", "--config", file, "--port", "0"], {
          cwd: root,
          stdio: ["ignore", "ignore", "pipe"],
        })
      : fork(join(here, "serve.ts"), [file], {
          execArgv: ["--import", "tsx"],
          stdio: ["ignore", "ignore", "inherit", "ipc"],
          cwd: root,
        });
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error("sluice did not start in 20 s")), 20_000);
    const done = (url: string) => {
      clearTimeout(t);
      resolve({ child, url });
    };
    let text = "";
    child.stderr?.on("data", (b: Buffer) => {
      text += b.toString();
      const m = /listening on (http:\/\/\S+)/.exec(text);
      if (m !== null) done(m[1]!);
    });
    child.once("message", (m: ReadyMessage) => done(m.urls[0]!));
    child.once("exit", (code) => reject(new Error(`sluice exited (${code}): ${text}`)));
  });
}

/** One loadgen run, with sluice's CPU inside its window. */
function measure(
  loadgen: ChildProcess,
  spec: RunSpec,
  pid: number | undefined,
): Promise<{ r: RunResult; cpu: number }> {
  return new Promise((resolve, reject) => {
    let cpu0 = Number.NaN;
    let cpu = Number.NaN;
    const on = (m: LoadgenMessage) => {
      if (m.type === "window") {
        if (m.phase === "start") cpu0 = cpuSeconds(pid);
        else cpu = cpuSeconds(pid) - cpu0;
      } else if (m.type === "result") {
        loadgen.off("message", on);
        // The result can overtake the window's end mark (both are due at its end): end it here.
        if (Number.isNaN(cpu)) cpu = cpuSeconds(pid) - cpu0;
        resolve({ r: m.result, cpu });
      } else if (m.type === "error") {
        loadgen.off("message", on);
        reject(new Error(m.message));
      }
    };
    loadgen.on("message", on);
    loadgen.send({ type: "run", spec });
  });
}

/** Measures the rows and renders the section (markdown). */
export async function tpmCpuSection(o: TpmCpuOptions): Promise<string> {
  const log = o.log ?? (() => undefined);
  const dir = mkdtempSync(join(tmpdir(), "sluice-bench-tpm-"));
  const pods = await Promise.all(
    [1, 2].map(() =>
      startSim({
        maxNumSeqs: 32,
        serviceMs: 0,
        tokensPerSecond: 0,
        jitterSigma: 0,
        echoPrefix: null,
        overflow: "queue",
      }),
    ),
  );
  const file = join(dir, "sluice-tpm.yaml");
  writeFileSync(file, config(pods.map((p) => p.url)));
  const loadgen = fork(join(here, "loadgen.ts"), [], {
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
    cwd: root,
  });
  let sluice: ChildProcess | undefined;
  const rows: TpmRow[] = [];
  try {
    const s = await startSluice(o.cli, file);
    sluice = s.child;
    const rounds = o.quick ? 1 : 3;
    const durationMs = o.quick ? 1500 : 3000;
    for (const kb of SIZES_KB) {
      const content = sampleText("en", kb * 1024, kb);
      const body = (model: string) =>
        JSON.stringify({ model, messages: [{ role: "user", content }], max_tokens: 4 });
      const lanes = [
        { lane: "no tpm" as const, model: "without-tpm" },
        { lane: "tpm" as const, model: "with-tpm" },
      ];
      const byLane = new Map(lanes.map((l) => [l.lane, [] as number[]]));
      const okBy = new Map(lanes.map((l) => [l.lane, 0]));
      // Prime the JIT on both lanes first, so no measured round is a lane's warm-up.
      for (const l of lanes) {
        const prime = { urls: [s.url], path: PATH, body: body(l.model), connections: CONNECTIONS };
        await measure(
          loadgen,
          { ...prime, warmupMs: 0, durationMs: 1000, staggerMs: 0, backoffMs: 50 },
          undefined,
        );
      }
      // Rounds alternate the lanes, so a change in the machine's load falls on both.
      for (let round = 0; round < rounds; round++) {
        for (const l of lanes) {
          log(`(e) ${kb} KB prompt → lane ${l.lane}, round ${round + 1}/${rounds}`);
          const spec: RunSpec = {
            urls: [s.url],
            path: PATH,
            body: body(l.model),
            connections: CONNECTIONS,
            warmupMs: 300,
            durationMs,
            staggerMs: 0,
            backoffMs: 50,
          };
          const { r, cpu } = await measure(loadgen, spec, sluice.pid);
          if (r.ok === 0) throw new Error(`lane ${l.model} answered nothing: ${JSON.stringify(r.statuses)}`);
          byLane.get(l.lane)!.push((cpu * 1e6) / r.ok);
          okBy.set(l.lane, okBy.get(l.lane)! + r.ok);
        }
      }
      for (const l of lanes) {
        const list = byLane.get(l.lane)!;
        rows.push({ lane: l.lane, kb, ok: okBy.get(l.lane)!, cpuUs: Math.min(...list), rounds: list });
      }
    }
  } finally {
    if (sluice !== undefined && sluice.exitCode === null) {
      const gone = new Promise((r) => sluice!.once("exit", r));
      sluice.kill("SIGTERM");
      await gone;
    }
    loadgen.kill("SIGTERM");
    await Promise.all(pods.map((p) => p.close()));
    rmSync(dir, { recursive: true, force: true });
  }
  log("(e) the tokenizer alone");
  const tok = [
    { lang: "English", ...tokenizerCost("en", 8, o.quick ? 16 : 64) },
    { lang: "CJK", ...tokenizerCost("cjk", 8, o.quick ? 16 : 64) },
  ];
  const runs = [2000, 8000].map((chars) => ({ chars, ...unpunctuatedCjk(chars) }));
  return render(rows, tok, runs, o);
}

function render(
  rows: TpmRow[],
  tok: { lang: string; usPerKb: number; tokensPerKb: number }[],
  runs: { chars: number; ms: number; kb: number }[],
  o: TpmCpuOptions,
): string {
  const lines = [
    "### (e) A token budget's CPU per answer — `tpm` lane vs the same lane without",
    "",
    `sluice ${o.cli !== undefined ? "as the built CLI" : "from src through tsx"}, 2 sim pods answering at once (JSON with \`usage\`), ${CONNECTIONS} connections, \`max_tokens: 4\`; English prompt text; ${o.quick ? "1 round of 1.5 s" : "3 rounds of 3 s"} per lane, alternating; µs of sluice CPU per answer, the lowest round (all rounds in brackets).`,
    "",
    "| prompt | lane without tpm | lane with tpm (parse + estimate + reconcile) | ratio (target ≤ 1.5×) |",
    "| --- | --- | --- | --- |",
  ];
  for (const kb of SIZES_KB) {
    const off = rows.find((r) => r.kb === kb && r.lane === "no tpm")!;
    const on = rows.find((r) => r.kb === kb && r.lane === "tpm")!;
    const cell = (r: TpmRow) => `${r.cpuUs.toFixed(0)} µs (${r.rounds.map((v) => v.toFixed(0)).join(", ")})`;
    const ratio = on.cpuUs / off.cpuUs;
    lines.push(
      `| ${kb} KB | ${cell(off)} | ${cell(on)} | **${ratio.toFixed(2)}×**${ratio > 1.5 ? " (over)" : ""} |`,
    );
  }
  lines.push(
    "",
    "The tokenizer alone (gpt-tokenizer `o200k_base` `countTokens`, in the bench's process, after a warm-up; distinct 8 KB texts):",
    "",
    "| text | CPU per KB | tokens per KB |",
    "| --- | --- | --- |",
    ...tok.map((t) => `| ${t.lang} | ${t.usPerKb.toFixed(0)} µs | ${t.tokensPerKb.toFixed(0)} |`),
    "",
    "CJK with no punctuation is one pre-token, and its cost grows with the square of its length:",
    "",
    "| one unpunctuated CJK run | CPU for one count |",
    "| --- | --- |",
    ...runs.map((r) => `| ${r.chars} characters (${r.kb.toFixed(0)} KB) | ${r.ms.toFixed(0)} ms |`),
  );
  return lines.join("\n");
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const argv = new Set(process.argv.slice(2));
  const built = join(root, ".bench", "gateway-dist", "cli", "main.js");
  const cli = argv.has("--built") && existsSync(built) ? built : undefined;
  const section = await tpmCpuSection({
    cli,
    quick: argv.has("--quick"),
    log: (l) => process.stderr.write(`${l}\n`),
  });
  process.stdout.write(`${section}\n`);
}
