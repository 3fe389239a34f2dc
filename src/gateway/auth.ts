/**
 * Who is calling: the model routes' authenticate phase and the admin routes both ask here.
 * Bearer tokens are compared as SHA-256 digests in
 * constant time against every configured key, so neither the token nor which key almost matched
 * leaks through timing. With no keys configured the gateway is open, but only to loopback
 * clients unless `auth.open: true`.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { ClientKeyConfig } from "../config/schema.js";
import { HttpError } from "./http-error.js";

/** The identity a request runs as; `key` is null in open mode. */
export interface Caller {
  key: ClientKeyConfig | null;
  /** Key id for logs and metrics (`anonymous` in open mode). */
  id: string;
}

const ANONYMOUS: Caller = { key: null, id: "anonymous" };

/** True for 127.0.0.0/8, ::1 and their IPv4-mapped forms. */
export function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false;
  return address === "::1" || address.startsWith("127.") || address.startsWith("::ffff:127.");
}

export class Authenticator {
  constructor(
    readonly keys: readonly ClientKeyConfig[],
    readonly adminKeys: readonly { id: string; sha256: Buffer }[],
    readonly open: boolean,
  ) {}

  /** Parses `Authorization: Bearer …`; undefined when absent. */
  static bearer(header: string | undefined): string | undefined {
    if (header === undefined) return undefined;
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    return match?.[1];
  }

  /** The matching key, or undefined; compares against every key to keep timing flat. */
  match<K extends { sha256: Buffer }>(token: string, keys: readonly K[]): K | undefined {
    const digest = createHash("sha256").update(token).digest();
    let found: K | undefined;
    for (const k of keys) if (timingSafeEqual(digest, k.sha256) && found === undefined) found = k;
    return found;
  }

  /** Phase entry: the caller, or an `HttpError(401)` naming what was wrong. */
  authenticate(req: IncomingMessage): Caller {
    const header = req.headers.authorization;
    if (this.keys.length === 0) {
      if (this.open || isLoopback(req.socket.remoteAddress)) return ANONYMOUS;
      throw new HttpError(
        401,
        "unauthorized",
        "this gateway has no client keys and accepts unauthenticated calls only from loopback (set auth.open: true or configure auth.keys)",
      );
    }
    const token = Authenticator.bearer(header);
    if (token === undefined) {
      throw new HttpError(
        401,
        "unauthorized",
        header === undefined
          ? "missing Authorization header (expected: Bearer <key>)"
          : "malformed Authorization header (expected: Bearer <key>)",
        "header:authorization",
      );
    }
    const key = this.match(token, this.keys);
    if (key === undefined)
      throw new HttpError(401, "unauthorized", "unknown API key", "header:authorization");
    return { key, id: key.id };
  }

  /** Admin routes: open on loopback, else an admin key is required. */
  authorizeAdmin(req: IncomingMessage): void {
    if (isLoopback(req.socket.remoteAddress)) return;
    const token = Authenticator.bearer(req.headers.authorization);
    if (token !== undefined && this.match(token, this.adminKeys) !== undefined) return;
    throw new HttpError(
      401,
      "unauthorized",
      "admin routes need an admin key off loopback",
      "header:authorization",
    );
  }
}
