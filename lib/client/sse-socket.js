// The SSE transport behind the interface the client uses for a WebSocket
// (onmessage, onclose, onerror, send, close): the client speaks frames to it
// as to the gateway, and it answers as the gateway would, from one
// EventSource on GET /sse for every subscribed channel. Receiving only: the
// client sends it no publish (see ./index.js).
//
// A stream's channels are fixed, so each subscribe or unsubscribe reopens it
// with the new list and a cursor built from where every channel stands: the
// gateway replays what came in between. The subscribes are acked once the
// new stream's `ready` event says where each channel stands, and the
// messages that came before it (a replay) are handed over after the acks, as
// a WebSocket's replay follows its ack.

export class SseSocket {
  onmessage = noop;
  onclose = noop;
  onerror = noop;
  #EventSource;
  #init;
  #url;
  #token;
  #source;
  #positions = new Map(); // channel -> {seq, epoch} or undefined; the query's order
  #waiting = []; // subscribe frames the stream being opened will ack
  #gaps = new Set(); // channels of the stream being opened that could not be recovered
  #held = null; // message frames held until the acks, while a stream opens
  #timer;
  #closed = false;

  /**
   * @param {string} url the gateway's /sse URL
   * @param {object} options
   * @param {Function} options.EventSource constructor
   * @param {() => Promise<string|undefined>} options.token the token to open streams with, if any
   * @param {boolean} options.withCredentials send the page's cookies to a gateway on another origin (--auth hook)
   */
  constructor(url, { EventSource, token, withCredentials }) {
    this.#EventSource = EventSource;
    this.#init = { withCredentials };
    this.#url = url;
    token().then(
      (value) => {
        this.#token = value;
        this.#frame({ type: 'welcome', transport: 'sse', pingInterval: 0 });
      },
      () => this.#lost('no token')
    );
  }

  send(text) {
    const frame = JSON.parse(text);
    if (frame.type === 'subscribe') {
      this.#positions.set(frame.channel, frame.since);
      this.#waiting.push(frame);
    } else if (frame.type === 'unsubscribe') {
      this.#positions.delete(frame.channel);
      this.#frame({ type: 'ack', id: frame.id });
    } else return;
    // The subscribes of one turn (a reconnect resubscribes them all) share one stream.
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#open(), 0);
  }

  close() {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#source?.close();
  }

  #open() {
    this.#source?.close();
    this.#source = undefined;
    if (this.#closed || this.#positions.size === 0) return;
    const channels = [...this.#positions.keys()];
    const url = new URL(this.#url);
    url.searchParams.set('channels', channels.join(','));
    const cursor = channels.map((c) => format(this.#positions.get(c))).join(',');
    if (cursor.length >= channels.length) url.searchParams.set('lastEventId', cursor);
    if (this.#token !== undefined) url.searchParams.set('token', this.#token);
    const source = new this.#EventSource(url.href, this.#init);
    this.#source = source;
    this.#held = [];
    this.#gaps.clear();
    source.onmessage = (event) => this.#message(channels, event);
    source.addEventListener('gap', (event) => this.#gaps.add(JSON.parse(event.data).channel));
    source.addEventListener('ready', (event) => this.#ready(channels, event.lastEventId));
    // Not messages: no cursor, never held behind a replay.
    source.addEventListener('presence_diff', (event) => this.#frame(JSON.parse(event.data)));
    // EventSource would reconnect by itself with a stale token and channel
    // list; the client's own backoff reconnects instead.
    source.onerror = () => this.#lost('stream lost');
  }

  #message(channels, event) {
    const { channel, seq, data } = JSON.parse(event.data);
    const epoch = parse(event.lastEventId.split(',')[channels.indexOf(channel)])?.epoch;
    if (this.#positions.has(channel)) this.#positions.set(channel, { seq, epoch });
    const frame = { type: 'message', channel, seq, data };
    if (this.#held === null) this.#frame(frame);
    else this.#held.push(frame);
  }

  #ready(channels, cursor) {
    const entries = cursor.split(',');
    channels.forEach((channel, i) => {
      if (this.#positions.has(channel)) this.#positions.set(channel, parse(entries[i]));
    });
    const held = this.#held;
    for (const { id, channel, since } of this.#waiting.splice(0)) {
      const at = parse(entries[channels.indexOf(channel)]);
      if (at === undefined) continue; // unsubscribed meanwhile: acked then
      const recovered = since === undefined ? undefined : !this.#gaps.has(channel);
      // A new subscription stands before the messages that came with its
      // stream (a `latest` namespace's latest one, or live ones): they are handed over.
      const first = since === undefined ? held.find((frame) => frame.channel === channel) : undefined;
      this.#frame({ type: 'ack', id, seq: first === undefined ? at.seq : first.seq - 1, epoch: at.epoch, recovered });
    }
    // After the acks have been taken (their handlers run as microtasks), the replay.
    // Messages arriving meanwhile join the held ones, in order.
    setTimeout(() => {
      for (const frame of held) this.#frame(frame);
      if (this.#held === held) this.#held = null;
    }, 0);
  }

  #lost(reason) {
    if (this.#closed) return;
    this.close();
    this.onclose({ code: 1006, reason });
  }

  #frame(frame) {
    if (!this.#closed) this.onmessage({ data: JSON.stringify(frame) });
  }
}

function format(position) {
  return position === undefined ? '' : `${position.seq}.${position.epoch}`;
}

function parse(entry) {
  const [seq, epoch] = (entry ?? '').split('.');
  return epoch === undefined ? undefined : { seq: Number(seq), epoch };
}

function noop() {}
