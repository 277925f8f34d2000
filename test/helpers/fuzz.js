// What the hostile-input suite (test/e2e/ops/fuzz.test.js) shares: the fixed seed
// and bounded run counts, generators of structurally hostile input (deep
// nesting, huge numbers, wrong types, `__proto__` keys, lone surrogates and
// invalid UTF-8, bad percent-encoding, long strings, odd headers), and a
// raw HTTP/1.1 client over a TCP socket, so a request line or a header can
// hold bytes that fetch() would refuse to send.
import net from 'node:net';
import fc from 'fast-check';
import { ErrorCode, CloseCode } from '../../lib/core/errors.js';

/** FUZZ_SEED and FUZZ_RUNS (a multiplier of every count) widen a local hunt; npm test uses the fixed ones. */
export const SEED = Number(process.env.FUZZ_SEED ?? 36);
export const SCALE = Number(process.env.FUZZ_RUNS ?? 1);

/** fast-check's options for a property over `runs` inputs (no shrinking: each run costs real requests). */
function runsOf(runs) {
  return { seed: SEED, numRuns: Math.max(1, Math.round(runs * SCALE)), endOnFailure: process.env.FUZZ_SHRINK === undefined };
}

export const WIRE_CODES = new Set(Object.values(ErrorCode));
/** Close codes of the family, and those ws itself answers a broken frame with (1002 protocol, 1007 invalid UTF-8, 1009 too big). */
export const CLOSE_CODES = new Set([...Object.values(CloseCode), 1002, 1007, 1009]);

// ---- Strings ----

const KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__', 'then', 'length', ''];

/** Strings that break naive code: lone surrogates, NUL, percent signs, prototype names, long runs. */
export const hostileString = fc.oneof(
  { arbitrary: fc.string({ maxLength: 12 }), weight: 3 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 12 }), weight: 2 },
  { arbitrary: fc.constantFrom(...KEYS), weight: 2 },
  fc.constantFrom('\uD800', '\uDFFF', 'a\uD800b', '\u0000', '\uFEFF', '\u2028', '%', '%E0%A4%A', '%ZZ', '%00', '%C0%80', '../..', '#app-1.pub:x', 'a,b', 'presence-x', 'private-x', 'cache-x'),
  fc.integer({ min: 129, max: 20000 }).map((n) => 'x'.repeat(n))
);

/**
 * One character of a valid text replaced: a near miss passes the cheap
 * checks (a length in characters, a prefix) and reaches the comparisons
 * behind them. The replacements differ from ASCII in their UTF-8 length,
 * or are a lone surrogate or NUL.
 */
export const mutation = fc.tuple(fc.nat(), fc.constantFrom('é', '\u00ff', '€', '\uD800', '\u0000', '\uDE00', 'x'));

export function mutate(text, [at, replacement]) {
  const i = at % Math.max(1, text.length);
  return `${text.slice(0, i)}${replacement}${text.slice(i + 1)}`;
}

/** `valid` as is, a near miss of it, or anything. */
export function nearly(valid) {
  return fc.oneof(fc.constant(valid), { arbitrary: mutation.map((m) => mutate(valid, m)), weight: 2 }, hostileString);
}

/** A channel name: mostly valid ones (so the checks past the name run too), else hostile. */
export const channelName = fc.oneof(
  {
    arbitrary: fc.constantFrom('fuzz', 'fuzz-a', 'room:a', 'room:__proto__', 'hist:a', 'hist:constructor', 'nowhere:a', 'presence-fuzz', 'private-fuzz', 'cache-fuzz', 'private-encrypted-fuzz', '__proto__', '#server-to-user-1'),
    weight: 3
  },
  { arbitrary: hostileString, weight: 2 }
);

// ---- JSON text, written by hand: keys JSON.stringify would not write twice, numbers it would not write, nesting it would overflow on ----

