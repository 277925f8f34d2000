// Pusher channel names and the internal names the gateway files them under.
//
// A Pusher channel lives inside its app: `presence-room` of app 42 is the
// internal channel `#42.pres:presence-room`. No native name can spell it
// (native names have no '#', '=', ',' or ';' and stop at 128 characters),
// and no other app can either, since a connection and an HTTP request only
// ever name channels of their own app; so isolation holds by construction.
//
// The part before ':' is the channel's namespace (lib/core/namespaces.js): one
// per app and kind, whose settings say what Pusher says of that kind:
// presence kept for presence channels, the last event kept and replayed for
// cache channels, client events on private and presence channels when the
// app allows them. Nothing here imports the worker: the primary's engines
// read these namespaces too.
import { ErrorCode, GatewayError } from '../core/errors.js';
import { isProtocolChannel, protocolAppOf, protocolNamespaceOf } from '../core/namespaces.js';

export const MAX_NAME_LENGTH = 164;
const NAME_CHARACTERS = '[A-Za-z0-9_\\-=@,.;]';
const NAME = new RegExp(`^${NAME_CHARACTERS}{1,${MAX_NAME_LENGTH}}$`);

/** The kinds, by the prefix that makes them; the first that matches wins. */
export const Kind = Object.freeze({
  PUBLIC: 'pub',
  CACHE: 'pubc',
  PRIVATE: 'priv',
  PRIVATE_CACHE: 'privc',
  PRESENCE: 'pres',
  PRESENCE_CACHE: 'presc',
  ENCRYPTED: 'enc',
  USER: 'user', // a signed-in user's own channel (#server-to-user-<id>): the HTTP API's sendToUser and terminate_connections
  MEMBERS: 'presm' // a presence channel's member events, beside it: a cache channel's last event stays an event
});

// An internal name: '#', the app id, '.', one of Pusher's kinds (another protocol's channels have theirs), ':', the Pusher name.
const INTERNAL = new RegExp(`^#[A-Za-z0-9_-]{1,64}\\.(?:${Object.values(Kind).join('|')}):${NAME_CHARACTERS}{1,${MAX_NAME_LENGTH}}$`);

// The channels of the gateway's own making, beside the clients' ones: no webhooks, not listed.
const OWN = new Set([Kind.USER, Kind.MEMBERS]);

const USER_CHANNEL = '#server-to-user-';
// A user id is carried hex-encoded in its channel's internal name.
export const MAX_USER_ID_BYTES = MAX_NAME_LENGTH / 2;

const PREFIXES = [
  ['private-encrypted-', Kind.ENCRYPTED],
  ['private-cache-', Kind.PRIVATE_CACHE],
  ['presence-cache-', Kind.PRESENCE_CACHE],
  ['private-', Kind.PRIVATE],
  ['presence-', Kind.PRESENCE],
  ['cache-', Kind.CACHE]
];

const CACHED = new Set([Kind.CACHE, Kind.PRIVATE_CACHE, Kind.PRESENCE_CACHE]);
const PRESENCE = new Set([Kind.PRESENCE, Kind.PRESENCE_CACHE]);
const SIGNED = new Set([Kind.PRIVATE, Kind.PRIVATE_CACHE, Kind.PRESENCE, Kind.PRESENCE_CACHE, Kind.ENCRYPTED]);
// Client events: private and presence channels, never encrypted ones (the server could not read them).
const CLIENT_EVENTS = new Set([Kind.PRIVATE, Kind.PRIVATE_CACHE, Kind.PRESENCE, Kind.PRESENCE_CACHE]);

export function isValidName(name) {
  return typeof name === 'string' && NAME.test(name);
}

/** @returns {string} the kind of a valid Pusher name */
export function kindOf(name) {
  for (const [prefix, kind] of PREFIXES) if (name.startsWith(prefix)) return kind;
  return Kind.PUBLIC;
}

export const isSigned = (kind) => SIGNED.has(kind);
export const isPresence = (kind) => PRESENCE.has(kind);
export const isCached = (kind) => CACHED.has(kind);

/** The internal name of app `appId`'s channel `name` (valid), of kind `kind` (its kindOf, when known already). */
export function internalName(appId, name, kind = kindOf(name)) {
  return `#${appId}.${kind}:${name}`;
}

/** The internal channel of app `appId`'s user `userId` (at most MAX_USER_ID_BYTES bytes). */
export function userChannel(appId, userId) {
  return `#${appId}.${Kind.USER}:${Buffer.from(userId).toString('hex')}`;
}

/** The user id a client names in `#server-to-user-<id>`, or undefined for any other name. */
export function userOfChannel(name) {
  return typeof name === 'string' && name.startsWith(USER_CHANNEL) ? name.slice(USER_CHANNEL.length) : undefined;
}

