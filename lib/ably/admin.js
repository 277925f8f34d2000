// The admin page's view of the apps' Ably channels (lib/admin/, through
// lib/native/admin-calls.js): an app's occupied channels and their
// subscribers, a channel's members and its last messages, and a publish to a
// channel as a message with a name, each run on Ably's command core as its
// REST API runs it (./rest.js), so the page holds no rule of its own. Names
// are the clients': a channel is one of the app's, never an internal name.
import { channelCounts, publish } from '../core/server.js';
import { ErrorCode, GatewayError } from '../core/errors.js';
import { appPrefix, ablyName, checkName, internalName, MAX_NAME_LENGTH, membersChannel } from './channels.js';
import { freshMessageId, messageData } from './messages.js';
import { isPresenceEvent } from './presence.js';
import { MAX_LIMIT } from './rest.js';

/**
 * @param {object} options
 * @param {import('../pusher/apps.js').Apps} options.apps
 * @param {import('../core/server.js').ServerContext} options.context Ably's command core, the relay
 * @param {import('./presence.js').AblyPresence} options.members
 * @returns {import('../native/admin-calls.js').AppsAdmin}
 */
export function ablyAdmin({ apps, context, members }) {
  return {
    apps,
    maxNameLength: MAX_NAME_LENGTH,
    /** The app's occupied Ably channels whose names start with `prefix`, cluster-wide: name -> subscribers. */
    async channelsOf(app, prefix) {
      const counts = await channelCounts(context.relay, appPrefix(app.appId) + prefix);
      const out = Object.create(null); // a channel may be called __proto__
      for (const [internal, count] of Object.entries(counts)) if (count > 0) out[ablyName(internal)] = count;
      return out;
    },
    /** A channel's members, each a connection and a clientId: `<connectionId>:<clientId>` -> {user: the clientId, info: its data}. */
    async presence(app, { channel }) {
      const name = checkName(channel);
      const clients = Object.create(null);
      for (const { connectionId, clientId, data, encoding } of await members.read(membersChannel(internalName(app.appId, name)))) {
        clients[`${connectionId}:${clientId}`] = { user: clientId, info: shown(data, encoding) };
      }
      return { channel: name, clients };
    },
    /** A channel's last `limit` messages (its presence events left out), newest first unless `reverse` is false, as the native `history` answers. */
    async history(app, { channel, limit = 20, reverse = true }) {
      const internal = internalName(app.appId, checkName(channel));
      if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw badRequest(`limit is 1 to ${MAX_LIMIT}`);
      if (typeof reverse !== 'boolean') throw badRequest('reverse must be a boolean');
      const { historySize } = context.commands.namespace(internal);
      if (historySize === 0) return { messages: [] };
      const answer = await context.relay.history(internal, { limit: historySize, reverse });
      const messages = answer.messages.filter(({ data }) => !isPresenceEvent(data)).slice(0, limit);
      return { epoch: answer.epoch, seq: answer.seq, messages: messages.map(({ seq, data }) => ({ seq, data: JSON.parse(data) })) };
    },
    /** A message to one of the app's channels, as the REST API publishes one: `event` its name (none if absent), `data` its data. */
    async publish(app, { channel, event, data }) {
      const internal = internalName(app.appId, checkName(channel));
      if (data === undefined) throw badRequest('data is missing');
      context.commands.namespace(internal);
      const timestamp = Date.now();
      const message = messageData({ name: event, data }, { clientId: undefined, wildcard: true }, { id: freshMessageId('admin', timestamp), connectionId: undefined, timestamp });
      return publish({ channel: internal, data: JSON.stringify(message) }, context);
    }
  };
}

/** A member's data as the page shows it: an object ably-js sent as JSON (`encoding: "json"`) as that object. */
function shown(data, encoding) {
  if (encoding !== 'json' || typeof data !== 'string') return data ?? null;
  try {
    return JSON.parse(data);
  } catch {
    return data;
  }
}

function badRequest(message) {
  return new GatewayError(ErrorCode.BAD_REQUEST, message);
}
