// Calls on the whole cluster (Call in lib/ipc.js): a worker asks, this
// primary runs the call's part on every one of its workers (or, for a node's
// figures, answers itself), asks the other nodes through the engine's
// cluster-wide part where it has one (lib/engines/redis/calls.js), and
// answers the combined value. A worker that dies while asked is not waited
// for; a node that does not answer in time is left out.
//
// Operations: from a worker ['call', name, args, token] -> ['calld', token, value];
// to every worker ['run', name, args, request] -> ['ran', request, value].
import os from 'node:os';
import { Call, MAX_CHANNELS, Op } from '../ipc.js';

const COMBINE = {
  [Call.KICK]: [sum, 0],
  [Call.SUBSCRIBE]: [sum, 0],
  [Call.UNSUBSCRIBE]: [sum, 0],
  [Call.CHANNELS]: [mergeChannels, {}],
  [Call.INFO]: [(a, b) => a.concat(b), []]
};

/**
 * @param {import('./relay.js').PrimaryRelay} relay
 * @param {import('../engines/index.js').Calls} [remote] the other nodes
 * @param {object} config resolved gateway configuration (the node's name is host:port)
 * @returns {(name: string, args: object) => Promise<any>} runs a call on the whole cluster from this process
 */
export function attachCalls(relay, remote, config) {
  const runs = new Map(); // request -> {waiting: Set of links, value, combine, resolve}
  const startedAt = Date.now();
  let nextRequest = 1;

  const settle = (request, run) => {
    if (run.waiting.size > 0) return;
    runs.delete(request);
    run.resolve(run.value);
  };
  /** This node's part: its own figures, or every worker's part combined. */
  const here = async (name, args) => {
    const [combine, zero] = COMBINE[name] ?? unknownCall(name);
    if (name === Call.INFO) return [nodeInfo(relay, config, startedAt)];
    return new Promise((resolve) => {
      const request = nextRequest++;
      const run = { waiting: new Set(relay.links.values()), value: zero, combine, resolve };
      runs.set(request, run);
      for (const link of run.waiting) link.send([Op.RUN, name, args, request]);
      settle(request, run); // no worker here: nothing to wait for
    });
  };
  const everywhere = async (name, args) => {
    const [combine] = COMBINE[name] ?? unknownCall(name);
    let value = await here(name, args);
    // Unreachable nodes (Redis down): this node's part only.
    for (const other of remote === undefined ? [] : await remote.call(name, args).catch(() => [])) value = combine(value, other);
    return value;
  };

  relay.handle(Op.CALL, (link, [, name, args, token]) => {
    everywhere(name, args).then((value) => link.send([Op.CALL_DONE, token, value])); // dropped by the batch if the asker is gone
  });
  relay.handle(Op.RAN, (link, [, request, value]) => {
    const run = runs.get(request);
    if (run === undefined || !run.waiting.delete(link)) return;
    run.value = run.combine(run.value, value);
    settle(request, run);
  });
  relay.onDetach((link) => {
    for (const [request, run] of runs) if (run.waiting.delete(link)) settle(request, run);
  });
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
