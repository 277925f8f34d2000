// The primary's part of user bookkeeping under --auth jwt (the workers' part
// and the operations are in lib/worker/users.js):
// - --max-conns-per-user is exact across workers because one process, this
//   one, holds every user's count and answers each admission in turn; with
//   the Redis engine it also asks the other nodes' counts there
//   (lib/engines/redis/users.js);
// - POST /disconnect reaches every worker: a kick is sent to all of them and
//   answered with the sum once each has said how many it closed; with the
//   Redis engine, every other gateway node too (lib/engines/redis/kicks.js).
import { Op } from '../ipc.js';

/**
 * @param {import('./relay.js').PrimaryRelay} relay
 * @param {number} cap --max-conns-per-user (0 = none)
 * @param {import('../engines/index.js').Engine} engine its cluster-wide part, where it has one, reaches the other gateway nodes
 */
export function attachUsers(relay, cap, { kicks: remote, users: remoteUsers }) {
  const counts = new Map(); // user -> connections admitted on this node's workers
  const kicks = new Map(); // request -> {origin link, token, waiting: Set of links, total}
  let nextRequest = 1;

  const release = (user, n) => {
    const left = counts.get(user) - n;
    if (left > 0) counts.set(user, left);
    else counts.delete(user);
    remoteUsers?.mirror(user, Math.max(left, 0));
  };
  const remove = (link, user) => {
    const here = link.users?.get(user);
    if (here === undefined) return;
    if (here > 1) link.users.set(user, here - 1);
    else link.users.delete(user);
    release(user, 1);
  };
  remoteUsers?.attach(counts);
  const settle = (request, kick) => {
    if (kick.waiting.size > 0) return;
    kicks.delete(request);
    kick.origin.batch.push([Op.KICK_DONE, kick.token, kick.total]); // dropped by the batch if the origin is gone
  };

  relay.handle(Op.USER_ADD, (link, [, user, token]) => {
    const held = counts.get(user) ?? 0;
    if (held >= cap) return link.batch.push([Op.USER_OK, token, false]);
    counts.set(user, held + 1); // held while the other nodes are asked
    link.users ??= new Map(); // user -> count on this worker, released if it dies
    link.users.set(user, (link.users.get(user) ?? 0) + 1);
    if (remoteUsers === undefined) return link.batch.push([Op.USER_OK, token, true]);
    remoteUsers.admit(user, held + 1).then((allowed) => {
      if (!allowed && !link.gone) remove(link, user);
      link.batch.push([Op.USER_OK, token, allowed]);
    });
  });
  relay.handle(Op.USER_DEL, (link, [, user]) => remove(link, user));
  // `origin` is the asking worker's link, or another node's stand-in: {batch: {push([Op.KICK_DONE, token, n])}}.
  const startKick = (origin, user, token) => {
    const request = nextRequest++;
    const kick = { origin, token, waiting: new Set(relay.links.values()), total: 0 };
    kicks.set(request, kick);
    for (const target of kick.waiting) target.batch.push([Op.KICK, user, request]);
    settle(request, kick); // no worker here: nothing to wait for
    return request;
  };
  relay.handle(Op.KICK, (link, [, user, token]) => {
    const request = startKick(link, user, token);
    const kick = kicks.get(request);
    if (remote === undefined || kick === undefined) return;
    kick.waiting.add(remote);
    remote
      .kick(user)
      .then((n) => (kick.total += n), ignore) // Redis unreachable: this node's count only
      .finally(() => {
        kick.waiting.delete(remote);
        settle(request, kick);
      });
  });
  remote?.serve((user) => new Promise((resolve) => startKick({ batch: { push: (op) => resolve(op[2]) } }, user, 0)));
  relay.handle(Op.KICKED, (link, [, request, n]) => {
    const kick = kicks.get(request);
    if (kick === undefined || !kick.waiting.delete(link)) return;
    kick.total += n;
    settle(request, kick);
  });
  relay.onDetach((link) => {
    link.gone = true;
    for (const [user, n] of link.users ?? []) release(user, n);
    for (const [request, kick] of kicks) if (kick.waiting.delete(link)) settle(request, kick);
  });
}

function ignore() {}
