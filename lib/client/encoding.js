// How the client reads and writes frames on a WebSocket: JSON text
// (gateway.json, the default) or MessagePack binary frames
// (gateway.msgpack, `encoding: 'msgpack'`). MessagePack is loaded only when
// asked for, so a JSON client needs nothing more: in Node from the
// @msgpack/msgpack package, in a browser from the gateway's
// /vendor/msgpack/index.mjs through an import map (see the README).

export const ENCODINGS = ['json', 'msgpack'];

export const jsonCodec = Object.freeze({
  protocols: undefined, // no Sec-WebSocket-Protocol: JSON
  binaryType: undefined,
  encode: (frame) => JSON.stringify(frame),
  /** @returns {object|undefined} undefined for anything but a JSON object */
  decode: (data) => (typeof data === 'string' ? parse(data) : undefined)
});

/**
 * @param {'json'|'msgpack'} encoding
 * @returns {object|Promise<object>} the codec, at once for JSON
 */
export function loadEncoding(encoding) {
  if (encoding === 'json') return jsonCodec;
  return import('@msgpack/msgpack').then(({ encode, decode }) =>
    Object.freeze({
      protocols: ['gateway.msgpack'],
      binaryType: 'arraybuffer',
      encode: (frame) => encode(frame, { ignoreUndefined: true }),
      decode: (data) => (typeof data === 'string' ? undefined : decodeMap(decode, data))
    })
  );
}

function parse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function decodeMap(decode, data) {
  try {
    const frame = decode(data);
    return frame !== null && typeof frame === 'object' && !ArrayBuffer.isView(frame) ? frame : undefined;
  } catch {
    return undefined;
  }
}
