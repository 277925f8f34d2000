// Pusher's webhooks, in the primary: for each app, each of its webhook
// targets gets the events it asked for, in Pusher's format (POST
// {"time_ms", "events"} with X-Pusher-Key and X-Pusher-Signature: hex
// HMAC-SHA256 of the body with the app's secret), through the webhooks'
// delivery (its own thread: batched, retried in order) and member grace. Occupancy
// and members come from the engine, once for the cluster; client_event and
// cache_miss from the worker that saw them (Op.PROTOCOL_WEBHOOK), once as
// well. Apps come and go (lib/pusher/apps.js): an app's targets are made on
// its first event and made again when it changes; the old ones send what
// they hold, then stop.
import { Op } from '../core/ipc.js';
import { MemberGrace } from '../webhooks/members.js';
import { appIdOf, clientName, isInternal, isOwn } from './channels.js';

const CLOSE_MS = 5000; // what the primary, exiting, waits for the events still queued

/**
 * @param {object} options
 * @param {object} options.config resolved
 * @param {import('../engines/index.js').Engine} options.engine
 * @param {import('../primary/relay.js').PrimaryRelay} options.relay
 * @param {import('../webhooks/delivery.js').WebhookDelivery} options.delivery
 * @param {import('./apps.js').Apps} options.apps this process's apps
 * @param {import('pino').Logger} options.log
 * @returns {{add: Function, close: () => Promise<void>}}
 */
export function startPusherWebhooks({ config, engine, relay, delivery, apps, log }) {
  const hooks = new Map(); // appId -> AppWebhooks, or null: the app has no webhook
  const retired = new Set(); // a changed app's old targets, sending what they hold
  const hooksOf = (channel) => {
    if (!isInternal(channel) || isOwn(channel)) return undefined;
    const id = appIdOf(channel);
    let entry = hooks.get(id);
    if (entry === undefined) {
      const app = apps.byId.get(id);
      if (app === undefined) return undefined;
      entry = app.webhooks.length === 0 ? null : new AppWebhooks(app, { engine, graceMs: config.memberGrace, delivery, log });
      hooks.set(id, entry);
    }
    return entry ?? undefined;
  };
  const warm = (app) => app?.webhooks.length > 0 && delivery.warm();
  apps.list.forEach(warm);
  const onChange = (app, previous) => {
    warm(app);
    const id = (app ?? previous).appId;
    const entry = hooks.get(id);
    hooks.delete(id);
    if (!entry) return;
    retired.add(entry);
    entry.retire().then(() => retired.delete(entry));
  };
  apps.on('change', onChange);
  engine.onOccupancy((channel, occupied) => hooksOf(channel)?.add({ name: occupied ? 'channel_occupied' : 'channel_vacated', channel: clientName(channel) }));
  engine.onMember((channel, user, present) => hooksOf(channel)?.member(channel, user, present));
  relay.handle(Op.PROTOCOL_WEBHOOK, (link, [, channel, event]) => hooksOf(channel)?.add(event));
  return {
    /** An event of `channel`'s app, for the targets that asked for it (./subscription-count.js). */
    add: (channel, event) => hooksOf(channel)?.add(event),
    async close() {
      apps.off('change', onChange);
      const all = [...hooks.values(), ...retired].filter(Boolean);
      await Promise.race([Promise.all(all.map((entry) => entry.retire())), new Promise((resolve) => setTimeout(resolve, CLOSE_MS).unref())]);
    }
  };
}

/** One app's webhook targets (in the delivery's thread), and its member grace (member_added and member_removed once, for all of them). */
class AppWebhooks {
  constructor(app, { engine, graceMs, delivery, log }) {
    this.appId = app.appId;
    this.delivery = delivery;
    this.wanted = new Set(app.webhooks.flatMap(({ events }) => events));
    delivery.define(
      app.appId,
      app.appId,
      app.webhooks.map(({ url, events }) => ({
        url,
        events,
        secret: app.secret,
        signatureHeader: 'x-pusher-signature',
        signaturePrefix: '',
        headers: { 'x-pusher-key': app.key },
        timeKey: 'time_ms'
      }))
    );
    this.grace = new MemberGrace({
      departures: engine.departures,
      graceMs,
      announce: (name, channel, user) => this.add({ name, channel: clientName(channel), user_id: user }),
      log
    });
  }

  add(event) {
    if (this.wanted.has(event.name)) this.delivery.event(this.appId, event);
  }

  member(channel, user, present) {
    if (this.wanted.has('member_added') || this.wanted.has('member_removed')) this.grace.member(channel, user, present);
  }

  /** Takes no more events; resolves once what is queued is sent (or given up). */
  async retire() {
    this.grace.stop();
    await this.delivery.retire(this.appId);
  }
}
