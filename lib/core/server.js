// The server's operations: the server API's methods (POST /api/<method>:
// ../native/api.js), which POST /publish and POST /disconnect run too
// (../native/http.js). Each method lists the keys its params may hold; a
// call with any other key, or a bad value, is refused whole before anything
// is published. The server is trusted: it skips the identity, grant, rate
// and hook checks of a client's command (./commands.js), never the name and
// namespace checks, which are the core's own functions.
// - broadcast: 1 to 1,000 distinct channels; each is published on its own
//   (its own seq), and an error for one (a bad name, an unknown namespace)
//   does not stop the others;
// - batch: 1 to 100 commands of the other methods, checked before any runs,
//   then run in order;
// - idempotencyKey: 1 to 64 characters; version: a positive safe integer;
// - subscribe, unsubscribe and disconnect reach users' connections: they
//   need --auth jwt or hook (no users without them).
import { CloseCode, ErrorCode, GatewayError } from './errors.js';
import { MAX_USER_LENGTH } from '../protocol/limits.js';
import { quoted } from '../protocol/quoted.js';
import { checkDepth, checkSince } from '../protocol/validate.js';
import { Call, MAX_CHANNELS } from './ipc.js';
import { presenceAllowed } from './commands.js';
import { isProtocolChannel, NATIVE_APP } from './namespaces.js';

const MAX_BROADCAST = 1000;
const MAX_BATCH = 100;
const MAX_KEY_LENGTH = 64;
const MAX_REASON_BYTES = 123; // a WebSocket close reason's limit

