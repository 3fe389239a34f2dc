/**
 * Who is on the other end of a request, as far as the gateway can prove it (DESIGN §3.1, "Who is
 * local"). Loopback callers are trusted in two places — open mode without keys, and the admin
 * routes (`/metrics`, telemetry, the dashboard) — so "local" must not be something a remote
 * client can claim.
 *
 * Two rules make it so:
 *
 * - A reverse proxy on the same host connects from loopback for every caller it forwards. A
 *   loopback connection that carries a forwarding header (`X-Forwarded-For`, `Forwarded`,
 *   `X-Real-IP`) is therefore not local unless its peer is a proxy named in `trust_proxy`.
 * - A trusted proxy's headers are believed only for the hops they vouch for, and a request is
 *   local only when *every* address in *every* forwarding header is loopback. A proxy appends the
 *   peer it saw to the header it manages, so a remote client cannot erase itself from that
 *   header; whichever header the proxy manages, a client's own `127.0.0.1` beside it does not make
 *   the request local. (Reading only one header would let a client forge the other one, the header
 *   the proxy does not touch.)
 *
 * The client's address for the log is the right-most address of `X-Forwarded-For` (or of
 * `Forwarded`'s `for=` list) that is not a trusted proxy: the first hop no trusted proxy vouched
 * for, as Express's `trust proxy` reads it.
 */

import type { IncomingMessage } from "node:http";
import { BlockList, isIP } from "node:net";
import type { Cidr } from "../config/cidr.js";

/** True for 127.0.0.0/8, ::1 and their IPv4-mapped forms. */
export function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false;
  return address === "::1" || address.startsWith("127.") || address.startsWith("::ffff:127.");
}

/** The request headers a proxy uses to say whom it forwards for. */
const FORWARDING = ["x-forwarded-for", "forwarded", "x-real-ip"] as const;

export class ProxyTrust {
  readonly #trusted = new BlockList();
  readonly #any: boolean;

  constructor(cidrs: readonly Cidr[]) {
    // BlockList matches IPv4-mapped IPv6 peers (`::ffff:10.0.0.1`) against IPv4 subnets too.
    for (const c of cidrs) this.#trusted.addSubnet(c.address, c.prefix, c.family);
    this.#any = cidrs.length > 0;
  }

  /** True when `address` is a proxy named in `trust_proxy`. */
  trusts(address: string | undefined): boolean {
    if (!this.#any || address === undefined) return false;
    const version = isIP(address);
    return version !== 0 && this.#trusted.check(address, version === 4 ? "ipv4" : "ipv6");
  }

  /**
   * True when the caller is provably on this host: a loopback peer with no forwarding header, or a
   * trusted proxy whose every forwarded hop is loopback.
   */
  isLocal(req: IncomingMessage): boolean {
    const peer = req.socket.remoteAddress;
    if (!isLoopback(peer)) return false;
    for (const name of FORWARDING) {
      const value = req.headers[name];
      if (value === undefined) continue;
      if (!this.trusts(peer)) return false;
      for (const hop of hopsOf(name, value)) if (!isLoopback(hop)) return false;
    }
    return true;
  }

  /**
   * The caller's address: the peer, or — when the peer is a trusted proxy — the right-most hop of
   * `X-Forwarded-For` (else `Forwarded`) that is not itself a trusted proxy.
   */
  clientAddress(req: IncomingMessage): string | undefined {
    let address = req.socket.remoteAddress;
    if (!this.trusts(address)) return address;
    const xff = req.headers["x-forwarded-for"];
    const chain =
      xff !== undefined ? hopsOf("x-forwarded-for", xff) : hopsOf("forwarded", req.headers.forwarded);
    for (let i = chain.length - 1; i >= 0 && this.trusts(address); i--) address = chain[i];
    return address;
  }
}

/** The addresses a forwarding header lists, left (farthest) to right (nearest); unparseable hops kept as written. */
export function hopsOf(name: string, value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  const text = Array.isArray(value) ? value.join(",") : value;
  if (name !== "forwarded") return text.split(",").map((hop) => stripPort(hop.trim()));
  // RFC 7239: `for=192.0.2.43, for="[2001:db8::1]:4711";proto=https`; a hop without `for=` names nobody.
  const hops: string[] = [];
  for (const element of text.split(",")) {
    for (const pair of element.split(";")) {
      const eq = pair.indexOf("=");
      if (eq < 0 || pair.slice(0, eq).trim().toLowerCase() !== "for") continue;
      hops.push(
        stripPort(
          pair
            .slice(eq + 1)
            .trim()
            .replace(/^"(.*)"$/, "$1"),
        ),
      );
    }
  }
  return hops;
}

/** `[::1]:4711` → `::1`, `10.0.0.1:80` → `10.0.0.1`; anything else as it is. */
function stripPort(hop: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(hop);
  if (bracketed !== null) return bracketed[1]!;
  const v4 = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(hop);
  return v4 !== null ? v4[1]! : hop;
}
