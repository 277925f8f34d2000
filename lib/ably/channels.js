// Ably channel names and the internal names the gateway files them under.
//
// An Ably channel lives inside its app: `chat` of app 42 is the internal
// channel `#42.ably:chat`, its messages and the arrivals, updates and
// departures of its members (./primary.js). Beside it the gateway keeps
// `#42.ably-members:chat`, whose presence entries are the members present
// (./presence.js), and one per app, `#42.ably-nonces:nonces`, where its
// TokenRequests' nonces are claimed (./rest.js). Native names have no '#' and
// Pusher's kinds are other words, so the three protocols' channels never
// meet; a connection and a REST request only ever name channels of their own
// app. The part before the first ':' is the channel's namespace
// (lib/core/namespaces.js): one per app and kind.
import { isProtocolChannel, protocolAppOf, protocolNamespaceOf } from '../core/namespaces.js';
import { AblyError, AblyCode } from './errors.js';
import { MAX_SKEW_MS } from './tokens.js';

const Kind = Object.freeze({ MESSAGES: 'ably', MEMBERS: 'ably-members', NONCES: 'ably-nonces' });
export const MAX_NAME_LENGTH = 200;
// Control characters never; a leading '[' is a qualifier (`[?rewind=…]name`), not served yet.
const NAME = /^[^\u0000-\u001f\u007f[][^\u0000-\u001f\u007f]*$/u;

/**
 * A channel name as a client or the REST API gives it.
 * @throws {AblyError} 40010
 */
export function checkName(name) {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME_LENGTH || !NAME.test(name)) {
    throw new AblyError(AblyCode.BAD_CHANNEL, `a channel name is 1 to ${MAX_NAME_LENGTH} characters, without control characters or a qualifier`);
  }
  return name;
}

/** The internal name of app `appId`'s channel `name` (valid). */
export function internalName(appId, name) {
  return `#${appId}.${Kind.MESSAGES}:${name}`;
}

/** The channel whose presence entries are the members of a channel (its internal name). */
export function membersChannel(internal) {
  return besideChannel(internal, Kind.MEMBERS);
}

/** The channel an app's TokenRequests' nonces are claimed on (./rest.js): its idempotency keys. */
export function noncesChannel(appId) {
  return `#${appId}.${Kind.NONCES}:nonces`;
}

/** The channel whose members a members channel holds. */
export function channelOfMembers(members) {
  return besideChannel(members, Kind.MESSAGES);
}

function besideChannel(internal, kind) {
  const dot = internal.indexOf('.');
  const colon = internal.indexOf(':', dot);
  return `${internal.slice(0, dot + 1)}${kind}${internal.slice(colon)}`;
}

/** Whether an internal channel holds a channel's members (./presence.js). */
export function isMembersChannel(internal) {
  return kindOf(internal) === Kind.MEMBERS;
}

const WEBHOOK_MARK = Object.freeze({ protocol: 'ably' });

/**
 * Ably's view of its channels for the apps' webhooks (lib/pusher/webhooks.js
 * WebhookView, handed over by the wiring): a channel's occupancy, and its
 * members, each a connection and a clientId, named by the clientId.
 */
export const ablyWebhookView = Object.freeze({
  channel: (channel) => (isProtocolChannel(channel) && kindOf(channel) === Kind.MESSAGES ? { appId: protocolAppOf(channel), name: ablyName(channel), mark: WEBHOOK_MARK } : undefined),
  member: (channel, memberKey) =>
    isProtocolChannel(channel) && isMembersChannel(channel) ? { appId: protocolAppOf(channel), name: ablyName(channel), userId: memberKey.slice(memberKey.indexOf(':') + 1), mark: WEBHOOK_MARK } : undefined
});

function kindOf(internal) {
  return protocolNamespaceOf(internal).slice(internal.indexOf('.') + 1);
}

/** The name a client knows an internal channel by. */
export function ablyName(internal) {
  return internal.slice(internal.indexOf(':') + 1);
}

/**
 * The core's name check for Ably's ways in: names are checked once, at the
 * edge, and made internal from there, so the core needs only to know it is a
 * protocol's channel (its namespace, the app's, is looked up next).
 */
export function checkInternal(channel, id) {
  if (typeof channel !== 'string' || !isProtocolChannel(channel)) throw new AblyError(AblyCode.BAD_CHANNEL, 'not an Ably channel', id);
  return channel;
}

/**
 * The namespaces of every app's Ably channels, looked up by namespace name
 * (`#<appId>.ably`, `…ably-members`, `…ably-nonces`) in this process's
 * apps as they are now: messages and presence events kept as the gateway
 * keeps history, publishing open (Ably's capabilities are checked at the
 * edge); the members as presence entries; the nonces as idempotency keys
 * alone, held as long as their TokenRequest is taken.
 * @param {object} config resolved
 * @param {import('../pusher/apps.js').Apps} apps
 * @returns {{get: (name: string) => object|undefined}}
 */
export function appNamespaces(config, apps) {
  const made = new WeakMap(); // app -> its namespaces, by kind
  return {
    get(name) {
      const appId = protocolAppOf(name);
      const kind = name.slice(appId.length + 2);
      if (name !== `#${appId}.${kind}` || !KINDS.has(kind)) return undefined;
      const app = apps.byId.get(appId);
      if (app === undefined) return undefined;
      let byKind = made.get(app);
      if (byKind === undefined) made.set(app, (byKind = new Map()));
      let ns = byKind.get(kind);
      if (ns === undefined) {
        const members = kind === Kind.MEMBERS;
        const own = kind !== Kind.MESSAGES; // the gateway's own: nothing kept, no client publishes
        const nonces = kind === Kind.NONCES;
        ns = Object.freeze({
          name,
          historySize: own ? 0 : config.historySize,
          historyTtl: config.historyTtl,
          presence: members,
          joinLeave: false,
          latest: false,
          clientPublish: !own,
          subscribeHook: false,
          publishHook: false,
          // A TokenRequest is taken MAX_SKEW_MS either side of its timestamp: its nonce is held from its first use until the last moment it is taken.
          ...(nonces ? { idempotencyWindowMs: 2 * MAX_SKEW_MS } : {})
        });
        byKind.set(kind, ns);
      }
      return ns;
    }
  };
}

const KINDS = new Set(Object.values(Kind));

/** The internal name prefix of an app's Ably channels: what its connections may subscribe and publish to, as the core sees it. */
export function appPrefix(appId) {
  return `#${appId}.${Kind.MESSAGES}:`;
}
