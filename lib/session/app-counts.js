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
import { ErrorCode, GatewayError } from '../core/errors.js';
import { Op } from '../core/ipc.js';
import { kSession } from '../core/symbols.js';
import { appFigures } from './metrics.js';

export class AppCounts {
  /** @param {import('../worker/relay.js').WorkerRelay} relay */
  constructor(relay) {
    this.relay = relay;
    this.byApp = new Map(); // appId -> Set of its connections here
  }

  /**
   * Counts one more connection of the app, cluster-wide.
   * @returns {true|Promise<boolean>} whether it is within the app's maxConnections; true at once without one
   */
  admit(app) {
    if (app.maxConnections === null) {
      this.relay.sendLater([Op.APP_ADD, 0, app.appId]); // counted, no reply wanted, no cap to keep
      return true;
    }
    return this.relay.ask(Op.APP_ADD, app.appId);
  }

  /** Gives back a count admit() took for a connection that never joined (it closed meanwhile). */
  release(app) {
    const del = [Op.APP_DEL, app.appId];
    if (app.maxConnections === null) this.relay.sendLater(del);
    else this.relay.send(del); // a place under the cap is free at once
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
