/**
 * Weighted fair queuing across replicas (issue 24): the flows (keys, tenants) in a replica's
 * advertisement on a lane budget, and the portions of their weights the fleet's answer gives back.
 *
 * One gateway serves the flows waiting in a class by weight (core/fair-queue.ts). Across
 * replicas, each one advertises per lane budget, after its counts per class, the flows waiting in
 * each class with their weights (`encodeAdvert`). The grant scripts then give each waiting
 * replica a part of the lane proportional to the weights it serves: a flow waiting on k replicas
 * counts 1/k of its weight on each (`lane_parts` in the scripts' prelude). A replica serving A
 * alone gets half of A's share; the one serving A and B gets A's other half and B's share. And
 * `advertise.lua` answers, for this replica's flows that wait elsewhere too, on how many replicas
 * they wait (`parseSpreads`): the replica's own fair queue then serves such a flow at 1/k of its
 * weight (`PortionSink.setPortions`), so inside its part of the lane A gets only A's half.
 *
 * Bounded: at most `MAX_ADVERTISED_FLOWS` flows per class, those with the most waiters; the rest
 * go as one entry `@rest` with their weights added up, counted as this replica's alone (a flow
 * among them that also waits elsewhere is then counted on each replica in full: the error stays
 * on the flows past the cap, and only while more than that many wait in one class here).
 */
import { ANONYMOUS, type Flow } from "../../core/fair-queue.js";
import type { ClassCounts, FlowCounts, LaneWaiting, PortionSink } from "../../core/lane-waiting.js";
import type { Rank } from "../../core/priority.js";

/** Flows advertised per class of a lane; the others are folded into one `@rest` entry. */
export const MAX_ADVERTISED_FLOWS = 16;

/** The token of calls with no configured key (one flow fleet-wide, as on one gateway). */
const ANONYMOUS_TOKEN = "@anon";
/** The token of the flows past the cap (`encodeURIComponent` never writes `@`: no name collides). */
const REST_TOKEN = "@rest";

/** A flow's name in the advertisement: URI-encoded (no spaces or newlines), `@anon` for anonymous. */
export function flowToken(flow: Flow): string {
  return flow === ANONYMOUS || flow.name === "" ? ANONYMOUS_TOKEN : encodeURIComponent(flow.name);
}

/** What one replica advertises on one lane budget (several lanes may share a budget), and where the answer goes. */
export class LaneAdvert {
  readonly counts: ClassCounts = [0, 0, 0];
  readonly flows: FlowCounts = [new Map(), new Map(), new Map()];
  readonly sinks: PortionSink[] = [];

  add(w: LaneWaiting): void {
    for (let r = 0; r < 3; r++) {
      this.counts[r]! += w.counts[r]!;
      const into = this.flows[r]!;
      for (const [flow, n] of w.flows[r]!) into.set(flow, (into.get(flow) ?? 0) + n);
    }
    this.sinks.push(w.queue);
  }

  get empty(): boolean {
    return this.counts[0] + this.counts[1] + this.counts[2] === 0;
  }

  /**
   * The hash field's value: `"i d b"`, then one line per flow, `"<class> <weight> <token>"`
   * (class 0 = interactive), the flows with the most waiters first, at most the cap per class.
   */
  encode(): string {
    const lines = [this.counts.join(" ")];
    for (let r = 0; r < 3; r++) {
      const flows = [...this.flows[r]!].filter(([, n]) => n > 0);
      flows.sort((a, b) => b[1] - a[1]);
      let rest = 0;
      for (let i = 0; i < flows.length; i++) {
        const flow = flows[i]![0];
        if (i < MAX_ADVERTISED_FLOWS) lines.push(`${r} ${flow.weight} ${flowToken(flow)}`);
        else rest += flow.weight;
      }
      if (rest > 0) lines.push(`${r} ${rest} ${REST_TOKEN}`);
    }
    return lines.join("\n");
  }

  /**
   * The answer of `advertise.lua` for this budget: lines `"<class> <replicas> <token>"` for this
   * replica's flows that wait on other replicas too (class c counts the replicas where the flow
   * waits in class c or better). Each lane's queue then serves those flows at 1/replicas of their
   * weight in that class, and every other flow at its full weight.
   */
  applySpreads(answer: string): void {
    const portions: [Map<Flow, number>, Map<Flow, number>, Map<Flow, number>] = [
      new Map(),
      new Map(),
      new Map(),
    ];
    const byToken = new Map<string, Flow>();
    for (const flows of this.flows) for (const flow of flows.keys()) byToken.set(flowToken(flow), flow);
    for (const { rank, spread, token } of parseSpreads(answer)) {
      const flow = byToken.get(token);
      if (flow !== undefined) portions[rank].set(flow, 1 / spread);
    }
    for (const sink of this.sinks) for (let r = 0; r < 3; r++) sink.setPortions(r as Rank, portions[r]!);
  }
}

/** The flows' tokens of an advertisement's value (`encode`). */
function tokensOf(value: string): Set<string> {
  const tokens = new Set<string>();
  const lines = value.split("\n");
  for (let i = 1; i < lines.length; i++) {
    const token = lines[i]!.split(" ")[2];
    if (token !== undefined) tokens.add(token);
  }
  return tokens;
}

/** Whether `now` (an advertisement's value) names a flow `before` did not: this replica's part grew. */
export function flowJoined(before: string | undefined, now: string): boolean {
  if (now === "") return false;
  const old = before === undefined ? new Set<string>() : tokensOf(before);
  for (const token of tokensOf(now)) if (!old.has(token)) return true;
  return false;
}

/** Parses `advertise.lua`'s spreads for one budget (malformed lines are skipped). */
export function parseSpreads(answer: string): { rank: Rank; spread: number; token: string }[] {
  const out: { rank: Rank; spread: number; token: string }[] = [];
  for (const line of answer.split("\n")) {
    const [r, s, token] = line.split(" ");
    const rank = Number(r);
    const spread = Number(s);
    if (token === undefined || !(rank === 0 || rank === 1 || rank === 2) || !(spread >= 1)) continue;
    out.push({ rank, spread, token });
  }
  return out;
}
