// Pusher's subscription counts: for an app with subscriptionCount, the
// `pusher_internal:subscription_count` event to a channel's subscribers, and
// for an app whose webhooks ask for it, the `subscription_count` webhook;
// each at most once per channel every THROTTLE_MS, with the channel's count
// across the cluster (a Call.CHANNELS on every worker and node). Presence
// channels have none: their members are their count. The workers say which
// channels changed (Op.SUBSCRIPTIONS_CHANGED, only for such apps); this
// primary tells every node the count (Call.SUBSCRIPTION_COUNT: each primary
// sends its workers Op.SUBSCRIPTION_COUNT, each worker writes it to its own
// subscribers of the channel), so a subscriber on one node hears of the
// subscribers that came and went on another. Under Redis the webhook goes
// once for the cluster (the engine's claimOnce), and a node whose
// subscription to Redis was re-established counts its channels again (the
// counts told meanwhile never reached it).
import { Call, Op } from '../core/ipc.js';
import { appIdOf, clientName, isInternal, isOwn, isPresence, kindOf, pusherName } from './channels.js';
import { subscriptionCountFrame } from './frames.js';

const THROTTLE_MS = 5000;
const FIRST_MS = 100; // a burst of joins is told as one count

/** Whether an app's channels' counts are followed at all. */
export function countsSubscriptions(app) {
  return app.subscriptionCount || app.webhooks.some(({ events }) => events.includes('subscription_count'));
}

/** Whether a channel (its client name) has counts: any kind but presence. */
export function hasCount(name) {
  return !isPresence(kindOf(name));
}

/**
 * In the primary.
 * @param {object} options
 * @param {import('../primary/relay.js').PrimaryRelay} options.relay
 * @param {import('../engines/index.js').Engine} options.engine its claimOnce, where it has one, sends each webhook once for the cluster
 * @param {(name: string, args: object) => Promise<any>} options.calls a Call on the whole cluster (lib/primary/calls.js)
 * @param {{add: (channel: string, event: object) => void}} [options.webhooks] the apps' webhooks (./webhooks.js)
 * @param {import('./apps.js').Apps} options.apps this process's apps
 */
export function followSubscriptionCounts({ relay, engine, calls, webhooks, apps }) {
  const channels = new Map(); // internal name -> {timer, sentAt}
  const send = async (channel) => {
    const state = channels.get(channel);
    state.timer = undefined;
    state.sentAt = Date.now();
    const app = apps.byId.get(appIdOf(channel));
    if (app === undefined) return channels.delete(channel);
    const count = (await calls(Call.CHANNELS, { prefix: channel }))?.[channel] ?? 0;
    if (app.subscriptionCount) calls(Call.SUBSCRIPTION_COUNT, { channel, count }).catch(() => {}); // not waited for: the webhook need not
    // The webhook once for the cluster: every node whose workers saw a change counts, one of them sends.
    if (webhooks !== undefined && (engine.claimOnce === undefined || (await engine.claimOnce(`subscription_count:${channel}`, THROTTLE_MS)))) {
      webhooks.add(channel, { name: 'subscription_count', channel: clientName(channel), subscription_count: count });
    }
    if (count === 0) setTimeout(() => channels.get(channel)?.timer === undefined && channels.delete(channel), THROTTLE_MS).unref();
  };
  const changed = (channel) => {
    let state = channels.get(channel);
    if (state === undefined) channels.set(channel, (state = { timer: undefined, sentAt: 0 }));
    if (state.timer !== undefined) return;
    const wait = Math.max(FIRST_MS, state.sentAt + THROTTLE_MS - Date.now());
    state.timer = setTimeout(() => send(channel), wait);
    state.timer.unref();
  };
  relay.handle(Op.SUBSCRIPTIONS_CHANGED, (link, [, channel]) => changed(channel));
  engine.onResubscribed?.((channel) => {
    if (!isInternal(channel) || isOwn(channel) || !hasCount(pusherName(channel))) return;
    const app = apps.byId.get(appIdOf(channel));
    if (app !== undefined && countsSubscriptions(app)) changed(channel);
  });
  return { stop: () => channels.forEach(({ timer }) => clearTimeout(timer)) };
}

/**
 * In a worker: writes a count the primary sent to this worker's subscribers of the channel.
 * @param {import('../session/subscriptions.js').Subscriptions} subscriptions
 */
export function deliverSubscriptionCount(subscriptions, [, channel, count]) {
  const subscribers = subscriptions.local(channel);
  if (subscribers === undefined) return;
  const frame = subscriptionCountFrame(clientName(channel), count);
  for (const ws of subscribers) if (ws.readyState === ws.OPEN) ws.send(frame);
}
