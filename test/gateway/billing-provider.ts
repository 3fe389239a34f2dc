/**
 * A fake provider that bills what it served, by call id (issue 21's invariant): every chat call
 * is billed its prompt — counted over all the input it received (billing-wire.ts states the
 * rule) — plus the completion tokens it actually generated. A stream is generated a few deltas at
 * a time on a timer, so a caller that goes away mid-answer stops the generation and is billed only
 * what was generated before the provider saw the close, as a hosted provider does.
 *
 * It answers like OpenAI: SSE chunks, a usage chunk only when `stream_options.include_usage` was
 * asked, `tool_calls` and `reasoning_content` deltas, JSON bodies of any size (with `logprobs`).
 * What to generate is the test's choice, sent as headers a real model would not need:
 * `x-call-id` (the ledger's key; never billed twice), `x-test-output` (`text`, `tools`,
 * `reasoning`) and `x-test-words` (how many words, cut to `max_completion_tokens` /
 * `max_tokens`). A call without `x-call-id` is answered 400 and not billed.
 *
 * It keeps no bucket of its own: the ledger is the count at the far end, and the test judges it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import {
  billCompletion,
  billPrompt,
  type Generated,
  generate,
  jsonAnswer,
  type OutputKind,
  sseChunk,
  streamDeltas,
  usageBody,
} from "./billing-wire.js";

/** One call in the ledger. */
export interface BilledCall {
  id: string;
  /** The `model` its body named, as the provider received it. */
  model: string;
  /** When it arrived (performance.now() ms). */
  at: number;
  prompt: number;
  /** Completion tokens generated so far (final once `done`). */
  completion: number;
  /** The output the request allowed (`max_completion_tokens` / `max_tokens`), if it named one. */
  maxTokens: number | undefined;
  stream: boolean;
  includeUsage: boolean;
  /** The caller went away before the whole answer was written. */
  gone: boolean;
  done: boolean;
}

export interface BillingProvider {
  readonly url: string;
  /** The ledger by call id (a copy). */
  ledger(): BilledCall[];
  /** Call ids that arrived more than once (each arrival after the first is billed too). */
  duplicates(): string[];
  /** Calls received and not yet finished. */
  active(): number;
  close(): Promise<void>;
}

export interface BillingOptions {
  /** Stream deltas written per timer tick. **Default:** 4 (64 words). */
  deltasPerTick?: number;
  /** ms between ticks. **Default:** 1. */
  tickMs?: number;
}

const KINDS = new Set<OutputKind>(["text", "tools", "reasoning"]);

export async function startBillingProvider(options: BillingOptions = {}): Promise<BillingProvider> {
  const perTick = options.deltasPerTick ?? 4;
  const tickMs = options.tickMs ?? 1;
  const ledger = new Map<string, BilledCall>();
  const dup: string[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let active = 0;

  const bad = (res: ServerResponse, message: string) => {
    res.writeHead(400, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message, type: "invalid_request_error", param: null, code: null } }));
  };

  const later = (ms: number, fn: () => void) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };

  const serve = (req: IncomingMessage, res: ServerResponse, raw: Buffer) => {
    const id = req.headers["x-call-id"];
    if (typeof id !== "string") return bad(res, "x-call-id is required");
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw.toString("utf8")) as Record<string, unknown>;
    } catch (e) {
      return bad(res, `invalid JSON: ${(e as Error).message}`);
    }
    const kind = String(req.headers["x-test-output"] ?? "text") as OutputKind;
    const max = (body.max_completion_tokens ?? body.max_tokens) as number | undefined;
    const asked = Number(req.headers["x-test-words"] ?? 16);
    const words = Math.max(1, Math.min(asked, max ?? asked));
    const g = generate(
      KINDS.has(kind) && (kind !== "tools" || body.tools !== undefined) ? kind : "text",
      words,
      hash(id),
    );
    const opts = body.stream_options as { include_usage?: unknown } | undefined;
    const call: BilledCall = {
      id,
      model: String(body.model),
      at: performance.now(),
      prompt: billPrompt(body),
      completion: 0,
      maxTokens: max,
      stream: body.stream === true,
      includeUsage: opts?.include_usage === true,
      gone: false,
      done: false,
    };
    // A second arrival of one id is billed too, under its own key, and reported.
    if (ledger.has(id)) dup.push(id);
    ledger.set(ledger.has(id) ? `${id}#${dup.length}` : id, call);
    active++;
    let finished = false;
    const finish = (gone: boolean) => {
      if (finished) return;
      finished = true;
      active--;
      call.gone ||= gone;
      call.done = true;
    };
    res.on("close", () => finish(!res.writableFinished));
    const reasoning = billCompletion({ ...g, content: [], toolArgs: [] });
    if (!call.stream) {
      // Generation takes time before a JSON answer is written (≈ 30 words a ms).
      // A JSON answer is generated whole, whether or not its caller is still there to read it.
      later(Math.ceil(words / 30), () => {
        call.completion = billCompletion(g);
        if (res.destroyed) return finish(true);
        res.writeHead(200, { "content-type": "application/json" });
        const usage = usageBody(call.prompt, billCompletion(g), reasoning);
        res.end(jsonAnswer(id, call.model, g, body.logprobs === true, usage));
      });
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    streamOut(res, call, g, reasoning, () => finish(false));
  };

  /** Writes the stream a few deltas a tick; stops (billing what was generated) when the caller leaves. */
  const streamOut = (
    res: ServerResponse,
    call: BilledCall,
    g: Generated,
    reasoning: number,
    done: () => void,
  ) => {
    const deltas = streamDeltas(g, call.id);
    const finish = g.toolArgs.length > 0 ? "tool_calls" : "stop";
    let i = 0;
    const tick = () => {
      if (res.destroyed) return;
      let out = "";
      const end = Math.min(deltas.length, i + perTick);
      for (; i < end; i++)
        out += sseChunk(
          call.id,
          call.model,
          [{ index: 0, delta: deltas[i], logprobs: null, finish_reason: null }],
          call.includeUsage,
        );
      // Billed as generated: what a provider has generated is charged even if never read.
      call.completion = billCompletion(g, i);
      if (i < deltas.length) {
        res.write(out);
        return later(tickMs, tick);
      }
      out += sseChunk(
        call.id,
        call.model,
        [{ index: 0, delta: {}, logprobs: null, finish_reason: finish }],
        call.includeUsage,
      );
      if (call.includeUsage)
        out += sseChunk(call.id, call.model, [], true, usageBody(call.prompt, billCompletion(g), reasoning));
      res.end(`${out}data: [DONE]\n\n`, done);
    };
    tick();
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => serve(req, res, Buffer.concat(chunks)));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    ledger: () => [...ledger.values()].map((c) => ({ ...c })),
    duplicates: () => [...dup],
    active: () => active,
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        timers.clear();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** FNV-1a of the call id: the seed of its generated words. */
function hash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
