// Rebuilding the messages of a delta subscription (`subscribe(channel,
// handler, {delta: true})`): the gateway sends a message whole, then each
// next one as a fossil delta of its data's JSON text (UTF-8) against the
// previous one's, whenever smaller. The base is JSON.stringify of the data
// last handed over, which is the text the gateway diffed (it serialises
// every publish with JSON.stringify, and that round-trips). fossil-delta is
// loaded only for a delta subscription: in Node from its package, in a
// browser from the gateway's /vendor/fossil-delta.js through an import map.

const encoder = new TextEncoder();
const decoder = new TextDecoder();

let fossil; // the module, once loaded
let loading;

/** @returns {Promise<void>} resolved once deltas can be applied */
export function loadDeltas() {
  loading ??= import('fossil-delta').then((module) => {
    fossil = module;
  });
  return loading;
}

export function deltasLoaded() {
  return fossil !== undefined;
}

/** The base of the next delta: the data's text as the gateway holds it; undefined for binary data (never diffed). */
export function baseOf(data) {
  return ArrayBuffer.isView(data) ? undefined : encoder.encode(JSON.stringify(data));
}

/**
 * @param {Uint8Array} base the previous message's text
 * @param {string|Uint8Array} delta as the frame carries it: bytes, or over JSON one character per byte
 * @returns {{data: *, base: Uint8Array}} the message's data, and the base of the next delta
 * @throws {Error} a delta that does not apply (its checksum fails)
 */
export function applyDelta(base, delta) {
  const bytes = typeof delta === 'string' ? Uint8Array.from(delta, (c) => c.charCodeAt(0)) : new Uint8Array(delta);
  const text = new Uint8Array(fossil.applyDelta(base, bytes, { verifyChecksum: true }));
  return { data: JSON.parse(decoder.decode(text)), base: text };
}
