// The admin page's calls into the server API (lib/admin/): the primary serves
// the page but runs no method itself; each call goes to one live worker,
// taken in turn, which answers what the server API's core answers
// (lib/native/admin-calls.js). A worker that dies before answering, or takes longer
// than ANSWER_MS, is answered for as unavailable: the page never hangs.
//
// To a worker: ['admin', request, method, params]  From it: ['admind', request, answer]
import { ErrorCode } from '../errors.js';
import { Op } from '../ipc.js';

const ANSWER_MS = 10000;

/**
 * @param {import('./relay.js').PrimaryRelay} relay
 * @returns {(method: string, params: object) => Promise<{result: any} | {error: {code: string, message: string}} | null>}
 *   the server API's answer; null: the worker failed the call without an error code
 */
export function attachAdminCalls(relay) {
  const pending = new Map(); // request -> {link, resolve, timer}
  let nextRequest = 1;
  let turn = 0;

  const settle = (request, answer) => {
    const call = pending.get(request);
    if (call === undefined) return;
    pending.delete(request);
    clearTimeout(call.timer);
    call.resolve(answer);
  };
  relay.handle(Op.ADMIN_DONE, (link, [, request, answer]) => {
    if (pending.get(request)?.link === link) settle(request, answer);
  });
  relay.onDetach((link) => {
    for (const [request, call] of pending) if (call.link === link) settle(request, unavailable('the worker asked went away before answering: retry'));
  });

  return (method, params) => {
    const links = [...relay.links.values()];
    if (links.length === 0) return Promise.resolve(unavailable('no worker is running: retry shortly'));
    const link = links[turn++ % links.length];
    const request = nextRequest++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => settle(request, unavailable(`no answer from a worker within ${ANSWER_MS / 1000} s`)), ANSWER_MS);
      pending.set(request, { link, resolve, timer });
      link.send([Op.ADMIN, request, method, params]);
    });
  };
}

function unavailable(message) {
  return { error: { code: ErrorCode.UNAVAILABLE, message } };
}
