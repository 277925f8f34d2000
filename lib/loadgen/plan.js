// Splits a run among agent processes: how many (from the open-files limit),
// which connections each opens, and its share of the rates. Also the checks
// that involve more than one flag.
import { UsageError } from '../config/cli.js';
import { readSnapshot } from '../runtime/proc.js';
import { isLoopback, ephemeralPorts } from './addresses.js';
import { pusherUrl } from './pusher-wire.js';
import { ablyUrl } from './ably-wire.js';

/** Sockets one agent may hold: 90 % of its open-files limit, less what Node itself keeps open. */
export function connectionsPerProcess(limit = readSnapshot().openFiles?.soft ?? Infinity) {
  return Math.max(1, Math.floor(limit * 0.9) - 64);
}

/**
 * @param {object} o resolved options (lib/loadgen/options.js)
 * @returns {{processes: number, agents: object[]}} one entry per agent, in the shape Pool takes
 * @throws {UsageError}
 */
export function planRun(o, perProcess = connectionsPerProcess(), portRange = ephemeralPorts()) {
  if (!o.allowRemote) checkLoopback(o);
  const ports = sourcePorts(o, portRange);
  const processes = Math.min(o.connections, o.processes ?? Math.ceil(o.connections / perProcess));
  if (o.publishRate > 0 && o.channels === 0) throw new UsageError('--publish-rate needs --channels: nobody would receive');
  if (o.publishVia === 'http' && o.publishRate > 0 && !o.apiKey && o.protocol === 'native') throw new UsageError('--publish-via http needs --api-key');
  if (o.transport === 'sse' && o.channels === 0) throw new UsageError('--transport sse needs --channels: a stream is on a channel');
  if (o.transport === 'sse' && o.publishRate > 0 && o.publishVia !== 'http') {
    throw new UsageError('--transport sse receives only: publish with --publish-via http --api-key K');
  }
  if (o.transport === 'sse' && (o.encoding !== 'json' || o.delta)) throw new UsageError('--encoding and --delta are a WebSocket\'s: a stream is JSON, whole messages');
  if (o.delta && o.channels === 0) throw new UsageError('--delta needs --channels: deltas are a subscription\'s');
  if (o.token !== undefined && o.jwtSecret !== undefined) throw new UsageError('give --token or --jwt-secret, not both');
  pusherProblem(o);
  ablyProblem(o);
  const largest = Math.ceil(o.connections / processes);
  if (largest > perProcess) {
    throw new UsageError(
      `--processes ${processes} means ${largest} connections per process, over the ${perProcess} ` +
        `that the open-files limit allows; use at least ${Math.ceil(o.connections / perProcess)}`
    );
  }
  const agents = [];
  for (let a = 0, first = 0; a < processes; a++) {
    const count = Math.floor(o.connections / processes) + (a < o.connections % processes ? 1 : 0);
    agents.push({
      agent: a,
      first,
      count,
      rate: o.rate / processes,
      maxHandshakes: Math.max(1, Math.ceil(o.maxHandshakes / processes)),
      handshakeTimeout: o.handshakeTimeout,
      url: urlOf(o),
      protocol: o.protocol,
      addresses: o.localAddress,
      ports: ports && spareSlice(ports, a, processes),
      channels: o.channels,
      channelPrefix: o.channelPrefix,
      messageSize: o.messageSize,
      reconnectEvery: o.reconnectEvery,
      reconnectFraction: o.reconnectFraction,
      transport: o.transport,
      encoding: o.encoding,
      delta: o.delta,
      auth: { token: o.token, jwtSecret: o.jwtSecret, jwtSubPrefix: o.jwtSubPrefix }
    });
    first += count;
  }
  return { processes, agents };
}

