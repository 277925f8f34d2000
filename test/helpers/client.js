// A real `ws` client that records every frame it gets, so tests can wait for
// the one they expect.
import WebSocket from 'ws';
import { decode, encode } from '@msgpack/msgpack';
import { Waitlist } from '../../scripts/harness/waitlist.js';

// How frames are read and written in each encoding: JSON text, or
// MessagePack binary frames (gateway.msgpack).
const CODECS = {
  json: { read: (data, isBinary) => (isBinary ? { binary: data } : JSON.parse(data)), write: (frame) => JSON.stringify(frame) },
  msgpack: { read: (data, isBinary) => (isBinary ? decode(data) : { text: String(data) }), write: (frame) => encode(frame) }
};

export class TestClient {
  /**
   * @param {string} url
   * @param {object} [options] ws options, e.g. { localAddress: '127.0.0.5' }; `encoding: 'msgpack'` speaks gateway.msgpack
   * @returns {Promise<TestClient>} once the welcome frame arrived
   */
  static async connect(url, { encoding = 'json', ...options } = {}) {
    const protocols = encoding === 'msgpack' ? ['gateway.msgpack'] : [];
    const client = new TestClient(new WebSocket(url, protocols, options), encoding);
    client.welcome = await client.next((f) => f.type === 'welcome');
    return client;
  }

  constructor(ws, encoding = 'json') {
    this.ws = ws;
    this.codec = CODECS[encoding];
    this.received = new Waitlist(() => `got ${JSON.stringify(this.frames).slice(-500)}`);
    this.nextId = 1;
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })));
    this.opened = new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
      ws.once('unexpected-response', (req, res) => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode })));
    });
    // Settles when no frame can come any more: the connection failed or closed.
    this.gone = Promise.race([
      this.opened.then(() => new Promise(() => {})),
      this.closed.then(({ code }) => `closed (${code}) while waiting for a frame`)
    ]);
    this.gone.catch(() => {});
    ws.on('error', () => {});
    ws.on('message', (data, isBinary) => this.received.push(this.codec.read(data, isBinary)));
  }

  get frames() {
    return this.received.items;
  }

  /** Resolves with the first frame (received or to come) matching predicate. */
  next(predicate, timeout = 10000) {
    return this.received.wait(predicate, timeout, this.gone);
  }

  send(frame) {
    this.ws.send(typeof frame === 'string' || ArrayBuffer.isView(frame) ? frame : this.codec.write(frame));
  }

  /** Sends a request frame with a fresh id; resolves with its ack, pong or error. */
  request(frame) {
    const id = this.nextId++;
    this.send({ ...frame, id });
    return this.next((f) => f.id === id && f.type !== 'message');
  }

  subscribe(channel) {
    return this.request({ type: 'subscribe', channel });
  }

  publish(channel, data) {
    return this.request({ type: 'publish', channel, data });
  }

  messages(channel) {
    return this.frames.filter((f) => f.type === 'message' && f.channel === channel);
  }

  close() {
    this.ws.terminate();
  }
}

/** The clients a test opens, to close after it: `afterEach(() => opened.closeAll())`. */
export class OpenedClients {
  /** @param {() => string} url the gateway's, read at each connect */
  constructor(url) {
    this.url = url;
    this.clients = [];
  }

  /** @returns {Promise<TestClient>} (TestClient.connect's options) */
  async connect(options) {
    const client = await TestClient.connect(this.url(), options);
    this.clients.push(client);
    return client;
  }

  /** Adds clients opened otherwise. */
  track(...clients) {
    this.clients.push(...clients);
  }

  closeAll() {
    for (const c of this.clients) c.close();
    this.clients = [];
  }
}
