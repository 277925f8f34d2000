// Webhooks (--webhook-url): what happened in the cluster, told to the
// application. Runs in the primary, where the engine sees every channel's
// routes: the engine says when a channel becomes occupied or vacated across
// the whole cluster (engine.onOccupancy, lib/engines/index.js) and, with
// presence, when a user joins or leaves (engine.onMember), each once for the
// cluster; the member events pass the grace period (./members.js); all of
// them go out signed (./sign.js), batched and retried in order (./queue.js).
import { WebhookQueue } from './queue.js';
import { MemberGrace } from './members.js';
import { LocalDepartures } from './departures.js';
import { signatureOf } from './sign.js';
import { webhookSender } from './send.js';

/**
 * @param {object} options
 * @param {object} options.config the resolved configuration (lib/config.js)
 * @param {import('../engines/index.js').Engine} options.engine
 * @param {(result: string, events: number) => void} options.count gateway_webhook_events_total
 * @param {import('pino').Logger} options.log
 * @returns {{stop: () => void} | undefined} undefined without --webhook-url
 */
export function startWebhooks({ config, engine, count, log }) {
  const { webhookUrl, webhookSecret, memberGrace } = config;
  if (webhookUrl === undefined) return undefined;
  const send = webhookSender(webhookUrl);
  const queue = new WebhookQueue({ post: (body) => send(body, signatureOf(webhookSecret, body)), count, log });
  engine.onOccupancy((channel, occupied) => queue.add({ name: occupied ? 'channel_occupied' : 'channel_vacated', channel }));
  const grace = new MemberGrace({
    departures: engine.departures ?? new LocalDepartures(),
    graceMs: memberGrace,
    announce: (name, channel, user) => queue.add({ name, channel, user }),
    log
  });
  engine.onMember?.((channel, user, present) => grace.member(channel, user, present)); // presence (issue 22)
  return {
    stop() {
      grace.stop();
      queue.stop();
    }
  };
}
