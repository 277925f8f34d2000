// The checks of the values a client sends, whichever way it comes in: a
// channel name, a `since` position, a message's data, a connection's info.
// A native frame (./client-frame.js), the server API (../core/server.js),
// Pusher's frames and the admin page call these, so each rule is written
// once; the browser client calls isValidChannel before it sends. Plain
// JavaScript importing only the error family and ./limits.js, so the browser
// loads it as it is.
import { ErrorCode, GatewayError } from '../core/errors.js';
import { MAX_DATA_DEPTH, MAX_INFO_BYTES } from './limits.js';

const CHANNEL = /^[A-Za-z0-9_.:@/-]{1,128}$/;
// A channel's epoch as the gateway writes it (base 36); a seq is a count of
// publishes, so it stays a safe integer.
const EPOCH = /^[0-9a-z]{1,16}$/;

export function isValidChannel(name) {
  return typeof name === 'string' && CHANNEL.test(name);
}

/** @throws {GatewayError} bad_request when missing, invalid_channel when not a valid name; with the frame's `id` */
export function checkChannel(channel, id) {
  if (channel === undefined) throw new GatewayError(ErrorCode.BAD_REQUEST, 'channel is missing', id);
  if (!isValidChannel(channel)) {
    throw new GatewayError(ErrorCode.INVALID_CHANNEL, 'channel must be 1 to 128 characters of A-Z a-z 0-9 _ . : @ / -', id);
  }
  return channel;
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

/** @returns {string | undefined} why `info` cannot be a connection's info; undefined when it can (or is absent) */
export function infoProblem(info) {
  if (info === undefined) return undefined;
  if (info === null || typeof info !== 'object' || Array.isArray(info)) return 'info must be a JSON object';
  if (Buffer.byteLength(JSON.stringify(info)) > MAX_INFO_BYTES) return `info must be at most ${MAX_INFO_BYTES} bytes serialised`;
  return undefined;
}
