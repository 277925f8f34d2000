// PROXY protocol (v1 text from classic ELB, v2 binary from NLB): the header a
// TCP load balancer puts in front of the stream to say who the client is. It
// is read before anything else: by the primary before it chooses a worker, so
// stickiness and limits see the real client (it hands the bytes after it to
// the worker untouched), or under --balance reuseport by the worker that
// accepted the connection, before its HTTP parser sees a byte.
import { isIPv4, isIPv6 } from 'node:net';
import { InternalCode, ProxyHeaderError } from '../core/errors.js';

export { ProxyHeaderError };

const V1_PREFIX = Buffer.from('PROXY ');
const V1_MAX = 107; // the spec's bound, CRLF included
const V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
const V2_FIXED = 16;
const V2_MAX_BODY = 1024; // addresses (at most 216 bytes) plus TLVs; AWS's are far smaller
const V2_ADDRESS_BYTES = { 0x1: 12, 0x2: 36, 0x3: 216 }; // by address family: inet, inet6, unix

/**
 * Parses a PROXY header at the start of `buf`.
 * @returns {{ip: string|undefined, length: number}|null} null while more bytes
 *   are needed; ip undefined for LOCAL/UNKNOWN (use the socket's own peer)
 * @throws {ProxyHeaderError}
 */
export function parseProxyHeader(buf) {
  if (startsLike(buf, V2_SIGNATURE)) return buf.length < V2_SIGNATURE.length ? null : parseV2(buf);
  if (startsLike(buf, V1_PREFIX)) return buf.length < V1_PREFIX.length ? null : parseV1(buf);
  throw new ProxyHeaderError(InternalCode.PROXY_MISSING, 'connection does not start with a PROXY protocol header');
}

function parseV1(buf) {
  const end = buf.indexOf('\r\n');
  if (end === -1) {
    if (buf.length >= V1_MAX) throw new ProxyHeaderError(InternalCode.PROXY_TOO_LONG, `PROXY v1 header longer than ${V1_MAX} bytes`);
    return null;
  }
  if (end + 2 > V1_MAX) throw new ProxyHeaderError(InternalCode.PROXY_TOO_LONG, `PROXY v1 header longer than ${V1_MAX} bytes`);
  const parts = buf.toString('latin1', 0, end).split(' ');
  if (parts[1] === 'UNKNOWN') return { ip: undefined, length: end + 2 };
  const [, family, source, destination, sourcePort, destinationPort] = parts;
  const isIp = family === 'TCP4' ? isIPv4 : family === 'TCP6' ? isIPv6 : null;
  if (parts.length !== 6 || !isIp || !isIp(source) || !isIp(destination) || !isPort(sourcePort) || !isPort(destinationPort)) {
    throw new ProxyHeaderError(InternalCode.PROXY_MALFORMED, 'malformed PROXY v1 header');
  }
  return { ip: source, length: end + 2 };
}

function parseV2(buf) {
  if (buf.length < V2_FIXED) return null;
  const version = buf[12] >> 4;
  const command = buf[12] & 0x0f;
  const family = buf[13] >> 4;
  const bodyLength = buf.readUInt16BE(14);
  if (version !== 2 || command > 1) throw new ProxyHeaderError(InternalCode.PROXY_MALFORMED, 'PROXY v2 header with a bad version or command');
  if (bodyLength > V2_MAX_BODY) throw new ProxyHeaderError(InternalCode.PROXY_TOO_LONG, `PROXY v2 body over ${V2_MAX_BODY} bytes`);
  if (buf.length < V2_FIXED + bodyLength) return null;
  const length = V2_FIXED + bodyLength;
  // LOCAL (health checks from the balancer itself) and unspecified families carry no client.
  if (command === 0 || family === 0) return { ip: undefined, length };
  const needed = V2_ADDRESS_BYTES[family];
  if (needed === undefined || bodyLength < needed) {
    throw new ProxyHeaderError(InternalCode.PROXY_MALFORMED, 'PROXY v2 address block shorter than its family needs');
  }
  if (family === 0x1) return { ip: buf.subarray(16, 20).join('.'), length };
  if (family === 0x2) return { ip: ipv6(buf.subarray(16, 32)), length };
  return { ip: undefined, length }; // unix socket: no IP
}

/**
 * Reads the header from a paused socket that has just been accepted.
 * @returns {Promise<{ip: string|undefined, head: Buffer}>} head: bytes read past the header
 */
export function readProxyHeader(socket, timeoutMs) {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    const finish = (err, result) => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('close', onClose);
      socket.pause(); // the hand-over (lib/runtime/internals.js detachHandle) stops the reads from the kernel too
      if (err) reject(err);
      else resolve(result);
    };
    const onData = (chunk) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      let parsed;
      try {
        parsed = parseProxyHeader(buf);
      } catch (err) {
        return finish(err);
      }
      if (parsed !== null) finish(null, { ip: parsed.ip, head: buf.subarray(parsed.length) });
    };
    // The peer finished (FIN) or reset the connection before the header was whole.
    const onClose = () => finish(new ProxyHeaderError(InternalCode.PROXY_TRUNCATED, 'connection ended inside the PROXY header'));
    const timer = setTimeout(
      () => finish(new ProxyHeaderError(InternalCode.PROXY_TIMEOUT, `no complete PROXY header within ${timeoutMs} ms`)),
      timeoutMs
    );
    socket.on('data', onData);
    socket.on('close', onClose);
    socket.resume(); // accepted paused (pauseOnConnect): start reading the header
  });
}

// Whether buf is a prefix of sig or sig a prefix of buf.
function startsLike(buf, sig) {
  const n = Math.min(buf.length, sig.length);
  return buf.subarray(0, n).equals(sig.subarray(0, n));
}

function isPort(text) {
  return /^\d{1,5}$/.test(text) && Number(text) <= 65535;
}

// Uncompressed, so one address always has one spelling.
function ipv6(bytes) {
  const groups = [];
  for (let i = 0; i < 16; i += 2) groups.push(bytes.readUInt16BE(i).toString(16));
  return groups.join(':');
}
