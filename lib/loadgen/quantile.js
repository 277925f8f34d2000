// Percentiles: one definition for every figure the load generator and the
// benchmarks report (scripts/results/), so a p99 means the same wherever it
// is read. The nearest rank: the q-quantile of n values is the one of rank
// ceil(q·n), counting from 1 in ascending order (p99 of 100 values is the
// 99th smallest, p50 of 4 the 2nd). Never interpolated: every figure is a
// value that was measured.

/** The rank (1..count) of the q-quantile (0..1) of `count` values. */
export function rankOf(q, count) {
  return Math.min(count, Math.max(1, Math.ceil(q * count)));
}

/**
 * The q-quantile (0..1) of a list of numbers, in any order; 0 when empty.
 * @param {number[]} values
 * @param {number} q
 */
export function quantile(values, q) {
  if (values.length === 0) return 0;
  const sorted = Float64Array.from(values).sort();
  return sorted[rankOf(q, sorted.length) - 1];
}
