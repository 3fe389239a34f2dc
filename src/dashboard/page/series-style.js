// @ts-check
/**
 * Pure rules for how the page draws and lists things, kept apart from the DOM so they can be
 * tested as they are in Node (test/dashboard/series-style.test.ts).
 */

/**
 * Dash patterns for the pods' width lines. Pods of one lane often share a width for minutes (two
 * pods at their ceiling of 8): drawn alike, one line hides the other exactly. Each pod gets its own
 * pattern and the earlier ones a wider stroke, so two equal widths read as a thick line with a
 * thinner, differently dashed one on it.
 */
const DASHES = [[], [10, 5], [3, 4], [14, 4, 3, 4], [6, 6], [2, 6], [18, 6], [8, 3, 2, 3]];

/**
 * The stroke of pod number `i` (in the table's order) out of `count`.
 * @param {number} i
 * @param {number} count
 * @returns {{ dash: number[], width: number }}
 */
export function podStroke(i, count) {
  const dash = DASHES[i % DASHES.length] ?? [];
  // From 4 px for the first down to 1.5 px for the last: the later ones sit visibly on the earlier.
  const width = count <= 1 ? 2 : 4 - (2.5 * i) / (count - 1);
  return { dash, width: Math.round(width * 10) / 10 };
}

/**
 * The snapshot's GPU groups without the entry that is the gateway's admission bound (the snapshot
 * lists it among the groups under the name `gateway` for older readers; the page shows it in its
 * own box, not as a GPU group).
 * @param {any[]} groups GroupSnapshot[]
 * @param {any} admission AdmissionSnapshot or undefined
 */
export function gpuGroups(groups, admission) {
  if (!admission) return groups;
  return groups.filter(
    (g) =>
      !(g.group === "gateway" && g.limit === admission.max_inflight && g.inflight === admission.inflight),
  );
}
