// The application's backend, as the hooks see it: a real node:http server on
// an ephemeral port whose answer each test sets per route (/connect,
// /subscribe, /publish, /refresh), and that records what it was asked, how
// many requests it held at once and over how many sockets they came.
import http from 'node:http';
import { once } from 'node:events';

export class Backend {
  /** @param {(route: string, body: object, req, res) => void} answer writes the answer (or none, to hang) */
  static async start(answer) {
    const backend = new Backend(answer);
    await backend.listen(0);
    return backend;
  }

  constructor(answer) {
    this.answer = answer;
    this.requests = []; // {route, body, headers, at}
    this.inFlight = 0;
    this.maxInFlight = 0;
    this.sockets = new Set(); // remote ports seen: the gateway's pooled connections
    this.server = http.createServer((req, res) => this.handle(req, res));
    this.server.keepAliveTimeout = 60000;
  }

  async listen(port) {
    this.server.listen(port, '127.0.0.1');
    await once(this.server, 'listening');
    this.port = this.server.address().port;
    this.url = `http://127.0.0.1:${this.port}`;
  }

  /** Stops listening and drops every connection (the backend goes down). */
  async stop() {
    this.server.close();
    this.server.closeAllConnections();
    await once(this.server, 'close');
  }

  /** Listens again on the same port (the backend comes back). */
  async restart() {
    this.server = http.createServer((req, res) => this.handle(req, res));
    await this.listen(this.port);
  }

  routed(route) {
    return this.requests.filter((r) => r.route === route);
  }

  handle(req, res) {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    this.sockets.add(req.socket.remotePort);
    res.on('close', () => this.inFlight--);
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => {
      const route = req.url.slice(1);
      const body = JSON.parse(text);
      this.requests.push({ route, body, headers: req.headers, at: Date.now() });
      this.answer(route, body, req, res);
    });
  }
}

/** Answers `value` as JSON with `status` (200). */
export function json(res, value, status = 200) {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
}
