// The primary's part of user bookkeeping under --auth jwt or hook (the workers' part
// and the operations are in lib/session/users.js): --max-conns-per-user is
// exact across workers and nodes, counted as ./counts.js counts.
// What reaches a user's connections everywhere (POST /disconnect, the server
// API's subscribe and unsubscribe) is a cluster call: ./calls.js.
import { Op } from '../core/ipc.js';
import { attachCounts } from './counts.js';

/**
 * @param {import('./relay.js').PrimaryRelay} relay
 * @param {number} cap --max-conns-per-user (0 = none)
 * @param {import('../engines/index.js').Engine} engine its cluster-wide part, where it has one, reaches the other gateway nodes
 */
export function attachUsers(relay, cap, { users: remote }) {
  attachCounts(relay, { ops: { add: Op.USER_ADD, del: Op.USER_DEL }, capOf: () => cap, remote });
}
