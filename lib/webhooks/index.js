// Webhooks (--webhook-url): what happened in the cluster, told to the
// application. Runs in the primary, where the engine sees every channel's
// routes: the engine says when a channel becomes occupied or vacated across
// the whole cluster (engine.onOccupancy, lib/engines/index.js) and, with
// presence, when a user joins or leaves (engine.onMember), each once for the
// cluster; the member events pass the grace period (./members.js); all of
// them go out signed (./sign.js), batched and retried in order (./queue.js).
import { WebhookQueue } from './queue.js';
import { MemberGrace } from './members.js';
import { signatureOf } from './sign.js';
import { webhookSender } from './send.js';
import { isProtocolChannel } from '../core/namespaces.js';

/** ms the primary, exiting, waits for the events still queued (the drain's vacated among them). */
const CLOSE_MS = 5000;

/**
 * @param {object} options
 * @param {object} options.config the resolved configuration (lib/config/options.js)
 * @param {import('../engines/index.js').Engine} options.engine
 * @param {(result: string, events: number) => void} options.count gateway_webhook_events_total
 * @param {import('pino').Logger} options.log
 * @returns {{close: () => Promise<void>} | undefined} undefined without --webhook-url
 */
export function startWebhooks({ config, engine, count, log }) {
  const { webhookUrl, webhookSecret, memberGrace } = config;
  if (webhookUrl === undefined) return undefined;
  const send = webhookSender(webhookUrl);
  const queue = new WebhookQueue({ post: (body) => send(body, signatureOf(webhookSecret, body)), count, log });
  // Another protocol's channels have webhooks of their own format, if any.
  engine.onOccupancy((channel, occupied) => isProtocolChannel(channel) || queue.add({ name: occupied ? 'channel_occupied' : 'channel_vacated', channel }));
  const grace = new MemberGrace({
    departures: engine.departures,
    graceMs: memberGrace,
    announce: (name, channel, user) => queue.add({ name, channel, user }),
    log
  });
  engine.onMember?.((channel, user, present) => isProtocolChannel(channel) || grace.member(channel, user, present));
  return {
    /** Sends what is queued, for at most CLOSE_MS; departures still in their grace are not announced. */
    async close() {
      grace.stop();
      await Promise.race([queue.whenEmpty(), new Promise((resolve) => setTimeout(resolve, CLOSE_MS).unref())]);
      queue.stop();
    }
  };
}
