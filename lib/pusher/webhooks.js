// The apps' webhooks, in the primary: for each app, each of its webhook
// targets gets the events it asked for, in Pusher's format (POST
// {"time_ms", "events"} with X-Pusher-Key and X-Pusher-Signature: hex
// HMAC-SHA256 of the body with the app's secret), through the webhooks'
// delivery (its own thread: batched, retried in order) and member grace.
// Occupancy and members come from the engine, once for the cluster, of every
// protocol with apps: each protocol's view (the wiring's `views`) says which
// of its channels are an app's and how they are named there (another
// protocol's events carry its name: `"protocol": "ably"`); client_event and
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
 * @param {WebhookView[]} options.webhookViews the other protocols' views of their channels
 * @param {import('pino').Logger} options.log
 * @returns {{add: Function, close: () => Promise<void>}}
 */
export function startPusherWebhooks({ config, engine, relay, delivery, apps, webhookViews, log }) {
  const views = [PUSHER_VIEW, ...webhookViews];
  const seenBy = (look) => {
    for (const view of views) {
      const seen = look(view);
      if (seen !== undefined) return seen;
    }
    return undefined;
  };
  const viewOf = (channel) => seenBy((view) => view.channel(channel));
  const memberOf = (channel, user) => seenBy((view) => view.member(channel, user));
  const hooks = new Map(); // appId -> AppWebhooks, or null: the app has no webhook
  const retired = new Set(); // a changed app's old targets, sending what they hold
  const hooksOfApp = (id) => {
    let entry = hooks.get(id);
    if (entry === undefined) {
      const app = apps.byId.get(id);
      if (app === undefined) return undefined;
      entry = app.webhooks.length === 0 ? null : new AppWebhooks(app, { engine, graceMs: config.memberGrace, delivery, memberOf, log });
      hooks.set(id, entry);
    }
    return entry ?? undefined;
  };
  const hooksOf = (channel) => {
    const seen = viewOf(channel);
    return seen === undefined ? undefined : hooksOfApp(seen.appId);
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
  engine.onOccupancy((channel, occupied) => {
    const seen = viewOf(channel);
    if (seen !== undefined) hooksOfApp(seen.appId)?.add({ name: occupied ? 'channel_occupied' : 'channel_vacated', channel: seen.name, ...seen.mark });
  });
  engine.onMember((channel, user, present) => {
    const seen = memberOf(channel, user);
    if (seen !== undefined) hooksOfApp(seen.appId)?.member(channel, user, present);
  });
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

/**
 * A protocol's view of its channels for its apps' webhooks.
 * @typedef {object} WebhookView
 * @property {(channel: string) => {appId: string, name: string, mark?: object}|undefined} channel
 *   a channel of an app whose occupancy its webhooks are told: its app, its name there
 * @property {(channel: string, user: string) => {appId: string, name: string, userId: string, mark?: object}|undefined} member
 *   a member (the engine's user) of an app's channel: the channel's name and the user as the webhook names them
 */

/** Pusher's own: its clients' channels (not those the gateway makes for itself), members by user id. */
const pusherChannel = (channel) => (isInternal(channel) && !isOwn(channel) ? { appId: appIdOf(channel), name: clientName(channel) } : undefined);
const PUSHER_VIEW = Object.freeze({
  channel: pusherChannel,
  member: (channel, user) => {
    const seen = pusherChannel(channel);
    return seen === undefined ? undefined : { ...seen, userId: user };
  }
});

/** One app's webhook targets (in the delivery's thread), and its member grace (member_added and member_removed once, for all of them). */
class AppWebhooks {
  constructor(app, { engine, graceMs, delivery, memberOf, log }) {
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
      announce: (name, channel, user) => {
        const { name: channelName, userId, mark } = memberOf(channel, user);
        this.add({ name, channel: channelName, user_id: userId, ...mark });
      },
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
