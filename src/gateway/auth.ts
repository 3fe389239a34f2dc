/**
 * Who is calling: the model routes' authenticate phase and the admin routes both ask here.
 * Bearer tokens are compared as SHA-256 digests in
 * constant time against every configured key, so neither the token nor which key almost matched
 * leaks through timing. With no keys configured the gateway is open, but only to local
 * clients unless `auth.open: true`; who is local, behind a proxy too, is `client-address.ts`'s call.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { ClientKeyConfig, GatewayConfig } from "../config/schema.js";
import { ProxyTrust } from "./client-address.js";
import { HttpError } from "./http-error.js";

/** The identity a request runs as; `key` is null in open mode. */
export interface Caller {
  key: ClientKeyConfig | null;
  /** Key id for logs and metrics (`anonymous` in open mode). */
  id: string;
}

const ANONYMOUS: Caller = { key: null, id: "anonymous" };

export class Authenticator {
  constructor(
    readonly keys: readonly ClientKeyConfig[],
    readonly adminKeys: readonly { id: string; sha256: Buffer }[],
    readonly open: boolean,
    /** `trust_proxy`: which peers' forwarding headers are believed when deciding who is local. */
    readonly proxies: ProxyTrust,
  ) {}

  /** The authenticator a config asks for (at start and on each reload). */
  static of(config: GatewayConfig): Authenticator {
    const { auth, admin, trustProxy } = config;
    return new Authenticator(auth.keys, admin.keys, auth.open, new ProxyTrust(trustProxy));
  }

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
      if (this.open || this.proxies.isLocal(req)) return ANONYMOUS;
      throw new HttpError(
        401,
        "unauthorized",
        "this gateway has no client keys and accepts unauthenticated calls only from loopback (set auth.open: true or configure auth.keys; a call forwarded by a proxy is not loopback unless trust_proxy names the proxy)",
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

  /** Admin routes: open to local callers (`client-address.ts`), else an admin key is required. */
  authorizeAdmin(req: IncomingMessage): void {
    if (this.proxies.isLocal(req)) return;
    const token = Authenticator.bearer(req.headers.authorization);
    if (token !== undefined && this.match(token, this.adminKeys) !== undefined) return;
    throw new HttpError(
      401,
      "unauthorized",
      "admin routes need an admin key off loopback (a call forwarded by a proxy is not loopback unless trust_proxy names the proxy)",
      "header:authorization",
    );
  }
}
