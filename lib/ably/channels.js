// Ably channel names and the internal names the gateway files them under.
//
// An Ably channel lives inside its app: `chat` of app 42 is the internal
// channel `#42.ably:chat`. Native names have no '#' and Pusher's kinds are
// other words, so the three protocols' channels never meet; a connection and
// a REST request only ever name channels of their own app. The part before
// the first ':' is the channel's namespace (lib/core/namespaces.js): one per
// app.
import { isProtocolChannel, protocolAppOf } from '../core/namespaces.js';
import { AblyError, AblyCode } from './errors.js';

const KIND = 'ably';
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
  return `#${appId}.${KIND}:${name}`;
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
 * (`#<appId>.ably`) in this process's apps as they are now: history as the
 * gateway keeps it, publishing open (Ably's capabilities are checked at the
 * edge), no presence yet.
 * @param {object} config resolved
 * @param {import('../pusher/apps.js').Apps} apps
 * @returns {{get: (name: string) => object|undefined}}
 */
export function appNamespaces(config, apps) {
  const made = new WeakMap(); // app -> its namespace
  return {
    get(name) {
      const appId = protocolAppOf(name);
      if (name !== `#${appId}.${KIND}`) return undefined;
      const app = apps.byId.get(appId);
      if (app === undefined) return undefined;
      let ns = made.get(app);
      if (ns === undefined) {
        ns = Object.freeze({
          name,
          historySize: config.historySize,
          historyTtl: config.historyTtl,
          presence: false,
          joinLeave: false,
          latest: false,
          clientPublish: true,
          subscribeHook: false,
          publishHook: false
        });
        made.set(app, ns);
      }
      return ns;
    }
  };
}

/** The internal name prefix of an app's Ably channels: what its connections may subscribe and publish to, as the core sees it. */
export function appPrefix(appId) {
  return `#${appId}.${KIND}:`;
}
