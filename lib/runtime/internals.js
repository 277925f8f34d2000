// Every use of a Node.js, ws or ioredis internal, in one place. The accept path and
// the write path lean on a few private fields for speed (no net.Socket made
// in the primary per connection, frames written to the socket directly,
// closes paced without reading the client's FIN). A runtime or ws release
// that changed one of them must make the gateway refuse to start and say
// what changed, not hang: checkWs() runs in the primary at start, the
// listening handle is checked as it is taken over, and the hand-over's
// acknowledgement is probed with the first worker (lib/primary/probe.js).
// `ws` is pinned in package.json to the minor version these were read from.
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { require } from './require.js';
import { InternalsChanged } from '../core/errors.js';

export { InternalsChanged };

// ---- Node: the listening handle and the hand-over of handles over IPC ----

/**
 * Replaces the listening handle's connection callback, so each connection
 * arrives as the bare TCP handle libuv accepted (not yet reading) instead of
 * a net.Socket made only to be handed over. Call once the server listens.
 * @param {(err: number|undefined, handle: object) => void} callback
 */
export function takeConnections(server, callback) {
  const handle = server._handle;
  if (typeof handle?.onconnection !== 'function' || typeof handle.readStop !== 'function') {
    throw new InternalsChanged('the listening handle has no onconnection/readStop (net.Server._handle)');
  }
  handle.onconnection = callback;
}

/** Node's child_process acknowledges every handle it receives with one of these internal messages. */
const HANDLE_ACKS = new Set(['NODE_HANDLE_ACK', 'NODE_HANDLE_NACK']);

/**
 * Calls `acknowledged` each time the child acknowledges a handle it was
 * sent. Node sends the next handle only after that acknowledgement; the
 * primary's hand-over line follows the same rhythm (lib/primary/master.js).
 * @returns {() => void} stops listening
 */
export function onHandleAck(childProcess, acknowledged) {
  const listener = (msg) => {
    if (HANDLE_ACKS.has(msg?.cmd)) acknowledged();
  };
  childProcess.on('internalMessage', listener);
  return () => childProcess.off('internalMessage', listener);
}

// Node's queue of sends to a child (ChildProcess._handleQueue): null while no
// handle awaits the child's acknowledgement; an array while one does, holding
// every send made meanwhile, which Node passes through send again on the
// acknowledgement (whose handler asserts it is an array). The child needs no
// such wait: each read of the channel carries at most one handle, with its
// message (SCM_RIGHTS data is never coalesced; Node's reader relies on it).
// The hand-over line (lib/primary/master.js) keeps several handles in flight
// with these two.

/**
 * Whether a send made now would be written at once. An empty queue is
 * cleared so that it is: nothing waits in it to keep in order.
 */
export function freeHandleQueue(childProcess) {
  const queue = childProcess._handleQueue;
  if (queue === null) return true;
  if (!Array.isArray(queue)) throw new InternalsChanged("a child's send queue is no longer null or an array (ChildProcess._handleQueue)");
  if (queue.length > 0) return false;
  childProcess._handleQueue = null;
  return true;
}

/** After an acknowledgement, while more are due: Node's handler of each expects its queue. */
export function holdHandleQueue(childProcess) {
  childProcess._handleQueue ??= [];
}

const ACK_LINE = '{"cmd":"NODE_HANDLE_ACK"}\n';
const ACKS_AT_ONCE = 8; // a quarter of the primary's window (lib/primary/master.js): it never waits on them
const ACK_WAIT_MS = 2; // a lone connection's acknowledgement waits this long for company

/**
 * In a worker the primary hands connections to: Node acknowledges each
 * handle it receives with a write of its own to the IPC channel, a system
 * call and a wake-up of the primary per connection, about a tenth of a
 * handshake's CPU (a storm's connections arrive one a turn, so a turn has
 * one to send). These acknowledgements leave together, ACKS_AT_ONCE or what
 * came within ACK_WAIT_MS, as the lines of one write, which the primary's
 * reader takes as the separate messages they are (its hand-over line keeps
 * more handles in flight than that, and expects acknowledgements in bursts).
 * Everything else the worker sends goes through Node as before.
 */
export function coalesceHandleAcks() {
  const key = Object.getOwnPropertySymbols(process).find((symbol) => symbol.description === 'kChannelHandle');
  const channel = key === undefined ? undefined : process[key];
  let WriteWrap;
  try {
    ({ WriteWrap } = process.binding('stream_wrap'));
  } catch {
    // checked below
  }
  if (typeof channel?.writeUtf8String !== 'function' || typeof WriteWrap !== 'function' || typeof process._send !== 'function') {
    throw new InternalsChanged("a worker's IPC channel (process[kChannelHandle].writeUtf8String, stream_wrap's WriteWrap, process._send) is not where it was");
  }
  const send = process._send;
  let due = 0;
  let timer;
  const flush = () => {
    clearTimeout(timer);
    const count = due;
    due = 0;
    if (!process.connected) return; // gone with the primary: nothing to acknowledge to
    const req = new WriteWrap();
    req.oncomplete = ignore;
    channel.writeUtf8String(req, ACK_LINE.repeat(count), null); // an error is the channel's end, which Node reports itself
  };
  process._send = function sendAcksTogether(message, handle, options, callback) {
    if (handle == null && message?.cmd === 'NODE_HANDLE_ACK') {
      if (++due === ACKS_AT_ONCE) flush();
      else if (due === 1) timer = setTimeout(flush, ACK_WAIT_MS);
      return true;
    }
    return send.call(this, message, handle, options, callback);
  };
}

