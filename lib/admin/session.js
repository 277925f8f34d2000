// The admin page's sessions: a cookie holding `<id>.<expiresAt>.<signature>`,
// the signature an HMAC-SHA256 of the rest under a key drawn when the process
// starts. The expiry travels inside what is signed, so a cookie cannot be
// made to last longer; a restart (a new key) ends every session; logging out
// ends one before its time. Nothing runs between requests: the logged-out
// sessions are forgotten as they expire, when the next one logs out.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const COOKIE = 'gateway_admin';
export const SESSION_MS = 8 * 3600 * 1000;

export class AdminSessions {
  constructor() {
    this.key = randomBytes(32);
    this.ended = new Map(); // id -> expiresAt of a session logged out early
  }

  /** @returns {string} a fresh session's cookie value, valid SESSION_MS from `now` */
  issue(now = Date.now()) {
    const payload = `${randomBytes(16).toString('base64url')}.${now + SESSION_MS}`;
    return `${payload}.${this.sign(payload).toString('base64url')}`;
  }

  /** @returns {{id: string, expiresAt: number} | undefined} the session `value` holds, if it is genuine, unexpired and not logged out */
  verify(value, now = Date.now()) {
    const parts = typeof value === 'string' ? value.split('.') : [];
    if (parts.length !== 3) return undefined;
    const [id, expires, signature] = parts;
    const given = Buffer.from(signature, 'base64url');
    const expected = this.sign(`${id}.${expires}`);
    // Compared in constant time: how far a forged signature matches must not show in the answer's timing.
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    const expiresAt = Number(expires);
    if (!(expiresAt > now) || this.ended.has(id)) return undefined;
    return { id, expiresAt };
  }

  /** Logs a session out before its expiry. */
  end({ id, expiresAt }, now = Date.now()) {
    for (const [other, until] of this.ended) if (until <= now) this.ended.delete(other);
    this.ended.set(id, expiresAt);
  }

  sign(payload) {
    return createHmac('sha256', this.key).update(payload).digest();
  }
}

/** @returns {string|undefined} the session cookie's value in a Cookie header */
export function sessionCookie(header) {
  for (const pair of header?.split(';') ?? []) {
    const at = pair.indexOf('=');
    if (at !== -1 && pair.slice(0, at).trim() === COOKIE) return pair.slice(at + 1).trim();
  }
  return undefined;
}

/** The Set-Cookie header that holds `value` (scoped to the admin page, never readable by script); none: clears it. */
export function setCookie(value) {
  const attributes = `HttpOnly; SameSite=Strict; Path=/admin; Max-Age=${value === undefined ? 0 : SESSION_MS / 1000}`;
  return `${COOKIE}=${value ?? ''}; ${attributes}`;
}