const deepText = fc.oneof(
  fc.integer({ min: 60, max: 12000 }).map((n) => `${'['.repeat(n)}${']'.repeat(n)}`),
  fc.integer({ min: 60, max: 8000 }).map((n) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`),
  fc.integer({ min: 60, max: 4000 }).map((n) => `${'{"__proto__":'.repeat(n)}{}${'}'.repeat(n)}`)
);
const numberText = fc.oneof(
  fc.constantFrom('0', '-0', '1e400', '-1e400', '1e-400', '123456789012345678901234567890', '9007199254740993', '4294967296', '-1', '0.5', '1E2'),
  fc.double().map((d) => (Number.isFinite(d) ? String(d) : '1e999'))
);

/** Any JSON value's text, at most a few levels of generated structure (plus the deep ones, which are text). */
export const jsonText = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom('null', 'true', 'false', '""', '{}', '[]'),
    numberText,
    hostileString.map((s) => JSON.stringify(s)),
    deepText,
    tie('array'),
    tie('object')
  ),
  array: fc.array(tie('value'), { maxLength: 4 }).map((items) => `[${items.join(',')}]`),
  object: fc.array(fc.tuple(fc.oneof(fc.constantFrom(...KEYS), hostileString), tie('value')), { maxLength: 4 }).map(
    (pairs) => `{${pairs.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`
  )
})).value;

/** A JSON object's text with `fields` (name -> arbitrary of value text), each present or not, plus hostile extra keys; sometimes not JSON at all. */
export function objectText(fields) {
  const entries = Object.entries(fields).map(([key, value]) => fc.option(value.map((text) => `${JSON.stringify(key)}:${text}`), { nil: undefined, freq: 3 }));
  const extra = fc.oneof(
    { arbitrary: fc.constant([]), weight: 3 },
    fc.array(fc.tuple(fc.constantFrom(...KEYS), jsonText), { minLength: 1, maxLength: 2 }).map((pairs) => pairs.map(([k, v]) => `${JSON.stringify(k)}:${v}`))
  );
  const object = fc.tuple(fc.tuple(...entries), extra).map(([present, more]) => `{${[...present.filter((p) => p !== undefined), ...more].join(',')}}`);
  return fc.oneof(
    { arbitrary: object, weight: 8 },
    fc.string({ maxLength: 40 }),
    jsonText,
    object.map((text) => text.slice(0, Math.max(1, text.length - 1))) // cut short
  );
}

/** A small JSON value's text, as an application would send (no deep nesting, no numbers past a double). */
export const plainText = fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v));

/** A channel name that passes every check of the gateway's configuration in test/e2e/ops/fuzz.test.js. */
export const goodChannel = fc.constantFrom('fuzz', 'fuzz-a', 'room:a', 'hist:a', 'hist:b', '__proto__', 'constructor');

/** A value text that is sometimes the expected kind (`plausible`, text), else anything. */
export function field(...plausible) {
  return fc.oneof({ arbitrary: fc.constantFrom(...plausible), weight: 3 }, { arbitrary: jsonText, weight: 1 });
}

export const quoted = (arb) => arb.map((s) => JSON.stringify(s));

// ---- Values (for MessagePack, which is encoded from values) ----

/** A value with `__proto__` as an own key, as a hostile decoder's input would have. */
function withKeys(pairs) {
  const out = {};
  for (const [k, v] of pairs) Object.defineProperty(out, k, { value: v, enumerable: true, configurable: true, writable: true });
  return out;
}

export const hostileValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(null, true, false, 0, -0, NaN, Infinity, -Infinity, 2 ** 53 + 2, 2 ** 64, -(2 ** 63), 1e308),
    fc.double(),
    fc.integer(),
    hostileString,
    fc.uint8Array({ maxLength: 16 }),
    tie('array'),
    tie('object')
  ),
  array: fc.array(tie('value'), { maxLength: 4 }),
  object: fc.array(fc.tuple(fc.oneof(fc.constantFrom(...KEYS), hostileString), tie('value')), { maxLength: 4 }).map(withKeys)
})).value;

/** An object with `fields` (name -> arbitrary), each present or not, plus hostile keys. */
export function objectValue(fields) {
  const entries = Object.entries(fields).map(([key, value]) => fc.option(value.map((v) => [key, v]), { nil: undefined, freq: 3 }));
  return fc
    .tuple(fc.tuple(...entries), fc.array(fc.tuple(fc.constantFrom(...KEYS), hostileValue), { maxLength: 2 }))
    .map(([present, more]) => withKeys([...present.filter((p) => p !== undefined), ...more]));
}

/** MessagePack bytes no encoder writes: lengths of 4 GB, nesting far past any limit, extension types, non-string keys, truncation. */
export const hostileMsgpack = fc.oneof(
  fc.uint8Array({ maxLength: 64 }),
  fc.constantFrom(
    [0xdd, 0xff, 0xff, 0xff, 0xff], // array32 of 4 G items
    [0xdf, 0xff, 0xff, 0xff, 0xff], // map32 of 4 G entries
    [0xdb, 0xff, 0xff, 0xff, 0xff, 0x61], // str32 of 4 GB
    [0xc6, 0xff, 0xff, 0xff, 0xff], // bin32 of 4 GB
    [0xd4, 0x01, 0x00], // fixext1
    [0xc7, 0x02, 0xff, 0x00, 0x00], // ext8, timestamp type -1 (bad length)
    [0xd6, 0xff, 0x00, 0x00, 0x00, 0x01], // timestamp 32
    [0x81, 0x01, 0x02], // {1: 2}
    [0x81, 0xc0, 0xc0], // {nil: nil}
    [0x81, 0x91, 0x01, 0x02], // {[1]: 2}
    [0x81, 0xa9, ...Buffer.from('__proto__'), 0x81, 0xa1, 0x61, 0x01], // {__proto__: {a: 1}}
    [0x82, 0xa4, ...Buffer.from('type'), 0xa4, ...Buffer.from('ping'), 0xa4, ...Buffer.from('type'), 0xa7, ...Buffer.from('publish')], // a key twice
    [0xa2, 0xff, 0xfe], // a str of invalid UTF-8
    [0xc1], // never used
    [0x83] // a map cut short
  ).map((bytes) => Uint8Array.from(bytes)),
  fc.integer({ min: 60, max: 100000 }).map((n) => Uint8Array.from([...new Array(n).fill(0x91), 0xc0])), // [[[…nil…]]]
  fc.integer({ min: 60, max: 50000 }).map((n) => {
    // {type: "publish", channel: "fuzz", data: [[[…]]]}
    const head = [0x83, 0xa4, ...Buffer.from('type'), 0xa7, ...Buffer.from('publish'), 0xa7, ...Buffer.from('channel'), 0xa4, ...Buffer.from('fuzz'), 0xa4, ...Buffer.from('data')];
    return Uint8Array.from([...head, ...new Array(n).fill(0x91), 0xc0]);
  })
);

// ---- HTTP ----

/** Header values and names a client may send (the parser refuses some: that is an answer too). */
export const oddHeaders = fc.oneof({ arbitrary: fc.constant([]), weight: 2 }, fc.array(
  fc.oneof(
    fc.tuple(fc.constantFrom('Content-Type', 'Origin', 'Cookie', 'Authorization', 'Last-Event-ID', 'X-Forwarded-For', 'Accept', 'Sec-WebSocket-Protocol'), hostileString),
    fc.tuple(fc.constant('X-Forwarded-For'), fc.constantFrom('__proto__', '1.2.3.4, __proto__', ',', ' , ', 'constructor', '::1', '999.999.999.999')),
    fc.tuple(fc.constantFrom('X-A', '__proto__', 'constructor', 'Host'), fc.constantFrom('', ' ', 'a'.repeat(9000), '\u00ff\u00fe', 'a\u0000b'))
  ),
  { minLength: 1, maxLength: 3 }
));

/** Percent-encoding that decodes, and that does not. */
export const pathSegment = fc.oneof(
  fc.constantFrom('%E0%A4%A', '%ZZ', '%', '%C0%80', '%ED%A0%80', '%FF', '__proto__', 'constructor', '%5F%5Fproto%5F%5F', '..', '.', '', 'a%2Fb', '%00'),
  hostileString.map((s) => encodeURIComponent(s.replace(/[\uD800-\uDFFF]/g, 'x'))),
  fc.string({ unit: 'binary-ascii', maxLength: 10 }).map((s) => s.replace(/[\s?#/]/g, '_'))
);

/** A query string of hostile parameters, sometimes with `fixed` ones among them. */
export function queryOf(names) {
  return fc
    .array(fc.tuple(fc.oneof(fc.constantFrom(...names, ...KEYS), pathSegment), fc.oneof(pathSegment, fc.constantFrom('', '1', '-1', '1e400', 'NaN'))), { maxLength: 4 })
    .map((pairs) => pairs.map(([k, v]) => `${k}=${v}`).join('&'));
}

/**
 * One request over its own TCP connection, written byte for byte.
 * @returns {Promise<{status: number, head: string, body: string}>} rejects when no answer comes (a reset, or nothing in `timeout` ms)
 */
export function rawHttp(port, { method = 'GET', path = '/', headers = [], body, timeout = 10000 }) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks = [];
    let settled = false;
    const done = (err) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      const match = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (match === null) return reject(new Error(`no HTTP answer to ${method} ${path.slice(0, 200)}: ${err?.message ?? 'closed'} after ${JSON.stringify(text.slice(0, 200))}`));
      const end = text.indexOf('\r\n\r\n');
      resolve({ method, status: Number(match[1]), head: text.slice(0, end), body: end === -1 ? '' : text.slice(end + 4) });
    };
    const timer = setTimeout(() => done(new Error(`no answer within ${timeout} ms`)), timeout);
    socket.on('data', (chunk) => {
      chunks.push(chunk);
      // A stream (SSE's 200) or an upgraded connection never ends by itself: its head is the answer.
      const text = Buffer.concat(chunks).toString('latin1');
      if (/^HTTP\/1\.1 (101|200[^]*text\/event-stream)[^]*\r\n\r\n/.test(text)) done();
    });
    socket.on('end', () => done());
    socket.on('close', () => done());
    socket.on('error', (err) => done(err));
    const bytes = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(body);
    const lines = [`${method} ${path.replace(/[\r\n]/g, '')} HTTP/1.1`, `Host: 127.0.0.1:${port}`, 'Connection: close'];
    // CR and LF would end the line early and make another request of the rest: a request is one request here.
    for (const [name, value] of headers) lines.push(`${name}: ${value.replace(/[\r\n]/g, ' ')}`);
    if (bytes !== undefined) lines.push(`Content-Length: ${bytes.length}`);
    const head = `${lines.join('\r\n')}\r\n\r\n`;
    // Characters up to U+00FF as single bytes (so a path can hold invalid UTF-8), UTF-8 when there are others.
    socket.write(/^[\u0000-\u00ff]*$/.test(head) ? Buffer.from(head, 'latin1') : Buffer.from(head, 'utf8'));
    if (bytes !== undefined) socket.write(bytes);
  });
}

/** The JSON of an HTTP answer's body, or undefined. */
export function bodyJson(answer) {
  try {
    return JSON.parse(answer.body);
  } catch {
    return undefined;
  }
}

/** Asserts `predicate` (async, throwing when the property fails) over `runs` inputs of `arbitrary`, with the suite's seed. */
export async function check(arbitrary, runs, predicate) {
  await fc.assert(fc.asyncProperty(arbitrary, predicate), runsOf(runs));
}

export { fc };
