// A connection resumed: the connectionKey CONNECTED gives (a new one each
// time) names the connection, its app and its clientId, signed with the
// app's secret, so the worker and node a client comes back to verifies it
// alone: `<connectionId>!<issued, base 36 ms>!<HMAC-SHA256, base64url>`.
// A valid key not older than the connection's state TTL resumes: the same
// connectionId, nothing else carried (each channel continues from the
// channelSerial the client re-attaches with; its members are adopted when
// the channel is attached: ./presence.js). Anything else is a new
// connection, told why.
import { createHmac } from 'node:crypto';
import { sameText } from '../core/same-text.js';
import { AblyCode, AblyError } from './errors.js';

export const CONNECTION_STATE_TTL_MS = 120000;
const CONNECTION_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The key CONNECTED gives, for `resume` or `recover` later. */
export function connectionKey(app, connectionId, clientId, now = Date.now()) {
  const issued = now.toString(36);
  return `${connectionId}!${issued}!${macOf(app, connectionId, clientId, issued)}`;
}

/**
 * @param {string} key what the client sent as `resume` or `recover`
 * @returns {string} the connectionId it resumes
 * @throws {AblyError} 80018 (not a key), 80008 (not this app's and clientId's, or expired)
 */
export function resumedConnection(key, app, clientId, now = Date.now()) {
  const [connectionId, issued, mac, more] = key.split('!');
  const issuedMs = parseInt(issued, 36);
  if (more !== undefined || mac === undefined || !CONNECTION_ID.test(connectionId) || !(issuedMs > 0)) {
    throw new AblyError(AblyCode.RESUME_MALFORMED, 'not a connectionKey: a new connection is made');
  }
  if (!sameText(mac, macOf(app, connectionId, clientId, issued)) || now - issuedMs > CONNECTION_STATE_TTL_MS) {
    throw new AblyError(AblyCode.RESUME_FAILED, 'this connection cannot be resumed: a new one is made');
  }
  return connectionId;
}

function macOf(app, connectionId, clientId, issued) {
  return createHmac('sha256', app.secret).update(`ably-resume\n${app.appId}\n${connectionId}\n${clientId ?? ''}\n${issued}`).digest('base64url').slice(0, 22);
}
