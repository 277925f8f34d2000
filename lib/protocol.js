// The wire protocol, in one place for the gateway, the browser client, the
// load generator and the tests. Plain JavaScript importing only the error
// family (./errors.js), so the browser can load both as they are.
import { ErrorCode, GatewayError } from './errors.js';

export { CloseCode, ErrorCode, GatewayError } from './errors.js';

/** Why a publish with an idempotencyKey or a version published nothing (the label of gateway_publishes_skipped_total). */
export const Skipped = Object.freeze({
  DUPLICATE: 'duplicate', // the key was seen within its window: the first publish's result
  STALE: 'stale' // the version is not above the channel's last accepted one
});

/** How a subscribe with `since` ended (the label of gateway_recoveries_total). */
export const Recovery = Object.freeze({
  RECOVERED: 'recovered',
  EPOCH_CHANGED: 'epoch_changed', // the channel's sequence started over
  TOO_OLD: 'too_old' // the history no longer reaches back to since.seq
});

export const MAX_DATA_DEPTH = 64;
const MAX_ID_LENGTH = 128;
export const MAX_USER_LENGTH = 128; // a token's sub
// A connection's `info` (the token's claim, or the connect hook's) is shown to
// every subscriber of its presence channels, in each presence answer and
// presence_diff frame: bounded, and a plain object.
const MAX_INFO_BYTES = 1024;
const CHANNEL = /^[A-Za-z0-9_.:@/-]{1,128}$/;
// A channel's epoch as the gateway writes it (base 36); a seq is a count of
// publishes, so it stays a safe integer.
const EPOCH = /^[0-9a-z]{1,16}$/;

export function isValidChannel(name) {
  return typeof name === 'string' && CHANNEL.test(name);
}

/** Delta algorithms a subscribe may ask for (`"delta": "fossil"`). */
const DeltaAlgorithm = Object.freeze({ FOSSIL: 'fossil' });

/**
 * Parses and validates one client text frame.
 * @returns {{type: string, id?: string|number, channel?: string, data?: *, token?: string, since?: object, delta?: string}}
 * @throws {GatewayError} with the code to answer
 */
export function parseClientFrame(text) {
  return checkClientFrame(parseObject(text, 'frame'));
}

/**
 * Validates one client frame, decoded by any encoding into a plain object.
 * @returns the command, as parseClientFrame
 * @throws {GatewayError} with the code to answer
 */
export function checkClientFrame(frame) {
  const { type, id } = frame;
  if (id !== undefined && !isValidId(id)) {
    throw new GatewayError(ErrorCode.BAD_REQUEST, `id must be a number or a string of at most ${MAX_ID_LENGTH} characters`);
  }
  switch (type) {
    case 'ping':
      return { type, id };
    case 'auth':
      if (typeof frame.token !== 'string' || frame.token === '') {
        throw new GatewayError(ErrorCode.UNAUTHORIZED, 'auth needs a token string', id);
      }
      return frame.since === undefined ? { type, id, token: frame.token } : { type, id, token: frame.token, since: checkHeld(frame.since, id) };
    case 'subscribe': {
      const channel = checkChannel(frame.channel, id);
      const command = frame.since === undefined ? { type, id, channel } : { type, id, channel, since: checkSince(frame.since, id) };
      if (frame.delta !== undefined) command.delta = checkDelta(frame.delta, id);
      return command;
    }
    case 'unsubscribe':
    case 'presence':
    case 'presence_stats':
      return { type, id, channel: checkChannel(frame.channel, id) };
    case 'publish': {
      const channel = checkChannel(frame.channel, id);
      if (!('data' in frame)) throw new GatewayError(ErrorCode.BAD_REQUEST, 'publish needs a data field', id);
      checkDepth(frame.data, id);
      return { type, id, channel, data: frame.data };
    }
    default:
      throw new GatewayError(
        ErrorCode.BAD_REQUEST,
        type === undefined ? 'frame needs a type' : `unknown type ${shown(type)}`,
        id
      );
  }
}

