// Claims to an identity: what a JWT's payload (./auth.js) and a connect
// hook's answer (./hooks.js) both say, checked by one function so the two
// ways of authenticating mean exactly the same thing.
//
// Claims: the user (a JWT's `sub`, the hook's `user`), when it expires, the
// `subscribe` and `publish` patterns (./permissions.js), the `channels` the
// server subscribes the connection to, and `info` (shown in presence).
import { MAX_USER_LENGTH } from '../protocol/limits.js';
import { infoProblem, isValidChannel } from '../protocol/validate.js';
import { compilePermissions } from './permissions.js';
import { kIdentity } from './symbols.js';

export const MAX_CHANNELS = 256; // in `channels`
const NO_CHANNELS = Object.freeze([]);

/**
 * @typedef {object} Identity
 * @property {string} user
 * @property {number|undefined} expiresAt ms since the epoch; undefined: never
 * @property {{subscribe: object, publish: object}} permissions compiled (./permissions.js)
 * @property {string[]} channels server-side subscriptions made once admitted
 * @property {object|undefined} info
 * @property {string} shown the JSON members presence shows for it
 *   (`,"user":…,"info":…`: lib/engines/join-leave.js)
 */

/**
 * @param {*} user the claimed user id
 * @param {*} exp expiry in seconds since the epoch, or undefined for none
 * @param {{subscribe?, publish?, channels?, info?}} claims the rest, as received
 * @param {string} userClaim the user's claim name, for the message (`sub`, `user`)
 * @returns {Identity|string} the identity, or what is wrong with the claims
 */
export function identityFrom(user, exp, claims, userClaim) {
  if (typeof user !== 'string' || user === '' || user.length > MAX_USER_LENGTH) {
    return `${userClaim} must be a string of 1 to ${MAX_USER_LENGTH} characters`;
  }
  if (exp !== undefined && !Number.isFinite(exp)) return 'the expiry must be a number of seconds since 1970';
  const permissions = compilePermissions(claims.subscribe, claims.publish);
  if (typeof permissions === 'string') return permissions;
  const channels = claims.channels ?? NO_CHANNELS;
  if (!Array.isArray(channels) || channels.length > MAX_CHANNELS || !channels.every(isValidChannel)) {
    return `channels must be an array of at most ${MAX_CHANNELS} channel names`;
  }
  const problem = infoProblem(claims.info);
  if (problem !== undefined) return problem;
  return { user, expiresAt: exp === undefined ? undefined : exp * 1000, permissions, channels, info: claims.info, shown: shownFields(user, claims.info) };
}

// Who a connection of any transport is: its id (Admission.clientId: the
// welcome frame's connectionId, an SSE stream's ready event, the hooks'
// `client`, presence's `client`) and, once admitted, its identity. The rules
// (lib/core/commands.js) read the identity alone and never the auth mode:
// under --auth none every connection is ANONYMOUS, whose grants are open.
export const kClient = Symbol('client');

/** Every grant open, no user: a connection under --auth none. */
export const ANONYMOUS = Object.freeze({
  user: null,
  expiresAt: undefined,
  permissions: compilePermissions(['*'], ['*']),
  channels: NO_CHANNELS,
  info: undefined,
  shown: ''
});

/** A credential is being checked for a connection that has no identity yet. */
const PENDING = Object.freeze({ user: null, pending: true });

/** The connection's identity from now on (admitted, or refreshed). */
export function identify(conn, identity) {
  conn[kIdentity] = identity;
}

/** Its first credential is being checked: it has no identity, and a second first credential waits for this one. */
export function identifying(conn) {
  conn[kIdentity] = PENDING;
}

/**
 * @returns {Identity|undefined} the admitted identity; undefined while there
 *   is none (no credential yet, or its first one still being checked)
 */
export function identityOf(conn) {
  const identity = conn[kIdentity];
  return identity === PENDING ? undefined : identity;
}

/** Whether the connection has presented a credential (checked, being checked, or refused): a next one is rate-limited. */
export function hasCredential(conn) {
  return conn[kIdentity] !== undefined;
}

/** The user of an admitted connection (null: anonymous). */
export function userOf(conn) {
  return conn[kIdentity]?.user ?? null;
}

function shownFields(user, info) {
  return `,"user":${JSON.stringify(user)}${info === undefined ? '' : `,"info":${JSON.stringify(info)}`}`;
}
