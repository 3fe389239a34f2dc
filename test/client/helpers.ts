/**
 * What the client tests measure at the gateway: every request that arrives (when, and how it was
 * answered), from the gateway's own server events, so nothing is counted on the client's word.
 */
import type { Stack } from "../gateway/helpers.js";
import { type RawPod, startRawPod } from "../gateway/raw-pod.js";
import { chatBody } from "../helpers/index.js";

export interface Arrival {
  /** `performance.now()` when the request's headers arrived at the gateway. */
  at: number;
  /** The status it was answered with; undefined until the answer ended. */
  status: number | undefined;
  /** When the answer ended. */
  endedAt: number | undefined;
}

/** Records every request the gateway receives from now on; `stop()` detaches. */
export function recordArrivals(stack: Stack): { arrivals: Arrival[]; stop(): void } {
  const arrivals: Arrival[] = [];
  const onRequest = (_req: unknown, res: import("node:http").ServerResponse) => {
    const a: Arrival = { at: performance.now(), status: undefined, endedAt: undefined };
    arrivals.push(a);
    res.once("finish", () => {
      a.status = res.statusCode;
      a.endedAt = performance.now();
    });
  };
  stack.gateway.server.on("request", onRequest);
  return { arrivals, stop: () => stack.gateway.server.off("request", onRequest) };
}

/** A JSON chat body for `model`. */
export function chatInit(model: string, content = "hello", extra: RequestInit = {}): RequestInit {
  return {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: chatBody(model, content),
    ...extra,
  };
}

/** A pod that holds every call until its gate opens, then answers each after `serviceMs`. */
export interface GatedPod {
  pod: RawPod;
  /** Answers what it holds (each after `serviceMs`) and every call from now on. */
  open(): void;
}

/**
 * Starts a gated pod: its answer is a chat completion whose content is `echo: ` + the call's first
 * message, so each caller can check it got its own answer. Holding the first calls makes "refused
 * at once" exact: nothing drains until the test opens the gate.
 */
export async function gatedPod(serviceMs: number): Promise<GatedPod> {
  let open = false;
  const pending: (() => void)[] = [];
  const pod = await startRawPod((_req, res, call) => {
    const parsed = JSON.parse(call.body || "{}") as { model?: string; messages?: { content?: string }[] };
    const answer = () => {
      const body = JSON.stringify({
        id: "chatcmpl-gated",
        object: "chat.completion",
        created: 0,
        model: parsed.model ?? "",
        choices: [
          {
            index: 0,
            message: { role: "assistant", content: `echo: ${parsed.messages?.[0]?.content ?? ""}` },
            finish_reason: "stop",
          },
        ],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      });
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      res.end(body);
    };
    const go = () => setTimeout(answer, serviceMs);
    if (open) go();
    else pending.push(go);
  });
  return {
    pod,
    open() {
      open = true;
      for (const go of pending.splice(0)) go();
    },
  };
}
