/**
 * Issue 10's "done when": a provider whose account allows N tokens per minute, and one mixed
 * workload of small and large chat calls offered at several times N, sent two ways at once —
 * through sluice (the account's `tpm: N` in front of it) and straight to the provider. Printed
 * side by side: the provider's 429s, the tokens it was sent and served per minute against N.
 *
 *   node --import tsx bench/provider-tokens.ts [--seconds 20] [--tpm 6000] [--load 8]
 *
 * Real time (sluice's buckets are per minute of the process clock): a small N makes a 20 s run
 * show the steady state. A token bucket of N per minute starts full, so over T seconds it allows
 * N + N·T/60 tokens; the sustained rate is what was served beyond that first minute's worth,
 * per minute: (served − N) · 60 / T, which must stay ≤ N.
 */
import { parseArgs } from "node:util";
import pino from "pino";
import { Agent, request } from "undici";
import { parseConfig } from "../src/config/schema.js";
import { Gateway } from "../src/gateway/gateway.js";
import { startProvider } from "../src/sim/provider.js";
import { Mulberry32 } from "../src/sim/random.js";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "20" },
    tpm: { type: "string", default: "6000" },
    load: { type: "string", default: "8" },
  },
});
const SECONDS = Number(values.seconds);
const N = Number(values.tpm);
/** Offered tokens per second, as a multiple of what the account refills per second. */
const LOAD = Number(values.load);

interface Call {
  at: number;
  content: string;
  maxTokens: number;
  large: boolean;
}

/** Small classifications and large summaries (seed 004): 1 in 5 is large, 10× the tokens. */
function workload(seed: number): Call[] {
  const rnd = new Mulberry32(seed);
  const words = ["alpha", "beta", "gamma", "delta", "omega", "signal", "budget", "token", "queue"];
  const text = (n: number) =>
    Array.from({ length: n }, () => words[Math.floor(rnd.next() * words.length)]).join(" ");
  const small = { words: 60, maxTokens: 40 };
  const large = { words: 600, maxTokens: 400 };
  // Mean tokens per call ≈ 0.8 × 100 + 0.2 × 1000 = 280: calls per second to offer LOAD × N/60.
  const rate = (LOAD * N) / 60 / 280;
  const calls: Call[] = [];
  for (let t = 0; t < SECONDS * 1000; t += (-Math.log(1 - rnd.next()) / rate) * 1000) {
    const isLarge = rnd.next() < 0.2;
    const shape = isLarge ? large : small;
    calls.push({ at: t, content: text(shape.words), maxTokens: shape.maxTokens, large: isLarge });
  }
  return calls;
}

interface Outcome {
  ok: number;
  provider429: number;
  sluiceRefused: number;
  other: number;
}

async function drive(url: string, calls: Call[], agent: Agent, started: number): Promise<Outcome> {
  const out: Outcome = { ok: 0, provider429: 0, sluiceRefused: 0, other: 0 };
  await Promise.all(
    calls.map(async (c) => {
      const wait = started + c.at - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const res = await request(`${url}/v1/chat/completions`, {
        method: "POST",
        dispatcher: agent,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: "gpt-sim",
          messages: [{ role: "user", content: c.content }],
          max_tokens: c.maxTokens,
        }),
      });
      const text = await res.body.text();
      if (res.statusCode === 200) out.ok++;
      else if (res.statusCode === 429 && text.includes("sluice_capacity")) out.sluiceRefused++;
      else if (res.statusCode === 429) out.provider429++;
      else out.other++;
    }),
  );
  return out;
}

async function main(): Promise<void> {
  const provider = { tpm: N, serviceMs: 50, msPerOutputToken: 0.2, completionRatio: 0.7 };
  const direct = await startProvider(provider);
  const behind = await startProvider(provider);
  const config = parseConfig({
    admission: { max_concurrency: 256, max_queued: 1024 },
    models: [
      {
        name: "gpt-sim",
        max_concurrent_requests: 64,
        queue_limit: 256,
        queue_timeout_s: 3,
        adaptive: false,
        pods: [{ url: behind.url, max_inflight: 64 }],
      },
    ],
    accounts: { sim: { tpm: N, models: ["gpt-sim"] } },
  });
  const gateway = new Gateway({ config, logger: pino({ level: "silent" }) });
  const sluiceUrl = await gateway.listen(0, "127.0.0.1");
  const agent = new Agent({ connections: 512 });
  const calls = workload(1);
  const started = performance.now();
  const [viaSluice, straight] = await Promise.all([
    drive(sluiceUrl, calls, agent, started),
    drive(direct.url, calls, agent, started),
  ]);
  const elapsed = (performance.now() - started) / 1000;

  const sd = direct.stats();
  const sb = behind.stats();
  // T: from the start to the provider's last arrival (calls that waited in sluice's queue arrive late).
  const span = (log: { at: number }[]) => Math.max(1, ...log.map((e) => e.at - started)) / 1000;
  const T = Math.max(span(sb.log), span(sd.log));
  const sustained = (served: number) => Math.round(((served - N) * 60) / T);
  const offered = calls.reduce((sum, c) => sum + c.maxTokens * 0.7 + c.content.length / 5, 0);
  const bound = Math.round(N + (N * T) / 60);
  const rows: [string, string | number, string | number][] = [
    ["calls offered", calls.length, calls.length],
    [
      "provider 429s",
      sb.throttled.tokens + sb.throttled.requests,
      sd.throttled.tokens + sd.throttled.requests,
    ],
    ["served (200)", viaSluice.ok, straight.ok],
    ["refused by sluice (429 rate_limit)", viaSluice.sluiceRefused, "-"],
    ["other answers (503 queue_timeout, …)", viaSluice.other, straight.other],
    [
      "tokens offered per minute (approx.)",
      Math.round((offered * 60) / SECONDS),
      Math.round((offered * 60) / SECONDS),
    ],
    ["tokens served", sb.tokensServed, sd.tokensServed],
    [`allowed by N/min over T = ${T.toFixed(1)} s (N + N·T/60)`, bound, bound],
    [
      "sustained tokens per minute ((served − N)·60/T)",
      sustained(sb.tokensServed),
      sustained(sd.tokensServed),
    ],
    ["the account's N (tpm)", N, N],
  ];
  console.log(
    `provider-tokens: ${calls.length} calls (1 in 5 large) over ${SECONDS} s at ${LOAD}× N, ${elapsed.toFixed(1)} s`,
  );
  console.log(`${"".padEnd(50)}${"through sluice".padStart(16)}${"straight".padStart(12)}`);
  for (const [label, a, b] of rows)
    console.log(`${label.padEnd(50)}${String(a).padStart(16)}${String(b).padStart(12)}`);
  const ok = sb.throttled.tokens + sb.throttled.requests === 0 && sustained(sb.tokensServed) <= N;
  console.log(
    ok
      ? "through sluice: no provider 429, sustained tokens per minute within N"
      : "through sluice: LIMIT MISSED",
  );
  await agent.close();
  await gateway.close();
  await direct.close();
  await behind.close();
  process.exitCode = ok ? 0 : 1;
}

await main();
