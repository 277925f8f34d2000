// The admin password check, and its lockout: five wrong passwords within a
// minute from one address lock that address out for a minute, the right
// password included. Both sides are hashed before a constant-time compare, so
// neither the password's length nor how much of it matched shows in timing.
import { createHash, timingSafeEqual } from 'node:crypto';

const MAX_FAILURES = 5;
const WINDOW_MS = 60000;
export const LOCK_MS = 60000;
const MAX_ADDRESSES = 10000; // past it the stale ones go, then the oldest: the memory stays bounded

/** What a login attempt came to: also the label of gateway_admin_logins_total. */
export const LoginResult = Object.freeze({ OK: 'ok', WRONG: 'wrong', LOCKED: 'locked' });

export class Logins {
  /**
   * @param {string} password --admin-password
   * @param {(result: string) => void} counted
   */
  constructor(password, counted) {
    this.digest = sha256(password);
    this.counted = counted;
    this.byAddress = new Map(); // address -> {failures: [times within the window], lockedUntil}
  }

  /** @returns {{result: string, retryAfterS?: number}} */
  attempt(address, password, now = Date.now()) {
    const entry = this.byAddress.get(address);
    if (entry !== undefined && entry.lockedUntil > now) return this.count({ result: LoginResult.LOCKED, retryAfterS: Math.ceil((entry.lockedUntil - now) / 1000) });
    if (typeof password === 'string' && timingSafeEqual(sha256(password), this.digest)) {
      this.byAddress.delete(address);
      return this.count({ result: LoginResult.OK });
    }
    const failures = (entry?.failures ?? []).filter((at) => now - at < WINDOW_MS);
    failures.push(now);
    const locked = failures.length >= MAX_FAILURES;
    this.remember(address, { failures: locked ? [] : failures, lockedUntil: locked ? now + LOCK_MS : 0 }, now);
    return this.count({ result: LoginResult.WRONG });
  }

  count(outcome) {
    this.counted(outcome.result);
    return outcome;
  }

  remember(address, entry, now) {
    this.byAddress.delete(address); // re-inserted last: the Map's order is the order of last failure
    this.byAddress.set(address, entry);
    if (this.byAddress.size <= MAX_ADDRESSES) return;
    for (const [other, { failures, lockedUntil }] of this.byAddress) {
      if (lockedUntil <= now && failures.every((at) => now - at >= WINDOW_MS)) this.byAddress.delete(other);
    }
    if (this.byAddress.size > MAX_ADDRESSES) this.byAddress.delete(this.byAddress.keys().next().value);
  }
}

function sha256(text) {
  return createHash('sha256').update(text).digest();
}
