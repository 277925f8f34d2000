// Server-side keepalive as a timer wheel. Every connection sits in one of
// `slots` slots; one timer for the whole worker visits one slot per tick, so a
// full round of pings is spread evenly over the ping interval instead of
// stalling the event loop in one sweep. A connection whose transport answers
// pings and that has not shown life (pong, or any frame) since its previous
// ping is terminated; the others get their ping only to keep proxies from
// timing them out, and a peer that is gone fails at that write. The timer
// runs only while the wheel holds a connection.
import { kSession, kTransport } from '../core/symbols.js';
import { metrics } from './metrics.js';
import { Ticker } from '../ticker.js';

const TICK_MS = 50; // finest spacing between two slot visits

export class Keepalive {
  /**
   * @param {object} options
   * @param {number} options.interval ms between two pings of one connection (--ping-interval)
   * @param {number} options.maxBuffered passed on to the transport's write (--max-buffered)
   */
  constructor({ interval, maxBuffered }) {
    const count = Math.max(1, Math.min(1000, Math.round(interval / TICK_MS)));
    this.slots = Array.from({ length: count }, () => new Set());
    this.maxBuffered = maxBuffered;
    this.next = 0; // slot a new connection joins: round robin keeps slots even
    this.cursor = 0; // slot the next tick visits
    this.size = 0; // connections held
    this.ticker = new Ticker('keepalive', interval / count, () => this.tick());
  }

  add(conn) {
    const session = conn[kSession];
    session.alive = true;
    session.keepaliveSlot = this.next;
    this.slots[this.next].add(conn);
    this.next = (this.next + 1) % this.slots.length;
    this.size++;
    this.ticker.start();
  }

  remove(conn) {
    if (this.slots[conn[kSession].keepaliveSlot]?.delete(conn)) this.size--;
  }

  /** Every connection held, for the drain. */
  *all() {
    for (const slot of this.slots) yield* slot;
  }

  /** The peer showed life: pong frame, protocol ping or any message. */
  static alive(conn) {
    conn[kSession].alive = true;
  }

  /** @returns {boolean} whether the wheel still holds a connection */
  tick() {
    const slot = this.slots[this.cursor];
    this.cursor = (this.cursor + 1) % this.slots.length;
    let pinged = 0;
    for (const conn of slot) {
      const transport = conn[kTransport];
      if (transport.answersPings) {
        const session = conn[kSession];
        if (!session.alive) {
          metrics.terminated.inc();
          slot.delete(conn);
          this.size--;
          transport.terminate(conn);
          continue;
        }
        session.alive = false;
      }
      if (transport.write(conn, transport.ping, this.maxBuffered)) pinged++;
    }
    if (pinged > 0) metrics.pings.inc(pinged);
    return this.size > 0;
  }

  stop() {
    this.ticker.stop();
  }
}
