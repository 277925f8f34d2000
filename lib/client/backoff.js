// Reconnect delays: capped exponential backoff with full jitter.
//
// Full jitter (a uniform draw over the whole window, not window ± a little)
// is what turns a worker restart that drops 100k clients at once into a
// spread-out ramp instead of a synchronised spike of reconnects.

/**
 * Delay before reconnect attempt number `attempt` (0 for the first retry).
 * @param {number} attempt
 * @param {{base: number, cap: number}} window ms: the first window, and the largest
 * @param {() => number} [random] uniform in [0, 1)
 * @returns {number} ms, in [0, min(cap, base * 2^attempt))
 */
export function backoffDelay(attempt, { base, cap }, random = Math.random) {
  return random() * Math.min(cap, base * 2 ** attempt);
}
