// Pusher's frames, protocol 7 as pusher-js 8 speaks it: every frame is
// {"event", "channel"?, "data"}. An event's `data` is a string the
// publisher JSON-encoded; the `pusher:` frames from the server carry an
// object (pusher:error, pusher:subscription_error, pusher:pong) or, where
// pusher-js parses a string, a string.
import { ErrorCode, GatewayError } from '../core/errors.js';
import { parseObject } from '../protocol/json-object.js';
import { checkDepth } from '../protocol/validate.js';

/** Pusher's error codes (pusher:error and close codes) the gateway uses. */
export const PusherCode = Object.freeze({
  APP_NOT_FOUND: 4001, // no app with this key (or no more): do not reconnect
  APP_DISABLED: 4003, // the app is disabled
  UNSUPPORTED_PROTOCOL: 4007,
  NO_PROTOCOL: 4008,
  OVER_QUOTA: 4004, // over the app's connection quota (maxConnections), or --max-conns-per-ip
  UNAUTHORIZED: 4009, // a connection the app does not allow (its Origin, a bad sign-in, terminate_connections)
  OVER_CAPACITY: 4100, // reconnect after backing off
  RECONNECT: 4200, // reconnect at once (a drain)
  CLIENT_EVENT_REJECTED: 4301 // client events off, on a public channel, or over the rate
});

// --- Client to server ---

/**
 * Parses one client text frame.
 * @returns {{event: string, channel?: *, data: *}}
 * @throws {GatewayError} bad_request
 */
export function parseFrame(text) {
  const frame = parseObject(text, 'frame');
  if (typeof frame.event !== 'string' || frame.event === '') throw new GatewayError(ErrorCode.BAD_REQUEST, 'a frame needs an event name');
  checkDepth(frame.data); // the native protocol's limit: JSON.stringify recurses, and a client event's data is re-encoded
  return frame;
}

/** The object `data` of a pusher: frame: pusher-js sends an object, some clients its JSON text. */
export function dataObject(frame) {
  let { data } = frame;
  if (typeof data === 'string') {
    try {
      data = JSON.parse(data);
    } catch {
      data = undefined;
    }
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) throw new GatewayError(ErrorCode.BAD_REQUEST, `${frame.event} needs a data object`);
  return data;
}

// --- Server to client ---

const quote = JSON.stringify;

/** The socket_id (digits and a dot: nothing to escape) inside the data string. */
export function connectionEstablished(socketId, activityTimeout) {
  return `{"event":"pusher:connection_established","data":"{\\"socket_id\\":\\"${socketId}\\",\\"activity_timeout\\":${activityTimeout}}"}`;
}

export function errorFrame(code, message) {
  return `{"event":"pusher:error","data":{"code":${code === null ? 'null' : code},"message":${quote(message)}}}`;
}

export const PONG = '{"event":"pusher:pong","data":{}}';

/** @param {string} dataText the data's JSON text, sent as a string ('{}' for all but presence) */
export function subscriptionSucceeded(channel, dataText = '{}') {
  return `{"event":"pusher_internal:subscription_succeeded","channel":${quote(channel)},"data":${quote(dataText)}}`;
}

export function subscriptionError(channel, status, type, error) {
  return `{"event":"pusher:subscription_error","channel":${quote(channel)},"data":{"type":${quote(type)},"error":${quote(error)},"status":${status}}}`;
}

export function subscriptionCountFrame(channel, count) {
  return `{"event":"pusher_internal:subscription_count","channel":${quote(channel)},"data":${quote(`{"subscription_count":${count}}`)}}`;
}

export function cacheMiss(channel) {
  return `{"event":"pusher:cache_miss","channel":${quote(channel)},"data":"{}"}`;
}

export function signinSuccess(userData) {
  return `{"event":"pusher:signin_success","data":{"user_data":${quote(userData)}}}`;
}

/**
 * A message's data as the engine carries it: the event's fields less its
 * channel (who must not receive it travels beside it: the publication's
 * `exclude`).
 * @param {string} event
 * @param {string} data the event's data string
 * @param {string} [userId] a client event's sender on a presence channel
 */
export function eventData(event, data, userId) {
  return userId === undefined ? { event, data } : { event, data, user_id: userId };
}

/** One message for a Pusher subscriber: the engine's data (eventData, as JSON text) with the channel spliced in. */
export function eventFrame(channel, dataJson) {
  return `{"channel":${quote(channel)},${dataJson.slice(1)}`;
}
