/**
 * The checks every chaos run must pass, as sentences naming what broke (empty: all held). The
 * chaos test asserts them one by one (so a fault whose fix has not landed can be marked `todo`
 * alone); the soak prints them and exits 1.
 */
import { type CauseLine, type Receipt, RSS_LIMIT_BYTES } from "./receipt.js";

const PHASE = {
  steady: "with no fault in force",
  during: "while the fault was in force",
  after: "after the fault was lifted",
} as const;

export function overshootFailure(c: CauseLine): string | undefined {
  if (c.violations.length === 0) return undefined;
  const worst = c.violations.reduce((a, b) =>
    b.seen - b.limit - b.allowed > a.seen - a.limit - a.allowed ? b : a,
  );
  return (
    `${c.cause}: ${c.violations.length} stretch(es) over the bound, worst ${worst.gauge} ${worst.seen} against limit ` +
    `${worst.limit} + ${worst.allowed} allowed ${PHASE[worst.phase]}, ` +
    `for ${Math.round(worst.ms)} ms at ${worst.atS} s, after ${worst.after} (${c.source})`
  );
}

export function stuckFailure(r: Receipt): string | undefined {
  if (r.stuck.length === 0) return undefined;
  const worst = r.stuck.reduce((a, b) => (b.roomMs > a.roomMs ? b : a));
  return `${r.stuck.length} waiter(s) waited with room at the pods past ${r.stuckThresholdMs} ms; worst ${worst.call} (replica ${worst.replica}, ${worst.priority}) ${Math.round(worst.roomMs)} ms`;
}

export function twiceFailure(r: Receipt): string | undefined {
  return r.runTwice.length === 0
    ? undefined
    : `calls run twice at the pods: ${r.runTwice.map((t) => `${t.id} (${t.pods.join(", ")})`).join(", ")}`;
}

export function crashFailure(r: Receipt): string | undefined {
  return r.crashes.length === 0 ? undefined : `replicas exited by themselves:\n${r.crashes.join("\n")}`;
}

export function leakFailure(r: Receipt): string | undefined {
  const redis = Object.entries(r.redisLeft.counted).map(([k, n]) => `${k}=${n}`);
  const waiting = r.redisLeft.waiting.map((w) => `waiting ${w}`);
  const replicas = r.replicasLeft.flatMap((x) => x.counted.map((c) => `replica ${x.replica} ${c}`));
  const all = [...redis, ...waiting, ...replicas];
  return all.length === 0
    ? undefined
    : `still counted ${r.settledMs} ms after the traffic stopped: ${all.join("; ")}`;
}

export function rssFailure(r: Receipt): string | undefined {
  const over = r.rss.filter((m) => m.peakMb * 1048576 > RSS_LIMIT_BYTES);
  return over.length === 0
    ? undefined
    : `RSS over ${RSS_LIMIT_BYTES / 1048576} MB: ${over.map((m) => `replica ${m.replica} peak ${m.peakMb} MB`).join(", ")}`;
}

export function failures(r: Receipt): string[] {
  return [
    ...r.causes.map(overshootFailure),
    stuckFailure(r),
    twiceFailure(r),
    crashFailure(r),
    leakFailure(r),
    rssFailure(r),
  ].filter((f): f is string => f !== undefined);
}
