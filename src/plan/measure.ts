/**
 * `sluice plan --from-metrics URL`: reads a running sluice gateway's or vLLM server's
 * `/metrics` a few times over a window and turns what it measured into plan inputs — requests
 * per second, latency and tokens per request.
 *
 * - sluice: requests it carried or refused (`sluice_request_duration_seconds_count`, by
 *   outcome), the latency of answers less their queue wait, tokens from `sluice_tokens_total`.
 * - vLLM: finished requests (`vllm:request_success_total`), latency from
 *   `vllm:e2e_request_latency_seconds` when exported, else by Little's law (mean running ÷ rate),
 *   tokens from the prompt and generation counters.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { request } from "undici";

/** What was measured, and how. */
export interface Measured {
  source: "sluice" | "vllm";
  url: string;
  window_s: number;
  rps: number;
  latency_s: number;
  tokens_per_request: number | null;
  /** How each number was derived. */
  notes: string[];
}

/** The window saw nothing to measure, or the URL is no metrics endpoint sluice knows. */
export class MeasureError extends Error {
  override readonly name = "MeasureError";
  constructor(
    readonly url: string,
    readonly reason: string,
  ) {
    super(`--from-metrics ${url}: ${reason}`);
  }
}

/** One sample line: name, labels, value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses Prometheus text format (the sample lines; comments skipped). */
export function parsePrometheus(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (m === null) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    const value = Number(m[3]);
    if (Number.isFinite(value)) out.push({ name: m[1]!, labels, value });
  }
  return out;
}

/** Σ of `name`'s samples whose labels pass `where`. */
export function total(
  samples: Sample[],
  name: string,
  where: (l: Record<string, string>) => boolean = () => true,
): number {
  let sum = 0;
  for (const s of samples) if (s.name === name && where(s.labels)) sum += s.value;
  return sum;
}

/** The metrics URL for what the user gave: a bare origin gets `/metrics`. */
export function metricsUrl(raw: string): string {
  const u = new URL(raw);
  if (u.pathname === "/" || u.pathname === "") u.pathname = "/metrics";
  return u.toString();
}

async function scrape(url: string): Promise<Sample[]> {
  const res = await request(url);
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new MeasureError(url, `answered ${res.statusCode}`);
  return parsePrometheus(text);
}

/** Scrapes `url` over `windowMs` (at least two reads) and measures. */
export async function measure(raw: string, windowMs: number): Promise<Measured> {
  const url = metricsUrl(raw);
  const reads = Math.max(2, Math.min(20, Math.round(windowMs / 250) + 1));
  const scrapes: Array<{ at: number; samples: Sample[] }> = [];
  for (let i = 0; i < reads; i++) {
    if (i > 0) await sleep(windowMs / (reads - 1));
    scrapes.push({ at: performance.now(), samples: await scrape(url) });
  }
  const first = scrapes[0]!;
  const last = scrapes.at(-1)!;
  const seconds = (last.at - first.at) / 1000;
  const names = new Set(last.samples.map((s) => s.name));
  if (names.has("sluice_request_duration_seconds_count"))
    return fromSluice(url, first.samples, last.samples, seconds);
  if (names.has("vllm:request_success_total") || names.has("vllm:num_requests_running")) {
    return fromVllm(url, scrapes, seconds);
  }
  throw new MeasureError(
    url,
    "neither sluice's nor vLLM's metrics (no sluice_request_duration_seconds, no vllm:*)",
  );
}

const CARRIED = new Set(["ok", "refused", "upstream_error"]);

function fromSluice(url: string, a: Sample[], b: Sample[], seconds: number): Measured {
  const d = (name: string, where?: (l: Record<string, string>) => boolean) =>
    total(b, name, where) - total(a, name, where);
  const offered = d("sluice_request_duration_seconds_count", (l) => CARRIED.has(l.outcome ?? ""));
  const okCount = d("sluice_request_duration_seconds_count", (l) => l.outcome === "ok");
  if (okCount <= 0)
    throw new MeasureError(
      url,
      `no answer finished in the ${seconds.toFixed(1)} s window: nothing to measure`,
    );
  const okSeconds = d("sluice_request_duration_seconds_sum", (l) => l.outcome === "ok");
  const waits = d("sluice_lane_queue_wait_seconds_count");
  const wait = waits > 0 ? d("sluice_lane_queue_wait_seconds_sum") / waits : 0;
  const tokens = d("sluice_tokens_total");
  return {
    source: "sluice",
    url,
    window_s: seconds,
    rps: offered / seconds,
    latency_s: Math.max(0.001, okSeconds / okCount - wait),
    tokens_per_request: tokens > 0 ? tokens / okCount : null,
    notes: [
      "rps: answers, refusals and upstream errors per second (the demand, not only what was carried)",
      `latency: mean answer time less mean queue wait (${(wait * 1000).toFixed(0)} ms)`,
    ],
  };
}

function fromVllm(url: string, scrapes: Array<{ at: number; samples: Sample[] }>, seconds: number): Measured {
  const a = scrapes[0]!.samples;
  const b = scrapes.at(-1)!.samples;
  const d = (name: string) => total(b, name) - total(a, name);
  const done = d("vllm:request_success_total");
  if (done <= 0)
    throw new MeasureError(
      url,
      `no request finished in the ${seconds.toFixed(1)} s window: nothing to measure`,
    );
  const rps = done / seconds;
  const e2eCount = d("vllm:e2e_request_latency_seconds_count");
  let latency: number;
  const notes = ["rps: finished requests per second"];
  if (e2eCount > 0) {
    latency = d("vllm:e2e_request_latency_seconds_sum") / e2eCount;
    notes.push("latency: mean of vllm:e2e_request_latency_seconds");
  } else {
    const running =
      scrapes.reduce((n, s) => n + total(s.samples, "vllm:num_requests_running"), 0) / scrapes.length;
    latency = Math.max(0.001, running / rps);
    notes.push(
      `latency: Little's law, mean running (${running.toFixed(1)}) ÷ rps (no e2e latency histogram)`,
    );
  }
  const tokens = d("vllm:prompt_tokens_total") + d("vllm:generation_tokens_total");
  return {
    source: "vllm",
    url,
    window_s: seconds,
    rps,
    latency_s: latency,
    tokens_per_request: tokens > 0 ? tokens / done : null,
    notes,
  };
}
