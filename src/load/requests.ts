/**
 * The bodies a load run sends, one distinct prompt (or page) per request so that every answer's
 * bytes are distinct too, and the exact answer each must get back (src/sim/answer.ts).
 */
import { fnv1a, Mulberry32 } from "../sim/random.js";
import type { ExpectedAnswer } from "./pods.js";
import type { ClientGroup, RequestShape } from "./types.js";

const ROUTES = { chat: "/v1/chat/completions", embedding: "/v1/embeddings" } as const;

/**
 * The request `index` of `group`, through sluice (`priority` sent) or straight to a pod, and the
 * answer `expected` (the pods' own builders: src/sim/answer.ts, src/sim/provider-answer.ts) says
 * it must get.
 */
export function prepareRequest(
  group: ClientGroup,
  index: number,
  throughSluice: boolean,
  expected: ExpectedAnswer,
): { path: string; body: Buffer; headers: Record<string, string>; expected: Buffer } {
  const r = group.request;
  const label = `${group.name} #${index}`;
  const headers: Record<string, string> = {};
  if (throughSluice && group.priority !== undefined) headers["x-sluice-priority"] = group.priority;
  if (group.idempotencyKeys === true) headers["idempotency-key"] = `${group.name}-${index}`;
  if (group.tenant !== undefined) {
    headers.authorization = `Bearer ${group.tenant.token}`;
    headers["x-sim-tenant"] = group.tenant.id;
  }
  if (r.kind === "echo") {
    const body = pageBytes(label, r.bodyBytes ?? 4096);
    headers["content-type"] = "application/octet-stream";
    return {
      path: `${r.path ?? "/ocr/"}${encodeURIComponent(group.name)}-${index}`,
      body,
      headers,
      expected: Buffer.from(expected("echo", body)),
    };
  }
  const body = Buffer.from(JSON.stringify(jsonBody(r, label)));
  headers["content-type"] = "application/json";
  return {
    path: ROUTES[r.kind],
    body,
    headers,
    expected: Buffer.from(expected(r.kind, body)),
  };
}

function jsonBody(r: RequestShape, label: string): Record<string, unknown> {
  if (r.kind === "embedding") return { model: r.model, input: [`${label} first`, `${label} second`] };
  const document = r.promptWords === undefined ? "" : `\n\n${words(label, r.promptWords)}`;
  return {
    model: r.model,
    messages: [{ role: "user", content: `${label}: summarise the findings so far${document}` }],
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

/** Prose for the tokenizer: `n` words from a fixed list, in an order drawn from `label` (distinct per request). */
function words(label: string, n: number): string {
  const rnd = new Mulberry32(fnv1a(label));
  const out = new Array<string>(n);
  for (let i = 0; i < n; i++) out[i] = WORDS[Math.floor(rnd.next() * WORDS.length)]!;
  return out.join(" ");
}

const WORDS = (
  "the account budget token minute request provider answer summary document queue limit replica " +
  "throttle latency window signal report finding section table figure review incident metric share " +
  "of and to in for with on by from at as is was were be been has have had not but which that"
).split(" ");