function ignore() {}

/**
 * Takes the TCP handle out of a paused socket, leaving the socket inert. Its
 * reads from the kernel stop: what arrives next stays there for the process
 * the handle goes to. Call it in the same turn as the pause.
 */
export function detachHandle(socket) {
  const handle = socket._handle;
  handle.readStop();
  socket._handle = null;
  return handle;
}

/** Stops reading from the kernel without pausing the stream: what arrives stays there. */
export function readStop(socket) {
  socket._handle?.readStop();
}

/** @returns {number} 0, or libuv's error when the socket can no longer read */
export function readStart(socket) {
  return socket._handle.readStart();
}

/** The 'end' listeners Node puts on every net.Socket itself. */
const NET_END_LISTENERS = new Set(new net.Socket().listeners('end'));

/** A socket's 'end' listeners other than Node's own. */
export function userEndListeners(socket) {
  return socket.listeners('end').filter((listener) => !NET_END_LISTENERS.has(listener));
}

// ---- ws: the socket and the receiver behind a WebSocket ----

/** The net.Socket a ws WebSocket writes to: frames encoded once go there directly. */
export function socketOf(ws) {
  return ws._socket;
}

/** ws's frame parser of a connection: it emits 'conclude' with a close frame's code. */
export function receiverOf(ws) {
  return ws._receiver;
}

/**
 * Reads ws's sources (no module loaded) for the fields and events used
 * above; throws InternalsChanged naming the first that is missing.
 */
export function checkWs() {
  const root = path.dirname(require.resolve('ws/package.json')); // ws exports no lib/ paths
  const source = (file) => readFileSync(path.join(root, 'lib', file), 'utf8');
  const websocket = source('websocket.js');
  const expected = [
    [websocket, 'this._socket = socket', 'WebSocket#_socket'],
    [websocket, 'this._receiver = receiver', 'WebSocket#_receiver'],
    [websocket, "receiver.on('conclude', receiverOnConclude)", "the receiver's 'conclude' event"],
    [websocket, "socket.on('data', socketOnData)", "the socket's one 'data' handler"],
    [websocket, "socket.on('end', socketOnEnd)", "the socket's one 'end' handler"],
    [source('sender.js'), 'static frame(data, options)', 'Sender.frame(data, options)'],
    [websocket, 'websocket._receiver.end();', "the receiver's end on the socket's 'end' and 'close'"]
  ];
  for (const [text, needle, what] of expected) {
    if (!text.includes(needle)) {
      const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
      throw new InternalsChanged(`ws ${version} has no ${what}`);
    }
  }
}

/**
 * ws ends a connection's receiver (a Writable) when its socket ends and
 * again when it closes; for the second, Node makes an error with its stack
 * (already finished) and drops it: about 6 µs of every close. An end with
 * nothing to write on a receiver already ending does nothing else, so it is
 * skipped. Called once in each worker.
 */
export function endReceiversOnce() {
  const { Receiver } = require('ws');
  const end = Receiver.prototype.end;
  Receiver.prototype.end = function endOnce(...args) {
    if (args.length === 0 && this.writableEnded) return this;
    return end.apply(this, args);
  };
}

// ---- ioredis: the shard subscribers under Redis Cluster, the Sentinels' connections ----

/** Throws InternalsChanged when ioredis no longer exposes its sharded subscribers (checked when the engine starts). */
export function checkShardSubscribers(cluster) {
  if (typeof cluster.shardedSubscribers?.getResponsibleSubscriber !== 'function') {
    throw new InternalsChanged('ioredis has no Cluster#shardedSubscribers.getResponsibleSubscriber (the Redis engine pings a shard through it)');
  }
  if (!(cluster.shardedSubscribers.shardedSubscribers instanceof Map)) {
    throw new InternalsChanged('ioredis has no Map Cluster#shardedSubscribers.shardedSubscribers (the Redis engine watches each shard subscriber)');
  }
}

/** @returns {import('ioredis').Redis[]} every shard's subscriber connection now (ioredis replaces one that ended) */
export function shardSubscriberConnections(cluster) {
  const connections = [];
  for (const subscriber of cluster.shardedSubscribers.shardedSubscribers.values()) {
    const redis = subscriber.getInstance();
    if (redis) connections.push(redis);
  }
  return connections;
}

/** Throws InternalsChanged when a connection made through Sentinel has no failover detector field where ioredis kept it. */
export function checkSentinelConnections(redis) {
  if (redis.connector === undefined || !('failoverDetector' in redis.connector)) {
    throw new InternalsChanged("ioredis's Sentinel connector has no failoverDetector (the Redis engine watches the Sentinels through it)");
  }
}

/**
 * @returns {import('ioredis').Redis[]} the connections to the Sentinels that
 *   ioredis's failover detector holds for `redis` now, subscribed to
 *   +switch-master (a new set after each reconnect to the master)
 */
export function sentinelConnectionsOf(redis) {
  return redis.connector.failoverDetector?.sentinels?.map((sentinel) => sentinel.client) ?? [];
}

/** @returns {import('ioredis').Redis | undefined} the connection that SSUBSCRIBEs `slot`'s channels: a PING there follows its messages */
export function shardSubscriberOf(cluster, slot) {
  return cluster.shardedSubscribers.getResponsibleSubscriber(slot)?.getInstance();
}
