/**
 * A fake model server that bills what it served, for the token-path tests (issue 21): it counts
 * every call by id, the calls of each body `model` running at once, and the tokens it bills —
 * the prompt as a provider counts it, with its own walk of the body (every string but the model
 * name and inline media payloads, through the tokenizer; 4 per message; a body that is not JSON
 * at bytes ÷ 4) plus the output it generates (`max_completion_tokens` / `max_tokens`, else 16).
 * Its count is independent of the gateway's estimate code: only the tokenizer is shared, as a
 * hosted provider and sluice share o200k_base.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { loadTokenizer } from "../../src/estimate/estimate.js";

export interface BilledCall {
  id: string;
  /** The body's `model` (what the pod runs), or "" when the body names none. */
  model: string;
  /** Prompt tokens billed. */
  prompt: number;
  /** Output tokens billed (generated). */
  output: number;
}

export interface BillingPod {
  readonly url: string;
  readonly calls: BilledCall[];
  /** The most calls of each body model running at once. */
  readonly peak: Map<string, number>;
  billed(): number;
  close(): Promise<void>;
}

/** Starts the pod; each call is answered (JSON with `usage`) after `holdMs`. */
export async function startBillingPod(options: { holdMs?: number } = {}): Promise<BillingPod> {
  const countTokens = loadTokenizer();
  const calls: BilledCall[] = [];
  const running = new Map<string, number>();
  const peak = new Map<string, number>();
  const timers = new Set<NodeJS.Timeout>();

  const onBody = (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    let parsed: Record<string, unknown> | undefined;
    try {
      const v = JSON.parse(body.toString("utf8")) as unknown;
      if (v !== null && typeof v === "object" && !Array.isArray(v)) parsed = v as Record<string, unknown>;
    } catch {
      parsed = undefined;
    }
    const model = typeof parsed?.model === "string" ? parsed.model : "";
    const prompt = parsed === undefined ? Math.ceil(body.length / 4) : billedPrompt(parsed, countTokens);
    const asked = parsed?.max_completion_tokens ?? parsed?.max_tokens;
    const output = typeof asked === "number" ? asked : 16;
    const id = String(req.headers["x-sluice-request-id"] ?? calls.length);
    calls.push({ id, model, prompt, output });
    const now = (running.get(model) ?? 0) + 1;
    running.set(model, now);
    peak.set(model, Math.max(peak.get(model) ?? 0, now));
    const answer = () => {
      running.set(model, running.get(model)! - 1);
      const text = JSON.stringify({
        id: `chatcmpl-${id}`,
        object: "chat.completion",
        model,
        choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
        usage: { prompt_tokens: prompt, completion_tokens: output, total_tokens: prompt + output },
      });
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
      res.end(text);
    };
    const hold = options.holdMs ?? 0;
    if (hold <= 0) return answer();
    const timer = setTimeout(() => {
      timers.delete(timer);
      answer();
    }, hold);
    timers.add(timer);
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => onBody(req, res, Buffer.concat(chunks)));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    peak,
    billed: () => calls.reduce((sum, c) => sum + c.prompt + c.output, 0),
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The prompt as this pod bills it: the tokenizer over every string but the model and media
 * payloads. Walked with a stack, so a body nested 100 000 deep is billed, not a stack overflow.
 */
function billedPrompt(body: Record<string, unknown>, countTokens: (text: string) => number): number {
  const texts: string[] = [];
  let messages = 0;
  const stack: [unknown, string][] = Object.entries(body)
    .reverse()
    .map(([k, v]) => [v, k]);
  while (stack.length > 0) {
    const [value, key] = stack.pop()!;
    if (typeof value === "string") {
      if (key !== "model" && !value.startsWith("data:")) texts.push(value);
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push([value[i], key]);
    } else if (value !== null && typeof value === "object") {
      if (key === "messages") messages++;
      const entries = Object.entries(value);
      for (let i = entries.length - 1; i >= 0; i--) stack.push([entries[i]![1], entries[i]![0]]);
    }
  }
  return countTokens(texts.join("")) + 4 * messages;
}
