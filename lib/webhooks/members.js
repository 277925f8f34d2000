// member_added / member_removed with a grace period (--member-grace): a user
// whose last client left and who comes back within it (a page reload, a
// flaky network) produces neither event. The engine's presence says when a
// user's first client joins a channel and its last one leaves, once for the
// whole cluster (engine.onMember); the departure is marked where every node
// sees it (a Departures store: lib/engines/departures-memory.js on one
// machine, lib/engines/redis/departures.js under Redis), so the user may come
// back on any node:
// - leaving marks the departure with a token of its own;
// - coming back removes the marker: if there was one, nothing is announced;
// - at the grace's end the node that marked it announces member_removed only
//   if its own marker is still there (removing it), so one node announces.
// A store that fails errs towards announcing: a duplicate event rather than a
// lost one.
import { randomBytes } from 'node:crypto';

export class MemberGrace {
  /**
   * @param {object} options
   * @param {import('../engines/index.js').Departures} options.departures
   * @param {number} options.graceMs
   * @param {(name: 'member_added' | 'member_removed', channel: string, user: string) => void} options.announce
   * @param {import('pino').Logger} options.log
   */
  constructor({ departures, graceMs, announce, log }) {
    this.departures = departures;
    this.graceMs = graceMs;
    this.announce = announce;
    this.log = log;
    this.prefix = randomBytes(6).toString('hex'); // tokens unique across the nodes
    this.departed = 0;
    this.timers = new Set();
  }

  /** The engine's presence: `user`'s first client joined `channel` (present) or its last one left. */
  member(channel, user, present) {
    if (present) this.arrived(channel, user);
    else this.left(channel, user);
  }

  async arrived(channel, user) {
    const undone = await this.departures.arrive(channel, user).catch((err) => this.failed(err, false));
    if (!undone) this.announce('member_added', channel, user);
  }

  async left(channel, user) {
    const token = `${this.prefix}:${++this.departed}`;
    await this.departures.depart(channel, user, token, this.graceMs).catch((err) => this.failed(err));
    const timer = setTimeout(async () => {
      this.timers.delete(timer);
      const stands = await this.departures.settle(channel, user, token).catch((err) => this.failed(err, true));
      if (stands) this.announce('member_removed', channel, user);
    }, this.graceMs);
    this.timers.add(timer);
  }

  stop() {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  failed(err, answer) {
    this.log.warn({ err: err.message }, 'webhooks: departure markers unreachable; member events may repeat');
    return answer;
  }
}
