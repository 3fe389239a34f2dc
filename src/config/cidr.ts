/** `trust_proxy`'s entries: IP addresses and CIDR blocks, as `node:net`'s BlockList takes them. */
import { isIP } from "node:net";

/** A `trust_proxy` entry as the config normalized it: an address and its prefix length. */
export interface Cidr {
  readonly address: string;
  readonly prefix: number;
  readonly family: "ipv4" | "ipv6";
}

/** Parses `10.0.0.0/8`, `::1/128` or a bare address (a /32 or /128); undefined when it is neither. */
export function parseCidr(text: string): Cidr | undefined {
  const [address = "", bits, extra] = text.trim().split("/");
  if (extra !== undefined) return undefined;
  const version = isIP(address);
  if (version === 0) return undefined;
  const family = version === 4 ? "ipv4" : "ipv6";
  const max = version === 4 ? 32 : 128;
  const prefix = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : Number.NaN;
  if (!(prefix >= 0 && prefix <= max)) return undefined;
  return { address, prefix, family };
}
