// The primary's part of user bookkeeping under --auth jwt or hook (the workers' part
// and the operations are in lib/worker/users.js):
// - --max-conns-per-user is exact across workers because one process, this
//   one, holds every user's count and answers each admission in turn; with
//   the Redis engine it also asks the other nodes' counts there
//   (lib/engines/redis/users.js).
// What reaches a user's connections everywhere (POST /disconnect, the server
// API's subscribe and unsubscribe) is a cluster call: ./calls.js.
import { Op } from '../ipc.js';

/**
 * @param {import('./relay.js').PrimaryRelay} relay
 * @param {number} cap --max-conns-per-user (0 = none)
 * @param {import('../engines/index.js').Engine} engine its cluster-wide part, where it has one, reaches the other gateway nodes
 */
export function attachUsers(relay, cap, { users: remoteUsers }) {
  const counts = new Map(); // user -> connections admitted on this node's workers

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

  relay.handle(Op.USER_ADD, (link, [, user, token]) => {
    const held = counts.get(user) ?? 0;
    if (held >= cap) return link.send([Op.USER_OK, token, false]);
    counts.set(user, held + 1); // held while the other nodes are asked
    link.users ??= new Map(); // user -> count on this worker, released if it dies
    link.users.set(user, (link.users.get(user) ?? 0) + 1);
    if (remoteUsers === undefined) return link.send([Op.USER_OK, token, true]);
    remoteUsers.admit(user, held + 1).then((allowed) => {
      if (!allowed && !link.gone) remove(link, user);
      link.send([Op.USER_OK, token, allowed]);
    });
  });
  relay.handle(Op.USER_DEL, (link, [, user]) => remove(link, user));
  relay.onDetach((link) => {
    link.gone = true;
    for (const [user, n] of link.users ?? []) release(user, n);
  });
}
