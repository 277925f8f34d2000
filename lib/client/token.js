// Where the client's token comes from: a fixed string, or a function the
// application gives to fetch a fresh one (from its own server) before each
// connection and each refresh. Only a function can renew: with a fixed
// string, an expired token ends the client.

// Refresh this long before exp, but never earlier than a quarter of the
// token's remaining life before it: a short-lived token is not refreshed in a loop.
const REFRESH_LEAD_MS = 30000;

export class TokenSource {
  /**
   * @param {object} options
   * @param {string} [options.token] a fixed token
   * @param {() => Promise<string>|string} [options.getToken] returns a fresh token
   */
  constructor({ token, getToken }) {
    if (token !== undefined && typeof token !== 'string') throw new TypeError('token must be a string');
    if (getToken !== undefined && typeof getToken !== 'function') throw new TypeError('getToken must be a function');
    if (token !== undefined && getToken !== undefined) throw new TypeError('give token or getToken, not both');
    this.token = token;
    this.getToken = getToken;
  }

  /** Whether the client authenticates at all. */
  get configured() {
    return this.token !== undefined || this.getToken !== undefined;
  }

  /** Whether a new token can be had once this one expires. */
  get renewable() {
    return this.getToken !== undefined;
  }

  /** @returns {Promise<string>} */
  async get() {
    if (this.getToken === undefined) return this.token;
    const token = await this.getToken();
    if (typeof token !== 'string' || token === '') throw new TypeError('getToken() must resolve to a token string');
    return token;
  }

  /** @returns {number} ms from now to refresh a token expiring at `expiresAt` (ms since the epoch) */
  static refreshDelay(expiresAt, now = Date.now()) {
    const left = expiresAt - now;
    return Math.max(0, left - Math.min(REFRESH_LEAD_MS, left / 4));
  }
}
