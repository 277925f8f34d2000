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
import { kSession } from './symbols.js';

export const MAX_CHANNELS = 256; // in `channels`
const NO_CHANNELS = Object.freeze([]);

/**
 * @typedef {object} Identity
 * @property {string} user
 * @property {number|undefined} expiresAt ms since the epoch; undefined: never
 * @property {{subscribe: object, publish: object}} permissions compiled (./permissions.js)
 * @property {string[]} channels server-side subscriptions made once admitted
 * @property {object|undefined} info
 * @property {Member} member what presence shows for it
 */

/**
 * A presence entry's value, from the engine to every way in, which encodes
 * it in its own protocol: the user and info, each left out when there is
 * none (an anonymous connection's member is {}).
 * @typedef {{user?: string, info?: *}} Member
 */

/** The member of a connection with no user and no info. */
export const NO_MEMBER = Object.freeze({});

/** @returns {Member} */
export function memberOf(user, info) {
  if (user === null) return info === undefined ? NO_MEMBER : { info };
  return info === undefined ? { user } : { user, info };
}

/**
 * @param {*} user the claimed user id
 * @param {*} exp expiry in seconds since the epoch, or undefined for none
 * @param {{subscribe?, publish?, channels?, info?}} claims the rest, as received
 * @param {string} userClaim the user's claim name, for the message (`sub`, `user`)
 * @param {import('./permissions.js').PermissionsCache} permissions where identities of the same claims share their compiled permissions
 * @returns {Identity|string} the identity, or what is wrong with the claims
 */
export function identityFrom(user, exp, claims, userClaim, permissions) {
  if (typeof user !== 'string' || user === '' || user.length > MAX_USER_LENGTH) {
    return `${userClaim} must be a string of 1 to ${MAX_USER_LENGTH} characters`;
  }
  if (exp !== undefined && !Number.isFinite(exp)) return 'the expiry must be a number of seconds since 1970';
  const compiled = permissions.compile(claims.subscribe, claims.publish);
  if (typeof compiled === 'string') return compiled;
  const channels = claims.channels ?? NO_CHANNELS;
  if (!Array.isArray(channels) || channels.length > MAX_CHANNELS || !channels.every(isValidChannel)) {
    return `channels must be an array of at most ${MAX_CHANNELS} channel names`;
  }
  const problem = infoProblem(claims.info);
  if (problem !== undefined) return problem;
  return { user, expiresAt: exp === undefined ? undefined : exp * 1000, permissions: compiled, channels, info: claims.info, member: memberOf(user, claims.info) };
}

// Who a connection of any transport is: its id (the session's `id`) and,
// once admitted, its identity, kept in its session (./session.js) and
// written here alone. The rules (./commands.js) read the identity and never
// the auth mode: under --auth none every connection is ANONYMOUS, whose
// grants are open.

/** Every grant open, no user: a connection under --auth none. */
export const ANONYMOUS = Object.freeze({
  user: null,
  expiresAt: undefined,
  permissions: compilePermissions(['*'], ['*']),
  channels: NO_CHANNELS,
  info: undefined,
  member: NO_MEMBER
});

/** A credential is being checked for a connection that has no identity yet. */
const PENDING = Object.freeze({ user: null, pending: true });

/** The connection's identity from now on (admitted, or refreshed). */
export function identify(conn, identity) {
  conn[kSession].identity = identity;
}

/** Its first credential is being checked: it has no identity, and a second first credential waits for this one. */
export function identifying(conn) {
  conn[kSession].identity = PENDING;
}

/**
 * @returns {Identity|undefined} the admitted identity; undefined while there
 *   is none (no credential yet, or its first one still being checked)
 */
export function identityOf(conn) {
  const identity = conn[kSession].identity;
  return identity === PENDING ? undefined : identity;
}

/** Whether the connection has presented a credential (checked, being checked, or refused): a next one is rate-limited. */
export function hasCredential(conn) {
  return conn[kSession].identity !== undefined;
}

/** The user of an admitted connection (null: anonymous). */
export function userOf(conn) {
  return conn[kSession].identity?.user ?? null;
}

/**
 * Grants the connection one more channel to subscribe to (and, with
 * `publish`, to publish on), as a signature proved it may (Pusher's
 * private and presence channels). The grant is made on the connection's
 * own copy of its identity: an identity shared by many connections (an
 * app's) is copied at the first grant.
 */
export function grantChannel(conn, channel, publish) {
  const session = conn[kSession];
  let identity = session.identity;
  if (!identity.own) {
    const { subscribe, publish: published } = identity.permissions;
    identity = {
      ...identity,
      own: true,
      permissions: {
        subscribe: { ...subscribe, exact: new Set(subscribe.exact) },
        publish: { ...published, exact: new Set(published.exact) }
      }
    };
    session.identity = identity;
  }
  identity.permissions.subscribe.exact.add(channel);
  if (publish) identity.permissions.publish.exact.add(channel);
}

/** Takes back what grantChannel() granted on `channel`; an identity never granted one keeps what it has. */
export function revokeChannel(conn, channel) {
  const identity = conn[kSession].identity;
  if (!identity?.own) return;
  identity.permissions.subscribe.exact.delete(channel);
  identity.permissions.publish.exact.delete(channel);
}
