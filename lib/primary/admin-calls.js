// The admin page's calls into the server API (lib/admin/): the primary serves
// the page but runs no method itself; each call goes to one live worker,
// taken in turn, which answers what the server API's core answers
// (lib/native/admin-calls.js). A worker that dies before answering, or takes longer
// than ANSWER_MS, is answered for as unavailable: the page never hangs.
//
// To a worker: [Op.ADMIN, token, method, params] -> the answer
import { ErrorCode } from '../core/errors.js';
import { Op } from '../core/ipc.js';

const ANSWER_MS = 10000;

/**
 * @param {import('./relay.js').PrimaryRelay} relay
 * @returns {(method: string, params: object) => Promise<{result: any} | {error: {code: string, message: string}} | null>}
 *   the server API's answer; null: the worker failed the call without an error code
 */
export function attachAdminCalls(relay) {
  let turn = 0;
  return async (method, params) => {
    const links = [...relay.links.values()];
    if (links.length === 0) return unavailable('no worker is running: retry shortly');
    const link = links[turn++ % links.length];
    // A worker that dies first fails the question too (its link closed).
    return link.askWithin(ANSWER_MS, Op.ADMIN, method, params).catch((err) => unavailable(err.message));
  };
}

function unavailable(message) {
  return { error: { code: ErrorCode.UNAVAILABLE, message } };
}