/** name -> {keys, run(params, context)}; `run` resolves with the result or rejects with a GatewayError. */
export const METHODS = {
  publish: {
    keys: ['channel', 'data', 'idempotencyKey', 'version'],
    async run(params, context, { exclude } = {}) {
      const channel = knownChannel(params.channel, context);
      const data = dataOf(params);
      const idempotencyKey = idempotencyKeyOf(params.idempotencyKey);
      const version = versionOf(params.version);
      return publish({ channel, data, exclude, idempotencyKey, version }, context);
    }
  },
  broadcast: {
    keys: ['channels', 'data', 'idempotencyKey'],
    async run(params, context) {
      const { relay } = context;
      const { channels } = params;
      if (!Array.isArray(channels) || channels.length === 0 || channels.length > MAX_BROADCAST) {
        throw badRequest(`channels must be an array of 1 to ${MAX_BROADCAST} channel names`);
      }
      if (new Set(channels).size !== channels.length) throw badRequest('a channel is named twice in channels');
      const data = dataOf(params);
      const idempotencyKey = idempotencyKeyOf(params.idempotencyKey);
      context.commands.engineTakes();
      const results = channels.map((channel) => {
        try {
          knownChannel(channel, context);
        } catch (err) {
          return { channel, error: errorOf(err) };
        }
        return relay.publish({ channel, data, idempotencyKey }).then(
          (result) => ({ channel, ...result }),
          (err) => ({ channel, error: errorOf(err) })
        );
      });
      return { results: await Promise.all(results) };
    }
  },
  subscribe: {
    keys: ['user', 'channel'],
    async run(params, context) {
      const args = { user: userOf(params.user, context.users), channel: knownChannel(params.channel, context) };
      return { subscribed: await context.relay.call(Call.SUBSCRIBE, args) };
    }
  },
  unsubscribe: {
    keys: ['user', 'channel'],
    async run(params, context) {
      const args = { user: userOf(params.user, context.users), channel: knownChannel(params.channel, context) };
      return { unsubscribed: await context.relay.call(Call.UNSUBSCRIBE, args) };
    }
  },
  disconnect: {
    keys: ['user', 'code', 'reason'],
    async run(params, { users }) {
      const user = userOf(params.user, users);
      const { code = CloseCode.DISCONNECTED, reason = 'disconnected by the server' } = params;
      if (!Number.isInteger(code) || code < 4000 || code > 4999) throw badRequest('code must be a close code from 4000 to 4999');
      if (typeof reason !== 'string' || Buffer.byteLength(reason) > MAX_REASON_BYTES) throw badRequest(`reason must be a string of at most ${MAX_REASON_BYTES} bytes`);
      return { disconnected: await users.disconnect(user, code, reason) };
    }
  },
  presence: {
    keys: ['channel'],
    async run(params, context) {
      const channel = presenceChannel(params.channel, context);
      const { clients } = await context.presence.read(channel, false);
      return { channel, clients };
    }
  },
  presence_stats: {
    keys: ['channel'],
    async run(params, context) {
      const channel = presenceChannel(params.channel, context);
      const { clients, users, digest } = await context.presence.read(channel, true);
      return { channel, clients, users, digest };
    }
  },
  history: {
    keys: ['channel', 'since', 'limit', 'reverse'],
    async run(params, context) {
      const { relay } = context;
      const channel = knownChannel(params.channel, context);
      const { historySize } = context.commands.namespace(channel);
      const { limit, reverse = false } = params;
      if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > historySize)) {
        throw badRequest(historySize === 0 ? 'the channel keeps no history: no limit applies' : `limit must be an integer from 1 to the history size, ${historySize}`);
      }
      if (typeof reverse !== 'boolean') throw badRequest('reverse must be a boolean');
      const since = params.since === undefined ? undefined : checkSince(params.since);
      const answer = await relay.history(channel, { since, limit, reverse });
      return { epoch: answer.epoch, seq: answer.seq, messages: answer.messages.map(({ seq, data }) => ({ seq, data: JSON.parse(data) })) };
    }
  },
  channels: {
    keys: ['prefix'],
    async run({ prefix = '' }, { relay }) {
      if (typeof prefix !== 'string' || prefix.length > 128) throw badRequest('prefix must be a string of at most 128 characters');
      // Another protocol's channels are not the native API's to see.
      return channelList(await channelCounts(relay, prefix), (name) => !isProtocolChannel(name));
    }
  },
  info: {
    keys: [],
    async run(params, { relay }) {
      return { nodes: await relay.call(Call.INFO, {}) };
    }
  },
  batch: {
    keys: ['commands'],
    async run({ commands }, context) {
      if (!Array.isArray(commands) || commands.length === 0 || commands.length > MAX_BATCH) {
        throw badRequest(`commands must be an array of 1 to ${MAX_BATCH} {method, params}`);
      }
      commands.forEach(checkCommand);
      const replies = [];
      for (const { method, params = {} } of commands) {
        try {
          replies.push({ result: await runMethod(method, params, context) });
          context.commands.metrics.apiRequests.inc({ method, code: 'ok', app: NATIVE_APP });
        } catch (err) {
          if (!(err instanceof GatewayError)) throw err;
          context.commands.metrics.apiRequests.inc({ method, code: err.code, app: NATIVE_APP });
          replies.push({ error: errorOf(err) });
        }
      }
      return { replies };
    }
  }
};

/**
 * The channels whose internal names start with `prefix`, cluster-wide, with
 * their subscribers: what every way in that lists channels reads.
 * @param {import('../worker/relay.js').WorkerRelay} relay
 * @returns {Promise<Object<string, number>>} internal name -> subscribers
 * @throws {GatewayError} too_many: past MAX_CHANNELS of them
 */
export async function channelCounts(relay, prefix) {
  const counts = await relay.call(Call.CHANNELS, { prefix });
  if (counts === null) throw new GatewayError(ErrorCode.TOO_MANY, `more than ${MAX_CHANNELS} channels: ask with a longer prefix`);
  return counts;
}

/**
 * The `channels` method's answer: `{channels: {name: {subscribers}}}` by
 * name, of the counts whose names `shown` lets through (every way in that
 * lists channels so answers: the native method, the admin page's apps).
 */
