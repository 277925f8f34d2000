// Pusher's protocol in a worker: its WebSocket way in (/app/<key>) and its
// HTTP API (/apps/<id>/…), over their own command core (Pusher's channel
// names, Pusher's client event rate) and the worker's one relay,
// subscriptions, presence and sessions. Without an app, nothing: /app/ and
// /apps/ answer 404 as any unknown path.
import { require } from '../runtime/require.js';
import { Op } from '../core/ipc.js';
import { checkInternal, pusherName } from './channels.js';
import { PusherConnections } from './connection.js';
import { clientEventRate } from './app-limits.js';
import { PusherHttpApi } from './http-api.js';
import { pusherAdmin } from './admin.js';
import { deliverSubscriptionCount } from './subscription-count.js';
import { refuseUpgrade } from './refusals.js';
import { PusherSocket } from './transport.js';

const { WebSocketServer } = require('ws');

/**
 * @param {object} worker the worker's parts: config, apps (this process's, kept current by the wiring), appsServed, commandsFor (a command core over the worker's parts), coalescer, relay, subscriptions, presence, sessions, log
 * @returns {{upgrade: object, route: object, admin: object}|undefined} the ways in (lib/wiring/ways-in.js) and the admin page's
 *   view of the apps' Pusher channels (lib/native/admin-calls.js), or none without an app
 */
export function pusherWaysIn({ config, apps, appsServed, commandsFor, coalescer, relay, subscriptions, presence, sessions, log }) {
  if (!appsServed) return undefined;
  relay.handle(Op.SUBSCRIPTION_COUNT, (op) => deliverSubscriptionCount(subscriptions, op));
  const commands = commandsFor({ rateOf: clientEventRate, checkName: checkInternal, showName: pusherName });
  const connections = new PusherConnections({ pingInterval: config.pingInterval, apps, coalescer, relay, subscriptions, sessions, commands, presence, log });
  const wss = new WebSocketServer({
    noServer: true,
    WebSocket: PusherSocket,
    clientTracking: false,
    perMessageDeflate: false,
    maxPayload: config.maxPayload
  });
  const context = { commands, relay, presence };
  const api = new PusherHttpApi({ maxPayload: config.maxPayload, apps, context, log });
  return {
    admin: pusherAdmin({ apps, context }),
    degraded: () => apps.degraded,
    upgrade: {
      matches: (path) => path.startsWith('/app/'),
      serverFor: () => wss,
      connections,
      refuse: (req, socket, head, err) => refuseUpgrade(wss, req, socket, head, err)
    },
    route: { matches: (path) => path.startsWith('/apps/'), request: (req, res, path) => api.request(req, res, path) }
  };
}
