// A table of client WebSocket connections, indexed 0..count-1, or of SSE
// streams (each on the channel its subclass's channelNameOf(k) names). It speaks
// the wire (lib/loadgen/wire.js, ./sse-wire.js) and tells its subclass what
// happened through five hooks: onOpen(k), onText(k, payload) (an SSE
// stream's `ready` and `gap` events read as frames, see ./sse-wire.js),
// onFail(k, reason) before the upgrade or the response head, onClose(k, code)
// after it, and onPortTaken(k) when a source port was in use (true: the
// subclass retries the connection). A stream asks its subclass's
// lastEventId(k) where to resume from, and passes tokens[k] (if any) in its URL.
//
// Memory per connection is what limits a load generator: each connection is a
// bare net.Socket carrying only its index, its other state lives in arrays
// indexed by k (sparse where rarely used), and the socket event handlers are
// created once per table and shared (`this` is the socket).
import net from 'node:net';
import tls from 'node:tls';
import { Opcode, newKey, handshakeRequest, readHandshake, readFrame, encodeFrame, textFrame, closeFrame } from './wire.js';
import { streamRequest, readStreamHead, readEvents } from './sse-wire.js';
import { fromJson } from '../codecs/msgpack.js';

const SLOT = Symbol('slot');
const NO_STATUS = 1005;
const ABNORMAL = 1006;
const PROTOCOL_ERROR = 1002;

export class SocketTable {
  /**
   * @param {string} url ws:// or wss:// (certificates are not checked: targets are this machine)
   * @param {number} count
   * @param {'ws'|'sse'} [transport] sse: streams on GET /sse of the same host
   * @param {'json'|'msgpack'} [encoding] a WebSocket's (gateway.msgpack: binary frames both ways)
   */
  constructor(url, count, transport = 'ws', encoding = 'json') {
    this.url = new URL(url);
    this.sse = transport === 'sse';
    this.msgpack = encoding === 'msgpack';
    const secure = this.url.protocol === 'wss:';
    this.connectTo = secure ? tls.connect : net.connect;
    // One options object for every connect: net reads it during the call.
    this.connectOptions = {
      host: this.url.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: Number(this.url.port) || (secure ? 443 : 80),
      localAddress: undefined,
      localPort: undefined,
      noDelay: true,
      rejectUnauthorized: false
    };
    this.sockets = new Array(count);
    this.keys = new Array(count); // Sec-WebSocket-Key while the handshake is in flight
    this.partial = new Array(count); // bytes of an incomplete handshake answer or frame
    this.fragments = new Array(count); // pieces of a fragmented message
    this.closeCode = new Uint16Array(count);
    this.tokens = undefined; // under --auth jwt, the subclass's token per connection
    this.frame = { fin: false, opcode: 0, start: 0, end: 0 };
    this.handlers = makeHandlers(this);
  }

  /** Opens connection k; the handshake is written at once and goes out on connect. */
  connect(k, localAddress, localPort) {
    this.connectOptions.localAddress = localAddress;
    this.connectOptions.localPort = localPort;
    const socket = this.connectTo(this.connectOptions);
    socket[SLOT] = k;
    socket.on('data', this.handlers.data);
    socket.on('error', this.handlers.error);
    socket.on('close', this.handlers.close);
    this.sockets[k] = socket;
    // A re-dialled slot starts afresh: a close code left from its last socket
    // would keep it from echoing the server's next close, and the server
    // would stop sending (a drain) without closing until its grace ran out.
    this.closeCode[k] = 0;
    // A stream has no key: the marker only says its response head is awaited.
    this.keys[k] = this.sse ? '' : newKey();
    socket.write(this.sse ? streamRequest(this.url, this.channelNameOf(k), this.lastEventId(k), this.tokens?.[k]) : handshakeRequest(this.url, this.keys[k], this.msgpack ? 'gateway.msgpack' : undefined));
  }

  /** @param {string} text a frame as JSON (./frames.js); in MessagePack, the same fields */
  send(k, text) {
    this.sockets[k].write(this.msgpack ? encodeFrame(Opcode.BINARY, fromJson(text)) : textFrame(text));
  }