export function channelList(counts, shown = () => true) {
  const channels = Object.create(null); // a channel may be called __proto__
  for (const name of Object.keys(counts).sort()) if (shown(name)) channels[name] = { subscribers: counts[name] };
  return { channels };
}

/**
 * A publication its way in has already checked (a channel of its own, its
 * data JSON text it made): what the publish method runs once its params
 * are checked, and what a way in that builds its own publications calls.
 * @param {{channel: string, data: string, exclude?: string, idempotencyKey?: string, version?: number}} publication
 * @param {ServerContext} context
 */
export function publish(publication, { commands, relay }) {
  commands.engineTakes();
  return relay.publish(publication);
}

/**
 * Checks the params' keys, then runs the method.
 * @param {ServerContext} context
 * @param {{exclude?: string}} [internal] what only the gateway's own callers
 *   add, never a request's params: a publish's client to leave out (Pusher's
 *   HTTP API's socket_id)
 */
export async function runMethod(name, params, context, internal) {
  const method = METHODS[name];
  const unknown = Object.keys(params).find((key) => !method.keys.includes(key));
  if (unknown !== undefined) throw badRequest(`${name} takes no ${JSON.stringify(unknown.slice(0, 64))} (it takes: ${method.keys.join(', ') || 'nothing'})`);
  return method.run(params, context, internal);
}

function checkCommand(command, i) {
  const at = `commands[${i}]`;
  if (command === null || typeof command !== 'object' || Array.isArray(command)) throw badRequest(`${at} must be {method, params}`);
  const { method, params } = command;
  if (typeof method !== 'string' || !Object.hasOwn(METHODS, method)) throw badRequest(`${at}.method: no method ${quoted(method)}`);
  if (method === 'batch') throw badRequest(`${at}: a batch cannot hold a batch`);
  if (params !== undefined && (params === null || typeof params !== 'object' || Array.isArray(params))) throw badRequest(`${at}.params must be an object`);
  const extra = Object.keys(command).find((key) => key !== 'method' && key !== 'params');
  if (extra !== undefined) throw badRequest(`${at} takes method and params only`);
}

/**
 * @typedef {object} ServerContext
 * @property {import('./commands.js').Commands} commands the checks the server keeps
 * @property {import('./seams.js').Relay} relay
 * @property {import('./seams.js').Users} [users] under --auth jwt or hook
 * @property {import('./seams.js').Presence} presence
 */

/** A valid channel name in a known namespace (the core's check). */
function knownChannel(channel, { commands }) {
  commands.namespace(channel);
  return channel;
}

/** A channel of a presence namespace. */
function presenceChannel(channel, { commands }) {
  presenceAllowed(commands.namespace(channel), channel);
  return channel;
}

function dataOf(params) {
  if (!('data' in params)) throw badRequest('data is missing');
  checkDepth(params.data);
  return JSON.stringify(params.data);
}

function idempotencyKeyOf(key) {
  if (key === undefined) return undefined;
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_LENGTH) throw badRequest(`idempotencyKey must be a string of 1 to ${MAX_KEY_LENGTH} characters`);
  return key;
}

function versionOf(version) {
  if (version === undefined) return undefined;
  if (!Number.isSafeInteger(version) || version < 1) throw badRequest('version must be a positive integer up to 2^53 - 1');
  return version;
}

function userOf(user, users) {
  if (users === undefined) throw badRequest('there are no users under --auth none');
  if (typeof user !== 'string' || user === '' || user.length > MAX_USER_LENGTH) throw badRequest(`user must be a string of 1 to ${MAX_USER_LENGTH} characters`);
  return user;
}

function errorOf(err) {
  if (!(err instanceof GatewayError)) throw err;
  return { code: err.code, message: err.message };
}

function badRequest(message) {
  return new GatewayError(ErrorCode.BAD_REQUEST, message);
}
