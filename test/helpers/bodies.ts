/** What tests send and read over HTTP: a chat body, a key's digest, an SSE body's events. */
import { createHash } from "node:crypto";

/** A chat body for `model` with one user message, and any other fields in `extra`. */
export function chatBody(model: string, content = "hello", extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ model, messages: [{ role: "user", content }], ...extra });
}

/** SHA-256 of a bearer token as hex, the form `auth.keys[].sha256` takes. */
export function sha256hex(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** The `data:` payloads of an SSE body, in order. */
export function sseData(text: string): string[] {
  return text
    .split("\n\n")
    .filter((event) => event.startsWith("data: "))
    .map((event) => event.slice("data: ".length));
}
