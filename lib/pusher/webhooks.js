// Pusher's webhooks, in the primary: for each app, each of its webhook
// targets gets the events it asked for, in Pusher's format (POST
// {"time_ms", "events"} with X-Pusher-Key and X-Pusher-Signature: hex
// HMAC-SHA256 of the body with the app's secret), through the native
// webhooks' queue (batched, retried in order) and member grace. Occupancy
// and members come from the engine, once for the cluster; client_event and
// cache_miss from the worker that saw them (Op.PROTOCOL_WEBHOOK), once as
// well. Apps come and go (lib/pusher/apps.js): an app's targets are made on
// its first event and made again when it changes; the old ones send what
// they hold, then stop.
import { Op } from '../core/ipc.js';
import { WebhookQueue } from '../webhooks/queue.js';
import { MemberGrace } from '../webhooks/members.js';
import { webhookSender } from '../webhooks/send.js';
import { appTable } from './apps.js';
import { appIdOf, clientName, isInternal, isOwn } from './channels.js';
import { sign } from './signatures.js';

const CLOSE_MS = 5000; // what the primary, exiting, waits for the events still queued

/**
 * @param {object} options
 * @param {object} options.config resolved
 * @param {import('../engines/index.js').Engine} options.engine
 * @param {import('../primary/relay.js').PrimaryRelay} options.relay
 * @param {(result: string, events: number, app: string) => void} options.count gateway_webhook_events_total
 * @param {import('pino').Logger} options.log
 * @returns {{add: Function, close: () => Promise<void>}}
 */
export function startPusherWebhooks({ config, engine, relay, count, log }) {
  const hooks = new Map(); // appId -> AppWebhooks, or null: the app has no webhook
  const retired = new Set(); // a changed app's old targets, sending what they hold
  const hooksOf = (channel) => {
    if (!isInternal(channel) || isOwn(channel)) return undefined;
    const id = appIdOf(channel);
    let entry = hooks.get(id);
    if (entry === undefined) {
      const app = appTable.byId.get(id);
      if (app === undefined) return undefined;
      entry = app.webhooks.length === 0 ? null : new AppWebhooks(app, { engine, graceMs: config.memberGrace, count, log });
      hooks.set(id, entry);
    }
    return entry ?? undefined;
  };
  const onChange = (app, previous) => {
    const id = (app ?? previous).appId;
    const entry = hooks.get(id);
    hooks.delete(id);
    if (!entry) return;
    retired.add(entry);
    entry.retire().then(() => retired.delete(entry));
  };
  appTable.on('change', onChange);
  engine.onOccupancy((channel, occupied) => hooksOf(channel)?.add({ name: occupied ? 'channel_occupied' : 'channel_vacated', channel: clientName(channel) }));
  engine.onMember((channel, user, present) => hooksOf(channel)?.member(channel, user, present));
  relay.handle(Op.PROTOCOL_WEBHOOK, (link, [, channel, event]) => hooksOf(channel)?.add(event));
  return {
    /** An event of `channel`'s app, for the targets that asked for it (./subscription-count.js). */
    add: (channel, event) => hooksOf(channel)?.add(event),
    async close() {
      appTable.off('change', onChange);
      const all = [...hooks.values(), ...retired].filter(Boolean);
      await Promise.race([Promise.all(all.map((entry) => entry.retire())), new Promise((resolve) => setTimeout(resolve, CLOSE_MS).unref())]);
      for (const entry of all) entry.stop();
    }
  };
}

/** One app's webhook targets, and its member grace (member_added and member_removed once, for all of them). */
class AppWebhooks {
  constructor(app, { engine, graceMs, count, log }) {
    this.targets = app.webhooks.map(({ url, events }) => {
      const send = webhookSender(url, 'x-pusher-signature', { 'x-pusher-key': app.key });
      const queue = new WebhookQueue({
        post: (body) => send(body, sign(app.secret, body)),
        count: (result, n) => count(result, n, app.appId),
        log,
        format: pusherBody
      });
      return { events: new Set(events), queue };
    });
    this.grace = new MemberGrace({
      departures: engine.departures,
      graceMs,
      announce: (name, channel, user) => this.add({ name, channel: clientName(channel), user_id: user }),
      log
    });
  }

  wants(name) {
    return this.targets.some((target) => target.events.has(name));
  }

  add(event) {
    for (const target of this.targets) if (target.events.has(event.name)) target.queue.add(event);
  }

  member(channel, user, present) {
    if (this.wants('member_added') || this.wants('member_removed')) this.grace.member(channel, user, present);
  }

  /** Takes no more events; resolves once what is queued is sent (or given up). */
  async retire() {
    this.grace.stop();
    await Promise.all(this.targets.map(({ queue }) => queue.whenEmpty()));
    this.stop();
  }

  stop() {
    for (const { queue } of this.targets) queue.stop();
  }
}

function pusherBody(timeMs, events) {
  return JSON.stringify({ time_ms: timeMs, events });
}