/**
 * The internal channel of a name the HTTP API publishes to: a Pusher
 * channel, or a user's `#server-to-user-<id>` (the SDK's sendToUser).
 * @throws {GatewayError} invalid_channel
 */
export function eventChannel(appId, name) {
  const user = userOfChannel(name);
  if (user === undefined) return internalName(appId, checkName(name));
  if (user === '' || Buffer.byteLength(user) > MAX_USER_ID_BYTES) throw new GatewayError(ErrorCode.INVALID_CHANNEL, `a user id is 1 to ${MAX_USER_ID_BYTES} bytes`);
  return userChannel(appId, user);
}

/** The channel where a presence channel's member events go (a client knows it by the presence channel's name). */
export function membersChannel(internal) {
  return `${appPrefix(appIdOf(internal))}${Kind.MEMBERS}:${pusherName(internal)}`;
}

/** The app whose internal channel this is. */
export const appIdOf = protocolAppOf;

/** The kind written in an internal name. */
function internalKind(internal) {
  return protocolNamespaceOf(internal).slice(appPrefix(appIdOf(internal)).length);
}

/** Whether an internal channel is one the gateway made for itself (a user's, a presence channel's members'). */
export function isOwn(internal) {
  return OWN.has(internalKind(internal));
}

/** The name a client knows an internal channel by. */
export function clientName(internal) {
  const name = pusherName(internal);
  return internalKind(internal) === Kind.USER ? `${USER_CHANNEL}${Buffer.from(name, 'hex').toString()}` : name;
}

/** Whether a channel is one of Pusher's internal names. */
export function isInternal(channel) {
  return INTERNAL.test(channel);
}

/** The Pusher name inside an internal one. */
export function pusherName(internal) {
  return internal.slice(internal.indexOf(':') + 1);
}

/** The prefix every internal channel of an app starts with. */
export function appPrefix(appId) {
  return `#${appId}.`;
}

/** The internal name prefixes an app's connections may subscribe to unsigned. */
export function publicPrefixes(appId) {
  return [`#${appId}.${Kind.PUBLIC}:`, `#${appId}.${Kind.CACHE}:`];
}

/**
 * The name check of the command core for Pusher's ways in (the core's step
 * 2). Pusher's ways in check a client's name once, with checkName(), and
 * make its internal name from it (internalName), so the core needs only to
 * know it is a protocol's channel: its app and kind are its namespace, which
 * the core looks up next (an unknown app is no namespace).
 */
export function checkInternal(channel, id) {
  if (typeof channel !== 'string' || !isProtocolChannel(channel)) throw new GatewayError(ErrorCode.INVALID_CHANNEL, 'not a Pusher channel', id);
  return channel;
}

/** A Pusher channel name as a client or the HTTP API gives it: the answer Pusher gives to a bad one. */
export function checkName(name) {
  if (!isValidName(name)) {
    throw new GatewayError(ErrorCode.INVALID_CHANNEL, `channel names are 1 to ${MAX_NAME_LENGTH} characters of A-Z a-z 0-9 _ - = @ , . ;`);
  }
  return name;
}

/**
 * The namespaces of every app's channels, looked up by namespace name
 * (`#<appId>.<kind>`) in this process's apps as they are now, resolved as
 * lib/core/namespaces.js resolves a native one; an app's are made once per
 * version of it (an app changed is a new object).
 * @param {object} config resolved
 * @returns {{get: (name: string) => object|undefined}}
 */
export function appNamespaces(config, apps) {
  const made = new WeakMap(); // app -> Map(kind -> namespace)
  return {
    /** @param {string} name a namespace's: `#<app>.<kind>` */
    get(name) {
      const appId = protocolAppOf(name);
      const app = apps.byId.get(appId);
      if (app === undefined) return undefined;
      let kinds = made.get(app);
      if (kinds === undefined) made.set(app, (kinds = kindNamespaces(app, config)));
      return kinds.get(name.slice(appPrefix(appId).length));
    }
  };
}

function kindNamespaces(app, config) {
  const out = new Map();
  for (const kind of Object.values(Kind)) {
    out.set(
      kind,
      Object.freeze({
        name: `#${app.appId}.${kind}`,
        // Pusher keeps no history; a cache channel keeps its last event. The
        // member events keep the gateway's history size, so a node whose
        // subscription to Redis dropped catches its subscribers up on who
        // came and went meanwhile, in order and once (no client reads it).
        historySize: kind === Kind.MEMBERS ? config.historySize : CACHED.has(kind) ? 1 : 0,
        historyTtl: config.historyTtl,
        presence: PRESENCE.has(kind),
        joinLeave: false,
        latest: CACHED.has(kind),
        clientPublish: app.clientEvents && CLIENT_EVENTS.has(kind),
        subscribeHook: false,
        publishHook: false
      })
    );
  }
  return out;
}
