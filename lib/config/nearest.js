// The known name nearest to a mistyped one, by edit distance, so an unknown
// flag or key can be answered with "did you mean ...?".

/**
 * Levenshtein distance: the fewest single-character insertions, deletions
 * and substitutions that turn `a` into `b`.
 */
export function editDistance(a, b) {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = row;
  }
  return previous[b.length];
}

/**
 * The name among `names` closest to `name`, when it is close enough to be
 * the one meant: within a third of the name's length (at least 2 edits).
 * @returns {string|undefined}
 */
export function nearest(name, names) {
  let best;
  let bestDistance = Math.max(2, Math.floor(name.length / 3)) + 1;
  for (const candidate of names) {
    const distance = editDistance(name, candidate);
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  return best;
}
