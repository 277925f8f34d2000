// Each app's open connections in this worker, for every protocol with apps
// (Pusher's, Ably's: one app, one count): the primary counts them too
// (lib/primary/counts.js), and admits an app's connection within its
// maxConnections across workers and nodes; an app without one is counted
// without waiting for an answer. An admitted connection's session holds its
// app and the app's figures (./metrics.js appFigures: its connections and
// the bytes it is sent, ../transport/transport.js). What a change of the app
// does to its connections is each protocol's (they close as it says). An
// app's backend events (what its backend publishes through a protocol's HTTP
// API) are taken here too, within its maxBackendEventsPerSecond.
//
// An app without a cap is told to the primary in tallies: its arrivals less
// its departures over TALLY_MS, as one operation (a burst of handshakes is a
// few operations, not two per connection; under Redis, a few writes of the
// node's count). An app with a cap asks for each connection; a tally still
// waiting leaves first, so the primary never sees a departure before its
// arrival.
import { ErrorCode, GatewayError } from '../core/errors.js';
import { Op } from '../core/ipc.js';
import { kSession } from '../core/symbols.js';
import { appFigures } from './metrics.js';

const TALLY_MS = 20; // as long as an operation nobody waits for may wait for its batch (lib/core/ipc.js)

export class AppCounts {
  /** @param {import('../worker/relay.js').WorkerRelay} relay */
  constructor(relay) {
    this.relay = relay;
    this.byApp = new Map(); // appId -> Set of its connections here
    this.tallies = new Map(); // appId -> connections of an uncapped app arrived (+) or gone (-) since the last tally
    this.tally = this.tally.bind(this);
    this.due = undefined; // the next tally's timer, while some wait
  }

  /**
   * Counts one more connection of the app, cluster-wide.
   * @returns {true|Promise<boolean>} whether it is within the app's maxConnections; true at once without one
   */
  admit(app) {
    if (app.maxConnections === null) {
      this.count(app.appId, 1); // counted, no reply wanted, no cap to keep
      return true;
    }
    this.tally();
    return this.relay.ask(Op.APP_ADD, app.appId);
  }

  /** Gives back a count admit() took for a connection that never joined (it closed meanwhile). */
  release(app) {
    if (app.maxConnections === null) return this.count(app.appId, -1);
    this.tally();
    this.relay.send([Op.APP_DEL, app.appId]); // a place under the cap is free at once
  }

  /** One more (1) or one fewer (-1) connection of an uncapped app, for the next tally. */
  count(appId, n) {
    this.due ??= setTimeout(this.tally, TALLY_MS).unref();
    this.tallies.set(appId, (this.tallies.get(appId) ?? 0) + n);
  }

  /** The tallies since the last: each app's net change as one operation, none where it is 0. */
  tally() {
    clearTimeout(this.due);
    this.due = undefined;
    for (const [appId, n] of this.tallies) {
      if (n > 0) this.relay.sendLater([Op.APP_ADD, 0, appId, n]);
      else if (n < 0) this.relay.sendLater([Op.APP_DEL, appId, -n]);
    }
    this.tallies.clear();
  }

  /** An admitted connection joins its app: its session's app from now on. */
  add(ws, app) {
    const session = ws[kSession];
    session.app = app;
    session.appFigures = appFigures(app.appId);
    let set = this.byApp.get(app.appId);
    if (set === undefined) this.byApp.set(app.appId, (set = new Set()));
    set.add(ws);
  }

  /** A connection closed: it leaves its app, here and in the primary's count. */
  delete(ws) {
    const { app, appFigures: figures } = ws[kSession];
    if (app === null || figures === undefined) return;
    this.release(app);
    const set = this.byApp.get(app.appId);
    set?.delete(ws);
    if (set?.size === 0) this.byApp.delete(app.appId);
  }

  /** @returns {Set<object>|undefined} the app's connections in this worker */
  of(appId) {
    return this.byApp.get(appId);
  }

  /** @returns {Iterable<[string, number]>} each app's connections in this worker, for gateway_connections */
  *counts() {
    for (const [appId, set] of this.byApp) yield [appId, set.size];
  }
}

/**
 * Takes `events` of the app's backend events this second, cluster-wide
 * (lib/primary/app-rates.js), or throws over_quota (429) and nothing is taken.
 * @param {import('../worker/relay.js').WorkerRelay} relay
 * @param {number} events what one call publishes (Pusher: channels × events; Ably: messages)
 */
export async function takeBackendEvents(relay, app, events) {
  const limit = app.maxBackendEventsPerSecond;
  if (limit === null) return;
  if (!(await relay.ask(Op.APP_EVENTS, app.appId, events))) {
    throw new GatewayError(ErrorCode.OVER_QUOTA, `over the app's ${limit} backend events per second`);
  }
}
