// Calls on the whole cluster across gateway nodes (lib/primary/calls.js): a
// call is PUBLISHed on one control channel that every node's primary
// subscribes to; each other node runs its part and PUBLISHes the value.
//
// A node whose subscriber connection is being made again (after a cut, a
// failover, a Redis restart) does not receive what is published meanwhile,
// and PUBLISH's count of receivers does not tell the asker it missed one. So
// every node keeps an entry in a registry of live nodes (./nodes.lua:
// renewed every RENEW_MS, lapsing NODE_TTL_MS after), and a call is
// published by a script that also counts the live nodes (./call.lua). The
// asker waits for an answer from each of the others (as many as the
// registry or PUBLISH says, whichever is more), publishing the call again
// every RETRY_MS until they are in, or ANSWER_MS has passed (a node that
// vanished meanwhile): the same request each time. A node runs each call
// once and answers a repeat with the same value, so an answer lost the same
// way comes again too; answers are counted once per node.
//
// The channel name has no `{`, so no gateway channel's keys can reach it
// (../redis.js); the registry's key takes the channel's name as its hash
// tag, so under Cluster both are on one slot. Messages: {call: name, args,
// from, request} and {answer: value, to, request, node}.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';

export const CONTROL_CHANNEL = 'gw:control';
const NODES_KEY = `{${CONTROL_CHANNEL}}:nodes`;
const ANSWER_MS = 2000;
const RETRY_MS = 200;
const RENEW_MS = 1000;
const NODE_TTL_MS = 3000;
const RAN_KEPT_MS = 2 * ANSWER_MS; // how long a call run here is remembered, for its repeats

/** @implements {import('../index.js').Calls} */
export class RemoteCalls {
  /**
   * @param {import('ioredis').Redis | import('ioredis').Cluster} redis the command connection
   * @param {'publish' | 'spublish'} publish how: 'spublish' under Redis Cluster (the control channel's shard)
   */
  constructor(redis, publish = 'publish') {
    this.redis = redis;
    this.publish = publish;
    this.node = randomUUID();
    this.nextRequest = 1;
    this.asked = new Map(); // request -> {answers: Map(node -> value), need, resolve, timer, retry}
    this.ran = new Map(); // `<from> <request>` -> {at, value: Promise}: the calls run here lately, oldest first
    this.here = undefined; // until serve(): the other nodes' calls are not answered
    this.renewer = undefined; // from serve(): the registry counts this node
    redis.defineCommand('gw_nodes', { numberOfKeys: 1, lua: readFileSync(new URL('./nodes.lua', import.meta.url), 'utf8') });
    redis.defineCommand('gw_call', { numberOfKeys: 1, lua: readFileSync(new URL('./call.lua', import.meta.url), 'utf8') });
  }

  /** @param {(name: string, args: object) => Promise<any>} here runs a call's part on this node; from now on the others wait for its answers */
  serve(here) {
    this.here = here;
    clearInterval(this.renewer);
    this.renewer = setInterval(() => this.renew(), RENEW_MS);
    this.renewer.unref();
    this.renew();
  }

  renew() {
    this.redis.gw_nodes(NODES_KEY, this.node, String(NODE_TTL_MS)).catch(() => {}); // Redis unreachable: renewed once it answers
  }

  stop() {
    clearInterval(this.renewer);
  }

  /** This node goes: out of the registry, so no call waits for its answer. */
  leave() {
    clearInterval(this.renewer);
    return this.redis.zrem(NODES_KEY, this.node).then(
      () => {},
      () => {} // Redis unreachable: the entry lapses
    );
  }

  /**
   * The waiter is recorded before the PUBLISH goes out: another node may
   * answer before this node hears how many received the call, and that
   * answer counts all the same.
   * @returns {Promise<any[]>} the other nodes' values
   */
  call(name, args) {
    const request = this.nextRequest++;
    const message = JSON.stringify({ call: name, args, from: this.node, request });
    return new Promise((resolve) => {
      const asked = { answers: new Map(), need: 0, resolve, timer: undefined, retry: undefined };
      asked.timer = setTimeout(() => this.settle(request, asked), ANSWER_MS);
      this.asked.set(request, asked);
      const send = () => {
        this.redis.gw_call(NODES_KEY, this.publish, CONTROL_CHANNEL, message, this.node).then(
          ([receivers, others]) => {
            if (this.asked.get(request) !== asked) return; // settled meanwhile
            asked.need = Math.max(asked.need, receivers - 1, others); // receivers: this node's subscriber is one
            if (asked.answers.size >= asked.need) return this.settle(request, asked);
            asked.retry = setTimeout(send, RETRY_MS);
          },
          () => this.settle(request, asked) // Redis unreachable: this node's part only
        );
      };
      send();
    });
  }

  /** A message on the control channel. */
  received(message) {
    let parsed;
    try {
      parsed = JSON.parse(message);
    } catch {
      return; // not ours
    }
    if (parsed === null || typeof parsed !== 'object') return;
    if (typeof parsed.call === 'string' && isObject(parsed.args) && parsed.from !== this.node && this.here !== undefined) {
      this.run(parsed).then(
        (value) => {
          const answer = JSON.stringify({ answer: value, to: parsed.from, request: parsed.request, node: this.node });
          this.redis[this.publish](CONTROL_CHANNEL, answer).catch(() => {}); // the asker asks again, or times out
        },
        () => {} // a call this node does not know: the asker times out
      );
    } else if (parsed.to === this.node && 'answer' in parsed) {
      const asked = this.asked.get(parsed.request);
      if (asked === undefined) return;
      // A node's answer once (an older node's, without its id, each time).
      asked.answers.set(typeof parsed.node === 'string' ? parsed.node : Symbol('answer'), parsed.answer);
      if (asked.answers.size >= asked.need) this.settle(parsed.request, asked);
    }
  }

  /** Runs a call here once; a repeat of it (the asker publishing it again) gets the same value. */
  run({ call, args, from, request }) {
    const now = Date.now();
    for (const [key, { at }] of this.ran) {
      if (now - at < RAN_KEPT_MS) break;
      this.ran.delete(key);
    }
    const key = `${from} ${request}`;
    let ran = this.ran.get(key);
    if (ran === undefined) this.ran.set(key, (ran = { at: now, value: this.here(call, args) }));
    return ran.value;
  }

  settle(request, asked) {
    clearTimeout(asked.timer);
    clearTimeout(asked.retry);
    this.asked.delete(request);
    asked.resolve([...asked.answers.values()]);
  }
}

function isObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
