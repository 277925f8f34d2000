// Pusher's protocol in a worker: its WebSocket way in (/app/<key>) and its
// HTTP API (/apps/<id>/…), over their own command core (Pusher's channel
// names, Pusher's client event rate) and the worker's one relay,
// subscriptions, presence and sessions. Without an app, nothing: /app/ and
// /apps/ answer 404 as any unknown path.
import { require } from '../require.js';
import { Commands } from '../core/commands.js';
import { Apps } from './apps.js';
import { checkInternal, pusherName } from './channels.js';
import { CLIENT_EVENT_RATE, PusherConnections } from './connection.js';
import { PusherHttpApi } from './http-api.js';
import { refuseUpgrade } from './refusals.js';
import { metrics } from '../worker/metrics.js';
import { PusherSocket } from './transport.js';

const { WebSocketServer } = require('ws');

/**
 * @param {object} worker the worker's parts: config, relay, subscriptions, namespaces, presence, sessions, log
 * @returns {{upgrade: object, route: object}|undefined} the ways in (lib/worker/ways-in.js), or none without an app
 */
export function pusherWaysIn({ config, relay, subscriptions, namespaces, presence, sessions, log }) {
  const apps = new Apps(config);
  if (apps.list.length === 0) return undefined;
  const commands = new Commands({
    rate: CLIENT_EVENT_RATE,
    maxSubscriptions: config.maxSubscriptions,
    metrics,
    namespaces,
    relay,
    subscriptions,
    presence,
    checkName: checkInternal,
    showName: pusherName
  });
  const connections = new PusherConnections({ config, apps, relay, subscriptions, sessions, commands, presence, log });
  const wss = new WebSocketServer({
    noServer: true,
    WebSocket: PusherSocket,
    clientTracking: false,
    perMessageDeflate: false,
    maxPayload: config.maxPayload
  });
  const api = new PusherHttpApi({ config, apps, context: { commands, relay, presence } });
  return {
    upgrade: {
      matches: (path) => path.startsWith('/app/'),
      serverFor: () => wss,
      connections,
      refuse: (req, socket, head, err) => refuseUpgrade(wss, req, socket, head, err)
    },
    route: { matches: (path) => path.startsWith('/apps/'), request: (req, res, path) => api.request(req, res, path) }
  };
}
