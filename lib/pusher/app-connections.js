// Each app's open Pusher connections in this worker, and what a change of
// the app does to them: removed, they close with 4001 (as an unknown key
// would); disabled, with 4003; changed otherwise, they go on under the app's
// new settings (its secret, its limits) from their next frame. Every app's
// connections are counted by the primary too (lib/primary/counts.js), which
// admits an app's connection within its maxConnections across workers and
// nodes; an app without one is counted without waiting for an answer.
import { Op } from '../core/ipc.js';
import { appFigures } from '../session/metrics.js';
import { kSession } from '../core/symbols.js';
import { PusherCode } from './frames.js';
import { closeWithError } from './transport.js';

export class AppConnections {
  /**
   * @param {import('./apps.js').Apps} apps
   * @param {import('../worker/relay.js').WorkerRelay} relay
   */
  constructor(apps, relay) {
    this.relay = relay;
    this.byApp = new Map(); // appId -> Set of its connections here
    apps.on('change', (app, previous) => this.changed(app, previous));
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

  /** An admitted connection joins its app: its session's app (./session.js) from now on. */
  add(ws, app) {
    const session = ws[kSession];
    session.app = app;
    session.appFigures = appFigures(app.appId);
    session.appFigures.connections++;
    let set = this.byApp.get(app.appId);
    if (set === undefined) this.byApp.set(app.appId, (set = new Set()));
    set.add(ws);
  }

  /** A connection closed: it leaves its app, here and in the primary's count. */
  delete(ws) {
    const { app, appFigures: figures } = ws[kSession];
    if (app === null) return;
    this.release(app);
    figures.connections--;
    const set = this.byApp.get(app.appId);
    set?.delete(ws);
    if (set?.size === 0) this.byApp.delete(app.appId);
  }

  /** @returns {number} the app's connections in this worker */
  count(appId) {
    return this.byApp.get(appId)?.size ?? 0;
  }

  changed(app, previous) {
    const set = this.byApp.get((app ?? previous).appId);
    if (set === undefined) return;
    if (app === undefined) return closeAll(set, PusherCode.APP_NOT_FOUND, 'the app was removed');
    if (!app.enabled) return closeAll(set, PusherCode.APP_DISABLED, 'the app is disabled');
    for (const ws of set) ws[kSession].app = app;
  }
}

function closeAll(set, code, message) {
  for (const ws of [...set]) closeWithError(ws, code, message);
}
