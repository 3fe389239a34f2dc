/**
 * Reading a script's reply (`script-calls.ts`, `grant-calls.ts`): the shape checks every typed
 * call makes once, and the error a reply of another shape is refused with.
 */
import type { ScriptName } from "./lua/scripts.generated.js";

/** A script answered with a reply its caller cannot read: `expected` says what was due. */
export class ScriptReplyError extends Error {
  override readonly name = "ScriptReplyError";
  constructor(
    readonly script: ScriptName,
    readonly expected: string,
    readonly reply: unknown,
  ) {
    super(`${script}.lua answered ${JSON.stringify(reply)?.slice(0, 200)}, expected ${expected}`);
  }
}

export const NONE: readonly number[] = Object.freeze([]);

/** `reply` as an array of `length` elements (any length when undefined). */
export function list(script: ScriptName, reply: unknown, length?: number): unknown[] {
  if (!Array.isArray(reply) || (length !== undefined && reply.length !== length))
    throw new ScriptReplyError(script, length === undefined ? "an array" : `${length} elements`, reply);
  return reply;
}

/** An integer reply element (Redis integers arrive as numbers, counts written by Lua as strings too). */
export function int(script: ScriptName, value: unknown): number {
  const n = Number(value);
  if (!Number.isFinite(n)) throw new ScriptReplyError(script, "an integer", value);
  return n;
}

/** Elements `from` to `from + count` as integers (counts, ms). */
export function ints(script: ScriptName, reply: readonly unknown[], from: number, count: number): number[] {
  const out = new Array<number>(count);
  for (let i = 0; i < count; i++) out[i] = int(script, reply[from + i]);
  return out;
}

/** Elements `from` to `from + count` as numbers: bucket levels, a non-finite one the caller's to skip. */
export function levelsOf(reply: readonly unknown[], from: number, count: number): number[] {
  const out = new Array<number>(count);
  for (let i = 0; i < count; i++) out[i] = Number(reply[from + i]);
  return out;
}
