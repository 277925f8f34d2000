// The worker's user index under --auth jwt or hook: user id -> its connections here,
// for POST /disconnect, the server API's subscribe and unsubscribe by user
// (./calls.js) and --max-conns-per-user. The cluster-wide part (the count
// per user) is the primary's (lib/primary/users.js); the IPC operations:
//
// To the primary:   ['uadd', user, token]   may this user open one more? (only with a cap)
//                   ['udel', user]          one of its connections closed (only with a cap)
// From the primary: ['uok', token, allowed] answer to uadd
import { CloseCode } from '../core/errors.js';
import { Call, Op } from '../core/ipc.js';
import { kTransport } from '../core/symbols.js';

export class WorkerUsers {
  /**
   * @param {object} options
   * @param {import('../worker/relay.js').WorkerRelay} options.relay
   * @param {number} options.cap --max-conns-per-user (0 = none)
   * @param {(count: number) => void} options.disconnected counts connections closed by the API
   */
  constructor({ relay, cap, disconnected }) {
    this.relay = relay;
    this.cap = cap;
    this.disconnected = disconnected;
    this.byUser = new Map(); // user -> connection (any transport), or Set of them when more than one
  }

  /** @returns {Promise<boolean>} whether the user stays within --max-conns-per-user, counted cluster-wide */
  admit(user) {
    if (this.cap === 0) return Promise.resolve(true);
    return this.relay.ask(Op.USER_ADD, user);
  }

  add(ws, user) {
    const held = this.byUser.get(user);
    if (held === undefined) this.byUser.set(user, ws);
    else if (held instanceof Set) held.add(ws);
    else this.byUser.set(user, new Set([held, ws]));
  }

  /** Forgets an admitted connection: closed, or admitted too late to be kept. */
  remove(ws, user) {
    const held = this.byUser.get(user);
    if (held === ws) this.byUser.delete(user);
    else if (held instanceof Set && held.delete(ws) && held.size === 1) this.byUser.set(user, held.values().next().value);
    if (this.cap > 0) this.relay.send([Op.USER_DEL, user]);
  }

  /** @returns {Promise<number>} connections closed with `code` (default 4004), on every worker and node */
  disconnect(user, code = CloseCode.DISCONNECTED, reason = 'disconnected by the server') {
    return this.relay.call(Call.KICK, { user, code, reason });
  }

  /** @returns {object[]} the user's connections on this worker, every transport */
  connectionsOf(user) {
    const held = this.byUser.get(user);
    return held === undefined ? [] : held instanceof Set ? [...held] : [held];
  }

  closeHere(user, code, reason) {
    const list = this.connectionsOf(user);
    this.byUser.delete(user); // a second kick before the closes complete finds none
    for (const conn of list) conn[kTransport].close(conn, code, reason);
    this.disconnected(list.length);
    return list.length;
  }
}
