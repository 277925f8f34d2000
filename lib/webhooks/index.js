// Webhooks (--webhook-url): what happened in the cluster, told to the
// application. Decided in the primary, where the engine sees every channel's
// routes: the engine says when a channel becomes occupied or vacated across
// the whole cluster (engine.onOccupancy, lib/engines/index.js) and, with
// presence, when a user joins or leaves (engine.onMember), each once for the
// cluster; the member events pass the grace period (./members.js); the
// sender's thread (./delivery.js) signs (./sign.js), batches and retries them
// in order (./queue.js).
import { MemberGrace } from './members.js';
import { isProtocolChannel } from '../core/namespaces.js';

/** ms the primary, exiting, waits for the events still queued (the drain's vacated among them). */
const CLOSE_MS = 5000;
const KEY = ''; // the native webhook's targets in the delivery (a Pusher app's key is its id)

/**
 * @param {object} options
 * @param {object} options.config the resolved configuration (lib/config/options.js)
 * @param {import('../engines/index.js').Engine} options.engine
 * @param {import('./delivery.js').WebhookDelivery} options.delivery
 * @param {import('pino').Logger} options.log
 * @returns {{close: () => Promise<void>} | undefined} undefined without --webhook-url
 */
export function startWebhooks({ config, engine, delivery, log }) {
  const { webhookUrl, webhookSecret, memberGrace } = config;
  if (webhookUrl === undefined) return undefined;
  delivery.define(KEY, undefined, [{ url: webhookUrl, secret: webhookSecret, timeKey: 'timeMs' }]);
  // Another protocol's channels have webhooks of their own format, if any.
  engine.onOccupancy((channel, occupied) => isProtocolChannel(channel) || delivery.event(KEY, { name: occupied ? 'channel_occupied' : 'channel_vacated', channel }));
  const grace = new MemberGrace({
    departures: engine.departures,
    graceMs: memberGrace,
    announce: (name, channel, user) => delivery.event(KEY, { name, channel, user }),
    log
  });
  engine.onMember?.((channel, user, present) => isProtocolChannel(channel) || grace.member(channel, user, present));
  return {
    /** Sends what is queued, for at most CLOSE_MS; departures still in their grace are not announced. */
    async close() {
      grace.stop();
      await Promise.race([delivery.retire(KEY), new Promise((resolve) => setTimeout(resolve, CLOSE_MS).unref())]);
    }
  };
}
