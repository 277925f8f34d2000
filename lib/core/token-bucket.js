// A connection's token bucket: `rate` per second, bursts of up to `rate`.
// It is made at the first spend, full, so a connection that never spends
// holds none; the rate is given at each take, since it may change meanwhile
// (a Pusher app's).

export class TokenBucket {
  /** @param {number} rate tokens per second, the bucket's size */
  constructor(rate) {
    this.left = rate;
    this.at = Date.now(); // when `left` was counted
  }

  /** @returns {boolean} whether a token was taken */
  take(rate) {
    const now = Date.now();
    const tokens = Math.min(rate, this.left + ((now - this.at) * rate) / 1000);
    this.at = now;
    if (tokens < 1) {
      this.left = tokens;
      return false;
    }
    this.left = tokens - 1;
    return true;
  }
}
