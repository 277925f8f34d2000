// A native client's frame, read into the command it asks for: the frame's
// type, its id, and each field the type takes, checked (./validate.js);
// anything else is refused with the code to answer and the frame's id. The
// JSON encoding parses the text first (parseClientFrame); MessagePack decodes
// into a plain object and checks that (checkClientFrame), so both encodings
// take the same commands. Plain JavaScript importing only the error family
// and its siblings.
import { ErrorCode, GatewayError } from '../core/errors.js';
import { MAX_HELD, MAX_ID_LENGTH } from './limits.js';
import { parseObject } from './json-object.js';
import { quoted } from './quoted.js';
import { checkChannel, checkDepth, checkSince } from './validate.js';

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
        type === undefined ? 'frame needs a type' : `unknown type ${quoted(type)}`,
        id
      );
  }
}

function isValidId(id) {
  return (typeof id === 'number' && Number.isFinite(id)) || (typeof id === 'string' && id.length <= MAX_ID_LENGTH);
}

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

function checkDelta(delta, id) {
  if (delta === DeltaAlgorithm.FOSSIL) return delta;
  throw new GatewayError(ErrorCode.BAD_REQUEST, `delta must be "${DeltaAlgorithm.FOSSIL}" (the one algorithm offered)`, id);
}
