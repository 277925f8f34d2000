// The Pusher WebSocket way in (/app/<key>): the handshake, and Pusher's
// frames decoded and handed to what each does, each in its own file:
// pusher:subscribe and unsubscribe (./subscribe.js), pusher:signin
// (./signin.js), client events (./client-events.js). A connection is counted,
// kept alive and drained like a native one (lib/session/sessions.js); what is
// Pusher's own is its socket_id, its app, and the signatures that grant its
// private and presence channels.
//
// A connection's identity (lib/core/identity.js) starts as its app's
// (./identities.js). A valid channel signature adds that channel to its
// grants (and the right to send client events there); a presence
// subscription's member is its channel_data's user (./subscribe.js).
// Handlers are created once per worker and read the connection from `this`.
import { randomInt } from 'node:crypto';
import { ErrorCode, GatewayError } from '../core/errors.js';
import { Keepalive } from '../session/keepalive.js';
import { identify } from '../core/identity.js';
import { socketListeners } from '../transport/ws-handlers.js';
import { kSession } from '../core/symbols.js';
import { transportMetrics, metrics } from '../session/metrics.js';
import { clientName, isOwn } from './channels.js';
import { AppConnections } from './app-connections.js';
import { PusherSession } from './session.js';
import { closeWithError } from './transport.js';
import { countsSubscriptions } from './subscription-count.js';
import { connectionEstablished, dataObject, errorFrame, parseFrame, PONG, PusherCode } from './frames.js';
import { AppIdentities } from './identities.js';
import { answerJoin, refuseJoin, subscribe, unsubscribe } from './subscribe.js';
import { signin } from './signin.js';
import { clientEvent } from './client-events.js';
import { countChanged } from './reports.js';

const PROTOCOLS = new Set(['5', '6', '7']);
const PROTOCOL = /[?&]protocol=([^&]*)/;

export class PusherConnections {
  /**
   * @param {object} options
   * @param {number} options.pingInterval --ping-interval: ms between two pings, told to clients as Pusher's activity_timeout
   * @param {import('./apps.js').Apps} options.apps
   * @param {import('../transport/coalesce.js').WriteCoalescer} options.coalescer the worker's, for its connections' writes
   * @param {import('../worker/relay.js').WorkerRelay} options.relay
   * @param {import('../session/subscriptions.js').Subscriptions} options.subscriptions
   * @param {import('../session/sessions.js').Sessions} options.sessions
   * @param {import('../core/commands.js').Commands} options.commands Pusher's core: its names, Pusher's client event rate
   * @param {import('../session/presence.js').WorkerPresence} options.presence
   * @param {import('pino').Logger} options.log
   */
  constructor({ pingInterval, apps, coalescer, relay, subscriptions, sessions, commands, presence, log }) {
    this.apps = apps;
    this.coalescer = coalescer;
    this.relay = relay;
    this.subscriptions = subscriptions;
    this.sessions = sessions;
    this.commands = commands;
    this.presence = presence;
    this.activityTimeout = Math.max(1, Math.round(pingInterval / 1000));
    this.count = 0; // open connections (counted by the session, lib/session/sessions.js)
    this.opened = 0; // ever accepted: how lib/worker/upgrade.js tells a handshake that completed
    this.Session = PusherSession; // its connections' sessions hold their app and signed-in user
    // socket_ids: `<this process's random number>.<a count>`, unique across workers and nodes.
    this.idPrefix = `${randomInt(1, 2 ** 47)}.`;
    this.nextId = 0;
    this.identities = new AppIdentities(apps);
    this.byApp = new AppConnections(apps, relay);
    this.metrics = transportMetrics('ws', 'pusher', { apps: this.byApp });
    this.listen = socketListeners(this, log, 'pusher');
  }

