// Claims to an identity: what a JWT's payload (./auth.js) and a connect
// hook's answer (./hooks.js) both say, checked by one function so the two
// ways of authenticating mean exactly the same thing.
//
// Claims: the user (a JWT's `sub`, the hook's `user`), when it expires, the
// `subscribe` and `publish` patterns (./permissions.js), the `channels` the
// server subscribes the connection to, and `info` (shown in presence).
import { MAX_USER_LENGTH, infoProblem, isValidChannel } from '../protocol.js';
import { compilePermissions } from './permissions.js';

export const MAX_CHANNELS = 256; // in `channels`
const NO_CHANNELS = Object.freeze([]);

/**
 * @typedef {object} Identity
 * @property {string} user
 * @property {number|undefined} expiresAt ms since the epoch; undefined: never
 * @property {{subscribe: object, publish: object}} permissions compiled (./permissions.js)
 * @property {string[]} channels server-side subscriptions made once admitted
 * @property {object|undefined} info
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
  return { user, expiresAt: exp === undefined ? undefined : exp * 1000, permissions, channels, info: claims.info };
}

// Who a connection of either transport is: its id (Admission.clientId: the
// welcome frame's connectionId, an SSE stream's ready event, the hooks'
// `client`, presence's `client`), its user (null while its first
// authentication is under way) and, once admitted, the identity's part that
// presence and join/leave show (identify).
export const kUser = Symbol('user');
export const kClient = Symbol('client');
const kShown = Symbol('shown');
const ANONYMOUS = Object.freeze({ user: null, fields: '' });

/** @param {{user?: string, info?: object}} identity as the admission gate produced it */
export function identify(conn, { user, info }) {
  let fields = user === undefined ? '' : `,"user":${JSON.stringify(user)}`;
  if (info !== undefined) fields += `,"info":${JSON.stringify(info)}`;
  conn[kShown] = { user: user ?? null, fields };
}

/**
 * @returns {{user: string|null, fields: string}} the user (null: none) and
 *   the presence entry's JSON members (lib/engines/join-leave.js)
 */
export function identityOf(conn) {
  return conn[kShown] ?? ANONYMOUS;
}
