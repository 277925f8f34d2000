// Calls on the whole cluster (Call in lib/core/ipc.js): a worker (or this
// primary) asks, this primary runs the call's part on every one of its
// workers (or, for a node's figures and a channel's subscription count, does
// it itself), asks the other nodes through the engine's cluster-wide part
// where it has one (lib/engines/redis/calls.js), and answers the combined
// value. A worker that dies while asked is not waited
// for; a node that does not answer in time is left out.
//
// Operations: from a worker [Op.CALL, token, name, args] -> the value;
// to every worker [Op.RUN, token, name, args] -> its part.
import os from 'node:os';
import { Call, MAX_CHANNELS, Op } from '../core/ipc.js';

const COMBINE = {
  [Call.KICK]: [sum, 0],
  [Call.SUBSCRIBE]: [sum, 0],
  [Call.UNSUBSCRIBE]: [sum, 0],
  [Call.CHANNELS]: [mergeChannels, {}],
  [Call.INFO]: [(a, b) => a.concat(b), []],
  [Call.CLOSE_SUBSCRIBERS]: [sum, 0],
  [Call.SUBSCRIPTION_COUNT]: [sum, 0]
};

/**
 * @param {import('./relay.js').PrimaryRelay} relay
 * @param {import('../engines/index.js').Calls} [remote] the other nodes
 * @param {object} config resolved gateway configuration (the node's name is host:port)
 * @returns {(name: string, args: object) => Promise<any>} runs a call on the whole cluster from this process
 */
export function attachCalls(relay, remote, config) {
  const startedAt = Date.now();

  /** This node's part: its own figures, or every worker's part combined (a worker that dies meanwhile adds nothing). */
  const here = async (name, args) => {
    const [combine, zero] = COMBINE[name] ?? unknownCall(name);
    if (name === Call.INFO) return [nodeInfo(relay, config, startedAt)];
    if (name === Call.SUBSCRIPTION_COUNT) return tellCount(relay, args);
    const parts = await Promise.all([...relay.links.values()].map((link) => link.ask(Op.RUN, name, args).catch(() => zero)));
    return parts.reduce(combine, zero);
  };
  const everywhere = async (name, args) => {
    const [combine] = COMBINE[name] ?? unknownCall(name);
    let value = await here(name, args);
    // Unreachable nodes (Redis down): this node's part only.
    for (const other of remote === undefined ? [] : await remote.call(name, args).catch(() => [])) value = combine(value, other);
    return value;
  };

  relay.handle(Op.CALL, (link, [, token, name, args]) => link.reply(token, everywhere(name, args))); // dropped by the batch if the asker is gone
  remote?.serve(here);
  return everywhere;
}

function nodeInfo(relay, config, startedAt) {
  const workers = [...relay.figures.values()];
  const total = (key) => workers.reduce((n, w) => n + w[key], 0);
  const sse = total('streams');
  return {
    name: `${os.hostname()}:${config.port}`,
    workers: relay.links.size,
    connections: { ws: total('connections') - sse, sse },
    subscriptions: total('subscriptions'),
    uptimeS: Math.round((Date.now() - startedAt) / 1000)
  };
}

/** Every worker of this node writes the count to its subscribers of the channel. */
function tellCount(relay, { channel, count }) {
  if (typeof channel !== 'string' || !Number.isInteger(count)) return 0;
  relay.broadcast([Op.SUBSCRIPTION_COUNT, channel, count]);
  return 1;
}

function sum(a, b) {
  return a + b;
}

/** Subscribers per channel, summed; null (too many) wins. */
function mergeChannels(a, b) {
  if (a === null || b === null) return null;
  const out = Object.assign(Object.create(null), a); // a channel may be called __proto__
  for (const [name, n] of Object.entries(b)) out[name] = (out[name] ?? 0) + n;
  return Object.keys(out).length > MAX_CHANNELS ? null : out;
}

function unknownCall(name) {
  throw new TypeError(`unknown cluster call ${JSON.stringify(name)}`);
}