  /** A WebSocket on /app/<key> just upgraded: established, or told why not and closed. */
  accept(ws, ip, req) {
    this.listen(ws);
    // The socket_id is the connection's id everywhere (presence entries, the fan-out's exclusion).
    this.sessions.begin(ws, this, `${this.idPrefix}${this.nextId++}`);
    this.sessions.opened(ws, ip);
    // Read by hand: a URL object per handshake costs more than the rest of the path's parsing.
    const query = req.url.indexOf('?');
    const app = this.apps.byKey.get(req.url.slice(5, query === -1 ? undefined : query));
    const protocol = query === -1 ? null : (PROTOCOL.exec(req.url.slice(query))?.[1] ?? null);
    if (app === undefined) return closeWithError(ws, PusherCode.APP_NOT_FOUND, 'no app with this key');
    if (protocol === null) return closeWithError(ws, PusherCode.NO_PROTOCOL, 'no protocol version given: connect with ?protocol=7');
    if (!PROTOCOLS.has(protocol)) return closeWithError(ws, PusherCode.UNSUPPORTED_PROTOCOL, `protocol ${protocol.slice(0, 16)} is not supported: 5 to 7 are`);
    if (!app.enabled) return closeWithError(ws, PusherCode.APP_DISABLED, 'the app is disabled');
    const admitted = this.byApp.admit(app);
    if (admitted === true) return this.established(ws, app);
    admitted.then((allowed) => {
      if (!allowed) return closeWithError(ws, PusherCode.OVER_QUOTA, `the app has its ${app.maxConnections} connections`);
      if (!this.isOpen(ws)) return this.byApp.release(app);
      this.established(ws, app);
    });
  }

  established(ws, app) {
    this.byApp.add(ws, app);
    identify(ws, this.identities.of(app));
    ws.send(connectionEstablished(ws[kSession].id, this.activityTimeout));
  }

  message(ws, data, isBinary) {
    Keepalive.alive(ws);
    if (ws[kSession].app === null) return; // refused, closing
    try {
      if (isBinary) throw new GatewayError(ErrorCode.BAD_REQUEST, 'binary frames are not accepted; send JSON text');
      this.run(ws, parseFrame(data.toString()));
    } catch (err) {
      this.fail(ws, err);
    }
  }

  run(ws, frame) {
    switch (frame.event) {
      case 'pusher:ping':
        return ws.send(PONG);
      case 'pusher:pong':
        return;
      case 'pusher:subscribe':
        return subscribe(this, ws, dataObject(frame));
      case 'pusher:unsubscribe':
        return unsubscribe(this, ws, dataObject(frame));
      case 'pusher:signin':
        return signin(this, ws, dataObject(frame));
    }
    if (frame.event.startsWith('client-')) return clientEvent(this, ws, frame);
    throw new GatewayError(ErrorCode.BAD_REQUEST, `unknown event ${JSON.stringify(frame.event.slice(0, 64))}`);
  }

  /** Where a join ended (lib/session/sessions.js): ./subscribe.js answers it. */
  joined(request, answer) {
    answerJoin(this, request, answer);
  }

  /** A join refused (the presence cap, or the engine): ./subscribe.js tells it. */
  joinRefused(request, err) {
    refuseJoin(this, request, err);
  }

  /** Answers a refused frame with pusher:error; anything but the family's errors is a bug and goes on up. */
  fail(ws, err) {
    if (!(err instanceof GatewayError)) throw err;
    if (!this.isOpen(ws)) return;
    metrics.errors.inc({ code: err.code });
    ws.send(errorFrame(null, err.message));
  }

  isOpen(ws) {
    return ws.readyState === ws.OPEN;
  }

  closed(ws, code) {
    const { app } = ws[kSession];
    if (app !== null && countsSubscriptions(app)) {
      for (const internal of this.subscriptions.channelsOf(ws)) if (!isOwn(internal)) countChanged(this.relay, ws, internal, clientName(internal));
    }
    this.byApp.delete(ws);
    this.sessions.closed(ws, code);
  }
}