/** @returns {string | undefined} why `info` cannot be a connection's info; undefined when it can (or is absent) */
export function infoProblem(info) {
  if (info === undefined) return undefined;
  if (info === null || typeof info !== 'object' || Array.isArray(info)) return 'info must be a JSON object';
  if (Buffer.byteLength(JSON.stringify(info)) > MAX_INFO_BYTES) return `info must be at most ${MAX_INFO_BYTES} bytes serialised`;
  return undefined;
}

// Server frames. `message` frames are built from already-serialised data so a
// publish is serialised once, however many workers and subscribers it reaches.

/** @param {string} [auth] 'jwt' when a token is required; left out otherwise */
export function welcomeFrame(connectionId, worker, pingInterval, auth) {
  return JSON.stringify({ type: 'welcome', connectionId, worker, pingInterval, auth });
}

export function ackFrame(id) {
  return id === undefined ? '{"type":"ack"}' : JSON.stringify({ type: 'ack', id });
}

/** The ack of a publish the engine has stored: its place in the channel's sequence. */
export function publishAckFrame(id, seq, epoch) {
  return JSON.stringify({ type: 'ack', id, seq, epoch });
}

/**
 * The ack of a subscribe: where the channel stands (`seq`, `epoch`), so the
 * client knows where to resume from, and for a subscribe with `since`
 * whether the missed messages follow (`recovered`); in a `latest` namespace,
 * `latest: true` when the channel's latest message (seq `seq`) follows.
 */
export function subscribeAckFrame(id, seq, epoch, recovered, latest) {
  return JSON.stringify({ type: 'ack', id, seq, epoch, recovered, latest });
}

/**
 * A subscription the server made (the token's `channels`, the server API's
 * subscribe): announced like a subscribe's ack, with the channel named.
 */
export function subscribedFrame(channel, seq, epoch, recovered, latest) {
  return JSON.stringify({ type: 'subscribed', channel, seq, epoch, recovered, latest });
}

/** The server API ended a subscription. */
export function unsubscribedFrame(channel) {
  return `{"type":"unsubscribed","channel":"${channel}"}`;
}

/** The ack of an `auth` frame: who the token says, and when it expires (ms). */
export function authAckFrame(id, user, expiresAt) {
  return JSON.stringify({ type: 'ack', id, user, expiresAt });
}

/** A presence answer; `clientsJson` the JSON text of {client: {user, info}}. */
export function presenceFrame(id, channel, clientsJson) {
  return `{"type":"presence"${id === undefined ? '' : `,"id":${JSON.stringify(id)}`},"channel":"${channel}","clients":${clientsJson}}`;
}

/**
 * Who came and went in a channel since its last diff (Phoenix's shape):
 * `joinsJson` and `leavesJson` the JSON text of {client: {user, info}}; a
 * client is in one of them at most. A member list is a presence read with
 * every later diff applied.
 */
export function presenceDiffFrame(channel, joinsJson, leavesJson) {
  return `{"type":"presence_diff","channel":"${channel}","joins":${joinsJson},"leaves":${leavesJson}}`;
}

/**
 * A presence_stats answer: clients in the channel, distinct users among them,
 * and the digest of the client ids (presenceDigest), so a client holding a
 * member list learns in O(1) whether it matches.
 */
export function presenceStatsFrame(id, channel, clients, users, digest) {
  return JSON.stringify({ type: 'presence_stats', id, channel, clients, users, digest });
}

/**
 * A client id's 32-bit FNV-1a hash; a channel's presence digest is the XOR of
 * its clients' hashes, kept as they come and go by both engines (Redis: in
 * lib/engines/redis/presence.lua, the same arithmetic) and recomputed by the
 * client library from its list. Ids are ASCII. The multiplication by the FNV
 * prime (2^24 + 403) is split so no product exceeds 2^53 (Lua's numbers too).
 */
