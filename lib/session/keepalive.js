// Server-side keepalive as a timer wheel. Every connection sits in one of
// `slots` slots; one timer for the whole worker visits the slots in turn, so
// a full round of pings is spread over the ping interval instead of stalling
// the event loop in one sweep. A connection whose transport answers pings
// and that has not shown life (pong, or any frame) since its previous ping
// is terminated; the others get their ping only to keep proxies from timing
// them out, and a peer that is gone fails at that write. The timer runs only
// while the wheel holds a connection.
//
// A visit covers as many slots as it takes to ping about BATCH connections:
// spread thinner, a ping costs more CPU (the code and the kernel's paths go
// cold between visits; on 10,000 idle connections the worker's main thread
// spent about a seventh less than with a visit of a hundred). A visit longer
// than BUDGET_MS goes on in the next turn of the loop, so the pings hold
// the loop no longer than that at a time; their pongs come back together
// and are read in the turns after. The timer thus ticks every slot's time
// under heavy load and less often with fewer connections, but at least
// MIN_VISITS times a round: a connection's pings stay at least three
// quarters of the interval apart, however the pace changes.
//
// Connections join the slots RUN at a time, not one each in turn: those
// that arrived together were allocated together (their objects, sockets
// and descriptors sit side by side), so a visit walks memory in order
// rather than at a stride of the slot count.
import { performance } from 'node:perf_hooks';
import { kSession, kTransport } from '../core/symbols.js';
import { metrics } from './metrics.js';
import { Ticker } from '../runtime/ticker.js';

const TICK_MS = 50; // finest spacing between two slot visits
const BATCH = 250;
const BUDGET_MS = 2;
const MIN_VISITS = 4;
const RUN = 32;

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
    this.next = 0; // slot new connections join, RUN at a time: round robin keeps slots even
    this.joining = 0; // connections that joined `next` in its current run
    this.cursor = 0; // slot the next visit starts with
    this.due = 0; // slots left to visit, from the cursor on
    this.unvisited = undefined; // the rest of the cursor's slot, when a visit ran out of time in it
    this.size = 0; // connections held
    this.slotMs = interval / count;
    this.step = 1; // slots a visit covers
    this.ticker = new Ticker('keepalive', this.slotMs, () => this.tick());
    this.visit = this.visit.bind(this);
  }

  add(conn) {
    const session = conn[kSession];
    session.alive = true;
    session.keepaliveSlot = this.next;
    this.slots[this.next].add(conn);
    if (++this.joining === RUN) {
      this.joining = 0;
      this.next = (this.next + 1) % this.slots.length;
    }
    this.size++;
    if (!this.ticker.running) this.pace();
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

  /** Sets how many slots a visit covers, and the time between visits, for the connections held now. */
  pace() {
    const count = this.slots.length;
    const step = Math.max(1, Math.min(Math.floor(count / MIN_VISITS), Math.ceil((BATCH * count) / this.size)));
    this.step = step;
    this.ticker.every(step * this.slotMs);
  }

  /** @returns {boolean} whether the wheel still holds a connection */
  tick() {
    // A visit still going on is behind: the round takes longer rather than
    // visiting a slot again before its connections could answer.
    if (this.due === 0) {
      this.due = this.step;
      this.visit();
    }
    if (this.size === 0) return false;
    this.pace();
    return true;
  }

  /** Pings the due slots' connections, for BUDGET_MS at most, then goes on in the next turn. */
  visit() {
    const until = performance.now() + BUDGET_MS;
    let seen = 0;
    let pinged = 0;
    while (this.due > 0) {
      const slot = this.slots[this.cursor];
      const conns = this.unvisited ?? slot.values();
      this.unvisited = undefined;
      for (let next = conns.next(); !next.done; next = conns.next()) {
        if (this.ping(slot, next.value)) pinged++;
        if (++seen % 64 === 0 && performance.now() > until) {
          this.unvisited = conns;
          if (pinged > 0) metrics.pings.inc(pinged);
          setImmediate(this.visit);
          return;
        }
      }
      this.cursor = (this.cursor + 1) % this.slots.length;
      this.due--;
    }
    if (pinged > 0) metrics.pings.inc(pinged);
  }

  /** Pings one connection, or terminates it when it did not answer the previous ping. @returns {boolean} whether a ping was written */
  ping(slot, conn) {
    const transport = conn[kTransport];
    if (transport.answersPings) {
      const session = conn[kSession];
      if (!session.alive) {
        metrics.terminated.inc();
        slot.delete(conn);
        this.size--;
        transport.terminate(conn);
        return false;
      }
      session.alive = false;
    }
    return transport.write(conn, transport.ping, this.maxBuffered);
  }

  /** No more pings: the timer stops, and a visit going on in later turns ends at its next turn. */
  stop() {
    this.ticker.stop();
    this.due = 0;
    this.unvisited = undefined;
  }
}
