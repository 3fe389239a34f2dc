/**
 * One client call at a replica, as the chaos traffic sends it: the class, the key's token, the
 * call id and its planned service time in headers the pods read (`x-chaos-*`; the gateway passes
 * them on), a stream or not, and a client that may leave before the answer. The ledger gets the
 * call when it is sent and how it ended.
 */
import { type Agent, request } from "undici";
import type { CallEnd, Ledger } from "./ledger.js";
import type { Replica } from "./replicas.js";
import { type ClientKey, MODEL, type Priority } from "./shape.js";

/** The longest a client waits for an answer before it gives up (a paused replica never answers). */
const CLIENT_PATIENCE_MS = 30_000;

export interface CallSpec {
  readonly id: string;
  readonly replica: Replica;
  readonly key: ClientKey;
  readonly priority: Priority;
  readonly serviceMs: number;
  readonly stream: boolean;
  /** The client goes away this long after sending, if set. */
  readonly abortAfterMs?: number;
}

export async function sendCall(agent: Agent, ledger: Ledger, spec: CallSpec): Promise<CallEnd> {
  const { id, replica, key, priority, serviceMs, stream, abortAfterMs } = spec;
  const record = ledger.sent({ id, replica: replica.index, priority, key: key.id, stream, serviceMs });
  const controller = new AbortController();
  const patience = setTimeout(() => controller.abort("patience"), CLIENT_PATIENCE_MS);
  const leave =
    abortAfterMs === undefined ? undefined : setTimeout(() => controller.abort("leave"), abortAfterMs);
  let end: CallEnd = "ok";
  let status: string | undefined;
  try {
    const res = await request(`${replica.url}/v1/chat/completions`, {
      method: "POST",
      dispatcher: agent,
      signal: controller.signal,
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${key.token}`,
        "x-sluice-priority": priority,
        "x-chaos-call": id,
        "x-chaos-ms": String(serviceMs),
        "x-chaos-key": key.id,
        "x-chaos-stream": stream ? "1" : "0",
      },
      body: JSON.stringify({
        model: MODEL,
        stream,
        messages: [{ role: "user", content: `chaos call ${id}` }],
      }),
    });
    const text = await res.body.text();
    if (res.statusCode !== 200) {
      end = "refused";
      status = `${res.statusCode} ${codeOf(text)}`;
    }
  } catch (error) {
    const reason = controller.signal.reason;
    if (reason === "leave") end = "aborted";
    else if (reason === "patience") end = "timeout";
    else {
      end = "connection";
      status = (error as { code?: string }).code ?? (error as Error).message;
    }
  } finally {
    clearTimeout(patience);
    if (leave !== undefined) clearTimeout(leave);
  }
  ledger.ended(record, end, status);
  return end;
}

function codeOf(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: { code?: string } };
    return parsed.error?.code ?? "?";
  } catch {
    return "?";
  }
}