export function clientHash(id) {
  let h = 2166136261;
  for (let i = 0; i < id.length; i++) {
    h = (h ^ id.charCodeAt(i)) >>> 0;
    h = ((h % 256) * 16777216 + h * 403) % 4294967296;
  }
  return h;
}

/** The digest of a list of client ids: the XOR of their hashes (0 for none). */
export function presenceDigest(ids) {
  let digest = 0;
  for (const id of ids) digest = (digest ^ clientHash(id)) >>> 0;
  return digest;
}

export function pongFrame(id) {
  return id === undefined ? '{"type":"pong"}' : JSON.stringify({ type: 'pong', id });
}

export function errorFrame(code, message, id) {
  return JSON.stringify({ type: 'error', id, code, message });
}

export function messageFrame(channel, seq, dataJson) {
  // Channel names are validated to need no escaping.
  return `{"type":"message","channel":"${channel}","seq":${seq},"data":${dataJson}}`;
}

/**
 * A message as a fossil delta of its data's JSON text (UTF-8) against the
 * previous message's; the delta's bytes as a string of one character per
 * byte (U+0000 to U+00FF), which JSON carries exactly.
 * @param {Uint8Array} delta
 */
export function deltaFrame(channel, seq, delta) {
  return `{"type":"message","channel":"${channel}","seq":${seq},"delta":true,"data":${JSON.stringify(Buffer.from(delta.buffer, delta.byteOffset, delta.byteLength).toString('latin1'))}}`;
}

// The SSE cursor, the `id:` of every event: each channel of the stream's
// query, in query order, as `seq.epoch`, comma separated; empty for a channel
// whose position is not known yet. Positional, so it stays short whatever the
// channel names; a cursor replayed against other channels meets other epochs
// and reads as a gap, never as someone else's messages.

/** @param {Array<{seq: number, epoch: string}|null>} positions */
export function formatCursor(positions) {
  let text = '';
  for (let i = 0; i < positions.length; i++) {
    const p = positions[i];
    if (i > 0) text += ',';
    if (p !== null) text += `${p.seq}.${p.epoch}`;
  }
  return text;
}

// An entry is at most 16 digits, a dot and a 16-character epoch.
const CURSOR_ENTRY = /^(?:(\d{1,16})\.([0-9a-z]{1,16}))?$/;

/**
 * Reads a Last-Event-ID for a stream on `count` channels.
 * @returns {Array<{seq: number, epoch: string}|undefined>} where to resume each channel from
 * @throws {GatewayError} bad_request for anything but a cursor of `count` entries
 */
export function parseCursor(text, count) {
  const entries = text.length <= count * 34 ? text.split(',') : [];
  if (entries.length !== count) {
    throw new GatewayError(ErrorCode.BAD_REQUEST, `Last-Event-ID must be a cursor of this stream's ${count} channel(s)`);
  }
  return entries.map((entry) => {
    const match = CURSOR_ENTRY.exec(entry);
    const seq = match === null ? NaN : Number(match[1] ?? 0);
    if (!Number.isSafeInteger(seq)) throw new GatewayError(ErrorCode.BAD_REQUEST, 'Last-Event-ID is not a cursor this gateway wrote');
    return match[1] === undefined ? undefined : { seq, epoch: match[2] };
  });
}

/**
 * Parses `text` as one JSON object (a frame, a request body).
 * @param {string} what named in the error: 'frame', 'body'
 * @throws {GatewayError} bad_request
 */
export function parseObject(text, what) {
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    throw new GatewayError(ErrorCode.BAD_REQUEST, `${what} is not valid JSON`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new GatewayError(ErrorCode.BAD_REQUEST, `${what} must be a JSON object`);
  }
  return value;
}

/**
 * A client's value as an error message names it: a string quoted and cut
 * to 64 characters, null, a number or a boolean as is, anything else by
 * its type. Never String(value): an array nested thousands deep overflows
 * the stack in its toString, and an object's own `toString` may be
 * anything but a function.
 */
