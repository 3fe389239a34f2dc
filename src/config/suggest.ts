/**
 * "Did you mean" for unknown config keys: the known key nearest to a typo, when it is close enough
 * that the suggestion is more likely right than noise.
 */

/** Largest edit distance still offered as a suggestion. */
const MAX_DISTANCE = 2;

/**
 * The known key the operator most likely meant, or `undefined`. A case or separator variant
 * (`maxInflight`, `max-inflight`, `MAX_INFLIGHT` for `max_inflight`) always matches; otherwise the
 * nearest key within Levenshtein distance 2 (ties go to the first known key).
 */
export function nearestKey(typo: string, known: readonly string[]): string | undefined {
  const folded = fold(typo);
  const variant = known.find((k) => fold(k) === folded);
  if (variant !== undefined) return variant;
  let best: string | undefined;
  let bestDistance = MAX_DISTANCE + 1;
  for (const key of known) {
    const d = levenshtein(typo.toLowerCase(), key, bestDistance);
    if (d < bestDistance) {
      best = key;
      bestDistance = d;
    }
  }
  return best;
}

// Lowercase and drop separators, so camelCase, kebab-case and SCREAMING_CASE meet snake_case.
function fold(key: string): string {
  return key.toLowerCase().replace(/[-_\s]/g, "");
}

/**
 * Edit distance (insertions, deletions, substitutions) between `a` and `b`; any result ≥ `cap` is
 * reported as `cap`, which lets the caller skip hopeless pairs early.
 */
export function levenshtein(a: string, b: string, cap = Number.POSITIVE_INFINITY): number {
  if (Math.abs(a.length - b.length) >= cap) return cap;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const value = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      current.push(value);
      if (value < rowMin) rowMin = value;
    }
    if (rowMin >= cap) return cap;
    previous = current;
  }
  return Math.min(previous[b.length]!, cap);
}
