// The MessagePack side of ./frames.js: the one frame on the hot path, a
// message, read in place (its seq, and the send time at the head of the
// load generator's data) without decoding the rest, as readMessage does for
// JSON. The gateway writes a message's fields in one order (type, channel,
// seq, then delta or data: lib/transport/msgpack-transport.js); anything else
// is decoded whole, as a control frame.
import { decode } from '@msgpack/msgpack';

const HEAD = Buffer.from([0xa4, ...Buffer.from('type'), 0xa7, ...Buffer.from('message'), 0xa7, ...Buffer.from('channel')]);
const SEQ = Buffer.from([0xa3, ...Buffer.from('seq')]);
const DATA_T = Buffer.from([0xa4, ...Buffer.from('data')]); // then a map whose first key is "t"
const T = Buffer.from([0xa1, 0x74]);

/**
 * @param {Buffer} buf one frame's payload
 * @param {{seq: number, sentUs: number}} out set for a message (sentUs -1: not ours, or a delta)
 * @returns {object|undefined} any other frame, decoded ({} when it does not decode); undefined for a message
 */
export function readMsgpack(buf, out) {
  if ((buf[0] !== 0x84 && buf[0] !== 0x85) || buf.compare(HEAD, 0, HEAD.length, 1, 1 + HEAD.length) !== 0) return decodeWhole(buf);
  let at = 1 + HEAD.length;
  at = skipString(buf, at);
  if (at < 0 || buf.compare(SEQ, 0, SEQ.length, at, at + SEQ.length) !== 0) return decodeWhole(buf);
  at += SEQ.length;
  const seq = readNumber(buf, at);
  out.seq = seq.value;
  at = seq.end;
  out.sentUs = -1;
  if (buf.compare(DATA_T, 0, DATA_T.length, at, at + DATA_T.length) === 0) {
    at += DATA_T.length;
    if ((buf[at] & 0xf0) === 0x80 && buf.compare(T, 0, T.length, at + 1, at + 1 + T.length) === 0) out.sentUs = readNumber(buf, at + 1 + T.length).value;
  }
  return undefined;
}

function decodeWhole(buf) {
  try {
    const frame = decode(buf);
    return frame !== null && typeof frame === 'object' ? frame : {};
  } catch {
    return {};
  }
}

/** @returns {number} where the string at `at` ends, -1 for anything else */
function skipString(buf, at) {
  const b = buf[at];
  if ((b & 0xe0) === 0xa0) return at + 1 + (b & 0x1f);
  if (b === 0xd9) return at + 2 + buf[at + 1];
  return -1;
}

/** A non-negative integer (or a float) at `at`: its value (-1 for anything else) and where it ends. */
function readNumber(buf, at) {
  const b = buf[at];
  if (b < 0x80) return { value: b, end: at + 1 };
  switch (b) {
    case 0xcc:
      return { value: buf[at + 1], end: at + 2 };
    case 0xcd:
      return { value: buf.readUInt16BE(at + 1), end: at + 3 };
    case 0xce:
      return { value: buf.readUInt32BE(at + 1), end: at + 5 };
    case 0xcf:
      return { value: Number(buf.readBigUInt64BE(at + 1)), end: at + 9 };
    case 0xcb:
      return { value: buf.readDoubleBE(at + 1), end: at + 9 };
    default:
      return { value: -1, end: at + 1 };
  }
}