export function shown(value) {
  if (typeof value === 'string') return JSON.stringify(value.slice(0, 64));
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return `${value}`;
  return Array.isArray(value) ? '(an array)' : `(an ${typeof value})`;
}

function isValidId(id) {
  return (typeof id === 'number' && Number.isFinite(id)) || (typeof id === 'string' && id.length <= MAX_ID_LENGTH);
}

/** At most this many channels in an auth frame's `since`. */
const MAX_HELD = 1000;

/**
 * `since` of an auth frame: where the client stands in each channel the
 * server had subscribed it to, `{"<channel>": {seq, epoch}}`, for the
 * resubscribe after a reconnect.
 * @returns {Map<string, {seq: number, epoch: string}>}
 */
function checkHeld(held, id) {
  if (held === null || typeof held !== 'object' || Array.isArray(held)) {
    throw new GatewayError(ErrorCode.BAD_REQUEST, 'since must be an object {"<channel>": {seq, epoch}}', id);
  }
  const entries = Object.entries(held);
  if (entries.length > MAX_HELD) throw new GatewayError(ErrorCode.BAD_REQUEST, `since holds more than ${MAX_HELD} channels`, id);
  return new Map(entries.map(([channel, since]) => [checkChannel(channel, id), checkSince(since, id)]));
}

/** `since` of a subscribe: `{"seq": <integer >= 0>, "epoch": "<base 36>"}`. */
export function checkSince(since, id) {
  if (since === null || typeof since !== 'object' || Array.isArray(since)) {
    throw new GatewayError(ErrorCode.BAD_REQUEST, 'since must be an object {seq, epoch}', id);
  }
  const { seq, epoch } = since;
  if (!Number.isSafeInteger(seq) || seq < 0) {
    throw new GatewayError(ErrorCode.BAD_REQUEST, 'since.seq must be a whole number from 0', id);
  }
  if (typeof epoch !== 'string' || !EPOCH.test(epoch)) {
    throw new GatewayError(ErrorCode.BAD_REQUEST, 'since.epoch must be the epoch string of an earlier ack', id);
  }
  return { seq, epoch };
}

function checkDelta(delta, id) {
  if (delta === DeltaAlgorithm.FOSSIL) return delta;
  throw new GatewayError(ErrorCode.BAD_REQUEST, `delta must be "${DeltaAlgorithm.FOSSIL}" (the one algorithm offered)`, id);
}

export function checkChannel(channel, id) {
  if (channel === undefined) throw new GatewayError(ErrorCode.BAD_REQUEST, 'channel is missing', id);
  if (!isValidChannel(channel)) {
    throw new GatewayError(ErrorCode.INVALID_CHANNEL, 'channel must be 1 to 128 characters of A-Z a-z 0-9 _ . : @ / -', id);
  }
  return channel;
}

// Iterative, so hostile nesting cannot overflow the stack here; refusing it
// keeps JSON.stringify (which recurses) safe later. Bytes (a MessagePack
// bin) are data only as the whole of it: inside a value JSON could not
// carry them.
export function checkDepth(data, id) {
  if (data === null || typeof data !== 'object' || ArrayBuffer.isView(data)) return;
  const stack = [data, 1];
  while (stack.length > 0) {
    const depth = stack.pop();
    const value = stack.pop();
    if (depth > MAX_DATA_DEPTH) {
      throw new GatewayError(ErrorCode.BAD_REQUEST, `data is nested deeper than ${MAX_DATA_DEPTH} levels`, id);
    }
    for (const key in value) {
      const child = value[key];
      if (child === null || typeof child !== 'object') continue;
      if (ArrayBuffer.isView(child)) throw new GatewayError(ErrorCode.BAD_REQUEST, 'binary data must be the whole of data, not inside it', id);
      stack.push(child, depth + 1);
    }
  }
}
