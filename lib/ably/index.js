// Ably's protocol in a worker: its WebSocket way in (`/`, as ably-js opens
// it) and its REST API (/time, /keys/…, /channels/…), over their own command
// core (Ably's channel names) and the worker's one relay, subscriptions and
// sessions, and its presence events in the primary (./primary.js). Its keys
// are the apps' (./keys.js): without apps (or with --no-ably), nothing.
import { require } from '../runtime/require.js';
import { appNamespaces, checkInternal, ablyName, ablyWebhookView } from './channels.js';
import { ablyAdmin } from './admin.js';
import { AblyConnections } from './connection.js';
import { AblyPresence } from './presence.js';
import { AblyRest, isRestPath } from './rest.js';
import { AblyHeartbeatSocket, AblyMsgpackHeartbeatSocket, AblyMsgpackSocket, AblySocket } from './transport.js';
import { Format } from './protocol.js';

const { WebSocketServer } = require('ws');

export { appNamespaces as ablyNamespaces, ablyWebhookView };
export { attachAbly } from './primary.js';

/**
 * @param {object} worker the worker's parts: config, apps, appsServed, commandsFor (a command core over the worker's parts), coalescer, relay, subscriptions, presence, sessions, log
 * @returns {{upgrade: object, route: object, admin: object}|undefined} its ways in (lib/wiring/ways-in.js) and the admin page's
 *   view of the apps' Ably channels (lib/native/admin-calls.js), or none without apps
 */
export function ablyWaysIn({ config, apps, appsServed, commandsFor, coalescer, relay, subscriptions, presence, sessions, log }) {
  if (!appsServed || !config.ably) return undefined;
  const keyPolicy = { ablyBasicAuth: config.ablyBasicAuth, trustForwarded: config.trustForwarded };
  const commands = commandsFor({ rate: config.maxPublishRate, checkName: checkInternal, showName: ablyName });
  const members = new AblyPresence({ relay, presence, commands });
  const connections = new AblyConnections({ pingInterval: config.pingInterval, maxPayload: config.maxPayload, maxBuffered: config.maxBuffered, apps, coalescer, subscriptions, sessions, commands, keyPolicy, members, relay, log });
  // One ws server per format, with heartbeats or without: its WebSocket class carries the transport.
  const server = (WebSocket) => new WebSocketServer({ noServer: true, WebSocket, clientTracking: false, perMessageDeflate: false, maxPayload: config.maxPayload });
  const servers = {
    [Format.JSON]: [server(AblySocket), server(AblyHeartbeatSocket)],
    [Format.MSGPACK]: [server(AblyMsgpackSocket), server(AblyMsgpackHeartbeatSocket)]
  };
  const context = { commands, relay, presence };
  const rest = new AblyRest({ maxPayload: config.maxPayload, apps, context, members, keyPolicy, log });
  return {
    admin: ablyAdmin({ apps, context, members }),
    upgrade: {
      matches: (path) => path === '/',
      serverFor: (req) => servers[/[?&]format=msgpack(&|$)/.test(req.url) ? Format.MSGPACK : Format.JSON][/[?&]heartbeats=true(&|$)/.test(req.url) ? 1 : 0],
      connections
    },
    route: { matches: isRestPath, request: (req, res, path) => rest.request(req, res, path) }
  };
}
