// The worker's copy of the primary's apps (lib/primary/apps.js): the list at
// start, and each change after. Every protocol whose credentials are the
// apps' (Pusher's keys, Ably's) reads this one table.
import { Op } from '../core/ipc.js';
import { appsOf, servesPusher } from '../pusher/apps.js';

/**
 * @param {import('../pusher/apps.js').Apps} apps this process's table
 * @param {import('./relay.js').WorkerRelay} relay
 * @param {object} config the worker's configuration (its apps at start)
 * @returns {boolean} whether the gateway serves apps at all (none configured: the table stays empty)
 */
export function mirrorApps(apps, relay, config) {
  if (!servesPusher(config)) return false;
  apps.replace(config.apps ?? appsOf(config));
  relay.handle(Op.APPS, ([, upserts, removed, degraded]) => {
    if (removed === null) apps.replace(upserts);
    else apps.update(upserts, removed);
    apps.degraded = degraded;
  });
  return true;
}
