// Pusher's webhooks, in the primary: for each app with a webhookUrl, the
// events Pusher sends, in Pusher's format (POST {"time_ms", "events"} with
// X-Pusher-Key and X-Pusher-Signature: hex HMAC-SHA256 of the body with the
// app's secret), through the native webhooks' queue (batched, retried in
// order) and member grace. Occupancy and members come from the engine, once
// for the cluster; client_event and cache_miss from the worker that saw
// them (Op.PROTOCOL_WEBHOOK), once as well.
import { Op } from '../ipc.js';
import { WebhookQueue } from '../webhooks/queue.js';
import { MemberGrace } from '../webhooks/members.js';
import { webhookSender } from '../webhooks/send.js';
import { appsOf } from './apps.js';
import { clientName, isInternal, isOwn } from './channels.js';
import { sign } from './signatures.js';

const CLOSE_MS = 5000; // what the primary, exiting, waits for the events still queued

/**
 * @param {object} options
 * @param {object} options.config resolved
 * @param {import('../engines/index.js').Engine} options.engine
 * @param {import('../primary/relay.js').PrimaryRelay} options.relay
 * @param {(result: string, events: number) => void} options.count gateway_webhook_events_total
 * @param {import('pino').Logger} options.log
 * @returns {{close: () => Promise<void>}|undefined} undefined when no app has a webhookUrl
 */
export function startPusherWebhooks({ config, engine, relay, count, log }) {
  const targets = new Map(); // appId -> {queue, grace}
  for (const app of appsOf(config)) {
    if (app.webhookUrl === undefined) continue;
    const send = webhookSender(app.webhookUrl, 'x-pusher-signature', { 'x-pusher-key': app.key });
    const queue = new WebhookQueue({ post: (body) => send(body, sign(app.secret, body)), count, log, format: pusherBody });
    const grace = new MemberGrace({
      departures: engine.departures,
      graceMs: config.memberGrace,
      announce: (name, channel, user) => queue.add({ name, channel: clientName(channel), user_id: user }),
      log
    });
    targets.set(app.appId, { queue, grace });
  }
  if (targets.size === 0) return undefined;
  /** The app's webhooks a channel's events go to, if any (the gateway's own channels have none). */
  const targetOf = (channel) => {
    if (!isInternal(channel) || isOwn(channel)) return undefined;
    return targets.get(channel.slice(1, channel.indexOf('.')));
  };
  engine.onOccupancy((channel, occupied) => targetOf(channel)?.queue.add({ name: occupied ? 'channel_occupied' : 'channel_vacated', channel: clientName(channel) }));
  engine.onMember((channel, user, present) => targetOf(channel)?.grace.member(channel, user, present));
  relay.handle(Op.PROTOCOL_WEBHOOK, (link, [, channel, event]) => targetOf(channel)?.queue.add(event));
  return {
    async close() {
      for (const { grace } of targets.values()) grace.stop();
      const empty = Promise.all([...targets.values()].map(({ queue }) => queue.whenEmpty()));
      await Promise.race([empty, new Promise((resolve) => setTimeout(resolve, CLOSE_MS).unref())]);
      for (const { queue } of targets.values()) queue.stop();
    }
  };
}

function pusherBody(timeMs, events) {
  return JSON.stringify({ time_ms: timeMs, events });
}
