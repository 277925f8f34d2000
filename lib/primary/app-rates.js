// Each Pusher app's backend events per second (maxBackendEventsPerSecond),
// counted exactly: every worker asks here before an HTTP API call publishes
// (lib/pusher/app-limits.js), and this process counts the app's events in
// the current second; under the Redis engine the count is Redis's, shared by
// every node (lib/engines/redis/rates.js), and this node's own while Redis
// cannot answer.
//
// From a worker:  [Op.APP_EVENTS, token, appId, events] -> allowed
import { Op } from '../core/ipc.js';

/**
 * @param {import('./relay.js').PrimaryRelay} relay
 * @param {{take: (appId: string, events: number, limit: number) => Promise<boolean>}} [remote] the engine's shared count
 */
export function attachAppRates(relay, remote, apps) {
  const windows = new Map(); // appId -> {second, used}
  const takeHere = (appId, events, limit) => {
    const second = Math.floor(Date.now() / 1000);
    let window = windows.get(appId);
    if (window === undefined || window.second !== second) windows.set(appId, (window = { second, used: 0 }));
    if (window.used + events > limit) return false;
    window.used += events;
    return true;
  };
  relay.handle(Op.APP_EVENTS, (link, [, token, appId, events]) => {
    const answer = (allowed) => link.answer(token, allowed);
    const limit = apps.byId.get(appId)?.maxBackendEventsPerSecond ?? null;
    if (limit === null) return answer(true);
    if (remote === undefined) return answer(takeHere(appId, events, limit));
    remote.take(appId, events, limit).then(answer, () => answer(takeHere(appId, events, limit)));
  });
}
