/**
 * The bodies a load run sends, one distinct prompt (or page) per request so that every answer's
 * bytes are distinct too, and the exact answer each must get back (src/sim/answer.ts).
 */
import { type AnswerOptions, expectedAnswer } from "../sim/answer.js";
import type { ClientGroup, RequestShape } from "./types.js";

const ROUTES = { chat: "/v1/chat/completions", embedding: "/v1/embeddings" } as const;

/** The request `index` of `group`, through sluice (`priority` sent) or straight to a pod. */
export function prepareRequest(
  group: ClientGroup,
  index: number,
  throughSluice: boolean,
  answers: AnswerOptions,
): { path: string; body: Buffer; headers: Record<string, string>; expected: Buffer } {
  const r = group.request;
  const label = `${group.name} #${index}`;
  const headers: Record<string, string> = {};
  if (throughSluice && group.priority !== undefined) headers["x-sluice-priority"] = group.priority;
  if (r.kind === "echo") {
    const body = pageBytes(label, r.bodyBytes ?? 4096);
    headers["content-type"] = "application/octet-stream";
    return {
      path: `${r.path ?? "/ocr/"}${encodeURIComponent(group.name)}-${index}`,
      body,
      headers,
      expected: Buffer.from(expectedAnswer("echo", body, answers)),
    };
  }
  const body = Buffer.from(JSON.stringify(jsonBody(r, label)));
  headers["content-type"] = "application/json";
  return {
    path: ROUTES[r.kind],
    body,
    headers,
    expected: Buffer.from(expectedAnswer(r.kind, body, answers)),
  };
}

function jsonBody(r: RequestShape, label: string): Record<string, unknown> {
  if (r.kind === "embedding") return { model: r.model, input: [`${label} first`, `${label} second`] };
  return {
    model: r.model,
    messages: [{ role: "user", content: `${label}: summarise the findings so far` }],
    ...(r.maxTokens !== undefined ? { max_tokens: r.maxTokens } : {}),
    ...(r.stream === true ? { stream: true } : {}),
  };
}

/** `size` bytes of a page upload, its label repeated: distinct per page, cheap to build. */
function pageBytes(label: string, size: number): Buffer {
  const out = Buffer.alloc(size, " ");
  out.write(label.slice(0, size));
  return out;
}