  /**
   * Starts the closing handshake; the server answers and closes the TCP
   * connection first. A stream has none: it is closed from this side.
   */
  close(k, code) {
    this.closeCode[k] = code;
    if (this.sse) this.sockets[k].destroy();
    else this.sockets[k].write(closeFrame(code));
  }

  destroy(k) {
    this.sockets[k]?.destroy();
  }

  /** A handshake failed: count it once (the hook), then drop the socket. */
  failHandshake(k, reason) {
    if (this.keys[k] === undefined) return;
    const socket = this.sockets[k];
    this.forget(k);
    this.onFail(k, reason);
    socket.destroy();
  }

  received(k, chunk) {
    let buf = chunk;
    if (this.partial[k] !== undefined) {
      buf = Buffer.concat([this.partial[k], chunk]);
      this.partial[k] = undefined;
    }
    let at = 0;
    if (this.keys[k] !== undefined) {
      const answer = this.sse ? readStreamHead(buf) : readHandshake(buf, this.keys[k]);
      if (answer === undefined) {
        this.partial[k] = buf;
        return;
      }
      if (answer.error) return this.failHandshake(k, answer.error);
      this.keys[k] = undefined;
      this.onOpen(k);
      at = answer.end;
    }
    if (this.sse) at = readEvents(buf, at, this, k);
    const f = this.frame;
    while (!this.sse && at < buf.length && this.sockets[k] !== undefined) {
      const next = readFrame(buf, at, f);
      if (next === -1) break;
      if (next === -2) {
        this.closeCode[k] = PROTOCOL_ERROR;
        this.sockets[k].destroy();
        return;
      }
      this.frameReceived(k, buf, f);
      at = next;
    }
    // Copied, so a few leftover bytes do not pin the whole chunk.
    if (at < buf.length) this.partial[k] = Buffer.from(buf.subarray(at));
  }

  frameReceived(k, buf, f) {
    const payload = buf.subarray(f.start, f.end);
    switch (f.opcode) {
      case Opcode.TEXT:
      case Opcode.BINARY:
        if (f.fin) this.onText(k, payload);
        else this.fragments[k] = [Buffer.from(payload)];
        break;
      case Opcode.CONTINUATION:
        this.fragments[k]?.push(Buffer.from(payload));
        if (f.fin && this.fragments[k] !== undefined) {
          const whole = Buffer.concat(this.fragments[k]);
          this.fragments[k] = undefined;
          this.onText(k, whole);
        }
        break;
      case Opcode.PING:
        this.sockets[k].write(encodeFrame(Opcode.PONG, payload));
        break;
      case Opcode.CLOSE: {
        const code = payload.length >= 2 ? payload.readUInt16BE(0) : NO_STATUS;
        // Echo the server's close unless this side started the closing handshake.
        if (this.closeCode[k] === 0) this.close(k, code === NO_STATUS ? 1000 : code);
        this.closeCode[k] = code; // what the report shows for a dropped connection
        break;
      }
    }
  }

  socketClosed(k) {
    if (this.keys[k] !== undefined) return this.failHandshake(k, 'closed during handshake');
    const code = this.closeCode[k] || ABNORMAL;
    this.forget(k);
    this.onClose(k, code);
  }

  forget(k) {
    this.sockets[k] = undefined;
    this.keys[k] = undefined;
    this.partial[k] = undefined;
    this.fragments[k] = undefined;
  }
}

function makeHandlers(table) {
  return {
    data(chunk) {
      table.received(this[SLOT], chunk);
    },
    error(err) {
      // Bind or connect refused the source port: nothing of this socket reached the server.
      if ((err.code === 'EADDRINUSE' || err.code === 'EADDRNOTAVAIL') && table.onPortTaken(this[SLOT])) return;
      table.failHandshake(this[SLOT], err.code ?? 'error');
    },
    close() {
      if (table.sockets[this[SLOT]] === this) table.socketClosed(this[SLOT]);
    }
  };
}
