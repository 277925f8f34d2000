// The admin page's view of Pusher's apps (lib/admin/, through
// lib/native/admin-calls.js): an app's channels, a channel's presence, and a
// publish to an app's channel with an event name, each run on Pusher's
// command core and the server API's operations (lib/core/server.js) as the
// HTTP API runs them, so the page holds no rule of its own. Names are the
// clients': a channel is one of the app's, never an internal name.
import { ErrorCode, GatewayError } from '../core/errors.js';
import { publish } from '../core/server.js';
import { checkName, internalName, isPresence, kindOf, MAX_NAME_LENGTH } from './channels.js';
import { eventData } from './frames.js';
import { appChannels, checkEventName, members } from './http-api.js';

/**
 * @param {object} options
 * @param {import('./apps.js').Apps} options.apps
 * @param {import('../core/server.js').ServerContext} options.context Pusher's command core, the relay, presence
 * @returns {import('../native/admin-calls.js').AppsAdmin}
 */
export function pusherAdmin({ apps, context }) {
  return {
    apps,
    maxNameLength: MAX_NAME_LENGTH,
    channelsOf: (app, prefix) => appChannels(context, app, prefix),
    /** A presence channel's members, one entry per user: user -> {user, info}. */
    async presence(app, { channel }) {
      const name = checkName(channel);
      if (!isPresence(kindOf(name))) throw badRequest(`${name} is not a presence channel`);
      const clients = Object.create(null);
      for (const [user, info] of Object.entries(await members(context, internalName(app.appId, name)))) clients[user] = { user, info };
      return { channel: name, clients };
    },
    /** Pusher keeps no history: a cache channel's last event is its subscribers' to ask. */
    async history() {
      throw new GatewayError(ErrorCode.NOT_FOUND, 'a Pusher channel keeps no history');
    },
    /** An event to one of the app's channels, as the HTTP API publishes it: its subscribers get `event` with `data`. */
    async publish(app, { channel, event, data }) {
      const name = checkName(channel);
      checkEventName(event, 'event');
      if (data === undefined) throw badRequest('data is missing');
      const text = typeof data === 'string' ? data : JSON.stringify(data);
      return publish({ channel: internalName(app.appId, name), data: JSON.stringify(eventData(event, text)) }, context);
    }
  };
}

function badRequest(message) {
  return new GatewayError(ErrorCode.BAD_REQUEST, message);
}
