// Pusher's signatures: hex HMAC-SHA256 with the app's secret, over a text
// each kind of check builds its own way (channel auth, user sign-in, the
// HTTP API's request, webhooks). Every comparison is in constant time, on
// buffers of equal length, so an attacker learns nothing from how long a
// refusal took.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

const HEX_SHA256 = /^[0-9a-f]{64}$/;

/** @returns {string} hex HMAC-SHA256 of `text` with `secret` */
export function sign(secret, text) {
  return createHmac('sha256', secret).update(text).digest('hex');
}

/** @returns {string} hex MD5 of a body (the HTTP API's body_md5) */
export function md5(text) {
  return createHash('md5').update(text).digest('hex');
}

/** Whether `given` (any value) is the hex signature of `text`, compared in constant time. */
export function signatureMatches(secret, text, given) {
  if (typeof given !== 'string' || !HEX_SHA256.test(given)) return false;
  return timingSafeEqual(Buffer.from(sign(secret, text), 'hex'), Buffer.from(given, 'hex'));
}

/**
 * Whether two strings are equal, in constant time (a body_md5 against the
 * body's). Their UTF-8 bytes are compared: a string of as many characters
 * may be longer in bytes (é is two), and timingSafeEqual throws on buffers
 * of different lengths.
 */
export function sameText(a, b) {
  if (typeof a !== 'string' || typeof b !== 'string') return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * A channel subscription's or a sign-in's `auth`: `<key>:<hex signature>`
 * of `text` (`socket_id:channel`, `socket_id:channel:channel_data`,
 * `socket_id::user::user_data`).
 */
export function authMatches(app, text, auth) {
  if (typeof auth !== 'string') return false;
  const colon = auth.indexOf(':');
  if (colon === -1 || !sameText(auth.slice(0, colon), app.key)) return false;
  return signatureMatches(app.secret, text, auth.slice(colon + 1));
}
