// A token bucket kept on the connection itself, under the keys its user
// chose: `rate` per second, bursts of up to `rate`, full before the first
// use, so a connection that never spends holds no bucket at all.

/** @returns {boolean} whether a token was taken */
export function takeToken(conn, rate, kLeft, kAt) {
  const now = Date.now();
  const tokens = conn[kLeft] === undefined ? rate : Math.min(rate, conn[kLeft] + ((now - conn[kAt]) * rate) / 1000);
  conn[kAt] = now;
  if (tokens < 1) {
    conn[kLeft] = tokens;
    return false;
  }
  conn[kLeft] = tokens - 1;
  return true;
}
