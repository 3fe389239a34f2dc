/**
 * What a replica still counts once the traffic has stopped, from its own snapshot
 * (`/api/telemetry/lanes`): calls in flight and queued per lane, in flight per pod and group,
 * in flight and queued per key, the admission bound's in flight and admitted. Every one should
 * be 0; each one that is not is named.
 */
import type { Replica } from "./replicas.js";

export interface ReplicaLeftovers {
  readonly replica: number;
  /** "lane m: inflight 1" …; empty when nothing is counted. */
  readonly counted: string[];
  /** The snapshot could not be read (the replica did not answer). */
  readonly unread?: boolean;
}

export async function replicaLeftovers(replica: Replica): Promise<ReplicaLeftovers> {
  const snapshot = await replica.snapshot();
  if (snapshot === undefined) return { replica: replica.index, counted: ["snapshot unread"], unread: true };
  const counted: string[] = [];
  const note = (what: string, fields: Record<string, number | undefined>) => {
    for (const [name, value] of Object.entries(fields))
      if (value !== undefined && value !== 0) counted.push(`${what}: ${name} ${value}`);
  };
  for (const l of snapshot.lanes)
    note(`lane ${l.lane}`, { inflight: l.inflight, fleet_inflight: l.fleet_inflight, queued: l.queued });
  for (const p of snapshot.pods)
    note(`pod ${p.id}`, { inflight: p.inflight, fleet_inflight: p.fleet_inflight });
  for (const g of snapshot.groups)
    note(`group ${g.group}`, { inflight: g.inflight, fleet_inflight: g.fleet_inflight });
  for (const k of snapshot.keys) note(`key ${k.key}`, { inflight: k.inflight, queued: k.queued });
  const a = snapshot.admission;
  if (a !== undefined)
    note("admission", { inflight: a.inflight, fleet_inflight: a.fleet_inflight, admitted: a.admitted });
  return { replica: replica.index, counted };
}
