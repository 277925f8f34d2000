// A worker: one HTTP server (HTTPS with --tls-cert) fed with sockets by the
// primary (or, under --balance reuseport, by its own listener: ./listener.js),
// ws in noServer mode for the upgrades, and the pieces that keep connections
// healthy.
import http from 'node:http';
import net from 'node:net';
import https from 'node:https';
import { readFileSync } from 'node:fs';
import { require } from '../runtime/require.js';
import { createLogger } from '../runtime/logger.js';
import { Message, Op } from '../core/ipc.js';
import { ErrorCode, GatewayError } from '../core/errors.js';
import { Subscriptions } from '../session/subscriptions.js';
import { WorkerRelay } from './relay.js';
import { WorkerPresence } from '../session/presence.js';
import { Namespaces } from '../core/namespaces.js';
import { protocolNamespaces, protocolWaysIn } from '../wiring/ways-in.js';
import { Apps } from '../pusher/apps.js';
import { Connections } from '../native/connections.js';
import { SseStreams } from '../native/sse.js';
import { Admission, admissionOptions } from '../session/admission.js';
import { Sessions } from '../session/sessions.js';
import { Commands } from '../core/commands.js';
import { GatewaySocket } from '../transport/ws-transport.js';
import { MsgpackSocket } from '../transport/msgpack-transport.js';
import { negotiate, protocolOf } from '../codecs/index.js';
import { carriedBy } from '../transport/transport.js';
import { WriteCoalescer } from '../transport/coalesce.js';
import { closeAll } from '../session/drain.js';
import { Keepalive } from '../session/keepalive.js';
import { ClosePacer } from '../transport/close-pacer.js';
import { PeriodicGc } from './gc.js';
import { createRequestHandler } from '../native/http.js';
import { ServerApi } from '../native/api.js';
import { attachCalls } from '../session/calls.js';
import { attachAdmin } from '../native/admin-calls.js';
import { createUpgradeHandler, refuseUpgrade } from './upgrade.js';
import { kClientIp } from '../core/symbols.js';
import { listenOwnPort } from './listener.js';
import { startStatsReporter } from './stats.js';
import { mirrorApps } from './apps.js';
import { exposeMetrics, metrics } from '../session/metrics.js';
import { LoopDelay } from '../runtime/loop-delay.js';
import { lastInput } from '../transport/last-input.js';
import { coalesceHandleAcks, endReceiversOnce } from '../runtime/internals.js';

const { WebSocketServer } = require('ws');
endReceiversOnce();

const RUNNING = 0;
const DRAINING = 1;

/**
 * @param {object} config resolved gateway configuration
 * @param {number} worker this worker's number, 1..config.workers
 * @returns {{server: http.Server}} fed by the primary; a baseline may listen on it itself
 */
