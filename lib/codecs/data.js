// How a message's data is held between its publish and its subscribers: as
// text (`dataJson`), serialised once at the publish and carried unchanged
// through the IPC, the engines' history and Redis, and every transport.
//
// JSON data is JSON.stringify's text. Binary data (bytes a MessagePack
// client published) is held as ` {"b64":"<base64>"}`: exactly what a JSON
// or SSE subscriber receives in its place, preceded by one space. The space
// keeps the text valid JSON (JSON subscribers, history reads and SSE events
// pass it through untouched: no cost for JSON-only traffic) and marks it as
// bytes, since JSON.stringify never writes a leading space: a JSON client's
// own `{"b64": …}` object stays an object for everyone.

const BINARY_MARK = 32; // ' '

/**
 * Serialises a publish's data once.
 * @param {*} data a JSON value, or a Uint8Array (binary, from a MessagePack client)
 * @returns {string} dataJson
 */
export function serialiseData(data) {
  if (!ArrayBuffer.isView(data)) return JSON.stringify(data);
  return ` {"b64":"${Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64')}"}`;
}

/** Whether a dataJson holds bytes. */
export function isBinary(dataJson) {
  return dataJson.charCodeAt(0) === BINARY_MARK;
}

/** @returns {Buffer} the bytes of a binary dataJson */
function bytesOf(dataJson) {
  // ` {"b64":"` is 9 characters, `"}` 2.
  return Buffer.from(dataJson.slice(9, -2), 'base64');
}

/** @returns {*} the data a dataJson holds: a Buffer for bytes, the JSON value otherwise */
export function valueOf(dataJson) {
  return isBinary(dataJson) ? bytesOf(dataJson) : JSON.parse(dataJson);
}

/** The data as JSON can carry it (a hook's request body): bytes as {"b64": …}. */
export function jsonable(data) {
  return ArrayBuffer.isView(data) ? JSON.parse(serialiseData(data)) : data;
}