/** A Pusher run: its key, HTTP publishing through the app, none of what Pusher's protocol lacks. */
function pusherProblem(o) {
  if (o.protocol !== 'pusher') {
    const given = ['pusherKey', 'pusherAppId', 'pusherSecret'].find((k) => o[k] !== undefined);
    if (given !== undefined) throw new UsageError(`--${given.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} needs --protocol pusher`);
    return;
  }
  if (o.pusherKey === undefined) throw new UsageError('--protocol pusher needs --pusher-key');
  if (o.transport !== 'ws') throw new UsageError('--protocol pusher is a WebSocket protocol: leave --transport ws');
  if (o.token !== undefined || o.jwtSecret !== undefined) throw new UsageError('--protocol pusher takes no tokens: its public channels are open');
  if (o.reconnectEvery > 0) throw new UsageError('--reconnect-every needs the native protocol: Pusher has no recovery to measure');
  if (o.publishRate > 0 && (o.publishVia !== 'http' || o.pusherAppId === undefined || o.pusherSecret === undefined)) {
    throw new UsageError('--protocol pusher publishes through the HTTP API: --publish-via http --pusher-app-id ID --pusher-secret S');
  }
}

/** An Ably run: its key, REST publishing, none of what the load generator's Ably lacks. */
function ablyProblem(o) {
  if (o.protocol !== 'ably') {
    if (o.ablyKey !== undefined) throw new UsageError('--ably-key needs --protocol ably');
    return;
  }
  if (o.ablyKey === undefined) throw new UsageError('--protocol ably needs --ably-key (<appId>.<key>:<secret>)');
  if (o.transport !== 'ws') throw new UsageError('--protocol ably is a WebSocket protocol: leave --transport ws');
  if (o.token !== undefined || o.jwtSecret !== undefined) throw new UsageError('--protocol ably connects with --ably-key, no tokens');
  if (o.reconnectEvery > 0) throw new UsageError('--reconnect-every needs the native protocol');
  if (o.encoding !== 'json' || o.delta) throw new UsageError('--protocol ably speaks JSON, whole messages: leave --encoding and --delta');
  if (o.publishRate > 0 && o.publishVia !== 'http') throw new UsageError('--protocol ably publishes through the REST API: --publish-via http');
}

/** The URL every connection of the run dials. */
function urlOf(o) {
  if (o.protocol === 'pusher') return pusherUrl(o.url, o.pusherKey);
  if (o.protocol === 'ably') return ablyUrl(o.url, o.ablyKey);
  return o.url;
}

/**
 * The explicit source ports (--source-ports with --local-address): connection
 * g binds port low + floor(g / A) of its address, so no connect makes the
 * kernel search the ephemeral range for a free port, which past ~950k
 * connections made connects slower than the gateway. Undefined: the kernel
 * picks.
 * @throws {UsageError} when the addresses cannot hold the connections
 */
function sourcePorts(o, { low, high }) {
  const count = o.localAddress.length;
  if (!o.sourcePorts || count === 0) return undefined;
  const perAddress = Math.ceil(o.connections / count);
  const held = high - low + 1;
  if (perAddress > held) {
    throw new UsageError(
      `${count} source address${count === 1 ? '' : 'es'} hold at most ${count * held} connections ` +
        `(ip_local_port_range ${low}-${high}: ${held} ports each); give at least ${Math.ceil(o.connections / held)} addresses or fewer --connections`
    );
  }
  return { low, high, spare: low + perAddress };
}

/**
 * The ports above the planned ones are spares for connections whose planned
 * port is taken; each agent gets its own slice, so two agents never retry on
 * the same port.
 */
function spareSlice({ low, high, spare }, agent, processes) {
  const size = Math.floor((high - spare + 1) / processes);
  return { low, spareFrom: spare + agent * size, spareSize: size };
}

// Off this machine only when asked for in so many words (--allow-remote).
function checkLoopback(o) {
  const host = new URL(o.url).hostname;
  if (!isLoopback(host)) {
    throw new UsageError(`--url must point at this machine (127.0.0.0/8, ::1, localhost), got ${host}; --allow-remote targets a gateway elsewhere`);
  }
  const remote = o.localAddress.find((address) => !isLoopback(address));
  if (remote) throw new UsageError(`--local-address ${remote} is not a loopback address; --allow-remote allows it`);
}
