// Calls on the whole cluster across gateway nodes (lib/primary/calls.js): a
// call is PUBLISHed on one control channel that every node's primary
// subscribes to; each other node runs its part and PUBLISHes the value.
// PUBLISH says how many nodes received the call, so the asking node knows how
// many answers to wait for (and waits at most ANSWER_MS for a node that
// vanished meanwhile).
//
// The channel name has no `{`, so no gateway channel's keys can reach it
// (../redis.js). Messages: {call: name, args, from, request} and
// {answer: value, to, request}.
import { randomUUID } from 'node:crypto';

export const CONTROL_CHANNEL = 'gw:control';
const ANSWER_MS = 2000;

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
    this.asked = new Map(); // request -> {left, values, resolve, timer}
    this.here = undefined; // until serve(): the other nodes' calls are not answered
  }

  /** @param {(name: string, args: object) => Promise<any>} here runs a call's part on this node */
  serve(here) {
    this.here = here;
  }

  /**
   * The waiter is recorded before the PUBLISH goes out: another node may
   * answer before this node hears how many received the call, and that
   * answer counts all the same.
   * @returns {Promise<any[]>} the other nodes' values
   */
  call(name, args) {
    const request = this.nextRequest++;
    return new Promise((resolve) => {
      const asked = { left: Infinity, values: [], resolve, timer: setTimeout(() => this.settle(request, asked), ANSWER_MS) };
      this.asked.set(request, asked);
      this.redis[this.publish](CONTROL_CHANNEL, JSON.stringify({ call: name, args, from: this.node, request })).then(
        (receivers) => {
          if (this.asked.get(request) !== asked) return; // timed out meanwhile
          asked.left = receivers - 1 - asked.values.length; // less this node, less the answers already in
          if (asked.left <= 0) this.settle(request, asked);
        },
        () => this.settle(request, asked) // Redis unreachable: this node's part only
      );
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
      this.here(parsed.call, parsed.args).then(
        (value) => {
          const answer = JSON.stringify({ answer: value, to: parsed.from, request: parsed.request });
          this.redis[this.publish](CONTROL_CHANNEL, answer).catch(() => {}); // the asker times out
        },
        () => {} // a call this node does not know: the asker times out
      );
    } else if (parsed.to === this.node && 'answer' in parsed) {
      const asked = this.asked.get(parsed.request);
      if (asked === undefined) return;
      asked.values.push(parsed.answer);
      if (--asked.left === 0) this.settle(parsed.request, asked);
    }
  }

  settle(request, asked) {
    clearTimeout(asked.timer);
    this.asked.delete(request);
    asked.resolve(asked.values);
  }
}

function isObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
