// A raw Server-Sent Events reader over node:http: the status, the headers,
// every event as written (id, event, data) and the comments, so tests see
// the stream byte for byte where an EventSource would hide it.
import http from 'node:http';

export class SseReader {
  /**
   * @param {string} url http://…/sse?…
   * @param {{headers?: object, localAddress?: string}} [options] localAddress picks the worker under --balance ip
   */
  constructor(url, { headers = {}, localAddress = '127.0.0.1' } = {}) {
    this.events = [];
    this.comments = 0;
    this.raw = '';
    this.req = http.get(url, { headers, localAddress, agent: false });
    this.response = new Promise((resolve, reject) => {
      this.req.on('response', (res) => {
        this.res = res;
        res.setEncoding('utf8');
        if (res.statusCode !== 200) {
          let body = '';
          res.on('data', (d) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: JSON.parse(body) }));
          return;
        }
        res.on('data', (text) => this.read(text));
        resolve({ status: 200, headers: res.headers });
      });
      this.req.on('error', reject);
    });
    this.closed = new Promise((resolve) => this.req.on('close', resolve));
    this.req.on('error', () => {});
  }

  read(text) {
    this.raw += text;
    let end;
    while ((end = this.raw.indexOf('\n\n')) !== -1) {
      const block = this.raw.slice(0, end);
      this.raw = this.raw.slice(end + 2);
      const event = {};
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) this.comments++;
        else {
          const at = line.indexOf(': ');
          event[line.slice(0, at)] = line.slice(at + 2);
        }
      }
      if (Object.keys(event).length > 0) this.events.push(event);
    }
  }

  /** Message events, their data parsed. */
  messages(channel) {
    return this.events.filter((e) => e.data !== undefined && e.event === undefined).map((e) => JSON.parse(e.data)).filter((m) => channel === undefined || m.channel === channel);
  }

  /** The cursor of the last event that carried one: what EventSource would send as Last-Event-ID. */
  get lastEventId() {
    return this.events.findLast((e) => e.id !== undefined)?.id;
  }

  close() {
    this.req.destroy();
    return this.closed;
  }

  static async open(url, options) {
    const reader = new SseReader(url, options);
    const response = await reader.response;
    if (response.status !== 200) throw new Error(`GET ${url}: ${response.status} ${JSON.stringify(response.body)}`);
    return reader;
  }
}

