// The admin page's view of Pusher's apps (lib/admin/): the apps with their
// channels, an app's channels and a channel's presence, and a publish to an
// app's channel with an event name, each run on Pusher's command core and
// the server API's operations (lib/core/server.js) as the HTTP API runs
// them, so the page holds no rule of its own. Names are the clients': a
// channel is one of the app's, never an internal name.
import { ErrorCode, GatewayError } from '../core/errors.js';
import { publish } from '../core/server.js';
import { checkName, internalName, isPresence, kindOf, MAX_NAME_LENGTH } from './channels.js';
import { eventData } from './frames.js';
import { appChannels, checkEventName, members } from './http-api.js';

const METHODS = {
  /** Every app, with its occupied channels and their subscribers (cluster-wide). */
  async apps(params, { apps, context }) {
    const out = [];
    for (const app of apps.list) {
      const channels = Object.values(await appChannels(context, app));
      out.push({ appId: app.appId, key: app.key, enabled: app.enabled, channels: channels.length, subscribers: channels.reduce((a, b) => a + b, 0) });
    }
    return { apps: out };
  },
  /** The app's channels, by subscribers, as the native `channels` method answers. */
  async channels({ prefix = '' }, { app, context }) {
    if (typeof prefix !== 'string' || prefix.length > MAX_NAME_LENGTH) throw badRequest(`prefix must be a string of at most ${MAX_NAME_LENGTH} characters`);
    const counts = await appChannels(context, app, prefix);
    const channels = Object.create(null);
    for (const name of Object.keys(counts).sort()) channels[name] = { subscribers: counts[name] };
    return { channels };
  },
  /** A presence channel's members, one entry per user, as the native `presence` method's clients. */
  async presence({ channel }, { app, context }) {
    const name = checkName(channel);
    if (!isPresence(kindOf(name))) throw badRequest(`${name} is not a presence channel`);
    const clients = Object.create(null);
    for (const [user, info] of Object.entries(await members(context, internalName(app.appId, name)))) clients[user] = { user, info };
    return { channel: name, clients };
  },
  /** An event to one of the app's channels, as the HTTP API publishes it: its subscribers get `event` with `data`. */
  async publish({ channel, event, data }, { app, context }) {
    const name = checkName(channel);
    checkEventName(event, 'event');
    if (data === undefined) throw badRequest('data is missing');
    const text = typeof data === 'string' ? data : JSON.stringify(data);
    return publish({ channel: internalName(app.appId, name), data: JSON.stringify(eventData(event, text)) }, context);
  }
};

/**
 * @param {object} options
 * @param {import('./apps.js').Apps} options.apps
 * @param {import('../core/server.js').ServerContext} options.context Pusher's command core, the relay, presence
 * @returns {(method: string, params: object) => Promise<object>} a call of the admin page on an app (params.app), or on all of them (apps)
 */
export function pusherAdmin({ apps, context }) {
  return async (method, params) => {
    if (!Object.hasOwn(METHODS, method)) throw new GatewayError(ErrorCode.NOT_FOUND, `no ${method} for a Pusher app`);
    if (method === 'apps') return METHODS.apps(params, { apps, context });
    const app = apps.byId.get(params.app);
    if (app === undefined) throw new GatewayError(ErrorCode.NOT_FOUND, `no Pusher app ${JSON.stringify(String(params.app).slice(0, 64))}`);
    return METHODS[method](params, { app, context });
  };
}


function badRequest(message) {
  return new GatewayError(ErrorCode.BAD_REQUEST, message);
}
