// Pusher's signatures: hex HMAC-SHA256 with the app's secret, over a text
// each kind of check builds its own way (channel auth, user sign-in, the
// HTTP API's request, webhooks). Every comparison is in constant time, on
// buffers of equal length, so an attacker learns nothing from how long a
// refusal took.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { sameText } from '../core/same-text.js';

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
