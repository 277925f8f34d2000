// POST /disconnect across gateway nodes: a kick is PUBLISHed (SPUBLISHed
// under Redis Cluster) on one control channel that every node's primary subscribes to; each other node closes the
// user's connections and PUBLISHes how many. PUBLISH says how many nodes
// received the kick, so the asking node knows how many answers to wait for
// (and waits at most ANSWER_MS for a node that vanished meanwhile).
//
// The channel name has no `{`, so no gateway channel's keys can reach it
// (./redis.js). Messages: {kick: user, from, request} and
// {kicked: n, to, request}.
import { randomUUID } from 'node:crypto';

export const CONTROL_CHANNEL = 'gw:control';
const ANSWER_MS = 2000;

/** @implements {import('../index.js').Kicks} */
export class RemoteKicks {
  /**
   * @param {import('ioredis').Redis | import('ioredis').Cluster} redis the command connection
   * @param {'publish' | 'spublish'} publish how: 'spublish' under Redis Cluster (the channel's shard)
   */
  constructor(redis, publish) {
    this.redis = redis;
    this.publish = publish;
    this.node = randomUUID();
    this.nextRequest = 1;
    this.asked = new Map(); // request -> {left, total, resolve, timer}
    this.kickHere = undefined; // until serve(): the other nodes' kicks find no users here
  }

  /** @param {(user: string) => Promise<number>} kickHere closes the user's connections on this node */
  serve(kickHere) {
    this.kickHere = kickHere;
  }

  /** @returns {Promise<number>} connections the other nodes closed */
  async kick(user) {
    const request = this.nextRequest++;
    const receivers = await this.redis[this.publish](CONTROL_CHANNEL, JSON.stringify({ kick: user, from: this.node, request }));
    return new Promise((resolve) => {
      const asked = { left: receivers - 1, total: 0, resolve, timer: undefined }; // less this node
      this.asked.set(request, asked);
      asked.timer = setTimeout(() => this.settle(request, asked), ANSWER_MS);
      if (asked.left <= 0) this.settle(request, asked);
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
    if (typeof parsed.kick === 'string' && parsed.from !== this.node && this.kickHere !== undefined) {
      this.kickHere(parsed.kick).then((n) => {
        const answer = JSON.stringify({ kicked: n, to: parsed.from, request: parsed.request });
        this.redis[this.publish](CONTROL_CHANNEL, answer).catch(() => {}); // the asker times out
      });
    } else if (parsed.to === this.node && Number.isInteger(parsed.kicked)) {
      const asked = this.asked.get(parsed.request);
      if (asked === undefined) return;
      asked.total += parsed.kicked;
      if (--asked.left === 0) this.settle(parsed.request, asked);
    }
  }

  settle(request, asked) {
    clearTimeout(asked.timer);
    this.asked.delete(request);
    asked.resolve(asked.total);
  }
}
