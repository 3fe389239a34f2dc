/**
 * The gateway's own account, read over HTTP (`GET /api/telemetry/lanes`) so that an external
 * gateway (`--gateway URL`) is read the same way as one started in process: the leak check
 * after the drain (every count back to zero) and the pods' widths.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { request } from "undici";

/** The parts of the snapshot (DESIGN §4) the load runner reads. */
export interface TelemetrySnapshot {
  lanes: Array<{
    lane: string;
    limit: number;
    reserve: number;
    queue_limit: number;
    inflight: number;
    queued: number;
  }>;
  pods: Array<{ id: string; width: number; ceiling: number; floor: number; inflight: number }>;
  groups: Array<{ group: string; limit: number; inflight: number }>;
  keys: Array<{ key: string; inflight: number; queued: number }>;
  admission?: { inflight: number; max_inflight: number; admitted: number; max_queued: number };
}

/** Reads the gateway's snapshot. */
export async function readSnapshot(gatewayUrl: string): Promise<TelemetrySnapshot> {
  const res = await request(`${gatewayUrl}/api/telemetry/lanes`);
  const text = await res.body.text();
  if (res.statusCode !== 200) {
    throw new Error(
      `GET ${gatewayUrl}/api/telemetry/lanes answered ${res.statusCode}: ${text.slice(0, 200)}`,
    );
  }
  return JSON.parse(text) as TelemetrySnapshot;
}

/** Every reservation the snapshot still shows, one line each (empty when all are back to zero). */
export function heldReservations(s: TelemetrySnapshot): { count: number; detail: string[] } {
  const detail: string[] = [];
  let count = 0;
  const held = (what: string, n: number) => {
    if (n === 0) return;
    count += n;
    detail.push(`${what}: ${n}`);
  };
  for (const l of s.lanes) {
    held(`lane ${l.lane} in flight`, l.inflight);
    held(`lane ${l.lane} queued`, l.queued);
  }
  for (const p of s.pods) held(`pod ${p.id} in flight`, p.inflight);
  for (const g of s.groups) held(`group ${g.group} in flight`, g.inflight);
  for (const k of s.keys) held(`key ${k.key} in flight + queued`, k.inflight + k.queued);
  if (s.admission !== undefined) held("admission admitted", s.admission.admitted);
  return { count, detail };
}

/**
 * Polls until nothing is held or `capMs` passes: the last answer of a call reaches its client
 * just before the gateway gives its slots back, so one read right after the drain could race.
 */
export async function settledReservations(
  gatewayUrl: string,
  capMs: number,
): Promise<{ count: number; detail: string[]; snapshot: TelemetrySnapshot }> {
  const deadline = performance.now() + capMs;
  for (;;) {
    const snapshot = await readSnapshot(gatewayUrl);
    const held = heldReservations(snapshot);
    if (held.count === 0 || performance.now() > deadline) return { ...held, snapshot };
    await sleep(20);
  }
}

/** The gateway's settings as its snapshot shows them: what `config_hash` covers for an external gateway. */
export function observedSettings(s: TelemetrySnapshot): Record<string, unknown> {
  return {
    lanes: s.lanes.map((l) => ({
      lane: l.lane,
      limit: l.limit,
      reserve: l.reserve,
      queue_limit: l.queue_limit,
    })),
    pods: s.pods.map((p) => ({ ceiling: p.ceiling, floor: p.floor })),
    groups: s.groups.map((g) => ({ group: g.group, limit: g.limit })),
    admission:
      s.admission === undefined
        ? null
        : { max_inflight: s.admission.max_inflight, max_queued: s.admission.max_queued },
  };
}