export function startWorker(config, worker) {
  const log = createLogger(config.logLevel, { role: 'worker', worker });
  process.on('uncaughtException', (err) => {
    // A defect: no input should get here. The input begun last says where to look.
    log.fatal({ err, lastInput }, 'uncaught exception; exiting so the primary starts a fresh worker');
    process.exit(1);
  });

  let state = RUNNING;
  const draining = () => state === DRAINING;
  const coalescer = new WriteCoalescer(config.writeDelay); // one per worker: its connections' writes, a turn's to one socket in one write
  const loopDelay = new LoopDelay(); // the worker's one event-loop sampler, run while it has work (./stats.js)
  exposeMetrics(loopDelay);
  const subscriptions = new Subscriptions({ last: (channel) => relay.channelClosed(channel) });
  const relay = new WorkerRelay({ subscriptions, maxBuffered: config.maxBuffered, coalescer });
  const apps = new Apps(); // this process's, kept current from the primary's (./apps.js); the protocols read it
  const namespaces = new Namespaces(config, protocolNamespaces(apps)); // the process's one: every rule reads a channel's namespace here
  const presence = new WorkerPresence({ relay, subscriptions, namespaces, maxBuffered: config.maxBuffered });
  const keepalive = new Keepalive({ interval: config.pingInterval, maxBuffered: config.maxBuffered });
  const gc = new PeriodicGc(config.gcInterval, worker - 1, config.workers);
  const admission = new Admission({ ...admissionOptions(config, log), relay, draining, worker });
  const sessions = new Sessions({ admission, keepalive, subscriptions, relay, presence });
  const commands = new Commands({ rate: config.maxPublishRate, maxSubscriptions: config.maxSubscriptions, metrics, namespaces, relay, subscriptions, presence, hooks: admission.hooks });
  const { pingInterval, authTimeout, maxBuffered, trustForwarded, maxSubscriptions, apiKey, maxPayload } = config;
  const connections = new Connections({ pingInterval, authTimeout, maxBuffered, worker, coalescer, relay, subscriptions, admission, sessions, commands, log });
  const streams = new SseStreams({ trustForwarded, maxSubscriptions, maxBuffered, coalescer, relay, subscriptions, admission, sessions, commands });
  // One ws server per encoding: its WebSocket class carries the encoding's
  // transport (../transport/transport.js); the upgrade picks the server (./upgrade.js).
  const wsServer = (encoding, WebSocket) =>
    new WebSocketServer({
      noServer: true,
      WebSocket, // ws's class, with the transport on its prototype
      clientTracking: false, // ws would add a closure per connection; Connections counts, the keepalive wheel holds them
      perMessageDeflate: false, // ~250 KB per connection once used: never worth it here
      maxPayload: config.maxPayload,
      handleProtocols: () => protocolOf(encoding) // asked only when the client offered protocols: the one negotiated
    });
  const servers = { json: wsServer('json', GatewaySocket), msgpack: wsServer('msgpack', MsgpackSocket) };
  const native = {
    matches: (path) => path === config.path,
    serverFor: (req) => servers[negotiate(req.headers['sec-websocket-protocol'])],
    connections
  };
  attachCalls({ relay, users: admission.users, connections, subscriptions });
  const api = new ServerApi({ apiKey, maxPayload, context: { commands, relay, users: admission.users, presence }, log });
  // The other protocols' ways in, each over the same relay, subscriptions, presence and sessions.
  const appsServed = mirrorApps(apps, relay, config);
  const protocols = protocolWaysIn({ config, apps, appsServed, coalescer, relay, subscriptions, namespaces, presence, sessions, log });
  attachAdmin(relay, api.context, new Map(protocols.filter((protocol) => protocol.admin !== undefined).map((protocol) => [protocol.name, protocol.admin])));
  const routes = protocols.map((protocol) => protocol.route);
  const degraded = () => protocols.some((protocol) => protocol.degraded?.() === true);
  const handleRequest = createRequestHandler({ relay, streams, api, draining, degraded, routes, log });
  // The primary reads only TCP (and the PROXY header); TLS ends here, on the
  // handed-over socket, exactly as plain HTTP would start.
  const server =
    config.tlsCert === undefined
      ? http.createServer(handleRequest)
      : https.createServer({ cert: readFileSync(config.tlsCert), key: readFileSync(config.tlsKey) }, handleRequest);
  server.on(
    'upgrade',
    createUpgradeHandler({
      config,
      ways: [native, ...protocols.map((protocol) => protocol.upgrade)],
      admission,
      closes: new ClosePacer(),
      rejected: (reason) => metrics.rejected.inc({ reason })
    })
  );
  // No proxy here: without this answer Node would drop a CONNECT's socket unanswered.
  server.on('connect', (req, socket) => {
    socket.on('error', () => {});
    refuseUpgrade(socket, new GatewayError(ErrorCode.METHOD_NOT_ALLOWED, 'CONNECT is not served: this is no proxy'));
  });
  server.on('clientError', (err, socket) => {
    // A socket taken over by a connection (a stream) carries its bytes: an HTTP answer there would be garbage in it.
    if (socket.writable && err.code !== 'ECONNRESET' && carriedBy(socket) === undefined) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    else socket.destroy();
  });
  // Every socket this worker is given, HTTP or WebSocket: the primary
  // balances on these counts (lib/primary/balancer.js), /stats shows them.
  const sockets = { received: 0, open: 0 };
  const socketClosed = () => sockets.open--;

  const stats = startStatsReporter({ worker, relay, gc, sockets, loopDelay });
  // A worker that had nothing to do reports and measures again from its next
  // connection: handed over, from its own listener, or from a server that
  // listens itself (the cluster baseline).
  server.on('connection', stats.wake);

  process.on('message', (msg, handle) => {
    switch (msg?.type) {
      case Message.SOCKET:
        if (handle) adopt(handle, msg);
        break;
      case Message.BATCH:
        relay.receive(msg.ops);
        break;
      case Message.DRAIN:
        drain(msg.spreadMs);
        break;
      case Message.PROBE:
        handle?.close();
        break;
    }
  });

  /** A TCP handle from the primary, made into a socket as net.Server would. */
  function adopt(handle, { ip, head }) {
    accept(new net.Socket({ handle, readable: true, writable: true }), ip, head && Buffer.from(head, 'base64'));
  }

  /** A new connection, from the primary or this worker's own listener, for the HTTP server. */
  function accept(socket, ip, head) {
    sockets.received++;
    sockets.open++;
    socket.on('close', socketClosed); // fires once; `once` would wrap it in a closure per socket
    socket[kClientIp] = ip;
    // Bytes read while looking for a PROXY header go back in front.
    if (head?.length > 0) socket.unshift(head);
    server.emit('connection', socket);
  }

  async function drain(spreadMs) {
    if (state === DRAINING) return;
    state = DRAINING;
    // Its replacement, if any, listens already (the primary drains a worker
    // only then); with net.ipv4.tcp_migrate_req=1 what is queued here moves to it.
    listener?.close();
    log.info({ connections: connections.count, streams: streams.count, spreadMs }, 'draining');
    await closeAll(keepalive.all(), spreadMs);
    keepalive.stop();
    gc.stop();
    stats.stop();
    server.closeAllConnections();
    log.info('drained');
    relay.flush();
    process.disconnect();
    setTimeout(() => process.exit(0), 1000).unref(); // in case anything still holds the loop
  }

  let listener;
  const ready = () => {
    process.send({ type: Message.READY });
    log.debug('worker started');
  };
  if (config.balance !== 'reuseport') {
    coalesceHandleAcks();
    ready();
  }
  else {
    listenOwnPort(config, accept, (reason) => relay.send([Op.REFUSED, reason])).then(
      (own) => {
        listener = own;
        ready();
      },
      (err) => {
        log.fatal({ err: err.message, code: err.code }, 'cannot listen on the public port');
        process.exit(1);
      }
    );
  }
  return { server };
}
