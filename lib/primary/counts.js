// Connections counted per key where admission needs the whole cluster's
// count: per user (--max-conns-per-user: ./users.js) and per Pusher app (its
// maxConnections: ./apps.js). Exact across workers because one process, this
// one, holds every key's count and answers each admission in turn; with the
// Redis engine it also asks the other nodes' counts there
// (lib/engines/redis/users.js). A worker that dies gives its counts back.
//
// From a worker:  [add, token, key] -> allowed: may the key have one more?
//                 [add, 0, key, n]   n more, counted whatever the cap (the worker has admitted them: no cap when it did)
//                 [del, key, n?]     one (or n) of its connections closed

/**
 * @param {import('./relay.js').PrimaryRelay} relay
 * @param {object} options
 * @param {{add: string, del: string}} options.ops the operations (../ipc.js Op)
 * @param {(key: string) => number} options.capOf the key's cap now (Infinity: none)
 * @param {import('../engines/index.js').UserCounts} [options.remote] the other nodes' counts, where the engine has them
 * @returns {Map<string, number>} the counts on this node's workers, by key (read, never written, by the caller)
 */
export function attachCounts(relay, { ops, capOf, remote }) {
  const counts = new Map(); // key -> connections admitted on this node's workers
  const held = new WeakMap(); // link -> Map key -> count on that worker, released if it dies

  const release = (key, n) => {
    const left = counts.get(key) - n;
    if (left > 0) counts.set(key, left);
    else counts.delete(key);
    remote?.mirror(key, Math.max(left, 0));
  };
  const remove = (link, key, n = 1) => {
    const here = held.get(link)?.get(key);
    if (here === undefined) return;
    const gone = Math.min(n, here);
    if (here > gone) held.get(link).set(key, here - gone);
    else held.get(link).delete(key);
    release(key, gone);
  };
  const hold = (link, key, n) => {
    const count = (counts.get(key) ?? 0) + n;
    counts.set(key, count);
    if (!held.has(link)) held.set(link, new Map());
    held.get(link).set(key, (held.get(link).get(key) ?? 0) + n);
    return count;
  };
  remote?.attach(counts);

  relay.handle(ops.add, (link, [, token, key, n]) => {
    if (token === 0) {
      const count = hold(link, key, n ?? 1);
      return remote?.mirror(key, count);
    }
    const answer = (allowed) => link.answer(token, allowed);
    const cap = capOf(key);
    const count = counts.get(key) ?? 0;
    if (count >= cap) return answer(false);
    hold(link, key, 1); // held while the other nodes are asked
    if (remote === undefined) return answer(true);
    if (cap === Infinity) {
      remote.mirror(key, count + 1);
      return answer(true);
    }
    remote.admit(key, count + 1, cap).then((allowed) => {
      if (!allowed && !link.gone) remove(link, key);
      answer(allowed);
    });
  });
  relay.handle(ops.del, (link, [, key, n]) => remove(link, key, n ?? 1));
  relay.onDetach((link) => {
    link.gone = true;
    for (const [key, n] of held.get(link) ?? []) release(key, n);
  });
  return counts;
}
