// The admin page's way into the server API: the primary, which serves the
// page, hands each of its reads and actions to one worker, and the worker
// answers exactly what the server API's core answers, so the page holds no
// rule of its own.
//
// A call that names a Pusher `app` (and `apps`, the list of them) runs on
// that protocol's core instead (lib/pusher/admin.js).
//
// From the primary: [Op.ADMIN, token, method, params] -> {result} |
//                   {error: {code, message}} | null: the call failed without
//                   a code, a defect (the server API's own route drops such a
//                   request the same way)
import { Op } from '../core/ipc.js';
import { ErrorCode, GatewayError } from '../core/errors.js';
import { runMethod } from '../core/server.js';
import { handling } from '../transport/last-input.js';
import { quoted } from '../protocol/quoted.js';

/**
 * @param {import('../worker/relay.js').WorkerRelay} relay
 * @param {import('../core/server.js').ServerContext} context the server API's
 * @param {(method: string, params: object) => Promise<object>} [apps] another protocol's calls on its apps
 *   (lib/pusher/admin.js): a call naming an `app`, and `apps`
 */
export function attachAdmin(relay, context, apps) {
  relay.answers(Op.ADMIN, (method, params) => {
    handling('admin', quoted(method));
    return answer(method, params, context, apps);
  });
}

/** What the server API's core resolves, or the coded error it refuses with. */
async function answer(method, params, context, apps) {
  try {
    if (method === 'apps' || params?.app !== undefined) {
      if (apps === undefined) throw new GatewayError(ErrorCode.NOT_FOUND, 'this gateway serves no Pusher app');
      return { result: await apps(method, params) };
    }
    return { result: await runMethod(method, params, context) };
  } catch (err) {
    return err instanceof GatewayError ? { error: { code: err.code, message: err.message } } : null;
  }
}
