// The MessagePack encoding (`gateway.msgpack`): binary frames both ways,
// holding the same frames as JSON, field for field. `data` may be bytes (a
// MessagePack bin), carried as bytes end to end (./data.js).
//
// Decoding is bounded: strings, bins, arrays and maps no longer than a
// frame may be (a header that declares 4 GB is refused before anything is
// read), no extension types (a frame holds what JSON holds, plus
// bytes), no `__proto__` keys (the decoder refuses them). The decoder walks
// nesting with its own stack, so depth cannot overflow ours; `data` is then
// held to the same depth as JSON's (checkDepth).
import { Decoder, Encoder } from '@msgpack/msgpack';
import { ErrorCode, GatewayError } from '../core/errors.js';
import { checkClientFrame } from '../protocol/client-frame.js';

export const name = 'msgpack';
export const protocol = 'gateway.msgpack';

// An extension type is refused where it is met, as a bad frame.
const NO_EXTENSIONS = {
  encode: () => null,
  decode: (data, type) => {
    throw new GatewayError(ErrorCode.BAD_REQUEST, `MessagePack extension type ${type} is not accepted`);
  }
};

const encoder = new Encoder({ ignoreUndefined: true });

/** @returns {Uint8Array} a frame object as MessagePack (undefined fields left out, as JSON.stringify does) */
export function encode(frame) {
  return encoder.encode(frame);
}

/** A frame built as JSON text (../protocol/frames.js), as MessagePack: the same fields. */
export function fromJson(text) {
  return encoder.encode(JSON.parse(text));
}

// No frame is longer than --max-payload allows (at most 1 GiB); a length
// past that is refused from its header, whatever the frame's size.
const MAX_LENGTH = 1 << 30;

const decoder = new Decoder({
  extensionCodec: NO_EXTENSIONS,
  maxStrLength: MAX_LENGTH,
  maxBinLength: MAX_LENGTH,
  maxArrayLength: MAX_LENGTH,
  maxMapLength: MAX_LENGTH,
  maxExtLength: MAX_LENGTH
});

/**
 * Any MessagePack value, bounded as above (another protocol's frames, a
 * request body).
 * @throws {GatewayError} bad_request
 */
export function decodeValue(bytes) {
  try {
    return decoder.decode(bytes);
  } catch (err) {
    if (err instanceof GatewayError) throw err;
    throw new GatewayError(ErrorCode.BAD_REQUEST, `not valid MessagePack (${String(err.message).slice(0, 80)})`);
  }
}

/**
 * @param {Buffer} data one WebSocket frame's payload
 * @param {boolean} isBinary
 * @returns {object} the command (../protocol/client-frame.js checkClientFrame's shape)
 * @throws {GatewayError} bad_request
 */
export function decode(data, isBinary) {
  if (!isBinary) throw new GatewayError(ErrorCode.BAD_REQUEST, 'a text frame on a gateway.msgpack connection: send MessagePack as binary frames');
  const frame = decodeValue(data);
  if (frame === null || typeof frame !== 'object' || Array.isArray(frame) || ArrayBuffer.isView(frame)) {
    throw new GatewayError(ErrorCode.BAD_REQUEST, 'frame must be a MessagePack map');
  }
  return checkClientFrame(frame);
}
