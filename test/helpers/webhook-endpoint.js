// A webhook endpoint for the tests: a real node:http server on an ephemeral
// port that checks each body's signature with the secret (node:crypto, as an
// application would), records every batch it took in order, and can be told
// to fail (answer a status instead of 200).
import http from 'node:http';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';

export const WEBHOOK_SECRET = 'webhook-secret-that-is-long-enough-0123456789';

export class WebhookEndpoint {
  static async start(secret = WEBHOOK_SECRET) {
    const endpoint = new WebhookEndpoint(secret);
    endpoint.server.listen(0, '127.0.0.1');
    await once(endpoint.server, 'listening');
    endpoint.url = `http://127.0.0.1:${endpoint.server.address().port}/hooks`;
    return endpoint;
  }

  constructor(secret) {
    this.secret = secret;
    this.batches = []; // bodies taken (answered 200), parsed
    this.requests = 0; // every request, taken or not
    this.badSignatures = 0;
    this.failWith = 0; // a status to answer instead of taking the batch, or 'hang' (never answer); 0: take it
    this.paths = new Set(); // every path asked for
    this.server = http.createServer((req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        this.requests++;
        this.paths.add(req.url);
        const raw = Buffer.concat(chunks);
        if (!this.signed(raw, req.headers['x-gateway-signature'])) {
          this.badSignatures++;
          return res.writeHead(401).end();
        }
        if (this.failWith === 'hang') return;
        if (this.failWith !== 0) return res.writeHead(this.failWith, { location: '/elsewhere' }).end();
        this.batches.push(JSON.parse(raw));
        res.writeHead(200).end();
      });
    });
  }

  signed(raw, header) {
    const expected = Buffer.from(`sha256=${createHmac('sha256', this.secret).update(raw).digest('hex')}`);
    const given = Buffer.from(String(header ?? ''));
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  /** Every event taken, in the order taken. */
  get events() {
    return this.batches.flatMap((b) => b.events);
  }

  /** The names of the events taken on `channel`, in order. */
  namesOn(channel) {
    return this.events.filter((e) => e.channel === channel).map((e) => e.name);
  }

  clear() {
    this.batches = [];
    this.requests = 0;
  }

  close() {
    this.server.closeAllConnections();
    this.server.close();
  }
}
